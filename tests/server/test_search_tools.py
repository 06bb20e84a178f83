"""SearchTools: the caller's tools ranked against a few words (FTS5, BM25), on a fixed,
labelled set of queries over the demo tools; scoped by token; bounded input refused with the
field named; the index following registrations, replacements and removals."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import grpc.aio
import pytest

from llmworker import (
    DefinitionFormat,
    RemoteServiceError,
    RemoteToolServerHandle,
    SyncRemoteToolServerHandle,
    Tool,
    ToolDefinition,
    ToolFactory,
    ToolMeta,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import Served, failure_of, serve
from tests.server.test_auth import AGENT, OPS, bearer, standard_tokens

Stub = tool_service_pb2_grpc.ToolServiceStub

LABELLED = [  # a query as a model might write it → the tool it means
    ("calculate an arithmetic expression", "calculate"),
    ("evaluate 2+3*4", "calculate"),
    ("calc", "calculate"),
    ("delete a key", "kv_delete"),
    ("what time is it", "now"),
    ("current date and time in a timezone", "now"),
    ("store a value under a key", "kv_set"),
    ("get the value of a key", "kv_get"),
    ("list all keys", "kv_list"),
    ("who am i", "whoami"),
    ("check an order", "validate_order"),
    ("count down with progress", "countdown"),
    ("send the text back unchanged", "echo"),
]


@asynccontextmanager
async def demo(**overrides: object) -> AsyncGenerator[tuple[Served, Stub]]:
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with (
        serve(None, worker=worker, **overrides) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        yield served, Stub(channel)


async def names(stub: Stub, query: str, token: str | None = None, **fields: object) -> list[str]:
    request = pb.SearchToolsRequest(query=query, **fields)  # type: ignore[arg-type]
    response = await stub.SearchTools(request, metadata=bearer(token), timeout=10)
    assert list(response.scores) == sorted(response.scores, reverse=True)
    assert len(response.scores) == len(response.definitions)
    return [definition.name for definition in response.definitions]


async def test_each_labelled_query_finds_its_tool_first() -> None:
    async with demo(internal=False) as (_, stub):
        found = {query: (await names(stub, query, limit=3))[:1] for query, _ in LABELLED}
    assert found == {query: [expected] for query, expected in LABELLED}


async def test_limits_and_no_match() -> None:
    async with demo(internal=False) as (_, stub):
        assert len(await names(stub, "key value")) <= 10
        assert len(await names(stub, "a e i o u key value tool text", limit=2)) == 2
        assert await names(stub, "zzzzqqqq nothing") == []


async def test_a_format_gives_the_hits_as_that_provider_takes_them_best_first() -> None:
    async with demo(internal=False) as (_, stub):
        response = await stub.SearchTools(
            pb.SearchToolsRequest(
                query="key", limit=4, format=pb.DEFINITION_FORMAT_OPENAI_CHAT_STRICT
            ),
            timeout=10,
        )
    entries = json.loads(response.definitions_json)
    assert [entry["function"]["name"] for entry in entries] == [
        definition.name for definition in response.definitions
    ]
    assert all(entry["function"]["strict"] is True for entry in entries)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"query": ""}, "query must be 1-500 characters"),
        ({"query": "   "}, "query must be 1-500 characters"),
        ({"query": "x" * 501}, "query must be 1-500 characters"),
        ({"query": "?!. ,"}, "query has no words"),
        ({"query": "key", "limit": 101}, "limit must be 0-100"),
        ({"query": "key", "limit": -1}, "limit must be 0-100"),
        ({"query": "key", "format": 99}, "format 99 is not a DefinitionFormat"),
    ],
)
async def test_bad_requests_are_refused_naming_the_field(
    fields: dict[str, object], named: str
) -> None:
    async with demo(internal=False) as (_, stub):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.SearchTools(pb.SearchToolsRequest(**fields), timeout=10)  # type: ignore[arg-type]
        failure = failure_of(refused.value)
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_REQUEST",
        )
        assert named in failure.message
        assert await names(stub, "calculate") == ["calculate"]  # still serving


async def test_a_caller_finds_only_the_tools_its_token_allows(tmp_path: Path) -> None:
    async with demo(internal=False, auth_tokens=standard_tokens(tmp_path / "t.json")) as (_, stub):
        assert "calculate" not in await names(stub, "calculate key", AGENT)
        assert await names(stub, "calculate", AGENT) == []
        assert (await names(stub, "calculate", OPS))[:1] == ["calculate"]
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await names(stub, "calculate", None)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


@tool_registry
class Weather:
    @tool
    async def forecast(self, city: str, days: int) -> str:
        """The weather to come in a city."""
        return f"sun in {city} for {days} days"


@tool_registry
class Weather2:
    @tool(name="forecast")
    async def forecast(self, city: str) -> str:
        """Tide tables for a harbour."""
        return f"tides at {city}"


def provide(served: Served, definitions: list[ToolDefinition]) -> None:
    """Register ``definitions`` as a provider's tools (the same name replaces)."""
    for definition in definitions:
        meta, made = definition()
        served.app.registry.register_remote(meta, functools.partial(_same, made), "p", "test")


def _same(made: Tool) -> Tool:
    return made


async def test_the_index_follows_registrations_replacements_and_removals(tmp_path: Path) -> None:
    mutable = {"internal_socket": tmp_path / "r.sock", "token": "registry-token-0123456789"}
    async with demo(**mutable) as (served, stub):
        assert await names(stub, "weather in a city") == []
        provide(served, [*tool_definitions(Weather())])
        assert (await names(stub, "weather in a city"))[:1] == ["forecast"]
        assert (await names(stub, "days"))[:1] == ["forecast"]  # a parameter name
        provide(served, [*tool_definitions(Weather2())])  # replaced: another description
        assert "forecast" not in await names(stub, "weather")
        assert await names(stub, "tide harbour") == ["forecast"]
        served.app.registry.unregister("forecast")
        assert await names(stub, "tide harbour") == []


async def test_the_python_clients_search_too(tmp_path: Path) -> None:
    async with demo(auth_tokens=standard_tokens(tmp_path / "tokens.json")) as (served, _):
        handle = await RemoteToolServerHandle.connect(served.target, token=AGENT, watch=False)
        async with handle:
            found = await handle.search_tools("delete a key", limit=3)
            assert found.names[0] == "kv_delete"
            assert all(name == "echo" or name.startswith("kv_") for name in found.names)
            assert list(found.scores) == sorted(found.scores, reverse=True)
            assert found.formatted is None
            formatted = await handle.search_tools("calc", form=DefinitionFormat.ANTHROPIC)
            assert formatted.names == ()  # calculate is out of the agent's scope
            with pytest.raises(RemoteServiceError) as raised:
                await handle.search_tools("", limit=3)
            assert raised.value.reason == "INVALID_REQUEST"
            assert "query" in raised.value.message
        ops = await RemoteToolServerHandle.connect(served.target, token=OPS, watch=False)
        async with ops:
            anthropic = await ops.search_tools("calc", limit=1, form=DefinitionFormat.ANTHROPIC)
            assert anthropic.formatted is not None
            assert [entry["name"] for entry in json.loads(anthropic.formatted.json)] == [
                "calculate"
            ]

        def blocking() -> tuple[str, ...]:
            with SyncRemoteToolServerHandle(served.target, token=AGENT) as sync_handle:
                return sync_handle.search_tools("list all keys", limit=1).names

        assert await asyncio.to_thread(blocking) == ("kv_list",)


_LONG = (
    "Looks up places and cities, their streets, parks and museums, opening hours, the weather "
    "now and then, a report of the traffic, and much more about every place one may visit"
)


class _Plain:
    async def execute(self, input_json: str) -> str:
        return input_json


async def test_tools_with_every_word_come_first_when_there_are_enough() -> None:
    worker = Worker()
    both = [ToolFactory(ToolMeta(f"tool_{i}", _LONG, {}), _Plain) for i in range(12)]
    alone = ToolFactory(ToolMeta("weather", "Weather", {}), _Plain)  # BM25's best for "weather"
    worker.register_tools([*both, alone])
    async with (
        serve(None, worker=worker) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = Stub(channel)
        ten = await names(stub, "weather report", limit=10)
        assert len(ten) == 10
        assert all(name.startswith("tool_") for name in ten)
        # fewer than asked have both words: every tool with either word, by BM25 alone
        assert (await names(stub, "weather report", limit=20))[0] == "weather"
