"""Worker: registration, the Mutable/Locked typestate at run time, and moves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest

from llmworker import (
    Continue,
    Locked,
    Mutable,
    Tool,
    ToolCallContext,
    ToolMeta,
    ToolRegistryError,
    ToolServerError,
    Worker,
    WorkerStateError,
)
from tests.support import CounterTool, EchoTool, counting_definition, definition_of


def test_a_definition_is_called_exactly_once_at_registration() -> None:
    made: list[str] = []
    worker = Worker()
    worker.register_tool(counting_definition("echo", made))
    assert made == ["echo"]
    locked = worker.lock()
    handle = locked.tool_server_handle()
    assert handle.get_tool("echo") is not None
    assert made == ["echo"]


def test_duplicate_name_raises_registry_error_and_keeps_the_first() -> None:
    worker = Worker()
    first = EchoTool()
    worker.register_tool(definition_of("echo", first))
    with pytest.raises(ToolRegistryError.DuplicateName, match=r"^Tool with name 'echo' already"):
        worker.register_tool(definition_of("echo", EchoTool()))
    found = worker.tool_server_handle().get_tool("echo")
    assert found is not None
    assert found[1] is first


def test_register_tools_is_all_or_nothing_against_the_registry() -> None:
    made: list[str] = []
    worker = Worker()
    worker.register_tool(counting_definition("taken", made))
    with pytest.raises(ToolRegistryError.DuplicateName, match="'taken'"):
        worker.register_tools([counting_definition("a", made), counting_definition("taken", made)])
    assert made == ["taken"], "no factory of a refused batch may run"
    assert [meta.name for meta in worker.tool_server_handle().tool_definitions_sorted()] == [
        "taken"
    ]


def test_register_tools_is_all_or_nothing_within_the_batch() -> None:
    made: list[str] = []
    worker = Worker()
    with pytest.raises(ToolRegistryError.DuplicateName, match="'twin'"):
        worker.register_tools(
            [counting_definition("twin", made), counting_definition("twin", made)]
        )
    assert made == []
    assert len(worker.tool_server_handle()) == 0


def test_plain_callable_duplicates_register_nothing_either() -> None:
    worker = Worker()
    with pytest.raises(ToolRegistryError.DuplicateName):
        worker.register_tools(
            [
                definition_of("a", EchoTool()),
                definition_of("b", EchoTool()),
                definition_of("a", EchoTool()),
            ]
        )
    assert len(worker.tool_server_handle()) == 0


def test_a_failing_factory_registers_nothing() -> None:
    def broken() -> tuple[ToolMeta, Tool]:
        raise RuntimeError("cannot connect")

    worker = Worker()
    with pytest.raises(RuntimeError, match="cannot connect"):
        worker.register_tools([definition_of("a", EchoTool()), broken])
    assert len(worker.tool_server_handle()) == 0


def test_lock_and_unlock_move_the_worker_and_keep_tools_and_hooks() -> None:
    worker: Worker[Mutable] = Worker()
    worker.register_tool(definition_of("echo", EchoTool()))
    locked: Worker[Locked] = worker.lock()
    assert locked.is_locked
    assert "echo" in locked.tool_server_handle()
    unlocked: Worker[Mutable] = locked.unlock()
    assert not unlocked.is_locked
    unlocked.register_tool(definition_of("count", CounterTool()))
    assert len(unlocked.tool_server_handle()) == 2


def continue_always(ctx: ToolCallContext) -> Continue:
    return Continue()


USES_OF_A_WORKER: list[Callable[[Any], object]] = [
    lambda w: w.register_tool(definition_of("x", EchoTool())),
    lambda w: w.tool_server_handle(),
    lambda w: w.lock(),
    lambda w: w.add_pre_tool_call_hook(continue_always),
    lambda w: w.is_locked,
]


@pytest.mark.parametrize("use", USES_OF_A_WORKER)
def test_a_consumed_worker_refuses_any_further_use(use: Callable[[Any], object]) -> None:
    worker = Worker()
    worker.lock()
    with pytest.raises(WorkerStateError, match=r"consumed by lock\(\); use the Worker that lock"):
        use(worker)


async def test_a_consumed_worker_refuses_to_call_tools() -> None:
    worker = Worker()
    worker.lock().unlock()
    with pytest.raises(WorkerStateError, match=r"consumed by lock\(\)"):
        await worker.call_tools([])


REGISTRY_CHANGES: list[tuple[str, Callable[[Any], object]]] = [
    ("register_tools", lambda w: w.register_tool(definition_of("x", EchoTool()))),
    ("register_tools", lambda w: w.register_tools([definition_of("x", EchoTool())])),
    ("unregister_tool", lambda w: w.unregister_tool("echo")),
    ("replace_tool", lambda w: w.replace_tool(definition_of("echo", EchoTool()))),
    ("lock", lambda w: w.lock()),
]


@pytest.mark.parametrize(("operation", "use"), REGISTRY_CHANGES)
def test_a_locked_worker_refuses_registry_changes_at_run_time(
    operation: str, use: Callable[[Any], object]
) -> None:
    worker = Worker()
    worker.register_tool(definition_of("echo", EchoTool()))
    locked = cast(Any, worker.lock())
    with pytest.raises(WorkerStateError, match=rf"{operation}\(\) is not allowed on a locked"):
        use(locked)
    assert [meta.name for meta in locked.tool_server_handle().tool_definitions_sorted()] == ["echo"]


def test_unlock_on_a_mutable_worker_is_refused_at_run_time() -> None:
    worker = cast(Any, Worker())
    with pytest.raises(WorkerStateError, match="already mutable"):
        worker.unlock()


def test_unregister_and_replace_need_an_existing_name() -> None:
    worker = Worker()
    with pytest.raises(ToolServerError.ToolNotFound, match="'ghost'"):
        worker.unregister_tool("ghost")
    with pytest.raises(ToolServerError.ToolNotFound, match="'ghost'"):
        worker.replace_tool(definition_of("ghost", EchoTool()))


def test_state_markers_have_no_instances() -> None:
    with pytest.raises(TypeError, match="type-level Worker state"):
        Mutable()
