"""One admission for every call path: CallTool and CallToolStream refuse the same requests
with the same status, wait at the drain gate alike, and every call path (unary, stream,
batch) counts its calls out however they end."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import grpc
import grpc.aio
import pytest

from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from tests.grpc_support import RpcFailure, Served, failure_of, serve
from tests.server.test_server_bad_input import raw_call_request

_CALL_TOOL = "/llmworker.v1.ToolService/CallTool"
_CALL_TOOL_STREAM = "/llmworker.v1.ToolService/CallToolStream"


async def _unary_failure(channel: grpc.aio.Channel, request: bytes) -> RpcFailure:
    call = channel.unary_unary(
        _CALL_TOOL, request_serializer=bytes, response_deserializer=pb.CallToolResponse.FromString
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(request, timeout=10)
    return failure_of(caught.value)


async def _stream_failure(channel: grpc.aio.Channel, request: bytes) -> RpcFailure:
    call = channel.unary_stream(
        _CALL_TOOL_STREAM,
        request_serializer=bytes,
        response_deserializer=pb.CallToolEvent.FromString,
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for _ in call(request, timeout=10):
            pass
    return failure_of(caught.value)


async def _until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(250):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting until {what}")


@pytest.mark.parametrize(
    ("request_bytes", "code", "reason"),
    [
        (raw_call_request(b"echo", b'{"text": "\xff"}'), "INVALID_ARGUMENT", "INVALID_REQUEST"),
        (
            pb.CallToolRequest(input_json="{}").SerializeToString(),
            "INVALID_ARGUMENT",
            "INVALID_REQUEST",
        ),
        (
            pb.CallToolRequest(
                name="echo", input_json='{"text": "' + "x" * 100 + '"}'
            ).SerializeToString(),
            "INVALID_ARGUMENT",
            "INVALID_REQUEST",
        ),
        (
            pb.CallToolRequest(name="echo", input_json="{}", call_id="\x01").SerializeToString(),
            "INVALID_ARGUMENT",
            "INVALID_REQUEST",
        ),
        (
            pb.CallToolRequest(
                name="echo", input_json="{}", metadata={"Bad Key": "v"}
            ).SerializeToString(),
            "INVALID_ARGUMENT",
            "INVALID_REQUEST",
        ),
        (
            pb.CallToolRequest(name="nope", input_json="{}").SerializeToString(),
            "NOT_FOUND",
            "TOOL_NOT_FOUND",
        ),
    ],
    ids=[
        "malformed",
        "empty-name",
        "input-too-large",
        "bad-call-id",
        "bad-metadata",
        "unknown-tool",
    ],
)
async def test_call_tool_and_its_stream_refuse_a_bad_request_alike(
    request_bytes: bytes, code: str, reason: str
) -> None:
    async with (
        serve(max_input_bytes=64) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        unary = await _unary_failure(channel, request_bytes)
        stream = await _stream_failure(channel, request_bytes)
        assert (unary.code.name, unary.reason) == (code, reason)
        assert stream == unary
        assert served.app.tools.in_flight == 0


async def test_over_the_concurrency_limit_both_paths_refuse_alike() -> None:
    async with (
        serve(max_concurrent_calls=1) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        busy = stub.CallTool(pb.CallToolRequest(name="sleep", input_json='{"seconds": 30}'))
        await _until(lambda: served.tools.started == 1, "the sleep started")
        echo = pb.CallToolRequest(name="echo", input_json='{"text": "x"}').SerializeToString()
        unary = await _unary_failure(channel, echo)
        stream = await _stream_failure(channel, echo)
        assert (unary.code, unary.reason) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "CONCURRENCY_LIMIT",
        )
        assert stream == unary
        busy.cancel()
        await _until(lambda: served.app.tools.in_flight == 0, "the cancelled call ended")
        assert (
            await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "y"}'))
        ).output == "y"


async def test_a_burst_on_one_connection_gets_only_documented_answers() -> None:
    """4 slow calls at --max-concurrent-calls 4, then 300 at once on the same connection:
    every one is refused CONCURRENCY_LIMIT by admission; none gets the bare UNAVAILABLE of a
    stream gRPC refused (REFUSED_STREAM, which stock clients do not retry)."""
    async with (
        serve(max_concurrent_calls=4) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        slow = pb.CallToolRequest(name="sleep", input_json='{"seconds": 30}')
        busy = [stub.CallTool(slow) for _ in range(4)]
        await _until(lambda: served.tools.started == 4, "the slow calls started")
        echo = pb.CallToolRequest(name="echo", input_json='{"text": "x"}')

        async def answer() -> str:
            try:
                return (await stub.CallTool(echo, timeout=30)).output
            except grpc.aio.AioRpcError as error:
                failure = failure_of(error)
                return f"{failure.code.name} {failure.reason or failure.message}"

        answers = await asyncio.gather(*(answer() for _ in range(300)))
        assert set(answers) == {"RESOURCE_EXHAUSTED CONCURRENCY_LIMIT"}
        for call in busy:
            call.cancel()


@pytest.mark.parametrize("run", [True, False], ids=["released", "refused"])
async def test_both_paths_wait_at_the_drain_gate_then_run_or_are_refused(run: bool) -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        gate = served.app._gate  # pyright: ignore[reportPrivateUsage]
        gate.close()
        echo = pb.CallToolRequest(name="echo", input_json='{"text": "held"}')
        unary = asyncio.ensure_future(stub.CallTool(echo, timeout=10))

        async def streamed() -> list[pb.CallToolEvent]:
            return [event async for event in stub.CallToolStream(echo, timeout=10)]

        stream = asyncio.ensure_future(streamed())
        await _until(lambda: gate.held == 2, "both calls wait at the gate")
        assert served.app.tools.in_flight == 0  # held calls are not yet admitted
        gate.release(run=run)
        if run:
            assert (await unary).output == "held"
            assert [event.result.output for event in await stream] == ["held"]
        else:
            failures: list[RpcFailure] = []
            for pending in (unary, stream):
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await pending
                failures.append(failure_of(caught.value))
            assert failures[0].reason == "SHUTTING_DOWN"
            assert failures[1] == failures[0]
        assert served.app.tools.in_flight == 0


async def _started(served: Served, count: int) -> None:
    await _until(lambda: served.tools.started == count, f"{count} sleeps started")


async def test_in_flight_returns_to_zero_after_cancelled_streams_and_batches() -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        sleep = pb.CallToolRequest(name="sleep", input_json='{"seconds": 30}')
        streams = [stub.CallToolStream(sleep) for _ in range(3)]
        reading = [asyncio.ensure_future(stream.read()) for stream in streams]
        batch = stub.CallTools(
            pb.CallToolsRequest(
                calls=[
                    pb.CallToolRequest(
                        call_id=str(index), name="sleep", input_json='{"seconds": 30}'
                    )
                    for index in range(2)
                ]
            )
        )
        await _started(served, 5)
        assert served.app.tools.in_flight == 5
        deadlined = stub.CallToolStream(sleep, timeout=0.3)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await deadlined.read()
        assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        for stream in streams:
            stream.cancel()
        batch.cancel()
        await asyncio.gather(*reading, return_exceptions=True)
        await _until(lambda: served.app.tools.in_flight == 0, "every call was counted out")
        await _until(lambda: served.tools.cancelled == 6, "every sleep was cancelled")
        assert served.tools.finished == 0
