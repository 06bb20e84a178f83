"""Batches over gRPC, as library values: CallTools and ResumeBatch messages to and from
``ToolCall``, ``ToolResult``, ``Completed`` and ``RemotePaused``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, cast, final

import grpc

from .._model.attachments import Attachment
from .._model.calls import ToolCall, ToolResult
from .._model.decisions import Approve, ApproveWithInput, Decision, Deny
from .._model.errors import (
    RemoteServiceError,
    ToolBatchAborted,
    ToolError,
    ToolRegistryError,
    ToolServerError,
)
from .._model.json_values import JsonObject
from .._model.outcomes import Completed, RemotePaused
from .._wire.attachments import attachments_from
from .._wire.status import (
    ABORT_CALL_KEY,
    ABORT_REASON_KEY,
    DETAILS_KEY,
    Reason,
    tool_error_from_status,
)
from ..v1 import tool_service_pb2 as pb

__all__ = [
    "ResumeToken",
    "aborted",
    "calls_request",
    "outcome_of",
    "resume_request",
    "structured_of",
]

_CODES: Final = {code.value[0]: code for code in grpc.StatusCode}


@final
class ResumeToken:
    """What resumes a batch paused on a server: its token."""

    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token


def calls_request(calls: Sequence[ToolCall]) -> pb.CallToolsRequest:
    return pb.CallToolsRequest(
        calls=[
            pb.CallToolRequest(
                name=call.name,
                input_json=call.input_json,
                call_id=call.id,
                metadata=dict(call.metadata),
            )
            for call in calls
        ]
    )


def resume_request(token: str, decisions: Mapping[str, Decision]) -> pb.ResumeBatchRequest:
    messages: list[pb.CallDecision] = []
    for call_id, decision in decisions.items():
        match decision:
            case Approve():
                messages.append(pb.CallDecision(call_id=call_id, approve=pb.Approval()))
            case Deny(reason):
                messages.append(pb.CallDecision(call_id=call_id, deny=pb.Denial(reason=reason)))
            case ApproveWithInput(input_json):
                edited = pb.EditedApproval(input_json=input_json)
                messages.append(pb.CallDecision(call_id=call_id, approve_with_input=edited))
    return pb.ResumeBatchRequest(resume_token=token, decisions=messages)


def outcome_of(response: pb.CallToolsResponse) -> Completed | RemotePaused:
    """The outcome a CallTools or ResumeBatch response carries."""
    if response.WhichOneof("outcome") != "paused":
        return Completed([_result(message) for message in response.completed.results])
    paused = response.paused
    pending = tuple(
        ToolCall(call.call_id, call.name, call.input_json) for call in paused.pending_calls
    )
    by_id = {call.id: call for call in pending}
    first = by_id.get(paused.paused_call_id) or (pending[0] if pending else ToolCall("", "", ""))
    return RemotePaused(
        ResumeToken(paused.resume_token),
        pending_calls=pending,
        results=tuple(_result(message) for message in paused.results),
        awaiting_approval=tuple(
            call.call_id for call in paused.pending_calls if call.awaiting_approval
        ),
        paused_call=first,
        reason=paused.reason,
        resume_token=paused.resume_token,
        expires_at=paused.expire_time.ToNanoseconds() / 1e9,
    )


def aborted(error: RemoteServiceError) -> ToolBatchAborted | None:
    """The ``ToolBatchAborted`` a server's HOOK_ABORTED status stands for, if it is one."""
    if error.reason != Reason.HOOK_ABORTED or ABORT_REASON_KEY not in error.metadata:
        return None
    return ToolBatchAborted(
        error.metadata[ABORT_REASON_KEY], error.metadata.get(ABORT_CALL_KEY, "")
    )


def structured_of(text: str) -> JsonObject | None:
    """A structured result the server sent as JSON text; ``RemoteServiceError`` when it is
    not a JSON object (the server is no llmworker server, or is broken)."""
    if not text:
        return None
    try:
        value: object = json.loads(text)
    except (ValueError, RecursionError) as error:
        value = error
    if not isinstance(value, dict):
        raise RemoteServiceError(
            grpc.StatusCode.UNAVAILABLE,
            Reason.PROVIDER_UNAVAILABLE.value,
            "the server sent a structured_output_json that is not a JSON object; check that "
            "it is an llmworker server",
            {},
        )
    return cast("JsonObject", value)


def received_attachments(messages: Iterable[pb.Attachment]) -> tuple[Attachment, ...]:
    """The attachments the server sent; ``RemoteServiceError`` when one is not valid."""
    try:
        return attachments_from(messages)
    except ValueError as error:
        raise RemoteServiceError(
            grpc.StatusCode.UNAVAILABLE,
            Reason.PROVIDER_UNAVAILABLE.value,
            f"the server sent an attachment that is not valid ({error}); check that it is an "
            "llmworker server of this release or newer",
            {},
        ) from None


def _result(message: pb.CallResult) -> ToolResult:
    structured = structured_of(message.structured_output_json) if not message.is_error else None
    error: ToolError | ToolServerError | None = None
    if message.is_error:
        error = _error(message)
    return ToolResult(
        message.call_id,
        message.output,
        is_error=message.is_error,
        error=error,
        structured=structured,
        skipped=message.skipped,
        attachments=() if message.is_error else received_attachments(message.attachments),
    )


def _error(message: pb.CallResult) -> ToolError | ToolServerError:
    status = message.error
    code = _CODES.get(status.code, grpc.StatusCode.UNKNOWN)
    trailers = ((DETAILS_KEY, status.SerializeToString()),)
    error = tool_error_from_status(code, status.message, trailers)
    if isinstance(error, ToolRegistryError):
        return RemoteServiceError(code, "DUPLICATE_NAME", status.message, {})
    return error
