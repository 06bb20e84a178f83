"""ResumeBatch's decisions, checked against the paused batch they decide on."""

from __future__ import annotations

from typing import Final

from llmworker import Approve, ApproveWithInput, Decision, Deny
from llmworker._wire import ErrorStatus, shorten
from llmworker.v1 import tool_service_pb2 as pb

from ..state.held import HeldBatch
from .limits import CallLimits
from .requests import invalid

__all__ = ["decision_name", "decisions_of"]

_MAX_DENY_REASON_BYTES: Final = 1024


def decision_name(decision: Decision) -> str:
    """How the audit trail names ``decision``: approve, deny or edit."""
    if isinstance(decision, ApproveWithInput):
        return "edit"
    return "deny" if isinstance(decision, Deny) else "approve"


def decisions_of(
    request: pb.ResumeBatchRequest, held: HeldBatch, limits: CallLimits
) -> tuple[dict[str, Decision], ErrorStatus | None]:
    """The decision on each pending call of ``held`` that ``request`` decides on, or the
    refusal of a decision on no pending call, two on one, an empty one, a reason or an edited
    input too long."""
    pending = {call.id: call.name for call in held.paused.pending_calls}
    inputs = {call.id: len(call.input_json.encode()) for call in held.paused.pending_calls}
    decisions: dict[str, Decision] = {}
    for message in request.decisions:
        call_id = message.call_id
        if call_id not in pending:
            return decisions, invalid(
                f"a decision names call {shorten(repr(call_id))}, which is not pending in "
                "this batch; decide on the call ids in PausedBatch.pending_calls"
            )
        if call_id in decisions:
            return decisions, invalid(
                f"call {shorten(repr(call_id))} has two decisions; send one per call"
            )
        kind = message.WhichOneof("decision")
        if kind == "approve":
            decisions[call_id] = Approve()
        elif kind == "deny":
            reason = message.deny.reason
            if len(reason.encode()) > _MAX_DENY_REASON_BYTES:
                return decisions, invalid(
                    f"the reason denying call {shorten(repr(call_id))} is over "
                    f"{_MAX_DENY_REASON_BYTES} bytes; say it shorter"
                )
            decisions[call_id] = Deny(reason)
        elif kind == "approve_with_input":
            edited = message.approve_with_input.input_json
            too_large = limits.input_too_large(pending[call_id], edited)
            if too_large is not None:
                return decisions, too_large
            decisions[call_id] = ApproveWithInput(edited)
            inputs[call_id] = len(edited.encode())
        else:
            return decisions, invalid(
                f"the decision for call {shorten(repr(call_id))} sets none of approve, "
                "deny or approve_with_input"
            )
    limit = limits.max_output_bytes // 2
    if sum(inputs.values()) > limit:
        return decisions, invalid(
            f"the edited inputs make the pending calls {sum(inputs.values())} bytes; a "
            f"paused batch's calls must fit in {limit} (half of --max-message-bytes) to "
            "come back in a response: edit less"
        )
    return decisions, None
