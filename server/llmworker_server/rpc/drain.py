"""Holding calls while the server drains, so that none it accepted is lost at shutdown.

gRPC kills the calls its transport accepted but had not yet handed to Python the moment the
server shuts down, and their clients see CANCELLED. The asyncio server hands calls over one
at a time, so under load dozens wait in that queue. While draining, every call that reaches
a handler is held instead of served; the queue empties into the gate; once no new call has
arrived for ``quiet`` seconds the server shuts down (new streams are then refused, which
clients retry) and the held calls are released to run, within the grace.
"""

from __future__ import annotations

import asyncio
import time

__all__ = ["DrainGate"]

_SETTLE_TURNS = 5
"""Loop turns a call handed over to Python takes at most to reach the gate (IO callback,
task start, handler)."""


class DrainGate:
    """Closed while draining: ``hold`` waits until ``release``; open otherwise."""

    def __init__(self) -> None:
        self.closed = False
        self.held = 0
        self._arrivals = 0
        self._last_arrival = 0.0
        self._released = asyncio.Event()
        self._run_released = True

    def close(self) -> None:
        """Start holding every call that arrives."""
        self.closed = True
        self._last_arrival = time.monotonic()

    async def hold(self) -> bool:
        """Wait for the release; True if the call may run, False if it must be refused."""
        self._last_arrival = time.monotonic()
        self._arrivals += 1
        self.held += 1
        try:
            await self._released.wait()
        finally:
            self.held -= 1
        return self._run_released

    async def wait_quiet(self, quiet: float, cap: float) -> None:
        """Return once no call arrived for ``quiet`` seconds of a responsive event loop, or
        after ``cap`` seconds.

        A loop that did not run (the process starved of CPU, a long callback) saw no calls
        arrive because it handed none over, not because none were queued: such an interval
        starts the quiet window again. Before returning, a few loop turns let the calls
        already handed over reach the gate."""
        deadline = time.monotonic() + cap
        step = quiet / 2
        watched_from = time.monotonic()  # the loop has been responsive since
        while (now := time.monotonic()) < deadline:
            if now - max(self._last_arrival, watched_from) >= quiet:
                seen = self._arrivals
                for _ in range(_SETTLE_TURNS):
                    await asyncio.sleep(0)
                if self._arrivals == seen:
                    return
                continue
            await asyncio.sleep(min(step, deadline - now))
            if time.monotonic() - now > step + quiet:  # starved: that interval proves nothing
                watched_from = time.monotonic()

    def release(self, *, run: bool) -> None:
        """Let the held calls go on: to run, or to be refused as the server stops."""
        self._run_released = run
        self._released.set()
