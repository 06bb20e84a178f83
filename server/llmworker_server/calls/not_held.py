"""Why a resume token (or batch id) resumes nothing, as the status ResumeBatch answers."""

from __future__ import annotations

import time
from typing import Final

from llmworker._wire import ErrorStatus, Reason, shorten

from ..state.held import Elsewhere, Interrupted, Resumed, Unresumable
from ..state.store import Found, StateUnavailable

__all__ = ["not_held", "state_unavailable"]


def not_held(found: Found, here: str) -> ErrorStatus:
    """The refusal for ``found`` (anything but a held batch), on the replica ``here``."""
    if isinstance(found, Interrupted):
        return _interrupted(found)
    if isinstance(found, Elsewhere):
        return _paused_elsewhere(found.replica, here)
    if isinstance(found, Unresumable):
        return _unresumable(found.why)
    if isinstance(found, Resumed):
        return _resumed(found)
    return _UNKNOWN_TOKEN


_UNKNOWN_TOKEN: Final = ErrorStatus.of(
    Reason.RESUME_TOKEN_UNKNOWN,
    "the resume token (or batch id) is unknown, expired or used (a paused batch waits "
    "--paused-batch-ttl, and resumes once; a hook's abort ends it); send the calls again "
    "with CallTools if they must still run",
)


def _resumed(found: Resumed) -> ErrorStatus:
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(found.claimed_at))
    return ErrorStatus.of(
        Reason.RESUME_TOKEN_UNKNOWN,
        f"the token was used: batch {found.batch_id} was resumed at {when} and that resume "
        "ran to its end: its calls ran and their results went to the caller of that "
        "ResumeBatch; a batch resumes once: do not send its calls again",
        resumed_at=when,
    )


def _interrupted(found: Interrupted) -> ErrorStatus:
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(found.claimed_at))
    ran = ", ".join(found.may_have_run) or "none"
    return ErrorStatus.of(
        Reason.BATCH_INTERRUPTED,
        f"batch {found.batch_id} was resumed at {when} and has not finished: it is running "
        "now, or its resume was cut short while its calls ran (the process stopped, or the "
        "client went away). It never runs again; "
        f"the calls that may have run: {shorten(ran, 300)}. Check their effects, then send "
        "what must still run with CallTools",
        may_have_run=shorten(",".join(found.may_have_run), 500),
    )


def state_unavailable(error: StateUnavailable) -> ErrorStatus:
    return ErrorStatus.of(Reason.STATE_UNAVAILABLE, f"{error}; nothing ran: retry later")


def _paused_elsewhere(replica: str, here: str) -> ErrorStatus:
    return ErrorStatus.of(
        Reason.BATCH_PAUSED_ELSEWHERE,
        f"the batch was paused by replica {replica}, and this is replica {here}: a paused "
        "batch lives in the memory of the replica that paused it; send ResumeBatch to that "
        "replica (keep an agent's session on one replica: a sticky route, or a connection to "
        "it), run the replicas on a shared --state, or send the calls again with CallTools",
        replica=replica,
    )


def _unresumable(why: str) -> ErrorStatus:
    return ErrorStatus.of(
        Reason.BATCH_UNRESUMABLE,
        f"this process cannot rebuild the batch: {why}; the batch is still held: resume it "
        "on a server with the same --tools (and pre-hooks), or send the calls again",
    )
