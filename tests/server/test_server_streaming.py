"""CallToolStream over gRPC: events in order, the result last, CallTool's errors, limits,
cancellation reaching the tool, and a reader that stops reading."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import grpc.aio
import pytest

from llmworker import Mutable, Worker, tool_definitions
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import Served, failure_of, serve


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    demo: Worker[Mutable] = Worker()
    demo.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=demo, max_concurrent_calls=2) as running:
        yield running


async def events_of(
    stub: tool_service_pb2_grpc.ToolServiceStub, request: pb.CallToolRequest
) -> list[pb.CallToolEvent]:
    return [event async for event in stub.CallToolStream(request)]


async def test_a_stream_sends_progress_and_chunks_then_the_result(served: Served) -> None:
    async with grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        call = pb.CallToolRequest(name="countdown", input_json='{"n": 3, "delay": 0.06}')
        events = await events_of(stub, call)
        kinds = [event.WhichOneof("event") for event in events]
        assert kinds[-1] == "result"
        assert events[-1].result.output == "3\n2\n1\n"
        chunks = [event.output_chunk.text for event in events if event.HasField("output_chunk")]
        assert "".join(chunks) == "3\n2\n1\n"
        progress = [event.progress for event in events if event.HasField("progress")]
        assert (progress[0].progress, progress[0].total) == (1, 3)
        assert progress[0].message == "3 to go"
        assert progress[-1].progress == 3  # the last report always arrives
        # a tool that does not stream sends its result only
        plain = await events_of(stub, pb.CallToolRequest(name="echo", input_json='{"text": "x"}'))
        assert [event.WhichOneof("event") for event in plain] == ["result"]
        assert plain[0].result.output == "x"
        # the unary RPC on a streaming tool gives the joined text
        unary = await stub.CallTool(
            pb.CallToolRequest(name="countdown", input_json='{"n": 2, "delay": 0}')
        )
        assert unary.output == "2\n1\n"


async def test_a_stream_fails_with_call_tools_status_and_reason(served: Served) -> None:
    async with grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        invalid = grpc.StatusCode.INVALID_ARGUMENT
        cases = [
            (pb.CallToolRequest(name="nope"), grpc.StatusCode.NOT_FOUND, "TOOL_NOT_FOUND"),
            (pb.CallToolRequest(name="countdown", input_json='{"n": 0}'), invalid,
             "TOOL_INVALID_ARGUMENT"),
            (pb.CallToolRequest(name="", input_json="{}"), invalid, "INVALID_REQUEST"),
            (pb.CallToolRequest(name="echo", input_json="{}", call_id="\n"), invalid,
             "INVALID_REQUEST"),
        ]  # fmt: skip
        for request, code, reason in cases:
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await events_of(stub, request)
            failure = failure_of(raised.value)
            assert (failure.code, failure.reason) == (code, reason), failure.message
            unary_failure = None
            try:
                await stub.CallTool(request)
            except grpc.aio.AioRpcError as error:
                unary_failure = failure_of(error)
            assert unary_failure is not None
            assert (unary_failure.code, unary_failure.reason) == (code, reason)


async def test_cancelling_the_stream_cancels_the_tool_and_frees_its_slot(served: Served) -> None:
    async with grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        for round_ in range(3):  # the limit is 2 calls: slots must come back each time
            call_id = f"long-{round_}"
            request = pb.CallToolRequest(
                name="countdown", input_json='{"n": 10000, "delay": 0.01}', call_id=call_id
            )
            stream = stub.CallToolStream(request)
            first = await stream.read()
            assert isinstance(first, pb.CallToolEvent)
            stream.cancel()
            note = None
            for _ in range(200):
                try:
                    got = await stub.CallTool(
                        pb.CallToolRequest(
                            name="kv_get", input_json=f'{{"key": "countdown.{call_id}"}}'
                        )
                    )
                    note = got.output
                    break
                except grpc.aio.AioRpcError:
                    await asyncio.sleep(0.02)
            assert note == "cancelled"


async def test_streams_count_against_the_concurrency_limit(served: Served) -> None:
    async with grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        long = pb.CallToolRequest(name="countdown", input_json='{"n": 10000, "delay": 0.01}')
        streams = [stub.CallToolStream(long) for _ in range(2)]
        for stream in streams:
            await stream.read()
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await events_of(stub, long)
        assert failure_of(raised.value).reason == "CONCURRENCY_LIMIT"
        for stream in streams:
            stream.cancel()


async def test_a_reader_that_stops_reading_does_not_stop_the_server(served: Served) -> None:
    async with grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        fast = pb.CallToolRequest(name="countdown", input_json='{"n": 10000, "delay": 0}')
        stalled = stub.CallToolStream(fast)
        first = await stalled.read()  # then nothing: the server merges, queues no 10,000
        assert isinstance(first, pb.CallToolEvent)
        events = [first]
        echoed = await stub.CallTool(
            pb.CallToolRequest(name="echo", input_json='{"text": "still here"}')
        )
        assert echoed.output == "still here"
        while isinstance(event := await stalled.read(), pb.CallToolEvent):
            events.append(event)
        text = "".join(
            event.output_chunk.text for event in events if event.HasField("output_chunk")
        )
        assert events[-1].result.output == text  # nothing lost, only merged
        assert len(events) < 10000
