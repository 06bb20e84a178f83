"""``CallToolStream``: one call as CallTool runs it, its progress and chunks streamed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Final

from llmworker import OutputChunk, Progress, ToolOutput
from llmworker._wire import ErrorStatus
from llmworker.v1 import tool_service_pb2 as pb

from ..rpc.handlers import SHUTTING_DOWN, Context, MalformedRequest, abort, is_requested_cancel

if TYPE_CHECKING:
    from .service import ToolService

__all__ = ["CallStreams"]

_CHUNK_BYTES_PER_CHARACTER: Final = 4  # UTF-8's worst case: a piece always fits the limit


class CallStreams:
    """The streaming RPC of a ToolService, sharing its checks, limits and errors."""

    def __init__(self, service: ToolService) -> None:
        self._service = service
        # A merged chunk is sent in pieces that fit the message limit whatever the text.
        self._piece = max(1, service.limits.max_output_bytes // _CHUNK_BYTES_PER_CHARACTER)

    async def call_tool_stream(
        self, request: pb.CallToolRequest | MalformedRequest, context: Context
    ) -> AsyncIterator[pb.CallToolEvent]:
        service = self._service
        if service.gate.closed and not await service.gate.hold():
            await abort(context, SHUTTING_DOWN)
        call = service.admit(request, context)
        if isinstance(call, ErrorStatus):
            await abort(context, call)
        name, input_json, call_id, metadata, deadline, timeout, caller = call
        log_id, started = service.start()
        label = "CANCELLED"  # unless the call ends: the client went away or its deadline passed
        status: ErrorStatus | None = None
        events = service.registry.worker.stream_tool(
            name,
            input_json,
            call_id=call_id or log_id,
            metadata=metadata,
            deadline=deadline,
            timeout=timeout,
        )
        try:
            async for event in events:
                if isinstance(event, ToolOutput):
                    result = service.response_of(
                        name, event.text if event.structured is None else event
                    )
                    yield pb.CallToolEvent(result=result)
                elif isinstance(event, OutputChunk):
                    for piece in self._pieces(name, event.text):
                        yield piece
                else:
                    yield _progress(event)
            label = "OK"
        except asyncio.CancelledError as error:
            if is_requested_cancel():
                raise  # the client cancelled, or its deadline passed
            status = service.crashed(name, call_id or log_id, error)
        except GeneratorExit:
            raise  # gRPC closed the stream: the reader left
        except BaseException as error:  # a hook or the worker itself failed: never the process
            status = service.status_for(name, call_id or log_id, error)
        finally:
            await events.aclose()  # cancels the call if it still runs
            service.finish(name, label if status is None else status.code.name, started, caller)
        if status is not None:
            await abort(context, status)

    def _pieces(self, name: str, text: str) -> list[pb.CallToolEvent]:
        try:
            return [
                pb.CallToolEvent(
                    output_chunk=pb.OutputChunk(text=text[start : start + self._piece])
                )
                for start in range(0, len(text), self._piece)
            ]
        except UnicodeEncodeError:
            self._service.response_of(name, text)  # raises what the tool did wrong
            raise


def _progress(event: Progress) -> pb.CallToolEvent:
    progress = pb.ToolProgress(progress=event.progress, message=event.message)
    if event.total is not None:
        progress.total = event.total
    return pb.CallToolEvent(progress=progress)
