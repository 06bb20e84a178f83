"""Unexpected exceptions in tools and hooks, logged once each with their traceback.

A tool that fails on every call must not flood the log: each tool gets ``burst`` tracebacks
per ``window`` seconds; past that, failures are only counted, and the next traceback that
is let through says how many were left out. Every line of a logged traceback is indented,
and the exception's own text is escaped, so nothing a request put there reads as a log line.
"""

from __future__ import annotations

import logging
import traceback
from typing import Final

from llmworker import ToolError, ToolServerError
from llmworker._wire import message_of, printable

from .log_budget import LogBudget

__all__ = ["FailureLog", "unexpected_cause"]

_log = logging.getLogger("llmworker.server.failures")
_MAX_TRACEBACK_LINES: Final = 60


def unexpected_cause(error: BaseException) -> BaseException | None:
    """The exception behind ``error`` that no tool raised on purpose, or None.

    A ``ToolError`` a tool raises itself is an answer for the model; one that the library
    made from another exception (a crash in the tool's body) carries it as ``__cause__``.
    """
    seen = 0
    while isinstance(error, ToolError | ToolServerError) and seen < 4:
        cause = error.__cause__
        if cause is None:
            return None
        error, seen = cause, seen + 1
    if isinstance(error, ToolError | ToolServerError):
        return None
    return error


class FailureLog:
    """Logs unexpected exceptions with traceback, tool name and call id, rate-limited."""

    def __init__(self, burst: int = 5, window: float = 60.0) -> None:
        self._budget = LogBudget(burst, window)

    def report(self, tool: str, call_id: str, error: BaseException) -> None:
        """Log ``error``, raised in the call ``call_id`` to ``tool``, unless over the rate."""
        self.report_where(tool, f"tool={printable(tool)} call_id={call_id}", error)

    def report_where(self, key: str, where: str, error: BaseException) -> None:
        """Log ``error`` with ``where`` (already escaped), rate-limited per ``key``."""
        left_out = self._budget.take(key)
        if left_out is None:
            return
        more = f" ({left_out} similar failures of this tool were not logged)" if left_out else ""
        try:
            message = message_of(error)
            shown = f": {printable(message, 500)}" if message else ""
            details = f"{shown}{more}\n{_indented_traceback(error)}"
        except Exception as problem:  # a traceback that cannot be formatted is still reported
            details = f" (its traceback could not be formatted: {type(problem).__name__}){more}"
        _log.error("%s raised %s%s", where, type(error).__name__, details)


def _indented_traceback(error: BaseException) -> str:
    lines = traceback.format_exception(error)
    text = "".join(lines).rstrip("\n").split("\n")
    if len(text) > _MAX_TRACEBACK_LINES:
        cut = len(text) - _MAX_TRACEBACK_LINES
        text = [
            *text[: _MAX_TRACEBACK_LINES // 2],
            f"... {cut} lines ...",
            *text[-_MAX_TRACEBACK_LINES // 2 :],
        ]
    return "\n".join(f"    | {printable(line, 1000)}" for line in text)
