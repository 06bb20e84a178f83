"""The call log: one line per call, written in batches.

Formatting and writing a log record per call through ``logging`` (with a flush per record)
costs more than the rest of a call (see BENCHMARKS.md). The call log only appends a tuple
per call and writes the formatted lines with one write every ``interval`` seconds and on
close, in the same layout as the other log lines::

    2026-11-29 21:02:14,546 INFO llmworker.server.calls tool=echo status=OK duration_ms=0.081
"""

from __future__ import annotations

import asyncio
import time
from typing import TextIO

__all__ = ["CallLog"]


class CallLog:
    """Buffers call records and writes them to ``stream`` periodically."""

    def __init__(self, stream: TextIO, interval: float = 0.2) -> None:
        self._stream = stream
        self._interval = interval
        self._pending: list[tuple[float, str, str, float]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._second = -1
        self._second_text = ""

    def record(self, tool: str, status: str, duration_s: float) -> None:
        """Note one finished call; written within ``interval`` seconds."""
        self._pending.append((time.time(), tool, status, duration_s))
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval, self.flush)

    def flush(self) -> None:
        """Write every pending line now."""
        self._timer = None
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        lines = [
            f"{self._timestamp(at)} INFO llmworker.server.calls tool={tool} status={status} "
            f"duration_ms={duration * 1000:.3f}\n"
            for at, tool, status, duration in pending
        ]
        self._stream.write("".join(lines))
        self._stream.flush()

    def close(self) -> None:
        """Write what is pending and stop the timer."""
        if self._timer is not None:
            self._timer.cancel()
        self.flush()

    def _timestamp(self, at: float) -> str:
        second = int(at)
        if second != self._second:
            self._second = second
            self._second_text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))
        return f"{self._second_text},{int((at - second) * 1000):03d}"
