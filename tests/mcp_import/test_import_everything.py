"""The reference MCP server, ``@modelcontextprotocol/server-everything`` from npm (installed
into ``tools/`` by ``make``), imported over stdio and Streamable HTTP: listed with its
definitions, called, progress on CallToolStream, structured content and an image carried, a
refused argument mapped; SearchTools finding its tools by what they do."""

from __future__ import annotations

import json

import grpc
import grpc.aio
import pytest

from llmworker import Worker, tool_definitions
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.demo_tools import DemoTools
from llmworker_server.mcp_import.settings import McpServerSettings
from tests.grpc_support import Served, failure_of, serve
from tests.mcp_import.support import EVERYTHING, everything_http, free_port

Stub = tool_service_pb2_grpc.ToolServiceStub
LABELLED = [  # a query as a model might write it → the tool it means, among the demo tools too
    ("add two numbers", "everything__get-sum"),
    ("echo a message back", "everything__echo"),
    ("a tiny image", "everything__get-tiny-image"),
    ("long running operation with progress updates", "everything__trigger-long-running-operation"),
    ("structured weather content for a city", "everything__get-structured-content"),
    ("calculate an arithmetic expression", "calculate"),
    ("delete a key", "kv_delete"),
]


def everything_stdio() -> McpServerSettings:
    if not EVERYTHING.exists():
        raise AssertionError(f"{EVERYTHING} is missing: run make (it installs tools/)")
    return McpServerSettings("everything", command=("node", str(EVERYTHING), "stdio"))


async def check_calls(served: Served) -> None:
    async with grpc.aio.insecure_channel(served.target) as channel:
        stub = Stub(channel)
        echo = await stub.CallTool(
            pb.CallToolRequest(name="everything__echo", input_json='{"message": "hi"}')
        )
        assert "hi" in echo.output
        total = await stub.CallTool(
            pb.CallToolRequest(name="everything__get-sum", input_json='{"a": 2, "b": 3}')
        )
        assert "5" in total.output
        request = pb.CallToolRequest(
            name="everything__trigger-long-running-operation",
            input_json='{"duration": 0.6, "steps": 3}',
        )
        events = [event async for event in stub.CallToolStream(request)]
        progress = [event.progress for event in events if event.HasField("progress")]
        assert progress, events
        assert progress[-1].total == 3
        assert events[-1].HasField("result")


async def test_server_everything_over_stdio() -> None:
    async with serve(None, worker=Worker(), mcp_servers=(everything_stdio(),)) as served:
        handle = served.app.registry.handle
        names = {meta.name for meta in handle.tool_definitions_sorted()}
        assert {"everything__echo", "everything__get-sum", "everything__get-tiny-image"} <= names
        assert "everything__simulate-research-query" not in names  # it runs only as a task
        found = handle.get_tool("everything__get-structured-content")
        assert found is not None
        meta = found[0]
        assert meta.title == "Get Structured Content Tool"
        assert meta.output_schema is not None
        assert (meta.annotations.read_only, meta.annotations.destructive) == (True, False)
        await check_calls(served)
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = Stub(channel)
            weather = await stub.CallTool(
                pb.CallToolRequest(
                    name="everything__get-structured-content",
                    input_json='{"location": "Chicago"}',
                )
            )
            assert "temperature" in json.loads(weather.structured_output_json)
            image = await stub.CallTool(
                pb.CallToolRequest(name="everything__get-tiny-image", input_json="{}")
            )
            assert [part.image.mime_type for part in image.attachments] == ["image/png"]
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await stub.CallTool(
                    pb.CallToolRequest(name="everything__get-sum", input_json='{"a": "two"}')
                )
            assert failure_of(raised.value).reason in {
                "TOOL_EXECUTION_FAILED",
                "TOOL_INVALID_ARGUMENT",
            }


async def test_server_everything_over_streamable_http() -> None:
    async with everything_http(free_port()) as everything:
        settings = McpServerSettings("everything", url=everything.url)
        async with serve(None, worker=Worker(), mcp_servers=(settings,)) as served:
            assert "everything__echo" in served.app.registry.handle
            await check_calls(served)


async def test_search_finds_imported_and_local_tools_by_what_they_do() -> None:
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with (
        serve(None, worker=worker, mcp_servers=(everything_stdio(),)) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = Stub(channel)
        for query, expected in LABELLED:
            answer = await stub.SearchTools(pb.SearchToolsRequest(query=query, limit=3))
            assert answer.definitions[0].name == expected, (query, answer.definitions)
