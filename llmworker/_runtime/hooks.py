"""Hook types: the calls and results hooks see, and the outcomes they return.

A pre-tool-call hook gets a ``ToolCallContext`` and returns ``Continue()``, ``Skip()``,
``Pause()`` or ``Abort(reason)``; a post-tool-call hook gets a ``PostToolCallContext`` and
returns ``Continue()`` or ``Abort(reason)``. Hooks may be plain or ``async`` functions.

>>> def no_deletes(ctx: ToolCallContext) -> PreToolCallOutcome:
...     return Skip() if ctx.meta.name.startswith("delete") else Continue()
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias, final

from ._context import NO_METADATA, CallMetadata
from ._errors import ToolError, ToolServerError
from ._json import JsonObject
from ._tool import Tool
from ._tool_meta import ToolMeta

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
    "ToolCall",
    "ToolCallContext",
    "ToolResult",
]


@dataclass(slots=True, repr=False)
class ToolCall:
    """One tool call as the model produced it; ``input_json`` is its raw argument text.

    ``metadata`` is what the caller knows about the call (user, conversation, a credential):
    the tool reads it through ``ToolContext``; reprs show its keys only. ``timeout`` is how
    many seconds the call may run: past it, it is cancelled and answered with
    ``ToolServerError.ToolTimeout``. ``deadline`` is the ``time.monotonic()`` at which the
    caller stops waiting (it enforces that itself, as gRPC does); tools read the nearer of the
    two through ``ToolContext.time_remaining()``. None: no limit.
    """

    id: str
    name: str
    input_json: str
    metadata: Mapping[str, str] = field(default=NO_METADATA)
    deadline: float | None = None
    timeout: float | None = None

    def __repr__(self) -> str:
        deadline = "" if self.deadline is None else f", deadline={self.deadline!r}"
        deadline += "" if self.timeout is None else f", timeout={self.timeout!r}"
        metadata = f", metadata={CallMetadata.of(self.metadata)!r}" if self.metadata else ""
        return (
            f"ToolCall(id={self.id!r}, name={self.name!r}, input_json={self.input_json!r}"
            f"{metadata}{deadline})"
        )


@dataclass(slots=True)
class ToolResult:
    """The answer to the call ``call_id``, as text for the model.

    ``structured`` is the tool's structured result beside the text, when it has one;
    ``skipped`` says a pre-hook skipped the call. ``error`` keeps the exception behind an
    error result (not compared), so a transport can report the exact variant; ``content``
    is its text.
    """

    call_id: str
    content: str
    is_error: bool = False
    error: ToolError | ToolServerError | None = field(default=None, compare=False, repr=False)
    structured: JsonObject | None = None
    skipped: bool = False


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
