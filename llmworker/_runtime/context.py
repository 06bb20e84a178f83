"""What a tool knows about the call it is running: ``ToolContext`` and ``current_call()``.

A decorator tool receives it by declaring a parameter annotated ``ToolContext`` (any name;
it is not part of the input schema). A hand-written Tool reaches it during ``execute``
through ``current_call()`` (unless its class says ``uses_current_call = False``; the
decorator's tools without the parameter do, so their calls skip setting it):

>>> async def execute(self, input_json: str) -> str:
...     user = current_call().metadata.get("user", "anonymous")
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Final, final

from .._model.calls import NO_METADATA, CallMetadata
from .._model.errors import WorkerError
from .streaming import CallEvents, checked_progress

__all__ = ["ToolContext", "current_call"]


@final
class ToolContext:
    """The call a tool is running: its id, the tool's name, the caller's metadata and the
    deadline (``time.monotonic()`` seconds, or None when the caller set none)."""

    __slots__ = ("_events", "call_id", "deadline", "metadata", "tool_name")

    def __init__(
        self,
        call_id: str,
        tool_name: str,
        metadata: CallMetadata = NO_METADATA,
        deadline: float | None = None,
    ) -> None:
        self.call_id: str = call_id
        self.tool_name: str = tool_name
        self.metadata: CallMetadata = metadata
        self.deadline: float | None = deadline
        self._events: CallEvents | None = None

    def report_progress(
        self, progress: float, total: float | None = None, message: str = ""
    ) -> None:
        """Tell a streaming caller how far the call has come (``progress`` of ``total``;
        None: unknown). A no-op for a caller that does not stream. Callable from a sync
        tool's thread; the caller sees at most one progress per 50 ms, and the last one."""
        event = checked_progress(progress, total, message)
        if self._events is not None:
            self._events.progress(event)

    def time_remaining(self) -> float | None:
        """Seconds left before the call's deadline (0 once passed), or None without one."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def __repr__(self) -> str:
        return (
            f"ToolContext(call_id={self.call_id!r}, tool_name={self.tool_name!r}, "
            f"metadata={self.metadata!r}, deadline={self.deadline!r})"
        )


def stream_progress(context: ToolContext, events: CallEvents) -> None:
    """Send ``context``'s progress to ``events``: done by whoever streams the call."""
    context._events = events  # pyright: ignore[reportPrivateUsage] - its own module


CURRENT_CALL: Final = ContextVar[ToolContext]("llmworker_current_call")


def current_call() -> ToolContext:
    """The context of the call the running tool executes; ``WorkerError`` outside a call."""
    try:
        return CURRENT_CALL.get()
    except LookupError:
        raise WorkerError(
            "current_call() is only available while a tool executes (inside Tool.execute "
            "called by a Worker, a ToolServerHandle or the server)"
        ) from None
