"""A paused batch as JSON text, so another process (or this one after a restart) resumes it.

The text holds each call (id, name, input, metadata, timeout), its result when it has one
(an unknown tool, a skip, a denial), whether it was approved and which pre-hook runs next on
its input, plus the names of the pre-hooks of the chain it paused in. Loading it on a worker
rebuilds the batch there: tools are looked up again by name (one gone since is an
unknown-tool result), and the pre-hook chain must carry the same names in the same order,
since the batch goes on from the hook after the one that paused. Deadlines are not kept:
set them on resume.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import Final, cast

from .._model.calls import CallMetadata, ToolCall, ToolResult
from .._model.errors import ToolServerError, WorkerError
from .._model.json_values import JsonObject
from .._model.outcomes import Paused
from .._model.text import shorten
from .batch import BatchRun, HookChains, PlannedCall
from .hooks import PreToolCallHook
from .tool_server import ToolServerHandle

__all__ = ["hook_name", "load_paused", "save_paused", "unnamed_hooks"]

_VERSION: Final = 1


def hook_name(hook: PreToolCallHook) -> str | None:
    """``module.qualname`` of a function, or of a callable object's class; None for a
    lambda or a callable without a stable name (a ``functools.partial``)."""
    qualname = getattr(hook, "__qualname__", None)
    module = getattr(hook, "__module__", None)
    if not isinstance(qualname, str) or not isinstance(module, str):
        kind: type[object] = type(cast("object", hook))
        own: object = None
        for base in inspect.getmro(kind):
            namespace: Mapping[str, object] = vars(base)
            if "__call__" in namespace:
                own = namespace["__call__"]
                break
        if not inspect.isfunction(own):  # no __call__ written in Python (a C type's, or none)
            return None
        qualname, module = kind.__qualname__, kind.__module__
    if "<lambda>" in qualname:
        return None
    return f"{module}.{qualname}"


def unnamed_hooks(hooks: HookChains) -> list[str]:
    """How each pre-hook that cannot be named across processes shows (``repr``, cut)."""
    return [shorten(repr(hook), 120) for hook in hooks.pre if hook_name(hook) is None]


def save_paused(paused: Paused) -> str:
    """``paused`` (still resumable, not taken) as JSON text, with the names of the pre-hooks
    of the chain it paused in; ``WorkerError`` when it was resumed already, came from a
    server, or one of those pre-hooks has no stable name."""
    run = paused.peek(BatchRun)
    unnamed = unnamed_hooks(run.hooks)
    if unnamed:
        raise WorkerError(_unnamed_message(unnamed))
    state = {
        "v": _VERSION,
        "hooks": [hook_name(hook) for hook in run.hooks.pre],
        "paused_call": paused.paused_call.id,
        "reason": paused.reason,
        "calls": [_planned_state(planned) for planned in run.planned],
    }
    return json.dumps(state, ensure_ascii=False, separators=(",", ":"))


def load_paused(text: str, handle: ToolServerHandle, hooks: HookChains) -> Paused:
    """The batch ``text`` holds, resumable once on ``handle``'s tools with ``hooks``;
    ``WorkerError`` when the text is not a saved batch, or the pre-hooks differ."""
    try:
        state: object = json.loads(text)
        if not isinstance(state, dict) or cast("dict[str, object]", state).get("v") != _VERSION:
            raise WorkerError(
                f"the saved batch is not version {_VERSION} of the paused-batch format; "
                "load it with the llmworker release that saved it"
            )
        saved = cast("dict[str, object]", state)
        names = [hook_name(hook) for hook in hooks.pre]
        if saved["hooks"] != names:
            raise WorkerError(
                f"the batch was saved by a worker with the pre-hooks {saved['hooks']}, and "
                f"this one has {names}; resume it on a worker with the same hooks, in the "
                "same order"
            )
        run = BatchRun(handle, hooks, [])
        calls = saved["calls"]
        if not isinstance(calls, list):
            raise TypeError(f"field 'calls' holds {type(calls).__name__}, not a list")
        run.planned = [_planned_from(handle, _object(call)) for call in cast("list[object]", calls)]
        paused_id = _text(saved, "paused_call")
        paused_call = next(p.call for p in run.planned if p.call.id == paused_id)
        return run.paused_at(paused_call, _text(saved, "reason"))
    except WorkerError:
        raise
    except (ValueError, KeyError, TypeError, StopIteration, RecursionError) as error:
        raise WorkerError(
            f"the saved batch is not valid ({type(error).__name__}: {shorten(str(error))}); "
            "pass the text save_paused returned, unchanged"
        ) from error


def _unnamed_message(unnamed: list[str]) -> str:
    return (
        f"the pre-tool-call hooks {', '.join(unnamed)} have no stable name (a lambda, or a "
        "callable without __qualname__): a paused batch saved for another process records "
        "the hooks by module and name, to check it resumes with the same ones; define "
        "each as a named function or a class with __call__ (not a functools.partial)"
    )


def _planned_state(planned: PlannedCall) -> dict[str, object]:
    call, result = planned.call, planned.result
    return {
        "id": call.id,
        "name": call.name,
        "input": call.input_json,
        "metadata": dict(call.metadata),
        "timeout": call.timeout,
        "approved": planned.approved,
        "next_hook": planned.next_hook,
        "hooked": planned.hooked,
        "result": None if result is None else _result_state(result),
    }


def _result_state(result: ToolResult) -> dict[str, object]:
    error = result.error
    if isinstance(error, ToolServerError.CallDenied):
        kind: dict[str, object] | None = {"kind": "CallDenied", "reason": error.reason}
    elif isinstance(error, ToolServerError.ToolNotFound):
        kind = {"kind": "ToolNotFound"}
    elif error is None:
        kind = None
    else:  # a paused batch's results are unknown tools, skips and denials only
        raise WorkerError(f"a paused batch's result holds {type(error).__name__}, not saved")
    return {
        "content": result.content,
        "is_error": result.is_error,
        "skipped": result.skipped,
        "structured": result.structured,
        "error": kind,
    }


def _planned_from(handle: ToolServerHandle, state: Mapping[str, object]) -> PlannedCall:
    metadata = _object(state["metadata"])
    if not all(isinstance(value, str) for value in metadata.values()):
        raise ValueError("a call's metadata holds a value that is not text")
    timeout = state["timeout"]
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)):
        raise TypeError(f"field 'timeout' holds {type(timeout).__name__}")
    call = ToolCall(
        _text(state, "id"),
        _text(state, "name"),
        _text(state, "input"),
        CallMetadata(cast("dict[str, str]", metadata)),
        None,
        None if timeout is None else float(timeout),
    )
    target = handle.get_tool(call.name)
    saved = _maybe_object(state, "result")
    result = None if saved is None else _result_from(call, saved)
    if result is None and target is None:  # gone since the pause
        error = ToolServerError.ToolNotFound(call.name)
        result = ToolResult(call.id, str(error), is_error=True, error=error)
    planned = PlannedCall(call, target, result)
    planned.approved = _flag(state, "approved")
    planned.next_hook = _whole(state, "next_hook")
    planned.hooked = _flag(state, "hooked")
    return planned


def _result_from(call: ToolCall, state: Mapping[str, object]) -> ToolResult:
    saved = _maybe_object(state, "error")
    kind = None if saved is None else _text(saved, "kind")
    error: ToolServerError | None = None
    if saved is not None and kind == "CallDenied":
        error = ToolServerError.CallDenied(call.id, call.name, _text(saved, "reason"))
    elif kind == "ToolNotFound":
        error = ToolServerError.ToolNotFound(call.name)
    elif kind is not None:
        raise ValueError(f"a result's error kind {shorten(kind, 40)!r} is not one a pause holds")
    structured = _maybe_object(state, "structured")
    return ToolResult(
        call.id,
        _text(state, "content"),
        is_error=_flag(state, "is_error"),
        error=error,
        structured=cast("JsonObject | None", structured),
        skipped=_flag(state, "skipped"),
    )


def _object(value: object) -> dict[str, object]:
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, found {type(value).__name__}")
    return cast("dict[str, object]", value)


def _maybe_object(state: Mapping[str, object], key: str) -> dict[str, object] | None:
    value = state[key]
    return None if value is None else _object(value)


def _text(state: Mapping[str, object], key: str) -> str:
    value = state[key]
    if not isinstance(value, str):
        raise TypeError(f"field {key!r} holds {type(value).__name__}, not text")
    return value


def _flag(state: Mapping[str, object], key: str) -> bool:
    value = state[key]
    if not isinstance(value, bool):
        raise TypeError(f"field {key!r} holds {type(value).__name__}, not true or false")
    return value


def _whole(state: Mapping[str, object], key: str) -> int:
    value = state[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"field {key!r} holds {type(value).__name__}, not a whole number")
    return value
