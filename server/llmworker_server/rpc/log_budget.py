"""A budget of log lines per key: a flood of one kind of line must not flood the log."""

from __future__ import annotations

import time
from typing import Final

__all__ = ["LogBudget"]

_MAX_KEYS: Final = 4096  # keys are bounded by their callers; this is a backstop


class LogBudget:
    """``burst`` lines per key per ``window`` seconds; past that, lines are only counted,
    and the next one let through is told how many were left out."""

    def __init__(self, burst: int, window: float) -> None:
        self.burst = burst
        self._window = window
        self._by_key: dict[str, tuple[float, int, int]] = {}  # window start, logged, left out

    def take(self, key: str) -> int | None:
        """None when ``key`` is over its budget (the line is counted as left out); else how
        many of its lines were left out since the last one let through."""
        now = time.monotonic()
        started, logged, left_out = self._by_key.get(key, (now, 0, 0))
        if now - started >= self._window:
            started, logged = now, 0
        if logged >= self.burst:
            self._by_key[key] = (started, logged, left_out + 1)
            return None
        self._by_key[key] = (started, logged + 1, 0)
        if len(self._by_key) > _MAX_KEYS:
            self._by_key.clear()
        return left_out
