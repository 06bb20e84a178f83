"""ToolServer and ToolServerHandle: one shared map, lookups, calls, sorted definitions."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import random

import pytest

from llmworker import (
    DefinitionsSnapshot,
    Tool,
    ToolError,
    ToolMeta,
    ToolServer,
    ToolServerError,
    Worker,
    canonical_json,
)
from tests.support import CounterTool, EchoTool, FailingTool, SleepTool, definition_of


def test_handles_and_their_copies_share_one_map() -> None:
    worker = Worker()
    first = worker.tool_server_handle()
    second = copy.copy(first)
    worker.register_tool(definition_of("echo", EchoTool()))
    assert first == second == worker.tool_server_handle()
    assert "echo" in first
    assert "echo" in second.copy()
    assert ToolServer().handle() != first


def test_get_tool_returns_the_registered_meta_and_live_instance() -> None:
    worker = Worker()
    counter = CounterTool()
    worker.register_tool(definition_of("count", counter, "Counts"))
    found = worker.tool_server_handle().get_tool("count")
    assert found is not None
    meta, tool = found
    assert meta == ToolMeta("count", "Counts")
    assert tool is counter
    assert worker.tool_server_handle().get_tool("missing") is None


async def test_call_tool_runs_the_one_instance_and_keeps_its_state() -> None:
    worker = Worker()
    worker.register_tool(definition_of("count", CounterTool()))
    handle = worker.tool_server_handle()
    results = [await handle.call_tool("count", "{}") for _ in range(3)]
    assert results == ["1", "2", "3"]


async def test_call_tool_on_an_unknown_name_raises_tool_not_found() -> None:
    handle = Worker().tool_server_handle()
    with pytest.raises(ToolServerError.ToolNotFound, match=r"^Tool 'nope' not found$"):
        await handle.call_tool("nope", "{}")


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (ToolError.InvalidArgument("q is required"), "Invalid argument: q is required"),
        (ToolError.ExecutionFailed("disk full"), "Execution failed: disk full"),
        (RuntimeError("bug"), "Internal error: FailingTool.execute raised RuntimeError: bug"),
    ],
)
async def test_tool_failures_become_tool_execution_with_the_tool_error_text(
    error: Exception, text: str
) -> None:
    worker = Worker()
    worker.register_tool(definition_of("fail", FailingTool(error)))
    with pytest.raises(ToolServerError.ToolExecution) as caught:
        await worker.tool_server_handle().call_tool("fail", "{}")
    assert caught.value.message == text
    assert str(caught.value) == f"Tool execution failed: {text}"
    assert isinstance(caught.value.__cause__, ToolError)


async def test_a_tool_returning_a_non_string_is_an_internal_error() -> None:
    class Wrong:
        async def execute(self, input_json: str) -> str:
            return 42  # type: ignore[return-value]  # pyright: ignore[reportReturnType]

    worker = Worker()
    worker.register_tool(definition_of("wrong", Wrong()))
    with pytest.raises(ToolServerError.ToolExecution, match="returned int; it must return str"):
        await worker.tool_server_handle().call_tool("wrong", "{}")


def test_definitions_are_sorted_and_byte_identical_whatever_the_order() -> None:
    names = [f"tool_{index:02d}" for index in range(30)]
    snapshots: list[DefinitionsSnapshot] = []
    for seed in range(5):
        shuffled = names[:]
        random.Random(seed).shuffle(shuffled)
        worker = Worker()
        worker.register_tools(definition_of(name, EchoTool(), f"about {name}") for name in shuffled)
        handle = worker.tool_server_handle()
        assert [meta.name for meta in handle.tool_definitions_sorted()] == sorted(names)
        snapshots.append(handle.definitions_snapshot())
    assert len({snapshot.canonical_json for snapshot in snapshots}) == 1
    body = snapshots[0].canonical_json
    assert json.loads(body)[0] == {
        "name": "tool_00",
        "description": "about tool_00",
        "input_schema": {"type": "object", "properties": {}},
    }
    assert body == canonical_json([meta.to_json_object() for meta in snapshots[0].definitions])
    assert snapshots[0].fingerprint == hashlib.sha256(body).hexdigest()


def test_definitions_snapshot_is_cached_until_the_registry_changes() -> None:
    worker = Worker()
    worker.register_tool(definition_of("a", EchoTool()))
    handle = worker.tool_server_handle()
    first = handle.definitions_snapshot()
    assert handle.definitions_snapshot() is first
    worker.register_tool(definition_of("b", EchoTool()))
    second = handle.definitions_snapshot()
    assert second is not first
    assert [meta.name for meta in second.definitions] == ["a", "b"]
    assert second.fingerprint != first.fingerprint


async def test_a_running_call_finishes_on_the_instance_it_started_with() -> None:
    worker = Worker()
    old = SleepTool()
    worker.register_tool(definition_of("slow", old))
    handle = worker.tool_server_handle()
    running = asyncio.create_task(handle.call_tool("slow", '{"seconds": 0.05}'))
    await asyncio.sleep(0.01)
    replacement = CounterTool()
    worker.replace_tool(definition_of("slow", replacement))
    assert await running == "slept"
    assert old.started == 1
    assert await handle.call_tool("slow", "{}") == "1"

    worker.replace_tool(definition_of("slow", SleepTool()))
    running = asyncio.create_task(handle.call_tool("slow", '{"seconds": 0.05}'))
    await asyncio.sleep(0.01)
    assert worker.unregister_tool("slow").name == "slow"
    assert await running == "slept"
    assert handle.get_tool("slow") is None


def test_a_definition_returning_something_else_is_refused_clearly() -> None:
    worker = Worker()

    def not_a_tool() -> tuple[ToolMeta, Tool]:
        return ToolMeta("x"), object()  # type: ignore[return-value]  # pyright: ignore[reportReturnType]

    with pytest.raises(TypeError, match="'x' returned object, which has no async execute"):
        worker.register_tool(not_a_tool)
    assert "x" not in worker.tool_server_handle()
