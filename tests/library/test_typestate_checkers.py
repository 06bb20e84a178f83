"""The Worker typestate, and which handle resumes a paused batch, as mypy --strict and pyright
strict see them."""

from __future__ import annotations

from pathlib import Path

from tests.typecheck import mypy_errors, pyright_errors

# Line numbers below count from the first line of the snippet (pyright's are 0-based after
# the "# pyright: strict" line it gets prepended, so both agree).
VALID_FLOW = """\
from llmworker import Locked, Mutable, Tool, ToolMeta, Worker

def definition() -> tuple[ToolMeta, Tool]:
    raise NotImplementedError

worker: Worker[Mutable] = Worker()
worker.register_tool(definition)
worker.register_tools([definition])
worker.replace_tool(definition)
worker.unregister_tool("x")
locked: Worker[Locked] = worker.lock()
locked.add_pre_tool_call_hook(lambda ctx: __import__("llmworker").Continue())
handle = locked.tool_server_handle()
again: Worker[Mutable] = locked.unlock()
again.register_tool(definition)
"""

MISUSE = """\
from llmworker import Tool, ToolMeta, Worker

def definition() -> tuple[ToolMeta, Tool]:
    raise NotImplementedError

locked = Worker().lock()
locked.register_tool(definition)
locked.register_tools([definition])
locked.unregister_tool("x")
locked.replace_tool(definition)
locked.lock()
Worker().unlock()
"""


def test_the_valid_flow_type_checks(tmp_path: Path) -> None:
    assert mypy_errors(tmp_path, VALID_FLOW) == []
    assert pyright_errors(tmp_path, VALID_FLOW) == []


def test_mypy_rejects_registry_changes_on_a_locked_worker(tmp_path: Path) -> None:
    callable_type = "Callable[[], tuple[ToolMeta, Tool]]"
    assert mypy_errors(tmp_path, MISUSE) == [
        '7: Invalid self argument "Worker[Locked]" to attribute function "register_tool" '
        f'with type "Callable[[Worker[Mutable], {callable_type}], None]"  [misc]',
        '8: Invalid self argument "Worker[Locked]" to attribute function "register_tools" '
        f'with type "Callable[[Worker[Mutable], Iterable[{callable_type}]], None]"  [misc]',
        '9: Invalid self argument "Worker[Locked]" to attribute function "unregister_tool" '
        'with type "Callable[[Worker[Mutable], str], ToolMeta]"  [misc]',
        '10: Invalid self argument "Worker[Locked]" to attribute function "replace_tool" '
        f'with type "Callable[[Worker[Mutable], {callable_type}], None]"  [misc]',
        '11: Invalid self argument "Worker[Locked]" to attribute function "lock" '
        'with type "Callable[[Worker[Mutable]], Worker[Locked]]"  [misc]',
        '12: Invalid self argument "Worker[Mutable]" to attribute function "unlock" '
        'with type "Callable[[Worker[Locked]], Worker[Mutable]]"  [misc]',
    ]


def test_pyright_rejects_registry_changes_on_a_locked_worker(tmp_path: Path) -> None:
    rule = "reportAttributeAccessIssue"
    errors = pyright_errors(tmp_path, MISUSE)
    # Strict mode also reports the rejected attribute's type as unknown; same lines.
    knock_on = [error for error in errors if ": reportUnknownMemberType: " in error]
    assert {error.split(":")[0] for error in knock_on} <= {str(line) for line in range(7, 13)}
    assert [error for error in errors if error not in knock_on] == [
        f'{line}: {rule}: Cannot access attribute "{name}" for class "Worker[{state}]"'
        for line, name, state in [
            (7, "register_tool", "Locked"),
            (8, "register_tools", "Locked"),
            (9, "unregister_tool", "Locked"),
            (10, "replace_tool", "Locked"),
            (11, "lock", "Locked"),
            (12, "unlock", "Mutable"),
        ]
    ]


REMOTE_RESUME = """\
from llmworker import Approve, Locked, Paused, RemoteToolServerHandle, ToolCall, Worker

async def remote_flow(handle: RemoteToolServerHandle) -> None:
    outcome = await handle.call_tools([ToolCall("1", "delete", "{}")])
    while isinstance(outcome, Paused):
        outcome = await handle.resume(outcome, {"1": Approve()})
    print(outcome.results)

async def mixed_up(handle: RemoteToolServerHandle, worker: Worker[Locked]) -> None:
    outcome = await worker.call_tools([ToolCall("1", "delete", "{}")])
    if isinstance(outcome, Paused):
        await handle.resume(outcome, {"1": Approve()})
"""


def test_both_checkers_reject_an_in_process_paused_given_to_a_remote_handle(
    tmp_path: Path,
) -> None:
    assert mypy_errors(tmp_path, REMOTE_RESUME) == [
        '12: Argument 1 to "resume" of "RemoteToolServerHandle" has incompatible type '
        '"Paused"; expected "RemotePaused"  [arg-type]'
    ]
    assert pyright_errors(tmp_path, REMOTE_RESUME) == [
        '12: reportArgumentType: Argument of type "Paused" cannot be assigned to parameter '
        '"paused" of type "RemotePaused" in function "resume"'
    ]
