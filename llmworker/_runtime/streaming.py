"""Streamed calls: the events a tool produces while it runs, and the bounded channel that
carries them to the caller.

A tool streams output by having a ``stream(input_json)`` method returning an async iterator
of text chunks beside its ``execute`` (which returns the concatenation, for unary calls); the
stream may end with a ``ToolOutput``, then the result instead of the joined chunks;
the decorator generates both for an ``async def`` tool annotated ``-> AsyncIterator[str]``.
Any tool reports progress with ``ToolContext.report_progress``. A caller reads the events of
``Worker.stream_tool``: ``Progress`` and ``OutputChunk`` while the tool runs, then the result.

The channel stays bounded whatever the reader does: progress is coalesced to one event per
50 ms (the last one always delivered), and while more than 64 events wait, the waiting
chunks are merged into one and only the newest progress is kept.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final, TypeAlias, final

from .._model.errors import ToolError
from .._model.text import shorten
from .._model.tool import ToolOutput

__all__ = [
    "STREAMED_CALL",
    "CallEvents",
    "OutputChunk",
    "Progress",
    "StreamEvent",
    "checked_progress",
    "streamed_output",
]

PROGRESS_INTERVAL: Final = 0.05
"""Seconds between two progress events of one call."""
MAX_WAITING_EVENTS: Final = 64
_MAX_MESSAGE_CHARS: Final = 1024


@final
@dataclass(frozen=True, slots=True)
class Progress:
    """How far a call has come: ``progress`` of ``total`` (None: unknown), and a message."""

    progress: float
    total: float | None = None
    message: str = ""


@final
@dataclass(frozen=True, slots=True)
class OutputChunk:
    """A piece of a streaming tool's output; the result's text is every chunk joined."""

    text: str


StreamEvent: TypeAlias = Progress | OutputChunk | ToolOutput
"""What ``Worker.stream_tool`` yields: progress and chunks, then the result (a
``ToolOutput``, whose ``structured`` is None for a text result), always last."""


def checked_progress(progress: float, total: float | None, message: str) -> Progress:
    """The event for ``ToolContext.report_progress``; ``ValueError`` for numbers JSON and
    the wire cannot carry."""
    for name, value in (("progress", progress), ("total", total)):
        if value is None and name == "total":
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"report_progress: {name} must be a number, got {type(value).__name__}")
        if not math.isfinite(value):
            raise ValueError(f"report_progress: {name} must be finite, got {value}")
    if not isinstance(message, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"report_progress: message must be str, got {type(message).__name__}")
    return Progress(
        float(progress),
        None if total is None else float(total),
        shorten(message, _MAX_MESSAGE_CHARS),
    )


class CallEvents:
    """The events of one streamed call, from the tool (any thread) to one reader."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._waiting: deque[Progress | OutputChunk] = deque()
        self._held: Progress | None = None  # progress waiting for its 50 ms slot
        self._last_progress = -math.inf
        self._flush: asyncio.TimerHandle | None = None
        self._wakeup = asyncio.Event()
        self._finished = False
        self._claimed = False

    def claim(self) -> bool:
        """True the first time only: the call that claims the channel streams into it (a tool
        the streamed tool calls in turn does not)."""
        claimed, self._claimed = self._claimed, True
        return not claimed

    def progress(self, event: Progress) -> None:
        """Report ``event``; callable from a sync tool's thread."""
        if threading.get_ident() == self._thread:
            self._progress(event)
        else:
            self._loop.call_soon_threadsafe(self._progress, event)

    def chunk(self, text: str) -> None:
        if text and not self._finished:
            self._put(OutputChunk(text))

    def finish(self) -> None:
        """The call ended: deliver the held progress, then let the reader finish."""
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        if self._held is not None:
            self._put(self._held)
            self._held = None
        self._finished = True
        self._wakeup.set()

    async def next(self) -> Progress | OutputChunk | None:
        """The next event, or None once the call ended and every event was read."""
        while not self._waiting:
            if self._finished:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()
        return self._waiting.popleft()

    def _progress(self, event: Progress) -> None:
        if self._finished:
            return
        now = self._loop.time()
        if now - self._last_progress >= PROGRESS_INTERVAL and self._flush is None:
            self._last_progress = now
            self._put(event)
            return
        self._held = event
        if self._flush is None:
            due = max(self._last_progress + PROGRESS_INTERVAL, now)
            self._flush = self._loop.call_at(due, self._release_held)

    def _release_held(self) -> None:
        self._flush = None
        if self._held is not None and not self._finished:
            self._last_progress = self._loop.time()
            self._put(self._held)
            self._held = None

    def _put(self, event: Progress | OutputChunk) -> None:
        if len(self._waiting) >= MAX_WAITING_EVENTS:
            self._compact()
        self._waiting.append(event)
        self._wakeup.set()

    def _compact(self) -> None:
        """A reader that fell behind: the waiting chunks become one, in order, followed by
        the newest waiting progress."""
        text = "".join(event.text for event in self._waiting if isinstance(event, OutputChunk))
        newest = next((e for e in reversed(self._waiting) if isinstance(e, Progress)), None)
        self._waiting.clear()
        if text:
            self._waiting.append(OutputChunk(text))
        if newest is not None:
            self._waiting.append(newest)


STREAMED_CALL: Final = ContextVar[CallEvents | None]("llmworker_streamed_call", default=None)
"""The channel of the streamed call the running task executes, if any."""


async def streamed_output(
    stream: Callable[[str], AsyncIterator[str | ToolOutput]],
    input_json: str,
    events: CallEvents | None,
) -> str | ToolOutput:
    """Run a streaming tool: each chunk to ``events`` (when streamed), and its result: the
    ``ToolOutput`` it ended with, if it did (a proxy passes its server's result on), else
    the chunks joined."""
    parts: list[str] = []
    result: ToolOutput | None = None
    async for item in stream(input_json):
        if result is not None:
            raise ToolError.Internal("the tool streamed past its result; end with the ToolOutput")
        if isinstance(item, ToolOutput):
            result = item
            continue
        if not isinstance(item, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ToolError.Internal(
                f"the tool streamed {type(item).__name__}, not str; yield text chunks"
            )
        parts.append(item)
        if events is not None:
            events.chunk(item)
    return result if result is not None else "".join(parts)
