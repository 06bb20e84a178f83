"""The audit trail: every request the server refused before running anything (no token, a
forbidden tool, a full server, a malformed request…), logged and counted, and every
approval decision, logged.

Refusals never reach the call log, so they are logged here, under ``llmworker.server.audit``
at INFO, with the RPC, the reason, the tool and the caller's label when known (never a
token), and counted by reason for ``llmworker_refusals_total``. A flood of refusals must not
flood the log: each reason gets ``burst`` lines per ``window`` seconds, and the next line let
through says how many were left out; the counts miss none.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
from typing import Final

from llmworker._wire import ErrorStatus, Reason, printable

from .log_budget import LogBudget

__all__ = ["AUDIT", "CURRENT_CALLER", "CURRENT_RPC", "REFUSALS", "Audit"]

_log = logging.getLogger("llmworker.server.audit")
_BARE: Final = re.compile(r"[\x21-\x7e]{1,200}")

REFUSALS: Final = frozenset(
    reason.value
    for reason in (
        Reason.UNAUTHENTICATED,
        Reason.TOOL_FORBIDDEN,
        Reason.RESUME_FORBIDDEN,
        Reason.PROVIDER_FORBIDDEN,
        Reason.CONCURRENCY_LIMIT,
        Reason.SHUTTING_DOWN,
        Reason.INVALID_REQUEST,
        Reason.RESUME_TOKEN_UNKNOWN,
        Reason.BATCH_PAUSED_ELSEWHERE,
        Reason.PAUSED_BATCHES_FULL,
        Reason.REGISTRY_LOCKED,
        Reason.REGISTRY_FULL,
        Reason.DUPLICATE_NAME,
        Reason.DEFINITION_FORMAT_UNSUPPORTED,
    )
)
"""The reasons that refuse a request before anything runs (a call's own failures are in the
call log instead)."""

CURRENT_RPC: Final = contextvars.ContextVar[str]("llmworker_rpc", default="")
"""The RPC the running handler serves (each RPC runs in its own task)."""
CURRENT_CALLER: Final = contextvars.ContextVar[str]("llmworker_caller", default="")
"""The label of the caller (or provider identity) once it is known."""


class Audit:
    """Refusals, logged (rate-limited per reason) and counted; decisions, logged and counted."""

    def __init__(self, burst: int = 20, window: float = 10.0) -> None:
        self._budget = LogBudget(burst, window)
        self._counts: dict[str, int] = {}
        self._decisions: dict[str, int] = {}

    @property
    def burst(self) -> int:
        """Lines logged per reason per window."""
        return self._budget.burst

    @burst.setter
    def burst(self, lines: int) -> None:
        self._budget.burst = lines

    def counts(self) -> dict[str, int]:
        """Refusals so far by reason (a copy, safe to read from another thread)."""
        return self._counts.copy()

    def decision_counts(self) -> dict[str, int]:
        """Decisions so far by kind (approve, deny, edit; a copy)."""
        return self._decisions.copy()

    def refused(self, status: ErrorStatus) -> None:
        """Count and (within the rate) log the refusal ``status`` of the running RPC."""
        reason = status.reason
        self._counts[reason] = self._counts.get(reason, 0) + 1
        left_out = self._budget.take(reason)
        if left_out is None or not _log.isEnabledFor(logging.INFO):
            return
        fields = [f"rpc={CURRENT_RPC.get() or '-'}", f"reason={reason}"]
        tool = status.metadata.get("tool")
        if tool:
            fields.append(f"tool={_value(tool)}")
        caller = CURRENT_CALLER.get()
        if caller:
            fields.append(f"caller={_value(caller)}")
        more = f" ({left_out} more {reason} refusals were not logged)" if left_out else ""
        _log.info("refused %s%s", " ".join(fields), more)

    def decided(self, batch: str, call_id: str, tool: str, decision: str, owner: str) -> None:
        """Log one approval decision: who decided (the running RPC's caller), on which call
        of whose batch, and what (approve, deny or edit); the log line says when."""
        self._decisions[decision] = self._decisions.get(decision, 0) + 1
        _log.info(
            "decision %s batch=%s call_id=%s tool=%s by=%s owner=%s",
            decision,
            _value(batch),
            _value(call_id),
            _value(tool),
            _value(CURRENT_CALLER.get() or "-"),
            _value(owner or "-"),
        )


def _value(text: str) -> str:
    """``text`` as one field of an audit line: bare when it is printable ASCII without
    spaces, ``=`` or quotes, else quoted and escaped as JSON, so no request can forge a
    field."""
    shown = printable(text, 64)
    if _BARE.fullmatch(shown) and "=" not in shown and '"' not in shown:
        return shown
    return json.dumps(shown)


AUDIT: Final = Audit()
"""The process's audit trail (one server per process; tests read its counts as deltas)."""
