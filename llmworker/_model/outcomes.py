"""What a batch comes to: ``Completed`` with every result, or ``Paused`` until a person
decides (resumed once, on the worker or handle that paused it: a batch a server paused is a
``RemotePaused``, which only a remote handle's ``resume`` takes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias, TypeVar, final

from .calls import ToolCall, ToolResult
from .decisions import Approve, ApproveWithInput, Decision, Deny
from .errors import WorkerError
from .text import shorten

__all__ = ["BatchOutcome", "Completed", "Paused", "RemotePaused", "ToolCallPaused"]

_Resumable = TypeVar("_Resumable")


@final
@dataclass(frozen=True, slots=True)
class Completed:
    """Every call of the batch has a result, in call order."""

    results: list[ToolResult]


class Paused:
    """A batch stopped before anything executed: tools await approval, or a hook paused.

    ``pending_calls`` are the calls without a result yet, with their current input;
    ``results`` the results known so far (unknown tools, skipped or denied calls);
    ``awaiting_approval`` the ids of calls whose tool requires approval; ``paused_call`` the
    call whose hook paused (or the first awaiting approval); ``reason`` says why. Pass it,
    once, to ``resume`` on the Worker (or remote handle) it came from, with decisions.
    A batch paused on a server is the subclass ``RemotePaused``, with ``resume_token`` and
    ``expires_at`` (seconds since the epoch) set. Pending calls keep their ``deadline``:
    after a long pause, set it again on them before resuming (a ``timeout`` counts from when
    the call starts).
    """

    __slots__ = (
        "_resumable",
        "awaiting_approval",
        "expires_at",
        "paused_call",
        "pending_calls",
        "reason",
        "results",
        "resume_token",
    )

    def __init__(
        self,
        resumable: object,
        *,
        pending_calls: tuple[ToolCall, ...],
        results: tuple[ToolResult, ...],
        awaiting_approval: tuple[str, ...],
        paused_call: ToolCall,
        reason: str,
        resume_token: str = "",
        expires_at: float | None = None,
    ) -> None:
        self._resumable: object | None = resumable
        self.pending_calls: tuple[ToolCall, ...] = pending_calls
        self.results: tuple[ToolResult, ...] = results
        self.awaiting_approval: tuple[str, ...] = awaiting_approval
        self.paused_call: ToolCall = paused_call
        self.reason: str = reason
        self.resume_token: str = resume_token
        self.expires_at: float | None = expires_at

    def take(self, kind: type[_Resumable], decisions: Mapping[str, Decision]) -> _Resumable:
        """What resumes the batch, of type ``kind`` (a Worker's batch state or a server's
        token), once; ``WorkerError`` when it was taken already, is of another kind, or a
        decision names no pending call (the batch then stays resumable)."""
        resumable = self.peek(kind)
        self._check(decisions)
        self._resumable = None
        return resumable

    def peek(self, kind: type[_Resumable]) -> _Resumable:
        """What resumes the batch, left in place; ``WorkerError`` as ``take``."""
        resumable = self._resumable
        if resumable is None:
            raise WorkerError(
                "this paused batch was already resumed; use the outcome resume returned"
            )
        if not isinstance(resumable, kind):
            raise WorkerError(
                "this batch paused elsewhere: resume it with the Worker or "
                "RemoteToolServerHandle that returned it"
            )
        return resumable

    def give_back(self, resumable: object) -> None:
        """Make the batch resumable again: resuming failed before it went on."""
        self._resumable = resumable

    def _check(self, decisions: Mapping[str, Decision]) -> None:
        pending = {call.id for call in self.pending_calls}
        for call_id, decision in decisions.items():
            if call_id not in pending:
                raise WorkerError(
                    f"a decision names call '{shorten(call_id)}', which is not pending in this "
                    f"batch; decide on the ids in pending_calls ({_listed(pending)})"
                )
            if not isinstance(decision, Approve | Deny | ApproveWithInput):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise WorkerError(
                    f"the decision for call '{shorten(call_id)}' is {type(decision).__name__}; "
                    "use Approve(), Deny(reason) or ApproveWithInput(input_json)"
                )

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__}: {len(self.pending_calls)} pending, awaiting approval "
            f"{list(self.awaiting_approval)!r}, reason {self.reason!r}>"
        )


@final
class RemotePaused(Paused):
    """A batch a server paused: resume it with the remote handle that returned it. The
    handle's ``resume`` takes only this type, so type checkers refuse an in-process ``Paused``
    there (as the run time does)."""

    __slots__ = ()


BatchOutcome: TypeAlias = Completed | Paused


def _listed(ids: set[str]) -> str:
    return shorten(", ".join(f"'{call_id}'" for call_id in sorted(ids)), 300) or "none"


class ToolCallPaused(WorkerError):
    """A ``Worker.call_tool`` call paused before it ran: a pre-hook returned ``Pause()``, or
    the tool requires approval (``paused.awaiting_approval``).

    ``paused`` goes on with ``Worker.resume(paused)``, which returns the batch outcome.
    """

    def __init__(self, paused: Paused) -> None:
        why = (
            "requires approval"
            if paused.awaiting_approval
            else "was paused by a pre-tool-call hook"
        )
        super().__init__(
            f"the call to '{paused.paused_call.name}' {why}; pass this error's .paused to "
            "Worker.resume (with decisions) to go on"
        )
        self.paused = paused
