"""An MCP server that misbehaves costs its own tools and nothing else: definitions over the
limits are left out with a warning naming them, names are mapped, a duplicate is taken once,
unusable results, crashes and oversized results become clear failures, a process that dies
mid-call is relaunched, and a server that cannot be reached at all leaves the rest serving."""

from __future__ import annotations

import logging
import sys

import grpc
import grpc.aio
import pytest

from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.mcp_import.settings import McpServerSettings
from tests.grpc_support import REPO, failure_of, serve
from tests.mcp_import.support import free_port, wait_until

UNRULY = McpServerSettings(
    "bad",
    command=(sys.executable, "-m", "tests.mcp_import.unruly_server"),
    env={"PYTHONPATH": str(REPO)},
    cwd=REPO,
)


async def test_a_misbehaving_server_costs_only_its_own_tools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="llmworker.server.mcp_import")
    async with serve(None, mcp_servers=(UNRULY,), provider_lease=2.0) as served:
        handle = served.app.registry.handle
        names = {meta.name for meta in handle.tool_definitions_sorted()}
        imported = {name for name in names if name.startswith("bad__")}
        mapped = [name for name in imported if name.startswith("bad__files_read_v2-")]
        assert imported == {
            "bad__ok",
            "bad__twice",
            "bad__bad_image",
            "bad__huge_result",
            "bad__crash",
            "bad__exit",
            *mapped,
        }
        assert len(mapped) == 1
        logged = caplog.text
        assert "tool bad__huge_description left out: its description is 20000 characters" in logged
        assert "tool bad__huge_schema left out: its input schema is" in logged
        assert f"is registered as {mapped[0]}" in logged
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)

            async def failure(name: str) -> tuple[str, str]:
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await stub.CallTool(pb.CallToolRequest(name=name, input_json="{}"), timeout=30)
                found = failure_of(raised.value)
                return found.reason, found.message

            reason, message = await failure("bad__bad_image")
            assert reason == "TOOL_EXECUTION_FAILED"
            assert "image block" in message
            reason, message = await failure("bad__crash")
            assert reason == "TOOL_EXECUTION_FAILED"
            reason, message = await failure("bad__huge_result")  # as any tool's would be
            assert reason == "TOOL_INTERNAL"
            assert "--max-message-bytes" in message
            reason, message = await failure("bad__exit")
            assert reason == "PROVIDER_UNAVAILABLE"
            assert "'bad'" in message
            # the rest kept serving, and the server is launched again
            echo = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "x"}'))
            assert echo.output == "x"
            links = served.app.imports.links if served.app.imports else []
            await wait_until(lambda: all(link.connected for link in links), 30.0, "a relaunch")
            reply = await stub.CallTool(pb.CallToolRequest(name="bad__ok", input_json="{}"))
            assert reply.output == "ok"
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await stub.CallTool(pb.CallToolRequest(name="bad__ok", input_json="[1]"))
            assert failure_of(raised.value).reason == "TOOL_INVALID_ARGUMENT"


async def test_servers_that_cannot_be_reached_leave_the_rest_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    missing = McpServerSettings("gone", command=("/nonexistent/mcp-server",))
    nobody = McpServerSettings("nobody", url=f"http://127.0.0.1:{free_port()}/mcp")
    async with serve(None, mcp_servers=(missing, nobody)) as served:
        assert not any(meta.name.startswith(("gone__", "nobody__")) for meta in
                       served.app.registry.handle.tool_definitions_sorted())  # fmt: skip
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            echo = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "y"}'))
            assert echo.output == "y"
    assert "MCP server gone (stdio: /nonexistent/mcp-server) is not answering" in caplog.text
    assert "MCP server nobody (http://127.0.0.1:" in caplog.text
