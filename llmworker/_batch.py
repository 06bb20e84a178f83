"""Running a batch of tool calls through hooks: pre-hooks, concurrent execution, post-hooks."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import TypeAlias, TypeVar, final

from ._errors import ToolBatchAborted, ToolCallPaused, ToolError, ToolServerError, WorkerError
from ._hooks import (
    Abort,
    Continue,
    Pause,
    PostToolCallContext,
    PostToolCallHook,
    PreToolCallHook,
    Skip,
    ToolCall,
    ToolCallContext,
    ToolResult,
)
from ._tool import Tool
from ._tool_meta import ToolMeta
from ._tool_server import ToolServerHandle, execute_tool

__all__ = ["BatchOutcome", "Completed", "HookChains", "Paused", "run_batch", "run_one_call"]

_Outcome = TypeVar("_Outcome")


@dataclass(slots=True)
class HookChains:
    """The hooks of one worker, in registration order; shared by its moved successors."""

    pre: list[PreToolCallHook]
    post: list[PostToolCallHook]


@final
@dataclass(frozen=True, slots=True)
class Completed:
    """Every call of the batch has a result, in call order."""

    results: list[ToolResult]


@final
class Paused:
    """A pre-hook paused the batch before anything executed.

    ``pending_calls`` are the batch's calls, none executed yet; ``paused_call`` is the one
    whose hook paused. Pass this object to ``Worker.resume`` (once) to go on: the paused
    call continues with the hook after the one that paused.
    """

    __slots__ = ("_run",)

    def __init__(self, run: _BatchRun) -> None:
        self._run: _BatchRun | None = run

    @property
    def pending_calls(self) -> tuple[ToolCall, ...]:
        """The calls not yet executed: the whole batch."""
        return tuple(planned.call for planned in self._live().planned)

    @property
    def paused_call(self) -> ToolCall:
        """The call whose pre-hook returned ``Pause()``."""
        run = self._live()
        return run.planned[run.position].call

    def _live(self) -> _BatchRun:
        if self._run is None:
            raise WorkerError(
                "this paused batch was already resumed; use the outcome resume returned"
            )
        return self._run

    def _take(self) -> _BatchRun:
        run = self._live()
        self._run = None
        return run


BatchOutcome: TypeAlias = Completed | Paused


@dataclass(slots=True)
class _Planned:
    call: ToolCall
    target: tuple[ToolMeta, Tool] | None
    skipped: bool = False


class _BatchRun:
    """The state of one batch; ``position``/``next_hook`` say where pre-hooks resume."""

    __slots__ = ("handle", "hooks", "next_hook", "planned", "position")

    def __init__(self, handle: ToolServerHandle, hooks: HookChains, calls: Sequence[ToolCall]):
        self.handle = handle
        self.hooks = hooks
        self.planned = [_Planned(call, handle.get_tool(call.name)) for call in calls]
        self.position = 0
        self.next_hook = 0

    async def advance(self) -> BatchOutcome:
        if await self._run_pre_hooks():
            return Paused(self)
        results = await self._execute()
        await self._run_post_hooks(results)
        return Completed(results)

    async def _run_pre_hooks(self) -> bool:
        """Run pre-hooks from where the batch stands; True when one paused."""
        while self.position < len(self.planned):
            planned = self.planned[self.position]
            if planned.target is not None and self.hooks.pre:
                meta, tool = planned.target
                context = ToolCallContext(planned.call, meta, tool)
                hooks = self.hooks.pre
                while self.next_hook < len(hooks):
                    outcome = await _resolve(hooks[self.next_hook](context))
                    self.next_hook += 1
                    planned.call = context.call
                    match outcome:
                        case Continue():
                            continue
                        case Skip():
                            planned.skipped = True
                            break
                        case Pause():
                            return True
                        case Abort(reason):
                            raise ToolBatchAborted(reason, planned.call.id)
            self.position += 1
            self.next_hook = 0
        return False

    async def _execute(self) -> list[ToolResult]:
        results = [_skipped_or_missing(planned) for planned in self.planned]
        runnable = [index for index, result in enumerate(results) if result is None]

        async def execute(index: int) -> None:
            planned = self.planned[index]
            assert planned.target is not None
            results[index] = await _execute_call(planned.call, planned.target[1])

        if len(runnable) == 1:  # no task overhead for a lone call
            await execute(runnable[0])
        elif runnable:
            async with asyncio.TaskGroup() as group:
                for index in runnable:
                    group.create_task(execute(index))
        return [result for result in results if result is not None]

    async def _run_post_hooks(self, results: list[ToolResult]) -> None:
        for index, planned in enumerate(self.planned):
            if planned.target is not None and not planned.skipped:
                results[index] = await _run_post_hooks(
                    self.hooks.post, planned.call, results[index], planned.target
                )


def _skipped_or_missing(planned: _Planned) -> ToolResult | None:
    call = planned.call
    if planned.target is None:
        return _missing(call)
    if planned.skipped:
        return ToolResult(call.id, f"Tool '{call.name}' was skipped by a pre-tool-call hook")
    return None


def _missing(call: ToolCall) -> ToolResult:
    error = ToolServerError.ToolNotFound(call.name)
    return ToolResult(call.id, str(error), is_error=True, error=error)


async def _execute_call(call: ToolCall, tool: Tool) -> ToolResult:
    try:
        return ToolResult(call.id, await execute_tool(tool, call.input_json))
    except (ToolError, ToolServerError) as error:
        return ToolResult(call.id, str(error), is_error=True, error=error)


async def _run_post_hooks(
    hooks: list[PostToolCallHook], call: ToolCall, result: ToolResult, target: tuple[ToolMeta, Tool]
) -> ToolResult:
    if not hooks:
        return result
    context = PostToolCallContext(call, result, *target)
    for hook in hooks:
        outcome = await _resolve(hook(context))
        if isinstance(outcome, Abort):
            raise ToolBatchAborted(outcome.reason, call.id)
    return context.result


async def _run_one(
    handle: ToolServerHandle, hooks: list[PostToolCallHook], call: ToolCall
) -> BatchOutcome:
    """A lone call with no pre-hooks: nothing can pause or skip it, so no batch state."""
    target = handle.get_tool(call.name)
    if target is None:
        return Completed([_missing(call)])
    result = await _execute_call(call, target[1])
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
        return _run_one(handle, hooks.post, calls[0])
    return _BatchRun(handle, hooks, calls).advance()


async def run_one_call(
    handle: ToolServerHandle, hooks: HookChains, call_id: str, name: str, input_json: str
) -> str:
    """Run one call through ``hooks``: its text, or its error raised as
    ``ToolServerHandle.call_tool`` raises it. With no hooks there is nothing to pass a
    ``ToolCall`` or ``ToolResult`` to, so none is made."""
    if not hooks.pre and not hooks.post:
        return await handle.call_tool(name, input_json)
    outcome = await run_batch(handle, hooks, [ToolCall(call_id, name, input_json)])
    if isinstance(outcome, Paused):
        raise ToolCallPaused(outcome)
    result = outcome.results[0]
    if not result.is_error:
        return result.content
    if isinstance(result.error, ToolServerError):
        raise result.error
    raise ToolServerError.ToolExecution(result.content) from result.error


async def resume_batch(paused: Paused) -> BatchOutcome:
    """Continue a paused batch where its pre-hooks stopped."""
    run = paused._take()  # pyright: ignore[reportPrivateUsage]
    return await run.advance()
