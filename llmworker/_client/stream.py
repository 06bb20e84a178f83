"""Streamed calls over gRPC: ``CallToolStream`` events read as the library's events."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from typing import Final

import grpc
import grpc.aio

from .._model.tool import ToolOutput
from .._runtime.streaming import OutputChunk, Progress, StreamEvent
from .._wire.status import error_from_rpc
from ..v1 import tool_service_pb2 as pb
from .batch import structured_of

__all__ = ["CALL_TOOL_STREAM", "event_of", "read_events", "read_events_blocking", "stream_method"]

CALL_TOOL_STREAM: Final = "/llmworker.v1.ToolService/CallToolStream"


def stream_method(
    channel: grpc.aio.Channel,
) -> grpc.aio.UnaryStreamMultiCallable[pb.CallToolRequest, pb.CallToolEvent]:
    """CallToolStream on ``channel``."""
    return channel.unary_stream(
        CALL_TOOL_STREAM,
        request_serializer=pb.CallToolRequest.SerializeToString,
        response_deserializer=pb.CallToolEvent.FromString,
    )


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
        return ToolOutput(result.output, structured_of(result.structured_output_json))
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
        error = error_from_rpc(rpc_error)
        raise error from error.__cause__
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
        error = error_from_rpc(rpc_error)
        raise error from error.__cause__
    finally:
        cancel = getattr(call, "cancel", None)
        if cancel is not None:
            cancel()
