"""The call log: one line per call, written in batches.

Formatting and writing a log record per call through ``logging`` (with a flush per record)
costs more than the rest of a call (see BENCHMARKS.md). The call log only notes the tool, the
status and two clock readings per call, and writes the formatted lines with one write every
``interval`` seconds and on close, in the same layout as the other log lines::

    2026-11-29 21:02:14,546 INFO llmworker.server.calls tool=echo status=OK duration_ms=0.081

and, when the server checks callers, `` caller=<label>`` (a label is printable ASCII
without spaces, checked when the token file is read), and `` transport=mcp`` for a call
that came over MCP (a gRPC call's line says nothing of it). With ``--log-format json`` a
line is one object with the keys of every JSON line (``log_format.py``) and ``tool``,
``status``, ``duration_ms``, ``caller`` (null when callers are not checked) and
``transport`` (``grpc`` or ``mcp``).

The same flush counts the calls in the Prometheus metrics, if any (``metrics.py``).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Final, TextIO

from llmworker._wire import printable

from .log_format import utc_stamp
from .metrics import ServerMetrics

__all__ = ["CallLog"]

_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MAX_REMEMBERED_NAMES: Final = 4096
_LINE = "%s,%03d INFO llmworker.server.calls tool=%s status=%s duration_ms=%.3f\n"
_JSON_LINE = (
    '{"time":"%s.%03dZ","level":"INFO","logger":"llmworker.server.calls",'
    '"message":"tool=%s status=%s duration_ms=%.3f","tool":%s,"status":"%s",'
    '"duration_ms":%.3f,"caller":%s,"transport":"%s"}\n'
)
_Record = tuple[str, str, float, float, str, str]
"""tool, status, started, ended, caller, transport"""


class CallLog:
    """Buffers call records and, periodically, writes them to ``stream`` (None: no lines)
    and counts them in ``metrics``.

    Times are ``time.perf_counter()`` readings; a line's wall-clock time is derived when it is
    written, so a clock step shows up at most ``interval`` seconds late.
    """

    def __init__(
        self,
        stream: TextIO | None,
        interval: float = 0.2,
        *,
        json_lines: bool = False,
        metrics: ServerMetrics | None = None,
    ) -> None:
        self._stream = stream
        self._json = json_lines
        self._metrics = metrics
        self._interval = interval
        self._pending: list[_Record] = []
        self._timer: asyncio.TimerHandle | None = None
        self._shown: dict[str, str] = {}  # a tool name as a line shows it, for names seen

    def record(
        self, tool: str, status: str, started: float, caller: str = "", transport: str = "grpc"
    ) -> None:
        """Note one call that began at ``started`` and ends now, from the caller labelled
        ``caller`` (if any) over ``transport`` (grpc, mcp); written within ``interval``."""
        self._pending.append((tool, status, started, time.perf_counter(), caller, transport))
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval, self.flush)

    def flush(self) -> None:
        """Write every pending line now."""
        self._timer = None
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        if self._metrics is not None:
            self._metrics.count(
                (tool, status, ended - started, transport)
                for tool, status, started, ended, _, transport in pending
            )
        if self._stream is None:
            return
        lines = self._json_lines(pending) if self._json else self._text_lines(pending)
        self._stream.write("".join(lines))
        self._stream.flush()

    def _text_lines(self, pending: list[_Record]) -> list[str]:
        to_wall = time.time() - time.perf_counter()
        stamped, stamp = -1, ""
        shown = self._shown
        lines: list[str] = []
        append = lines.append
        for tool, status, started, ended, caller, transport in pending:
            second, millis = divmod(int((ended + to_wall) * 1000), 1000)
            if second != stamped:  # one clock formatting per second of calls
                stamped, stamp = second, _stamp(second)
            name = shown.get(tool) or self._show(tool)
            line = _LINE % (stamp, millis, name, status, (ended - started) * 1000)
            if caller:
                line = f"{line[:-1]} caller={caller}\n"
            append(line if transport == "grpc" else f"{line[:-1]} transport={transport}\n")
        return lines

    def _json_lines(self, pending: list[_Record]) -> list[str]:
        to_wall = time.time() - time.perf_counter()
        stamped, stamp = -1, ""
        shown = self._shown
        lines: list[str] = []
        for tool, status, started, ended, caller, transport in pending:
            second, millis = divmod(int((ended + to_wall) * 1000), 1000)
            if second != stamped:
                stamped, stamp = second, utc_stamp(second)
            name = shown.get(tool) or self._show(tool)  # as JSON: "echo", with the quotes
            milliseconds = (ended - started) * 1000
            lines.append(
                _JSON_LINE
                % (stamp, millis, name[1:-1], status, milliseconds, name, status, milliseconds,
                   json.dumps(caller) if caller else "null", transport)
            )  # fmt: skip
        return lines

    def _show(self, tool: str) -> str:
        """``tool`` as a line shows it: as is when a valid tool name, else quoted."""
        if len(self._shown) >= _MAX_REMEMBERED_NAMES:
            self._shown.clear()
        name = tool if _TOOL_NAME.fullmatch(tool) else _quoted(tool)
        if self._json:
            name = json.dumps(name)
        self._shown[tool] = name
        return name

    def close(self) -> None:
        """Write what is pending and stop the timer."""
        if self._timer is not None:
            self._timer.cancel()
        self.flush()


def _quoted(name: str) -> str:
    """A name that is no valid tool name came from a caller: quoted, shortened and escaped,
    so that it cannot end the line or pose as another field."""
    return '"' + printable(name.replace("\\", "\\\\")).replace('"', '\\"') + '"'


def _stamp(second: int) -> str:
    """``2026-11-29 21:02:14`` (the line adds ``,546``): local time, as logging writes it."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))
