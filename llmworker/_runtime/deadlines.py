"""Call deadlines enforced with one timer per event loop.

An ``asyncio.timeout`` per call schedules and cancels a timer handle on every call, which
costs more than the rest of a server's call path under load (see BENCHMARKS.md). The
watchdog keeps the deadlines of the calls in flight and checks them every ``resolution``
seconds while any is in flight: a call past its deadline is cancelled at most that late.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Final

__all__ = ["TimeoutWatchdog", "watchdog"]

_CANCEL_MESSAGE: Final = "llmworker: the call's deadline passed"
_WATCHDOGS: Final = weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, "TimeoutWatchdog"]()
_last: tuple[asyncio.AbstractEventLoop | None, TimeoutWatchdog | None] = (None, None)


class TimeoutWatchdog:
    """Cancels watched tasks whose deadline (``time.monotonic()`` seconds) has passed."""

    def __init__(self, loop: asyncio.AbstractEventLoop, resolution: float = 0.01) -> None:
        self.loop = loop
        self._resolution = resolution
        self._deadlines: dict[asyncio.Task[object], float] = {}
        self._expired: set[asyncio.Task[object]] = set()
        self._timer: asyncio.TimerHandle | None = None

    def watch(self, task: asyncio.Task[object], deadline: float) -> None:
        """Cancel ``task`` if it is still watched at ``deadline``."""
        self._deadlines[task] = deadline
        if self._timer is None:
            self._timer = self.loop.call_later(self._resolution, self._tick)

    def finish(self, task: asyncio.Task[object]) -> bool:
        """Stop watching ``task``; True if the watchdog cancelled it."""
        self._deadlines.pop(task, None)
        if task in self._expired:
            self._expired.discard(task)
            return True
        return False

    def _tick(self) -> None:
        now = self.loop.time()
        for task, deadline in list(self._deadlines.items()):
            if deadline <= now:
                del self._deadlines[task]
                self._expired.add(task)
                task.cancel(_CANCEL_MESSAGE)
        self._timer = (
            self.loop.call_later(self._resolution, self._tick) if self._deadlines else None
        )


def watchdog() -> TimeoutWatchdog:
    """The running loop's watchdog (its clock must be ``time.monotonic``, asyncio's own)."""
    global _last
    loop = asyncio.get_running_loop()
    last_loop, last = _last
    if loop is last_loop and last is not None:  # the common case: one loop, on every call
        return last
    found = _WATCHDOGS.get(loop)
    if found is None:
        found = _WATCHDOGS[loop] = TimeoutWatchdog(loop)
    _last = (loop, found)
    return found
