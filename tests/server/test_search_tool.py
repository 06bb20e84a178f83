"""``--search-tool`` and ``--core-tools``: SearchTools as a tool a model calls, scoped to its
caller, over gRPC and MCP; the Anthropic formats deferring every tool outside the core set."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import grpc.aio
import pytest
from mcp import Client

from llmworker import Mutable, Worker, tool_definitions
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import failure_of, serve
from tests.server.test_auth import AGENT, bearer, write_tokens

Stub = tool_service_pb2_grpc.ToolServiceStub


def demo_worker() -> Worker[Mutable]:
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    return worker


async def search(stub: Stub, arguments: dict[str, object], token: str | None = None) -> list[str]:
    request = pb.CallToolRequest(name="search_tools", input_json=json.dumps(arguments))
    reply = await stub.CallTool(request, metadata=bearer(token), timeout=10)
    found = json.loads(reply.structured_output_json)["tools"]
    if found:
        names = [line.split(":")[0] for line in reply.output.splitlines()]
        assert names == [tool["name"] for tool in found]
    return [tool["name"] for tool in found]


async def test_search_tools_finds_tools_by_what_they_do() -> None:
    async with (
        serve(None, worker=demo_worker(), search_tool=True) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = Stub(channel)
        assert (await search(stub, {"query": "calculate an arithmetic expression"}))[
            0
        ] == "calculate"
        assert await search(stub, {"query": "key", "limit": 2}) == ["kv_delete", "kv_get"]
        assert await search(stub, {"query": "search tools"}) == []  # never itself
        reply = await stub.CallTool(
            pb.CallToolRequest(name="search_tools", input_json='{"query": "zebra"}')
        )
        assert "No tool matches" in reply.output
        for bad in ['{"query": ""}', '{"query": "x", "limit": 0}', "[]", '{"limit": 3}']:
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await stub.CallTool(pb.CallToolRequest(name="search_tools", input_json=bad))
            assert failure_of(raised.value).reason == "TOOL_INVALID_ARGUMENT", bad


async def test_search_tools_shows_a_caller_only_the_tools_it_may_use(tmp_path: Path) -> None:
    tokens = write_tokens(
        tmp_path / "tokens.json",
        [{"token": AGENT, "tools": ["kv_*", "search_tools"], "label": "agent"}],
    )
    async with (
        serve(None, worker=demo_worker(), search_tool=True, auth_tokens=tokens) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = Stub(channel)
        assert await search(stub, {"query": "calculate an arithmetic expression"}, AGENT) == []
        assert (await search(stub, {"query": "delete a key"}, AGENT))[0] == "kv_delete"
        batch = await stub.CallTools(
            pb.CallToolsRequest(
                calls=[
                    pb.CallToolRequest(
                        name="search_tools",
                        input_json='{"query": "what time is it, or a key"}',
                        call_id="s",
                    )
                ]
            ),
            metadata=bearer(AGENT),
        )
        found = json.loads(batch.completed.results[0].structured_output_json)["tools"]
        assert found  # the kv tools match "key"; "now" would match "time" but is out of scope
        assert all(tool["name"].startswith("kv_") for tool in found)


async def test_search_tools_over_mcp_is_scoped_the_same_way(tmp_path: Path) -> None:
    async with (
        serve(None, worker=demo_worker(), search_tool=True, mcp_address="127.0.0.1:0") as served,
        Client(f"http://127.0.0.1:{served.app.mcp_port}/mcp", mode="legacy") as client,
    ):
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert "search_tools" in listed
        result = await client.call_tool("search_tools", {"query": "what time is it"})
        assert result.structured_content is not None
        assert result.structured_content["tools"][0]["name"] == "now"


async def test_anthropic_listings_defer_every_tool_outside_the_core_set() -> None:
    async with (
        serve(
            None, worker=demo_worker(), search_tool=True, core_tools=("kv_get", "echo")
        ) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = Stub(channel)
        for form in (pb.DEFINITION_FORMAT_ANTHROPIC, pb.DEFINITION_FORMAT_ANTHROPIC_STRICT):
            listing = await stub.ListDefinitionsSorted(
                pb.ListDefinitionsSortedRequest(format=form, anthropic_cache_control=True)
            )
            entries = json.loads(listing.definitions_json)
            loaded = [entry["name"] for entry in entries if not entry.get("defer_loading")]
            assert loaded == ["echo", "kv_get", "search_tools"]
            assert all(entry.get("defer_loading") in (None, True) for entry in entries)
            # the prompt-cache mark goes on the last tool the model sees
            marked = [entry["name"] for entry in entries if "cache_control" in entry]
            assert marked == ["search_tools"]
        openai = await stub.ListDefinitionsSorted(
            pb.ListDefinitionsSortedRequest(format=pb.DEFINITION_FORMAT_OPENAI_CHAT)
        )
        assert "defer_loading" not in openai.definitions_json
