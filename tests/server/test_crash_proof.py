"""Nothing a tool raises stops the process: it becomes that call's TOOL_INTERNAL answer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator

import grpc
import grpc.aio
import pytest

from llmworker import (
    Completed,
    Continue,
    Mutable,
    ToolCall,
    ToolCallContext,
    ToolError,
    ToolServerError,
    Worker,
    tool_definitions,
)
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from tests.grpc_support import ServerProcess, failure_of, serve
from tests.server_tools import CrashTestTools, ServerTestTools

CRASH_TOOLS = [
    "--tools",
    "tests.server_tools:ServerTestTools",
    "--tools",
    "tests.server_tools:CrashTestTools",
]
CRASHES = [
    ("exit", "SystemExit: 3"),
    ("keyboard", "KeyboardInterrupt"),
    ("generator", "GeneratorExit"),
    ("base", "RogueError: rogue"),
    ("cancelled", "CancelledError"),
    ("unprintable", "Unprintable whose str() failed"),
]


@contextlib.asynccontextmanager
async def crash_service(
    **overrides: object,
) -> AsyncGenerator[tool_service_pb2_grpc.ToolServiceStub, None]:
    """A stub onto an in-process server with the test and crash tools."""
    async with (
        serve(None, worker=crash_worker(), **overrides) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        yield tool_service_pb2_grpc.ToolServiceStub(channel)


def crash_worker() -> Worker[Mutable]:
    worker = Worker()
    worker.register_tools(tool_definitions(ServerTestTools()))
    worker.register_tools(tool_definitions(CrashTestTools()))
    return worker


@pytest.mark.parametrize("tool", ["crash", "crash_sync"])
@pytest.mark.parametrize(("kind", "named"), CRASHES)
async def test_call_tools_answers_a_crash_as_an_error_result(
    tool: str, kind: str, named: str
) -> None:
    worker = crash_worker()
    calls = [ToolCall("1", tool, f'{{"kind": "{kind}"}}'), ToolCall("2", "echo", '{"text": "ok"}')]
    outcome = await asyncio.wait_for(worker.call_tools(calls), timeout=10)
    assert isinstance(outcome, Completed)
    crashed, fine = outcome.results
    assert crashed.is_error
    assert isinstance(crashed.error, ToolError.Internal)
    assert named in crashed.content
    assert (fine.is_error, fine.content) == (False, "ok")


@pytest.mark.parametrize(("kind", "named"), CRASHES)
async def test_handle_call_tool_raises_tool_execution_for_a_crash(kind: str, named: str) -> None:
    handle = crash_worker().tool_server_handle()
    with pytest.raises(ToolServerError.ToolExecution) as raised:
        await handle.call_tool("crash", f'{{"kind": "{kind}"}}')
    assert named in str(raised.value)
    assert isinstance(raised.value.__cause__, ToolError.Internal)


async def test_a_requested_cancel_still_cancels_the_tool() -> None:
    worker = crash_worker()
    task = asyncio.ensure_future(worker.call_tools([ToolCall("1", "sleep", '{"seconds": 5}')]))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("tool", ["crash", "crash_sync"])
@pytest.mark.parametrize(("kind", "named"), CRASHES)
async def test_over_grpc_a_crash_is_internal_and_other_calls_go_on(
    tool: str, kind: str, named: str
) -> None:
    async with crash_service() as stub:
        slow = asyncio.ensure_future(
            stub.CallTool(pb.CallToolRequest(name="sleep", input_json='{"seconds": 0.3}'))
        )
        await asyncio.sleep(0.05)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CallTool(
                pb.CallToolRequest(name=tool, input_json=f'{{"kind": "{kind}"}}'), timeout=10
            )
        failure = failure_of(caught.value)
        assert (failure.code, failure.reason) == (grpc.StatusCode.INTERNAL, "TOOL_INTERNAL")
        assert named in failure.message
        assert (await slow).output == "slept 0.3"
        echoed = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "x"}'))
        assert echoed.output == "x"


@pytest.mark.parametrize(
    ("raised", "named"),
    [
        (SystemExit("hook wants out"), "SystemExit: hook wants out"),
        (GeneratorExit("hook defect"), "GeneratorExit: hook defect"),
        (KeyboardInterrupt(), "KeyboardInterrupt"),
    ],
    ids=["SystemExit", "GeneratorExit", "KeyboardInterrupt"],
)
async def test_a_crashing_hook_is_internal_and_logged(
    raised: BaseException, named: str, caplog: pytest.LogCaptureFixture
) -> None:
    worker = crash_worker()

    def broken_hook(context: ToolCallContext) -> Continue:
        raise raised

    worker.add_pre_tool_call_hook(broken_hook)
    async with serve(worker=worker) as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CallTool(
                pb.CallToolRequest(name="echo", input_json='{"text": "x"}'), timeout=30
            )
        failure = failure_of(caught.value)
        assert (failure.code, failure.reason) == (grpc.StatusCode.INTERNAL, "TOOL_INTERNAL")
        assert named in failure.message
        assert failure.metadata["call_id"] in failure.message
    assert "Traceback" in caplog.text
    assert "broken_hook" in caplog.text


async def test_the_server_process_survives_every_crash_and_exits_only_on_sigterm() -> None:
    process = ServerProcess([*CRASH_TOOLS, "--port", "0", "--no-internal"])
    try:
        port = await process.port()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            for tool in ("crash", "crash_sync"):
                for kind, named in CRASHES:
                    with pytest.raises(grpc.aio.AioRpcError) as caught:
                        await stub.CallTool(
                            pb.CallToolRequest(name=tool, input_json=f'{{"kind": "{kind}"}}'),
                            timeout=10,
                        )
                    assert caught.value.code() is grpc.StatusCode.INTERNAL, (tool, kind)
                    assert named in (caught.value.details() or "")
            assert process.process.poll() is None
            reply = await stub.CallTool(pb.CallToolRequest(name="counter", input_json="{}"))
            assert reply.output == "1"
        assert await asyncio.to_thread(process.stop) == 0
    finally:
        process.process.kill()
        process.stop()


async def test_a_task_left_behind_that_raises_system_exit_does_not_stop_the_server() -> None:
    process = ServerProcess([*CRASH_TOOLS, "--port", "0", "--no-internal"])
    try:
        port = await process.port()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            left = await stub.CallTool(pb.CallToolRequest(name="exit_later", input_json="{}"))
            assert left.output == "left"
            await asyncio.sleep(0.5)
            reply = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "x"}'))
            assert reply.output == "x"
        assert process.process.poll() is None
        assert await asyncio.to_thread(process.stop) == 0
    finally:
        process.process.kill()
        process.stop()
    assert "a task outside any call raised SystemExit; the server keeps serving" in process.output


async def test_a_tool_error_carrying_an_exception_instead_of_text_is_answered() -> None:
    async with crash_service() as stub:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CallTool(
                pb.CallToolRequest(name="crash", input_json='{"kind": "error_object"}')
            )
        failure = failure_of(caught.value)
        assert failure.reason == "TOOL_EXECUTION_FAILED"
        assert failure.message == "Tool execution failed: Execution failed: 'k'"


async def test_a_generator_exit_the_event_loop_delivers_is_still_answered() -> None:
    async with crash_service() as stub:
        request = pb.CallToolRequest(name="crash", input_json='{"kind": "subtask_generator"}')
        for _ in range(2):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.CallTool(request, timeout=10)
            failure = failure_of(caught.value)
            assert (failure.code, failure.reason) == (grpc.StatusCode.INTERNAL, "TOOL_INTERNAL")
            assert "GeneratorExit" in failure.message
        reply = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "x"}'))
        assert reply.output == "x"
