"""The call log: one line per call, written in batches.

Formatting and writing a log record per call through ``logging`` (with a flush per record)
costs more than the rest of a call (see BENCHMARKS.md). The call log only notes the tool, the
status and two clock readings per call, and writes the formatted lines with one write every
``interval`` seconds and on close, in the same layout as the other log lines::

    2026-11-29 21:02:14,546 INFO llmworker.server.calls tool=echo status=OK duration_ms=0.081
"""

from __future__ import annotations

import asyncio
import time
from array import array
from typing import TextIO

__all__ = ["CallLog"]

_LINE = "%s,%03d INFO llmworker.server.calls tool=%s status=%s duration_ms=%.3f\n"


class CallLog:
    """Buffers call records and writes them to ``stream`` periodically.

    Times are ``time.perf_counter()`` readings; a line's wall-clock time is derived when it is
    written, so a clock step shows up at most ``interval`` seconds late.
    """

    def __init__(self, stream: TextIO, interval: float = 0.2) -> None:
        self._stream = stream
        self._interval = interval
        self._tools: list[str] = []
        self._statuses: list[str] = []
        self._clock = array("d")  # started, ended, started, ended, ...
        self._timer: asyncio.TimerHandle | None = None

    def record(self, tool: str, status: str, started: float) -> None:
        """Note one call that began at ``started`` and ends now; written within ``interval``."""
        self._clock.extend((started, time.perf_counter()))
        self._tools.append(tool)
        self._statuses.append(status)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval, self.flush)

    def flush(self) -> None:
        """Write every pending line now."""
        self._timer = None
        if not self._tools:
            return
        tools, statuses, clock = self._tools, self._statuses, self._clock
        self._tools, self._statuses, self._clock = [], [], array("d")
        to_wall = time.time() - time.perf_counter()
        second, second_text = -1, ""
        lines: list[str] = []
        for index, (tool, status) in enumerate(zip(tools, statuses, strict=True)):
            started, ended = clock[2 * index], clock[2 * index + 1]
            at = ended + to_wall
            if int(at) != second:
                second = int(at)
                second_text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))
            millis = int((at - second) * 1000)
            lines.append(_LINE % (second_text, millis, tool, status, (ended - started) * 1000))
        self._stream.write("".join(lines))
        self._stream.flush()

    def close(self) -> None:
        """Write what is pending and stop the timer."""
        if self._timer is not None:
            self._timer.cancel()
        self.flush()
