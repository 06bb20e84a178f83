"""``CallToolStream``: one call as CallTool runs it, its progress and chunks streamed."""

from __future__ import annotations

from collections.abc import AsyncIterator

from llmworker import OutputChunk, Progress, ToolOutput
from llmworker._wire import ErrorStatus
from llmworker.v1 import tool_service_pb2 as pb

from ..registry.registry import Registry
from ..rpc.handlers import Context, MalformedRequest, abort
from .admission import CallAdmission
from .responses import CallResponses

__all__ = ["CallStreams"]


class CallStreams:
    """The streaming RPC of a ToolService: its calls admitted and counted by ``admission``
    as CallTool's are, their results sent as ``responses`` makes them."""

    def __init__(
        self, admission: CallAdmission, responses: CallResponses, registry: Registry
    ) -> None:
        self._admission = admission
        self._responses = responses
        self._registry = registry
        # A merged chunk is sent in pieces that fit the message limit whatever the text.
        self._piece = max(1, responses.surely_fits)

    async def call_tool_stream(
        self, request: pb.CallToolRequest | MalformedRequest, context: Context
    ) -> AsyncIterator[pb.CallToolEvent]:
        admission = self._admission
        call = admission.admit(request, context)
        if isinstance(call, ErrorStatus):
            call = await admission.admit_or_abort(call, request, context, "CallToolStream")
        name, input_json, call_id, metadata, deadline, timeout, caller, log_id, started = call
        events = self._registry.worker.stream_tool(
            name,
            input_json,
            call_id=call_id or log_id,
            metadata=metadata,
            deadline=deadline,
            timeout=timeout,
        )
        try:
            try:
                async for event in events:
                    if isinstance(event, ToolOutput):
                        plain = event.structured is None and not event.attachments
                        result = self._responses.response_of(name, event.text if plain else event)
                        yield pb.CallToolEvent(result=result)
                    elif isinstance(event, OutputChunk):
                        for piece in self._pieces(name, event.text):
                            yield piece
                    else:
                        yield _progress(event)
            finally:
                await events.aclose()  # cancels the call if it still runs
        except BaseException as error:  # a hook or the worker itself failed: never the process
            status = admission.ended(name, call_id or log_id, error, started, caller, stream=True)
            if status is None:
                raise  # the client cancelled, its deadline passed, or gRPC closed the stream
        else:
            admission.finish(name, "OK", started, caller)
            return
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
            self._responses.response_of(name, text)  # raises what the tool did wrong
            raise


def _progress(event: Progress) -> pb.CallToolEvent:
    progress = pb.ToolProgress(progress=event.progress, message=event.message)
    if event.total is not None:
        progress.total = event.total
    return pb.CallToolEvent(progress=progress)
