"""Running a batch of tool calls through hooks: approvals and pre-hooks, concurrent
execution, post-hooks; and pausing a batch until a person decides."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import time
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .._model.calls import CallMetadata, ToolCall, ToolResult
from .._model.decisions import Approve, ApproveWithInput, Decision, Deny
from .._model.errors import ToolBatchAborted, ToolError, ToolServerError
from .._model.outcomes import BatchOutcome, Completed, Paused, ToolCallPaused
from .._model.text import shorten
from .._model.tool import Tool, ToolOutput
from .._model.tool_meta import ToolMeta
from .context import ToolContext
from .execution import execute_tool
from .hooks import (
    Abort,
    Continue,
    Pause,
    PostToolCallContext,
    PostToolCallHook,
    PreToolCallHook,
    Skip,
    ToolCallContext,
)
from .tool_server import ToolServerHandle

__all__ = [
    "BatchRun",
    "HookChains",
    "PlannedCall",
    "resume_batch",
    "run_batch",
    "run_one_call",
]

_Outcome = TypeVar("_Outcome")
_Resumable = TypeVar("_Resumable")


@dataclass(slots=True)
class HookChains:
    """The hooks of one worker, in registration order; shared by its moved successors."""

    pre: list[PreToolCallHook]
    post: list[PostToolCallHook]


@dataclass(slots=True)
class PlannedCall:
    call: ToolCall
    target: tuple[ToolMeta, Tool] | None
    result: ToolResult | None = None  # known before execution: unknown, skipped or denied
    approved: bool = False
    next_hook: int = 0  # the pre-hook to run next on the call's current input
    hooked: bool = False  # every pre-hook ran on the current input

    @property
    def awaiting_approval(self) -> bool:
        return (
            self.result is None
            and not self.approved
            and self.target is not None
            and self.target[0].requires_approval
        )


class BatchRun:
    """The state of one batch: each call's result so far and where its pre-hooks stand."""

    __slots__ = ("handle", "hooks", "planned")

    def __init__(self, handle: ToolServerHandle, hooks: HookChains, calls: Sequence[ToolCall]):
        self.handle = handle
        self.hooks = hooks
        self.planned = [_planned(call, handle.get_tool(call.name)) for call in calls]

    async def advance(self) -> BatchOutcome:
        awaiting = [planned.call for planned in self.planned if planned.awaiting_approval]
        if awaiting:
            reason = "awaiting approval: " + ", ".join(
                f"'{call.name}' (call '{call.id}')" for call in awaiting
            )
            return self.paused_at(awaiting[0], shorten(reason, 1000))
        paused = await self._run_pre_hooks()
        if paused is not None:
            outcome, call = paused
            reason = outcome.reason or f"a pre-tool-call hook paused call '{call.id}'"
            return self.paused_at(call, reason)
        results = await self._execute()
        await self._run_post_hooks(results)
        return Completed(results)

    def decide(self, decisions: Mapping[str, Decision]) -> None:
        """Apply checked decisions to the pending calls."""
        for planned in self.planned:
            decision = decisions.get(planned.call.id)
            if decision is None or planned.result is not None:
                continue
            match decision:
                case Approve():
                    planned.approved = True
                case ApproveWithInput(input_json):
                    # New input: every pre-hook checks it again, from the first.
                    planned.call = dataclasses.replace(planned.call, input_json=input_json)
                    planned.approved = True
                    planned.next_hook, planned.hooked = 0, False
                case Deny(reason):
                    call = planned.call
                    error = ToolServerError.CallDenied(call.id, call.name, reason)
                    planned.result = ToolResult(call.id, str(error), is_error=True, error=error)

    def paused_at(self, paused_call: ToolCall, reason: str) -> Paused:
        return Paused(
            self,
            pending_calls=tuple(p.call for p in self.planned if p.result is None),
            results=tuple(p.result for p in self.planned if p.result is not None),
            awaiting_approval=tuple(p.call.id for p in self.planned if p.awaiting_approval),
            paused_call=paused_call,
            reason=reason,
        )

    async def _run_pre_hooks(self) -> tuple[Pause, ToolCall] | None:
        """Run each call's pre-hooks from where they stand; the ``Pause`` of one that
        paused, with its call."""
        hooks = self.hooks.pre
        for planned in self.planned:
            if planned.hooked or planned.result is not None or planned.target is None:
                continue
            meta, tool = planned.target
            context = ToolCallContext(planned.call, meta, tool)
            while planned.next_hook < len(hooks):
                outcome = await _resolve(hooks[planned.next_hook](context))
                planned.next_hook += 1
                planned.call = context.call
                match outcome:
                    case Continue():
                        continue
                    case Skip():
                        planned.result = _skipped(planned.call)
                        break
                    case Pause():
                        return outcome, planned.call
                    case Abort(reason):
                        raise ToolBatchAborted(reason, planned.call.id)
            planned.hooked = True
        return None

    async def _execute(self) -> list[ToolResult]:
        results = [planned.result for planned in self.planned]
        runnable = [index for index, result in enumerate(results) if result is None]

        async def execute(index: int) -> None:
            planned = self.planned[index]
            assert planned.target is not None
            results[index] = await _execute_call(planned.call, planned.target)

        if len(runnable) == 1:  # no task overhead for a lone call
            await execute(runnable[0])
        elif runnable:
            async with asyncio.TaskGroup() as group:
                for index in runnable:
                    group.create_task(execute(index))
        return [result for result in results if result is not None]

    async def _run_post_hooks(self, results: list[ToolResult]) -> None:
        for index, planned in enumerate(self.planned):
            if planned.result is None and planned.target is not None:  # it executed
                results[index] = await _run_post_hooks(
                    self.hooks.post, planned.call, results[index], planned.target
                )


def _planned(call: ToolCall, target: tuple[ToolMeta, Tool] | None) -> PlannedCall:
    return PlannedCall(call, target, None if target is not None else _missing(call))


def _skipped(call: ToolCall) -> ToolResult:
    text = f"Tool '{call.name}' was skipped by a pre-tool-call hook"
    return ToolResult(call.id, text, skipped=True)


def _missing(call: ToolCall) -> ToolResult:
    error = ToolServerError.ToolNotFound(call.name)
    return ToolResult(call.id, str(error), is_error=True, error=error)


def _context(
    call_id: str,
    name: str,
    metadata: Mapping[str, str],
    deadline: float | None,
    timeout: float | None,
) -> ToolContext:
    """The context of a call starting now: its deadline is the caller's, or the end of its
    timeout when that comes first."""
    if timeout is not None:
        ends = time.monotonic() + timeout
        deadline = ends if deadline is None else min(deadline, ends)
    frozen = metadata if type(metadata) is CallMetadata else CallMetadata(metadata)
    return ToolContext(call_id, name, frozen, deadline)


async def _execute_call(call: ToolCall, target: tuple[ToolMeta, Tool]) -> ToolResult:
    meta, tool = target
    try:
        context = _context(call.id, meta.name, call.metadata, call.deadline, call.timeout)
        output = await execute_tool(tool, call.input_json, context, call.timeout)
    except (ToolError, ToolServerError) as error:
        return ToolResult(call.id, str(error), is_error=True, error=error)
    if isinstance(output, str):
        return ToolResult(call.id, output)
    return ToolResult(
        call.id, output.text, structured=output.structured, attachments=output.attachments
    )


async def _run_post_hooks(
    hooks: list[PostToolCallHook], call: ToolCall, result: ToolResult, target: tuple[ToolMeta, Tool]
) -> ToolResult:
    if not hooks:
        return result
    context = PostToolCallContext(call, result, *target)
    for hook in hooks:
        outcome = await _resolve(hook(context))
        if isinstance(outcome, Abort):
            raise ToolBatchAborted(outcome.reason, call.id, after_execution=True)
    return context.result


async def _run_one(
    target: tuple[ToolMeta, Tool] | None, hooks: list[PostToolCallHook], call: ToolCall
) -> BatchOutcome:
    """A lone call with no pre-hooks nor approval: nothing can pause or skip it."""
    if target is None:
        return Completed([_missing(call)])
    result = await _execute_call(call, target)
    if hooks:
        result = await _run_post_hooks(hooks, call, result, target)
    return Completed([result])


async def _resolve(outcome: _Outcome | Awaitable[_Outcome]) -> _Outcome:
    if inspect.isawaitable(outcome):
        return await outcome
    return outcome


def run_batch(
    handle: ToolServerHandle, hooks: HookChains, calls: Sequence[ToolCall]
) -> Awaitable[BatchOutcome]:
    """Run ``calls`` through ``hooks`` on ``handle``'s tools."""
    if len(calls) == 1 and not hooks.pre:
        target = handle.get_tool(calls[0].name)
        if target is None or not target[0].requires_approval:
            return _run_one(target, hooks.post, calls[0])
    return BatchRun(handle, hooks, calls).advance()


async def run_one_call(
    handle: ToolServerHandle,
    hooks: HookChains,
    call_id: str,
    name: str,
    input_json: str,
    metadata: Mapping[str, str],
    deadline: float | None,
    timeout: float | None,  # noqa: ASYNC109 - enforced by the watchdog, one timer for all
) -> str | ToolOutput:
    """Run one call through ``hooks``: its result, or its error raised as
    ``ToolServerHandle.call_tool`` raises it; ``ToolCallPaused`` when it paused. With no
    hooks and no approval there is nothing to show a ``ToolCall`` to, so none is made."""
    if not hooks.pre and not hooks.post:
        target = handle.get_tool(name)
        if target is None:
            raise ToolServerError.ToolNotFound(name)
        if not target[0].requires_approval:
            context = (
                _context(call_id, name, metadata, deadline, timeout)
                if timeout is not None or type(metadata) is not CallMetadata
                else ToolContext(call_id, name, metadata, deadline)  # the common case, inline
            )
            try:
                return await execute_tool(target[1], input_json, context, timeout)
            except ToolError as error:
                raise ToolServerError.ToolExecution(str(error)) from error
    call = ToolCall(call_id, name, input_json, metadata, deadline, timeout)
    outcome = await run_batch(handle, hooks, [call])
    if isinstance(outcome, Paused):
        raise ToolCallPaused(outcome)
    result = outcome.results[0]
    if not result.is_error:
        return (
            result.content
            if result.structured is None and not result.attachments
            else ToolOutput(result.content, result.structured, result.attachments)
        )
    if isinstance(result.error, ToolServerError):
        raise result.error
    raise ToolServerError.ToolExecution(result.content) from result.error


async def resume_batch(paused: Paused, decisions: Mapping[str, Decision]) -> BatchOutcome:
    """Continue a paused batch where it stopped, after applying ``decisions``."""
    run = paused.take(BatchRun, decisions)
    run.decide(decisions)
    return await run.advance()
