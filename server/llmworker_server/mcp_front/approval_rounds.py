"""A tool that requires approval, called over MCP's 2026-07-28 revision, where the server
asks nothing while a request runs: the call pauses as a batch held in the server's
``PausedStore`` (SQLite, PostgreSQL or memory, as CallTools' batches), and the round ends
with an ``InputRequiredResult`` asking the approval form. Its ``requestState`` holds the
batch's resume token, sealed by the SDK's ``RequestStateBoundary`` (encrypted, bound to the
tool, its arguments and the caller, expiring with the batch), so any replica sharing the
store and ``--mcp-state-key-file`` continues it. The next round brings the person's answer:
the batch is claimed once and resumed as decided; a replayed state finds the token used.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import mcp_types as types
from pydantic import ValidationError

from llmworker import (
    Completed,
    Decision,
    Deny,
    Elicit,
    JsonValue,
    Paused,
    ToolBatchAborted,
    ToolCall,
    ToolResult,
    Worker,
)
from llmworker._wire import ErrorStatus, Reason, shorten

from ..calls.decisions import decision_name
from ..calls.not_held import not_held, state_unavailable
from ..rpc.audit import AUDIT
from ..state.held import HeldBatch
from ..state.store import PausedStore, StateUnavailable
from .approval import APPROVAL_FORM, answered_decision, approval_question
from .client_input import request_of

__all__ = ["APPROVAL_KEY", "ApprovalRounds", "approval_token"]

APPROVAL_KEY: Final = "approval"
"""The key of the approval form in ``inputRequests`` and ``inputResponses``."""
_STATE_VERSION: Final = 1

Outcome = ToolResult | ErrorStatus | types.InputRequiredResult


class ApprovalRounds:
    """Approvals across rounds, their batches held in ``store`` (read at each use: the
    registry's worker moves, so ``worker`` is a getter)."""

    def __init__(self, worker: Callable[[], Worker[Any]], store: PausedStore) -> None:
        self._worker = worker
        self._store = store

    async def start(self, call: ToolCall, owner: str) -> Outcome:
        """Pause ``call`` for approval and ask for it; a pre-hook may decide it at once."""
        outcome = await self._worker().call_tools([call])
        if isinstance(outcome, Completed):
            return outcome.results[0]
        return await self._hold(outcome, {call.id: call.name}, owner, call, None)

    async def decide(
        self, token: str, responses: Mapping[str, JsonValue], call: ToolCall, caller: str
    ) -> Outcome:
        """The round that brings the answer on the batch of ``token``: its call run as
        decided (``call`` gives this round's limits), asked again without an answer, or why
        it cannot run (used, expired, interrupted, another caller's)."""
        store = self._store
        try:
            found = await store.find(token)
        except StateUnavailable as error:
            return state_unavailable(error)
        if not isinstance(found, HeldBatch):
            return not_held(found, store.replica)
        held = found
        pending = held.paused.pending_calls[0]
        if held.owner != caller:
            return ErrorStatus.of(
                Reason.RESUME_FORBIDDEN,
                f"the approval of '{shorten(pending.name)}' belongs to the caller that asked "
                "for it; nothing ran: answer it from that caller",
                tool=shorten(pending.name),
            )
        answer = responses.get(APPROVAL_KEY)
        if answer is None:  # not answered yet: the same question again
            return _ask(token, pending, None)
        try:
            decision = answered_decision(types.ElicitResult.model_validate(answer))
        except ValidationError:
            return _ask(token, pending, "the answer was not the form's; answer it again")
        if isinstance(decision, ErrorStatus):  # an edited input that is not JSON
            return _ask(token, pending, decision.message)
        return await self._resume(held, pending, decision, call)

    async def _resume(
        self, held: HeldBatch, pending: ToolCall, decision: Decision, call: ToolCall
    ) -> Outcome:
        store = self._store
        may_run = [] if isinstance(decision, Deny) else [pending.id]
        try:
            if not await store.claim(held.batch_id, may_run):
                return not_held(await store.find_id(held.batch_id), store.replica)
        except StateUnavailable as error:
            return state_unavailable(error)
        AUDIT.decided(held.batch_id, pending.id, pending.name, decision_name(decision), held.owner)
        pending.deadline, pending.timeout = call.deadline, call.timeout  # they start again now
        try:
            outcome = await self._worker().resume(held.paused, {pending.id: decision})
        except ToolBatchAborted as error:
            if not error.after_execution:  # nothing ran: the batch is over
                await _quietly(store.forget(held.batch_id))
            raise
        if isinstance(outcome, Completed):
            await _quietly(store.finish(held.batch_id))
            return outcome.results[0]
        return await self._hold(outcome, held.names, held.owner, pending, held.batch_id)

    async def _hold(
        self,
        paused: Paused,
        names: dict[str, str],
        owner: str,
        call: ToolCall,
        replaces: str | None,
    ) -> Outcome:
        """Keep ``paused`` (replacing the claimed batch ``replaces``) and ask about it."""
        store = self._store
        size = len(call.name) + len(call.input_json.encode())
        resumed = replaces is not None
        try:
            held = await store.hold(
                paused, names, size, form=None, owner=owner, resumed=resumed, replaces=replaces
            )
        except StateUnavailable as error:
            if replaces is not None:
                await _quietly(store.release(replaces))
            return state_unavailable(error)
        if held is None:
            return ErrorStatus.of(
                Reason.PAUSED_BATCHES_FULL,
                f"the store {store.describe()} holds {store.limit} paused batches or their "
                f"bytes (--max-paused-batches); the call of '{shorten(call.name)}' did not "
                "run: retry later, once held batches are decided",
                tool=shorten(call.name),
            )
        token, record = held
        return _ask(token, record.paused.pending_calls[0], None)


def approval_token(state: str | None) -> str | None:
    """The resume token a ``requestState`` of an approval round holds (the boundary has
    opened and checked it), or None for a first round."""
    if state is None:
        return None
    try:
        record: JsonValue = json.loads(state)
    except ValueError:
        return None
    token = record.get("approval") if isinstance(record, dict) else None
    return token if isinstance(token, str) else None


def _ask(token: str, call: ToolCall, problem: str | None) -> types.InputRequiredResult:
    """The round's end: the approval form for ``call``, the batch's token as the state."""
    message = approval_question(call.name, call.input_json)
    if problem:
        message = f"{message} ({problem})"
    state = json.dumps({"v": _STATE_VERSION, "approval": token}, separators=(",", ":"))
    question = request_of(Elicit(message, APPROVAL_FORM))
    return types.InputRequiredResult(input_requests={APPROVAL_KEY: question}, request_state=state)


async def _quietly(step: Awaitable[None]) -> None:
    """Settle a claimed batch; a store out of reach leaves it claimed (interrupted) until
    it expires, which never runs it twice."""
    with contextlib.suppress(StateUnavailable):
        await step
