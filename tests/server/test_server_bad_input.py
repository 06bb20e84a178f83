"""Bad input gets its documented status and message, and the server keeps serving."""

from __future__ import annotations

import grpc
import grpc.aio
import pytest

from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from tests.grpc_support import failure_of, serve


async def assert_still_serving(stub: tool_service_pb2_grpc.ToolServiceStub) -> None:
    reply = await stub.CallTool(pb.CallToolRequest(name="counter", input_json="{}"))
    assert int(reply.output) >= 1


async def test_a_10_mb_input_is_refused_by_the_message_limit() -> None:
    async with (
        serve() as served,
        grpc.aio.insecure_channel(
            served.target, options=[("grpc.max_send_message_length", 32 << 20)]
        ) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        huge = '{"text": "' + "x" * (10 << 20) + '"}'
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CallTool(pb.CallToolRequest(name="echo", input_json=huge))
        assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "larger than max" in (caught.value.details() or "")
        await assert_still_serving(stub)


async def test_a_3_mb_input_under_the_raised_input_limit_is_served() -> None:
    async with (
        serve(max_input_bytes=4 << 20) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        text = "y" * (3 << 20)
        reply = await stub.CallTool(
            pb.CallToolRequest(name="echo", input_json='{"text": "' + text + '"}')
        )
        assert reply.output == text


async def test_deeply_nested_json_is_an_invalid_argument() -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        deep = '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}"
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CallTool(pb.CallToolRequest(name="echo", input_json=deep))
        failure = failure_of(caught.value)
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "TOOL_INVALID_ARGUMENT",
        )
        assert "recursion limit exceeded" in failure.message
        await assert_still_serving(stub)


def raw_call_request(name: bytes, input_json: bytes) -> bytes:
    """A CallToolRequest encoded by hand, so its strings may be invalid UTF-8."""
    return b"\x0a" + bytes([len(name)]) + name + b"\x12" + bytes([len(input_json)]) + input_json


async def test_invalid_utf8_is_an_invalid_request_not_an_internal_error() -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        raw = channel.unary_unary(
            "/llmworker.v1.ToolService/CallTool",
            request_serializer=bytes,
            response_deserializer=pb.CallToolResponse.FromString,
        )
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await raw(raw_call_request(b"echo", b'{"text": "\xff\xfe"}'))
        failure = failure_of(caught.value)
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_REQUEST",
        )
        assert failure.message.startswith("the request is not a valid protobuf message")
        assert failure.message.endswith("string fields must be UTF-8")
        assert (await raw(raw_call_request(b"echo", b'{"text": "ok"}'))).output == "ok"
        await assert_still_serving(tool_service_pb2_grpc.ToolServiceStub(channel))
