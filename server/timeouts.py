"""Server-side call timeouts with one timer for all calls.

An ``asyncio.timeout`` per call schedules and cancels a timer handle on every request, which
costs more than the rest of the call path under load (see BENCHMARKS.md). The watchdog
keeps the deadlines of the calls in flight and checks them every ``resolution`` seconds while
any is in flight: a timed-out call is cancelled at most that late.
"""

from __future__ import annotations

import asyncio
from typing import Final

__all__ = ["TimeoutWatchdog"]

_CANCEL_MESSAGE: Final = "llmworker: the call's timeout passed"


class TimeoutWatchdog:
    """Cancels watched tasks whose deadline has passed."""

    def __init__(self, resolution: float = 0.01) -> None:
        self._resolution = resolution
        self._deadlines: dict[asyncio.Task[object], float] = {}
        self._expired: set[asyncio.Task[object]] = set()
        self._timer: asyncio.TimerHandle | None = None

    def watch(self, task: asyncio.Task[object], timeout: float) -> None:
        """Cancel ``task`` if it is still watched ``timeout`` seconds from now."""
        loop = asyncio.get_running_loop()
        self._deadlines[task] = loop.time() + timeout
        if self._timer is None:
            self._timer = loop.call_later(self._resolution, self._tick)

    def finish(self, task: asyncio.Task[object]) -> bool:
        """Stop watching ``task``; True if the watchdog cancelled it."""
        self._deadlines.pop(task, None)
        if task in self._expired:
            self._expired.discard(task)
            return True
        return False

    def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        for task, deadline in list(self._deadlines.items()):
            if deadline <= now:
                del self._deadlines[task]
                self._expired.add(task)
                task.cancel(_CANCEL_MESSAGE)
        self._timer = loop.call_later(self._resolution, self._tick) if self._deadlines else None
