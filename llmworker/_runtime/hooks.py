"""Hook types: the calls and results hooks see, and the outcomes they return.

A pre-tool-call hook gets a ``ToolCallContext`` and returns ``Continue()``, ``Skip()``,
``Pause()`` or ``Abort(reason)``; a post-tool-call hook gets a ``PostToolCallContext`` and
returns ``Continue()`` or ``Abort(reason)``. Hooks may be plain or ``async`` functions.

>>> def no_deletes(ctx: ToolCallContext) -> PreToolCallOutcome:
...     return Skip() if ctx.meta.name.startswith("delete") else Continue()
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeAlias, final

from .._model.calls import ToolCall, ToolResult
from .._model.tool import Tool
from .._model.tool_meta import ToolMeta

__all__ = [
    "Abort",
    "Continue",
    "Pause",
    "PostToolCallContext",
    "PostToolCallHook",
    "PostToolCallOutcome",
    "PreToolCallHook",
    "PreToolCallOutcome",
    "Skip",
    "ToolCallContext",
]


class _ToolContext:
    """The call a hook may rewrite, with the registered meta and the live tool (read-only)."""

    __slots__ = ("_meta", "_tool", "call")

    def __init__(self, call: ToolCall, meta: ToolMeta, tool: Tool) -> None:
        self.call: ToolCall = call
        self._meta = meta
        self._tool = tool

    @property
    def meta(self) -> ToolMeta:
        """The registered metadata (read-only)."""
        return self._meta

    @property
    def tool(self) -> Tool:
        """The live instance that runs the call; isinstance-check it to read its state."""
        return self._tool


@final
class ToolCallContext(_ToolContext):
    """What a pre-tool-call hook sees: the call (replaceable and mutable), meta and tool."""

    __slots__ = ()


@final
class PostToolCallContext(_ToolContext):
    """What a post-tool-call hook sees: the call, its result (replaceable), meta and tool."""

    __slots__ = ("result",)

    def __init__(self, call: ToolCall, result: ToolResult, meta: ToolMeta, tool: Tool) -> None:
        super().__init__(call, meta, tool)
        self.result: ToolResult = result


@final
@dataclass(frozen=True, slots=True)
class Continue:
    """Go on: run the next hook, then the call."""


@final
@dataclass(frozen=True, slots=True)
class Skip:
    """Do not run later pre-hooks or the call; its result says it was skipped."""


@final
@dataclass(frozen=True, slots=True)
class Pause:
    """Return control to the caller before anything runs; ``Worker.resume`` goes on.

    ``reason`` tells the caller (and the person it may ask) why.
    """

    reason: str = ""


@final
@dataclass(frozen=True, slots=True)
class Abort:
    """Stop the whole batch: ``call_tools`` raises ``ToolBatchAborted(reason)``."""

    reason: str


PreToolCallOutcome: TypeAlias = Continue | Skip | Pause | Abort
PostToolCallOutcome: TypeAlias = Continue | Abort

PreToolCallHook: TypeAlias = Callable[
    [ToolCallContext], PreToolCallOutcome | Awaitable[PreToolCallOutcome]
]
PostToolCallHook: TypeAlias = Callable[
    [PostToolCallContext], PostToolCallOutcome | Awaitable[PostToolCallOutcome]
]
