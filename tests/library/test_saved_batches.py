"""Worker.save_paused / load_paused: a paused batch as JSON text, resumed by another worker
(standing in for another process) with the same tools and pre-hooks."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from llmworker import (
    Approve,
    ApproveWithInput,
    BatchOutcome,
    Completed,
    Continue,
    Deny,
    Mutable,
    Pause,
    Paused,
    PreToolCallHook,
    PreToolCallOutcome,
    Skip,
    ToolCall,
    ToolCallContext,
    ToolContext,
    ToolResult,
    ToolServerError,
    Worker,
    WorkerError,
    tool,
    tool_definitions,
    tool_registry,
)

# -- tools -------------------------------------------------------------------------------


@tool_registry
class Tools:
    """One instance per worker: ``runs`` says which calls ran on it."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    @tool(requires_approval=True)
    async def delete(self, path: str) -> str:
        """Delete a path (after approval)."""
        self.runs.append(f"delete {path}")
        return f"deleted {path}"

    @tool
    async def echo(self, text: str) -> str:
        """The text."""
        self.runs.append(f"echo {text}")
        return text

    @tool(requires_approval=True)
    async def whoami(self, context: ToolContext) -> str:
        """The call's metadata and the seconds it has left (after approval)."""
        self.runs.append("whoami")
        left = context.time_remaining()
        return json.dumps({"metadata": dict(context.metadata), "left": left})

    @tool(requires_approval=True)
    async def stall(self, seconds: float) -> str:
        """Sleep (after approval)."""
        import asyncio

        self.runs.append("stall")
        await asyncio.sleep(seconds)
        return "woke"


@tool_registry
class EchoOnly:
    """A tool set without ``delete``: what a process deployed without it has."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    @tool
    async def echo(self, text: str) -> str:
        """The text."""
        self.runs.append(f"echo {text}")
        return text


# -- hooks (module level: named, the same in every "process") ----------------------------

HOOK_LOG: list[tuple[str, str, str]] = []  # (hook, call id, input it saw)
PAUSED_ONCE: set[str] = set()  # call ids pause_once paused already (its outside state)


@pytest.fixture(autouse=True)
def fresh_hook_state() -> Iterator[None]:
    HOOK_LOG.clear()
    PAUSED_ONCE.clear()
    yield
    HOOK_LOG.clear()
    PAUSED_ONCE.clear()


def skip_marked(ctx: ToolCallContext) -> PreToolCallOutcome:
    """Skips calls whose id starts with ``skip``."""
    HOOK_LOG.append(("skip_marked", ctx.call.id, ctx.call.input_json))
    return Skip() if ctx.call.id.startswith("skip") else Continue()


def pause_once(ctx: ToolCallContext) -> PreToolCallOutcome:
    """Pauses each call the first time it sees it."""
    HOOK_LOG.append(("pause_once", ctx.call.id, ctx.call.input_json))
    if ctx.call.id in PAUSED_ONCE:
        return Continue()
    PAUSED_ONCE.add(ctx.call.id)
    return Pause(f"check {ctx.call.id}")


def record_after(ctx: ToolCallContext) -> PreToolCallOutcome:
    HOOK_LOG.append(("record_after", ctx.call.id, ctx.call.input_json))
    return Continue()


class Recorder:
    """A callable object as a hook: named by its class."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def __call__(self, ctx: ToolCallContext) -> PreToolCallOutcome:
        HOOK_LOG.append((self.tag, ctx.call.id, ctx.call.input_json))
        return Continue()


def nested_hook(tag: str) -> PreToolCallHook:
    def hook(ctx: ToolCallContext) -> PreToolCallOutcome:  # qualname nested_hook.<locals>.hook
        HOOK_LOG.append((tag, ctx.call.id, ctx.call.input_json))
        return Continue()

    return hook


def name_of(hook: Callable[..., object]) -> str:
    return f"{hook.__module__}.{hook.__qualname__}"


# -- helpers -----------------------------------------------------------------------------


def worker_with(
    hooks: list[PreToolCallHook], tools: object | None = None
) -> tuple[Worker[Mutable], Any]:
    worker = Worker()
    app = Tools() if tools is None else tools
    worker.register_tools(tool_definitions(app))
    for hook in hooks:
        worker.add_pre_tool_call_hook(hook)
    return worker, app


def paused(outcome: BatchOutcome) -> Paused:
    assert isinstance(outcome, Paused), outcome
    return outcome


def completed(outcome: BatchOutcome) -> list[ToolResult]:
    assert isinstance(outcome, Completed), outcome
    return outcome.results


def delete(call_id: str, path: str) -> ToolCall:
    return ToolCall(call_id, "delete", json.dumps({"path": path}))


def echo(call_id: str, text: str) -> ToolCall:
    return ToolCall(call_id, "echo", json.dumps({"text": text}))


async def a_saved_batch() -> tuple[Worker[Mutable], str]:
    worker, _ = worker_with([])
    batch = paused(await worker.call_tools([delete("d", "/tmp/a"), echo("e", "hi")]))
    return worker, worker.save_paused(batch)


# -- 1. round trip -----------------------------------------------------------------------


async def test_a_batch_paused_for_approval_resumes_on_another_worker() -> None:
    first, first_tools = worker_with([skip_marked])
    second, second_tools = worker_with([skip_marked])  # a fresh Tools instance
    batch = paused(
        await first.call_tools(
            [
                delete("d", "/tmp/a"),
                ToolCall("m", "missing", "{}"),
                echo("skip-1", "never"),
                echo("e", "hi"),
            ]
        )
    )
    assert batch.awaiting_approval == ("d",)

    loaded = second.load_paused(first.save_paused(batch))

    assert [call.id for call in loaded.pending_calls] == ["d", "skip-1", "e"]
    assert [call.input_json for call in loaded.pending_calls] == [
        call.input_json for call in batch.pending_calls
    ]
    assert loaded.awaiting_approval == ("d",)
    assert loaded.paused_call.id == "d"
    assert loaded.reason == batch.reason
    [missing] = loaded.results
    assert (missing.call_id, missing.content, missing.is_error) == (
        "m",
        "Tool 'missing' not found",
        True,
    )
    assert isinstance(missing.error, ToolServerError.ToolNotFound)

    results = completed(await second.resume(loaded, {"d": Approve()}))

    assert [result.call_id for result in results] == ["d", "m", "skip-1", "e"]
    ran, unknown, skipped, echoed = results
    assert (ran.content, ran.is_error, ran.skipped) == ("deleted /tmp/a", False, False)
    assert (unknown.content, unknown.is_error, unknown.skipped) == (
        "Tool 'missing' not found",
        True,
        False,
    )
    assert isinstance(unknown.error, ToolServerError.ToolNotFound)
    assert unknown.error.name == "missing"
    assert (skipped.is_error, skipped.skipped) == (False, True)
    assert "skipped" in skipped.content
    assert (echoed.content, echoed.is_error) == ("hi", False)
    assert sorted(second_tools.runs) == ["delete /tmp/a", "echo hi"]
    assert first_tools.runs == []


async def test_a_skip_decided_before_the_save_stays_a_skip() -> None:
    first, _ = worker_with([skip_marked, pause_once, record_after])
    second, second_tools = worker_with([skip_marked, pause_once, record_after])
    batch = paused(await first.call_tools([echo("skip-1", "never"), echo("p", "hi")]))
    assert batch.paused_call.id == "p"
    HOOK_LOG.clear()

    loaded = second.load_paused(first.save_paused(batch))
    [skipped_before] = loaded.results
    assert (skipped_before.call_id, skipped_before.skipped, skipped_before.is_error) == (
        "skip-1",
        True,
        False,
    )
    results = completed(await second.resume(loaded))

    assert [(r.call_id, r.skipped, r.content) for r in results] == [
        ("skip-1", True, skipped_before.content),
        ("p", False, "hi"),
    ]
    assert second_tools.runs == ["echo hi"]
    assert [(hook, call_id) for hook, call_id, _ in HOOK_LOG] == [("record_after", "p")]


# -- 2. saving does not consume ----------------------------------------------------------


async def test_saving_leaves_the_batch_resumable_where_it_paused() -> None:
    # Both copies are resumable: the application must resume the batch in one place only.
    worker, tools = worker_with([])
    batch = paused(await worker.call_tools([delete("d", "/tmp/a")]))

    saved = worker.save_paused(batch)
    assert worker.save_paused(batch) == saved  # saving twice gives the same text

    results = completed(await worker.resume(batch, {"d": Approve()}))
    assert [r.content for r in results] == ["deleted /tmp/a"]
    assert tools.runs == ["delete /tmp/a"]


# -- 3. a denial before a re-pause -------------------------------------------------------


async def test_a_denial_decided_before_a_re_pause_survives_the_save() -> None:
    first, first_tools = worker_with([])
    second, second_tools = worker_with([])
    batch = paused(await first.call_tools([delete("a", "/a"), delete("b", "/b")]))
    assert batch.awaiting_approval == ("a", "b")

    again = paused(await first.resume(batch, {"a": Deny("not on a Friday")}))
    assert again.awaiting_approval == ("b",)

    loaded = second.load_paused(first.save_paused(again))
    assert [call.id for call in loaded.pending_calls] == ["b"]
    assert loaded.awaiting_approval == ("b",)
    [denied_before] = loaded.results
    assert isinstance(denied_before.error, ToolServerError.CallDenied)
    assert denied_before.error.reason == "not on a Friday"

    denied, approved = completed(await second.resume(loaded, {"b": Approve()}))

    assert (denied.call_id, denied.is_error) == ("a", True)
    assert isinstance(denied.error, ToolServerError.CallDenied)
    assert denied.error.reason == "not on a Friday"
    assert (denied.error.call_id, denied.error.name) == ("a", "delete")
    assert "not on a Friday" in denied.content
    assert (approved.call_id, approved.content, approved.is_error) == ("b", "deleted /b", False)
    assert second_tools.runs == ["delete /b"]
    assert first_tools.runs == []


# -- 4. the hook that paused is not asked again ------------------------------------------


async def test_the_hook_that_paused_is_not_asked_again_after_loading() -> None:
    first, _ = worker_with([pause_once, record_after])
    second, second_tools = worker_with([pause_once, record_after])
    batch = paused(await first.call_tools([echo("p", "hi")]))
    assert (batch.paused_call.id, batch.reason, batch.awaiting_approval) == ("p", "check p", ())
    assert [(hook, call_id) for hook, call_id, _ in HOOK_LOG] == [("pause_once", "p")]
    PAUSED_ONCE.clear()  # another process: pause_once would pause "p" again if asked
    HOOK_LOG.clear()

    loaded = second.load_paused(first.save_paused(batch))
    assert (loaded.paused_call.id, loaded.reason) == ("p", "check p")
    results = completed(await second.resume(loaded))

    assert [(r.call_id, r.content) for r in results] == [("p", "hi")]
    assert HOOK_LOG == [("record_after", "p", '{"text": "hi"}')]
    assert second_tools.runs == ["echo hi"]


async def test_a_class_instance_hook_that_paused_is_not_asked_again() -> None:
    class PauseOnce:
        def __init__(self) -> None:
            self.asked: list[str] = []

        def __call__(self, ctx: ToolCallContext) -> PreToolCallOutcome:
            self.asked.append(ctx.call.id)
            return Pause("wait") if self.asked.count(ctx.call.id) == 1 else Continue()

    first_pauser, second_pauser = PauseOnce(), PauseOnce()
    first, _ = worker_with([first_pauser, Recorder("after")])
    second, _ = worker_with([second_pauser, Recorder("after")])
    batch = paused(await first.call_tools([echo("p", "hi")]))
    HOOK_LOG.clear()

    results = completed(await second.resume(second.load_paused(first.save_paused(batch))))

    assert [r.content for r in results] == ["hi"]
    assert first_pauser.asked == ["p"]
    assert second_pauser.asked == []
    assert HOOK_LOG == [("after", "p", '{"text": "hi"}')]


# -- 5. ApproveWithInput after loading ---------------------------------------------------


async def test_approve_with_input_after_loading_reruns_every_hook_on_the_new_input() -> None:
    first, first_tools = worker_with([pause_once, record_after])
    second, second_tools = worker_with([pause_once, record_after])
    batch = paused(await first.call_tools([delete("d", "/tmp/a")]))
    assert batch.awaiting_approval == ("d",)
    assert HOOK_LOG == []  # approval is asked before any hook runs

    by_hook = paused(await first.resume(batch, {"d": Approve()}))  # now pause_once pauses
    assert (by_hook.paused_call.id, by_hook.awaiting_approval) == ("d", ())
    assert HOOK_LOG == [("pause_once", "d", '{"path": "/tmp/a"}')]
    HOOK_LOG.clear()

    loaded = second.load_paused(first.save_paused(by_hook))
    assert loaded.awaiting_approval == ()
    edited = '{"path": "/tmp/b"}'
    results = completed(await second.resume(loaded, {"d": ApproveWithInput(edited)}))

    assert [r.content for r in results] == ["deleted /tmp/b"]
    assert [("pause_once", "d", edited), ("record_after", "d", edited)] == HOOK_LOG
    assert second_tools.runs == ["delete /tmp/b"]
    assert first_tools.runs == []


# -- 6. metadata and timeout -------------------------------------------------------------


async def test_metadata_and_timeout_survive_and_the_deadline_does_not() -> None:
    first, _ = worker_with([])
    second, second_tools = worker_with([])
    metadata = {"user": "ada", "tenant": "t-1", "note": "naïve ✓"}
    call = ToolCall("w", "whoami", "{}", metadata, time.monotonic() + 600, 2.5)
    batch = paused(await first.call_tools([call]))

    loaded = second.load_paused(first.save_paused(batch))
    [pending] = loaded.pending_calls
    assert dict(pending.metadata) == metadata
    assert pending.timeout == 2.5
    assert pending.deadline is None  # documented: set deadlines again on resume

    [result] = completed(await second.resume(loaded, {"w": Approve()}))
    seen = json.loads(result.content)
    assert seen["metadata"] == metadata
    assert 0 < seen["left"] <= 2.5
    assert second_tools.runs == ["whoami"]


async def test_the_saved_timeout_still_cuts_the_call_short() -> None:
    first, _ = worker_with([])
    second, _ = worker_with([])
    call = ToolCall("s", "stall", '{"seconds": 5}', timeout=0.05)
    batch = paused(await first.call_tools([call]))

    started = time.monotonic()
    [result] = completed(
        await second.resume(second.load_paused(first.save_paused(batch)), {"s": Approve()})
    )

    assert time.monotonic() - started < 2
    assert result.is_error
    assert isinstance(result.error, ToolServerError.ToolTimeout)


# -- 7. other hooks, other tools ---------------------------------------------------------


@pytest.mark.parametrize(
    "loader_hooks",
    [
        pytest.param([record_after, pause_once], id="other-order"),
        pytest.param([pause_once], id="one-missing"),
        pytest.param([pause_once, record_after, skip_marked], id="one-more"),
        pytest.param([pause_once, Recorder("x")], id="other-name"),
        pytest.param([], id="none"),
    ],
)
async def test_a_different_hook_chain_refuses_to_load(loader_hooks: list[PreToolCallHook]) -> None:
    first, _ = worker_with([pause_once, record_after])
    other, other_tools = worker_with(loader_hooks)
    saved = first.save_paused(paused(await first.call_tools([delete("d", "/tmp/a")])))

    with pytest.raises(WorkerError) as refused:
        other.load_paused(saved)

    message = str(refused.value)
    assert str([name_of(pause_once), name_of(record_after)]) in message
    loader_names = [
        name_of(type(hook)) if isinstance(hook, Recorder) else name_of(hook)
        for hook in loader_hooks
    ]
    assert str(loader_names) in message
    assert "same hooks" in message
    assert other_tools.runs == []


async def test_a_worker_without_the_tool_loads_it_as_an_unknown_tool() -> None:
    first, first_tools = worker_with([])
    elsewhere, elsewhere_tools = worker_with([], EchoOnly())
    batch = paused(await first.call_tools([delete("d", "/tmp/a"), echo("e", "hi")]))

    loaded = elsewhere.load_paused(first.save_paused(batch))
    assert [call.id for call in loaded.pending_calls] == ["e"]
    assert loaded.awaiting_approval == ()
    [gone] = loaded.results
    assert (gone.call_id, gone.is_error) == ("d", True)
    assert isinstance(gone.error, ToolServerError.ToolNotFound)

    missing, echoed = completed(await elsewhere.resume(loaded))

    assert (missing.call_id, missing.content, missing.is_error) == (
        "d",
        "Tool 'delete' not found",
        True,
    )
    assert isinstance(missing.error, ToolServerError.ToolNotFound)
    assert (echoed.call_id, echoed.content) == ("e", "hi")
    assert elsewhere_tools.runs == ["echo hi"]
    assert first_tools.runs == []


async def test_saving_through_another_worker_records_the_batch_s_own_hooks() -> None:
    # The text names the chain the batch paused in (whose index next_hook counts), not the
    # saving worker's: a hookless worker that saves it cannot load it, a twin of the owner can.
    owner, _ = worker_with([pause_once, record_after])
    bystander, _ = worker_with([])
    batch = paused(await owner.call_tools([echo("p", "hi")]))

    saved = bystander.save_paused(batch)
    twin, _ = worker_with([pause_once, record_after])
    results = completed(await twin.resume(twin.load_paused(saved)))
    assert [r.content for r in results] == ["hi"]
    with pytest.raises(WorkerError, match="same hooks"):
        bystander.load_paused(saved)


async def test_the_locked_successor_saves_and_loads_with_the_same_hooks() -> None:
    first, _ = worker_with([pause_once])
    batch = paused(await first.call_tools([echo("p", "hi")]))
    locked = first.lock()  # the hooks move with the worker
    saved = locked.save_paused(batch)

    second, _ = worker_with([pause_once])
    second_locked = second.lock()
    results = completed(await second_locked.resume(second_locked.load_paused(saved)))
    assert [r.content for r in results] == ["hi"]


# -- 8. hooks without a stable name ------------------------------------------------------


async def test_a_lambda_hook_is_listed_and_refuses_the_save() -> None:
    worker, _ = worker_with([record_after])
    worker.add_pre_tool_call_hook(lambda ctx: Continue())
    batch = paused(await worker.call_tools([delete("d", "/tmp/a")]))

    [unnamed] = worker.unnamed_pre_hooks()
    assert "lambda" in unnamed

    with pytest.raises(WorkerError, match="stable name") as refused:
        worker.save_paused(batch)
    assert "lambda" in str(refused.value)
    # The refusal leaves the batch as it was: it still resumes here.
    assert [r.content for r in completed(await worker.resume(batch, {"d": Approve()}))] == [
        "deleted /tmp/a"
    ]


async def test_nested_functions_bound_methods_and_callable_objects_have_stable_names() -> None:
    def chain() -> list[PreToolCallHook]:
        return [nested_hook("nested"), Recorder("object"), Recorder("method").__call__]

    first, _ = worker_with(chain())
    second, second_tools = worker_with(chain())  # equal names, other objects
    assert first.unnamed_pre_hooks() == []
    batch = paused(await first.call_tools([delete("d", "/tmp/a")]))

    saved = first.save_paused(batch)
    assert name_of(nested_hook("x")).endswith("nested_hook.<locals>.hook")
    assert name_of(nested_hook("x")) in saved
    assert name_of(Recorder) in saved

    results = completed(await second.resume(second.load_paused(saved), {"d": Approve()}))
    assert [r.content for r in results] == ["deleted /tmp/a"]
    assert [tag for tag, _, _ in HOOK_LOG] == ["nested", "object", "method"]
    assert second_tools.runs == ["delete /tmp/a"]


def test_a_worker_with_only_named_hooks_lists_none() -> None:
    worker, _ = worker_with([pause_once, Recorder("r"), nested_hook("n")])
    assert worker.unnamed_pre_hooks() == []


async def test_a_partial_hook_has_no_stable_name() -> None:
    # A partial has no __qualname__ and its C type no Python __call__: every partial would
    # share the name "functools.partial", so partial(a) and partial(b) would be alike.
    worker, _ = worker_with([functools.partial(skip_marked)])
    batch = paused(await worker.call_tools([delete("d", "/tmp/a")]))

    assert len(worker.unnamed_pre_hooks()) == 1
    with pytest.raises(WorkerError, match="stable name"):
        worker.save_paused(batch)


async def test_a_partial_chain_does_not_load_on_another_partial_chain() -> None:
    first, _ = worker_with([functools.partial(skip_marked)])
    second, second_tools = worker_with([functools.partial(record_after)])
    batch = paused(await first.call_tools([delete("d", "/tmp/a")]))

    with pytest.raises(WorkerError):
        second.load_paused(first.save_paused(batch))
    assert second_tools.runs == []


# -- 9. text that is no save -------------------------------------------------------------


def mutated(saved: str, change: Callable[[dict[str, Any]], object]) -> str:
    state: dict[str, Any] = json.loads(saved)
    change(state)
    return json.dumps(state)


GARBAGE = [
    pytest.param("", id="empty"),
    pytest.param("not json", id="words"),
    pytest.param("{not json", id="broken-json"),
    pytest.param("\x00\xff", id="control-bytes"),
]
NOT_AN_OBJECT = [
    pytest.param("[]", id="array"),
    pytest.param("null", id="null"),
    pytest.param('"text"', id="string"),
    pytest.param("42", id="number"),
]


@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_raises_worker_error_saying_what_to_pass(text: str) -> None:
    worker, _ = worker_with([])
    with pytest.raises(WorkerError, match="pass the text save_paused returned"):
        worker.load_paused(text)


@pytest.mark.parametrize("text", NOT_AN_OBJECT)
def test_json_that_is_no_saved_batch_raises_worker_error(text: str) -> None:
    worker, _ = worker_with([])
    with pytest.raises(WorkerError, match="saved batch"):
        worker.load_paused(text)


def test_deeply_nested_garbage_raises_worker_error() -> None:
    # JSON nested past the recursion limit is a WorkerError too, not a RecursionError.
    worker, _ = worker_with([])
    with pytest.raises(WorkerError):
        worker.load_paused("[" * 100_000)


@pytest.mark.parametrize("version", [0, 2, 99, "1", None])
async def test_another_version_raises_worker_error_naming_the_format(version: object) -> None:
    worker, saved = await a_saved_batch()
    text = mutated(saved, lambda state: state.update(v=version))
    with pytest.raises(WorkerError, match="not version 1") as refused:
        worker.load_paused(text)
    assert "release that saved it" in str(refused.value)


@pytest.mark.parametrize("keep", [1, 10, 0.5, -1, -2])
async def test_a_truncated_save_raises_worker_error_saying_what_to_pass(keep: float) -> None:
    worker, saved = await a_saved_batch()
    cut = int(len(saved) * keep) if isinstance(keep, float) else keep
    with pytest.raises(WorkerError, match="pass the text save_paused returned"):
        worker.load_paused(saved[:cut])


def _first_call(state: dict[str, Any]) -> dict[str, Any]:
    call: dict[str, Any] = state["calls"][0]
    return call


_TAMPERINGS: list[tuple[str, Callable[[dict[str, Any]], object]]] = [
    ("no-calls", lambda state: state.pop("calls")),
    ("no-paused-call", lambda state: state.pop("paused_call")),
    ("calls-not-a-list", lambda state: state.update(calls=5)),
    ("call-not-an-object", lambda state: state.update(calls=["x"])),
    ("unknown-paused-call", lambda state: state.update(paused_call="nope")),
    ("call-without-id", lambda state: _first_call(state).pop("id")),
    ("metadata-not-str", lambda state: _first_call(state).update(metadata={"a": 1})),
    ("bad-timeout", lambda state: _first_call(state).update(timeout="soon")),
    ("bad-next-hook", lambda state: _first_call(state).update(next_hook="x")),
    ("bad-result", lambda state: _first_call(state).update(result="x")),
]


@pytest.mark.parametrize("change", [pytest.param(change, id=name) for name, change in _TAMPERINGS])
async def test_a_tampered_save_raises_worker_error_saying_what_to_pass(
    change: Callable[[dict[str, Any]], object],
) -> None:
    worker, saved = await a_saved_batch()
    with pytest.raises(WorkerError, match="pass the text save_paused returned"):
        worker.load_paused(mutated(saved, change))


async def test_a_save_with_a_non_text_input_is_refused_at_load() -> None:
    # Every field is checked at load: an input that is not text would fail later, inside
    # resume, as a TypeError.
    worker, saved = await a_saved_batch()
    text = mutated(saved, lambda state: _first_call(state).update(input=5))
    with pytest.raises(WorkerError):
        worker.load_paused(text)


async def test_a_refused_load_leaves_the_worker_usable() -> None:
    worker, saved = await a_saved_batch()
    with pytest.raises(WorkerError):
        worker.load_paused(saved[:-1])
    results = completed(await worker.resume(worker.load_paused(saved), {"d": Approve()}))
    assert [r.content for r in results] == ["deleted /tmp/a", "hi"]


# -- 10. a resumed batch -----------------------------------------------------------------


async def test_a_batch_already_resumed_cannot_be_saved() -> None:
    worker, _ = worker_with([])
    batch = paused(await worker.call_tools([delete("d", "/tmp/a")]))
    completed(await worker.resume(batch, {"d": Approve()}))

    with pytest.raises(WorkerError, match="already resumed"):
        worker.save_paused(batch)


async def test_a_re_paused_batch_saves_its_new_pause_not_the_old_one() -> None:
    worker, _ = worker_with([])
    batch = paused(await worker.call_tools([delete("a", "/a"), delete("b", "/b")]))
    again = paused(await worker.resume(batch, {"a": Approve()}))

    with pytest.raises(WorkerError, match="already resumed"):
        worker.save_paused(batch)
    loaded = worker.load_paused(worker.save_paused(again))
    assert loaded.awaiting_approval == ("b",)


async def test_a_loaded_batch_resumes_once_and_then_cannot_be_saved() -> None:
    worker, saved = await a_saved_batch()
    loaded = worker.load_paused(saved)
    completed(await worker.resume(loaded, {"d": Approve()}))

    with pytest.raises(WorkerError, match="already resumed"):
        await worker.resume(loaded, {"d": Approve()})
    with pytest.raises(WorkerError, match="already resumed"):
        worker.save_paused(loaded)


async def test_a_decision_for_no_pending_call_leaves_the_loaded_batch_resumable() -> None:
    worker, saved = await a_saved_batch()
    loaded = worker.load_paused(saved)
    with pytest.raises(WorkerError, match="not pending"):
        await worker.resume(loaded, {"nope": Approve()})
    assert worker.save_paused(loaded) == saved
