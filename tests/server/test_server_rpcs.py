"""The public ToolService over a real socket: every RPC and every error mapping."""

from __future__ import annotations

import asyncio
import hashlib
import json

import grpc
import grpc.aio
import pytest

from llmworker import (
    Abort,
    Continue,
    Pause,
    PreToolCallOutcome,
    RemoteServiceError,
    RemoteToolServerHandle,
    SyncRemoteToolServerHandle,
    ToolCallContext,
    ToolError,
    ToolServerError,
    Worker,
    canonical_json,
    tool_definitions,
)
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.app import ServerApp
from llmworker_server.config import ServerConfig
from tests.grpc_support import RpcFailure, failure_of, serve
from tests.server_tools import ServerTestTools


async def call_failure(
    stub: tool_service_pb2_grpc.ToolServiceStub,
    name: str,
    input_json: str,
    deadline: float | None = None,
) -> RpcFailure:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.CallTool(pb.CallToolRequest(name=name, input_json=input_json), timeout=deadline)
    return failure_of(caught.value)


async def test_call_get_and_list_over_grpc() -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        reply = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "hé"}'))
        assert reply.output == "hé"

        got = await stub.GetTool(pb.GetToolRequest(name="echo"))
        assert got.definition.name == "echo"
        assert got.definition.description == "Return the text unchanged."
        local = served.app.registry.handle.get_tool("echo")
        assert local is not None
        assert got.definition.input_schema_json == canonical_json(local[0].input_schema).decode()

        listed = await stub.ListDefinitionsSorted(pb.ListDefinitionsSortedRequest())
        names = [definition.name for definition in listed.definitions]
        assert names == ["counter", "echo", "fail", "sleep"]
        snapshot = served.app.registry.handle.definitions_snapshot()
        assert listed.fingerprint == snapshot.fingerprint
        assert listed.fingerprint == hashlib.sha256(snapshot.canonical_json).hexdigest()
        assert not listed.unchanged


async def test_a_known_fingerprint_gets_an_empty_unchanged_answer() -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        first = await stub.ListDefinitionsSorted(pb.ListDefinitionsSortedRequest())
        again = await stub.ListDefinitionsSorted(
            pb.ListDefinitionsSortedRequest(known_fingerprint=first.fingerprint)
        )
        assert again.unchanged
        assert list(again.definitions) == []
        assert again.fingerprint == first.fingerprint
        stale = await stub.ListDefinitionsSorted(
            pb.ListDefinitionsSortedRequest(known_fingerprint="0" * 64)
        )
        assert not stale.unchanged
        assert len(stale.definitions) == 4


@pytest.mark.parametrize(
    ("name", "input_json", "code", "reason", "message", "tool_error"),
    [
        ("nope", "{}", grpc.StatusCode.NOT_FOUND, "TOOL_NOT_FOUND", "Tool 'nope' not found", None),
        ("echo", "{bad", grpc.StatusCode.INVALID_ARGUMENT, "TOOL_INVALID_ARGUMENT",
         "Tool execution failed: Invalid argument: input is not valid JSON (key must be a string "
         "at line 1 column 2); send one JSON object",
         "input is not valid JSON (key must be a string at line 1 column 2); send one JSON object"),
        ("echo", "[1]", grpc.StatusCode.INVALID_ARGUMENT, "TOOL_INVALID_ARGUMENT",
         "Tool execution failed: Invalid argument: arguments must be a JSON object, got an array",
         "arguments must be a JSON object, got an array"),
        ("fail", '{"kind": "invalid"}', grpc.StatusCode.INVALID_ARGUMENT, "TOOL_INVALID_ARGUMENT",
         "Tool execution failed: Invalid argument: kind 'invalid' is never valid",
         "kind 'invalid' is never valid"),
        ("fail", '{"kind": "disk"}', grpc.StatusCode.UNKNOWN, "TOOL_EXECUTION_FAILED",
         "Tool execution failed: Execution failed: failed on purpose: disk",
         "failed on purpose: disk"),
        ("fail", '{"kind": "internal"}', grpc.StatusCode.INTERNAL, "TOOL_INTERNAL",
         "Tool execution failed: Internal error: the database handle is closed",
         "the database handle is closed"),
        ("", "{}", grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST",
         "the tool name is empty; pass a name from ListDefinitionsSorted", None),
    ],
)  # fmt: skip
async def test_each_error_maps_to_its_status_reason_and_message(
    name: str,
    input_json: str,
    code: grpc.StatusCode,
    reason: str,
    message: str,
    tool_error: str | None,
) -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        failure = await call_failure(stub, name, input_json)
        assert (failure.code, failure.reason, failure.message) == (code, reason, message)
        assert failure.domain == "llmworker"
        assert failure.metadata.get("tool", "") == name
        assert failure.metadata.get("tool_error") == tool_error
        assert (
            await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "ok"}'))
        ).output == "ok"


async def test_get_tool_of_an_unknown_name_is_not_found() -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.GetTool(pb.GetToolRequest(name="ghost"))
        failure = failure_of(caught.value)
        assert (failure.code, failure.reason) == (grpc.StatusCode.NOT_FOUND, "TOOL_NOT_FOUND")


async def test_the_remote_handle_rebuilds_the_exact_variants() -> None:
    async with serve() as served, await RemoteToolServerHandle.connect(served.target) as handle:
        assert [meta.name for meta in handle.tool_definitions_sorted()] == [
            meta.name for meta in served.app.registry.handle.tool_definitions_sorted()
        ]
        assert handle.definitions_snapshot() == served.app.registry.handle.definitions_snapshot()
        assert await handle.call_tool("echo", '{"text": "x"}') == "x"

        with pytest.raises(ToolServerError.ToolNotFound) as not_found:
            await handle.call_tool("nope", "{}")
        assert str(not_found.value) == "Tool 'nope' not found"

        for kind, variant in [
            ("invalid", ToolError.InvalidArgument),
            ("disk", ToolError.ExecutionFailed),
            ("internal", ToolError.Internal),
        ]:
            local = served.app.registry.handle
            with pytest.raises(ToolServerError.ToolExecution) as expected:
                await local.call_tool("fail", json.dumps({"kind": kind}))
            with pytest.raises(ToolServerError.ToolExecution) as remote:
                await handle.call_tool("fail", json.dumps({"kind": kind}))
            assert str(remote.value) == str(expected.value)
            assert type(remote.value.__cause__) is variant
            assert str(remote.value.__cause__) == str(expected.value.__cause__)

        found = handle.get_tool("fail")
        assert found is not None
        with pytest.raises(ToolError.Internal, match=r"^Internal error: the database handle"):
            await found[1].execute('{"kind": "internal"}')
        assert await handle.refresh() is False


def test_the_sync_remote_handle_works_from_plain_code() -> None:
    async def scenario() -> None:
        async with serve() as served:

            def use() -> None:
                with SyncRemoteToolServerHandle(served.target) as handle:
                    assert handle.get_tool("echo") is not None
                    assert handle.call_tool("echo", '{"text": "sync"}') == "sync"
                    with pytest.raises(ToolServerError.ToolNotFound):
                        handle.call_tool("nope", "{}")
                    assert handle.refresh() is False

            await asyncio.to_thread(use)

    asyncio.run(scenario())


async def test_a_client_deadline_cancels_the_tool() -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CallTool(
                pb.CallToolRequest(name="sleep", input_json='{"seconds": 30}'), timeout=0.3
            )
        assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        for _ in range(100):
            if served.tools.cancelled:
                break
            await asyncio.sleep(0.02)
        assert served.tools.started == 1
        assert served.tools.cancelled == 1
        assert served.tools.finished == 0


async def test_a_client_cancelling_cancels_the_tool() -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        call = stub.CallTool(pb.CallToolRequest(name="sleep", input_json='{"seconds": 30}'))
        for _ in range(100):
            if served.tools.started:
                break
            await asyncio.sleep(0.02)
        call.cancel()
        for _ in range(100):
            if served.tools.cancelled:
                break
            await asyncio.sleep(0.02)
        assert served.tools.cancelled == 1
        assert served.app.tools.in_flight == 0


@pytest.mark.parametrize("deadline", [None, 5.0], ids=["no deadline", "later deadline"])
async def test_server_timeouts_answer_deadline_exceeded_with_tool_timeout(
    deadline: float | None,
) -> None:
    async with (
        serve(tool_timeouts={"sleep": 0.2}) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        failure = await call_failure(stub, "sleep", '{"seconds": 30}', deadline)
        assert (failure.code, failure.reason) == (grpc.StatusCode.DEADLINE_EXCEEDED, "TOOL_TIMEOUT")
        assert failure.message.startswith("Tool 'sleep' did not finish within 0.2 s")
        assert served.tools.cancelled == 1
        assert served.app.tools.in_flight == 0


async def test_calls_beyond_the_limit_get_resource_exhausted_not_a_queue() -> None:
    async with (
        serve(max_concurrent_calls=2) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        slow = [
            asyncio.ensure_future(
                stub.CallTool(pb.CallToolRequest(name="sleep", input_json='{"seconds": 0.5}'))
            )
            for _ in range(2)
        ]
        for _ in range(100):
            if served.tools.started == 2:
                break
            await asyncio.sleep(0.01)
        failure = await call_failure(stub, "echo", '{"text": "x"}')
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "CONCURRENCY_LIMIT",
        )
        assert "2 calls are in flight" in failure.message
        assert [reply.output for reply in await asyncio.gather(*slow)] == ["slept 0.5"] * 2
        reply = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "x"}'))
        assert reply.output == "x"


async def test_calls_go_through_the_workers_hooks() -> None:
    def guard(ctx: ToolCallContext) -> PreToolCallOutcome:
        if ctx.call.input_json.find("forbidden") >= 0:
            return Abort("forbidden words")
        if ctx.call.input_json.find("pause") >= 0:
            return Pause()
        return Continue()

    tools = ServerTestTools()
    worker = Worker()
    worker.register_tools(tool_definitions(tools))
    worker.add_pre_tool_call_hook(guard)
    app = ServerApp(ServerConfig(port=0, log_level="WARNING"), worker)
    await app.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            failure = await call_failure(stub, "echo", '{"text": "forbidden"}')
            assert (failure.code, failure.reason) == (grpc.StatusCode.ABORTED, "HOOK_ABORTED")
            assert failure.message.endswith(": forbidden words")
            failure = await call_failure(stub, "echo", '{"text": "pause"}')
            assert failure.reason == "HOOK_ABORTED"
            assert "send it with CallTools" in failure.message
            ok = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "ok"}'))
            assert ok.output == "ok"
    finally:
        await app.stop(grace=0)


def test_remote_service_errors_are_tool_server_errors() -> None:
    error = RemoteServiceError(grpc.StatusCode.UNAVAILABLE, "PROVIDER_UNAVAILABLE", "gone", {})
    assert isinstance(error, ToolServerError)
    assert str(error) == "gone"
