"""The call log: one line per call, written in batches.

Formatting and writing a log record per call through ``logging`` (with a flush per record)
costs more than the rest of a call (see BENCHMARKS.md). The call log only notes the tool, the
status and two clock readings per call, and writes the formatted lines with one write every
``interval`` seconds and on close, in the same layout as the other log lines::

    2026-11-29 21:02:14,546 INFO llmworker.server.calls tool=echo status=OK duration_ms=0.081
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Final, TextIO

from llmworker._text import printable

__all__ = ["CallLog"]

_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MAX_REMEMBERED_NAMES: Final = 4096
_LINE = "%s INFO llmworker.server.calls tool=%s status=%s duration_ms=%.3f\n"


class CallLog:
    """Buffers call records and writes them to ``stream`` periodically.

    Times are ``time.perf_counter()`` readings; a line's wall-clock time is derived when it is
    written, so a clock step shows up at most ``interval`` seconds late.
    """

    def __init__(self, stream: TextIO, interval: float = 0.2) -> None:
        self._stream = stream
        self._interval = interval
        self._pending: list[tuple[str, str, float, float]] = []  # tool, status, started, ended
        self._timer: asyncio.TimerHandle | None = None
        self._valid_names: set[str] = set()  # names seen to be valid tool names

    def _valid(self, tool: str) -> bool:
        if not _TOOL_NAME.fullmatch(tool):
            return False
        if len(self._valid_names) >= _MAX_REMEMBERED_NAMES:
            self._valid_names.clear()
        self._valid_names.add(tool)
        return True

    def record(self, tool: str, status: str, started: float) -> None:
        """Note one call that began at ``started`` and ends now; written within ``interval``."""
        self._pending.append((tool, status, started, time.perf_counter()))
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval, self.flush)

    def flush(self) -> None:
        """Write every pending line now."""
        self._timer = None
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        to_wall = time.time() - time.perf_counter()
        stamped_ms, stamp = -1, ""
        valid = self._valid_names
        lines: list[str] = []
        for tool, status, started, ended in pending:
            wall_ms = int((ended + to_wall) * 1000)
            if wall_ms != stamped_ms:  # calls a millisecond apart share their time stamp
                stamped_ms, stamp = wall_ms, _stamp(wall_ms)
            shown = tool if tool in valid or self._valid(tool) else _quoted(tool)
            lines.append(_LINE % (stamp, shown, status, (ended - started) * 1000))
        self._stream.write("".join(lines))
        self._stream.flush()

    def close(self) -> None:
        """Write what is pending and stop the timer."""
        if self._timer is not None:
            self._timer.cancel()
        self.flush()


def _quoted(name: str) -> str:
    """A name that is no valid tool name came from a caller: quoted, shortened and escaped,
    so that it cannot end the line or pose as another field."""
    return '"' + printable(name.replace("\\", "\\\\")).replace('"', '\\"') + '"'


def _stamp(wall_ms: int) -> str:
    """``2026-11-29 21:02:14,546``: local time, as the logging module writes it."""
    second, millis = divmod(wall_ms, 1000)
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(second))},{millis:03d}"
