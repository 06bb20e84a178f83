"""Streamed calls over gRPC: ``CallToolStream`` events read as the library's events."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator

import grpc
import grpc.aio

from .._model.tool import ToolOutput
from .._runtime.streaming import OutputChunk, Progress, StreamEvent
from .._wire.stubs import raise_failure
from ..v1 import tool_service_pb2 as pb
from .batch import received_attachments, structured_of

__all__ = ["event_of", "read_events", "read_events_blocking"]


def event_of(event: pb.CallToolEvent) -> StreamEvent | None:
    """The library's event for a wire event (None for one this client does not know)."""
    kind = event.WhichOneof("event")
    if kind == "output_chunk":
        return OutputChunk(event.output_chunk.text)
    if kind == "progress":
        progress = event.progress
        total = progress.total if progress.HasField("total") else None
        return Progress(progress.progress, total, progress.message)
    if kind == "result":
        result = event.result
        return ToolOutput(
            result.output,
            structured_of(result.structured_output_json),
            received_attachments(result.attachments),
        )
    return None


async def read_events(
    call: grpc.aio.UnaryStreamCall[pb.CallToolRequest, pb.CallToolEvent],
) -> AsyncGenerator[StreamEvent]:
    """The events of a CallToolStream call; its failure raised as ``call_tool`` raises it.
    Closing the generator cancels the call."""
    try:
        async for wire_event in call:
            event = event_of(wire_event)
            if event is not None:
                yield event
    except grpc.aio.AioRpcError as rpc_error:
        raise_failure(rpc_error)
    finally:
        call.cancel()  # a no-op once the call ended


def read_events_blocking(
    call: Iterator[pb.CallToolEvent],
) -> Iterator[StreamEvent]:
    """As ``read_events``, for a blocking channel's call."""
    try:
        for wire_event in call:
            event = event_of(wire_event)
            if event is not None:
                yield event
    except grpc.RpcError as rpc_error:
        raise_failure(rpc_error)
    finally:
        cancel = getattr(call, "cancel", None)
        if cancel is not None:
            cancel()
