"""How errors cross gRPC: a status code, a message, and a google.rpc.ErrorInfo detail.

The reason names the error; the metadata holds ``tool`` and, for tool errors, ``tool_error``
(the ToolError's own message), so a client in any language can rebuild the exact variant.
The table is documented in ``proto/llmworker/v1/tool_service.proto``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, final

import grpc
import grpc.aio
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2  # pyright: ignore[reportMissingTypeStubs]

from .._model.errors import RemoteServiceError, ToolError, ToolRegistryError, ToolServerError
from .._model.text import message_of, shorten, shorten_utf8

__all__ = [
    "ABORT_CALL_KEY",
    "ABORT_REASON_KEY",
    "CODES",
    "DETAILS_KEY",
    "DOMAIN",
    "TABLE_REASONS",
    "ErrorStatus",
    "Reason",
    "error_from_rpc",
    "error_from_status",
    "status_of",
    "table_reason",
    "tool_error_from_rpc",
    "tool_error_from_status",
]

DOMAIN: Final = "llmworker"
DETAILS_KEY: Final = "grpc-status-details-bin"
# ErrorInfo metadata of HOOK_ABORTED: the call at which a hook aborted, and its reason.
ABORT_CALL_KEY: Final = "aborted_call_id"
ABORT_REASON_KEY: Final = "abort_reason"

_Metadata = Sequence[tuple[str, str | bytes]]


class Reason(enum.StrEnum):
    """``ErrorInfo.reason`` values."""

    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    TOOL_INVALID_ARGUMENT = "TOOL_INVALID_ARGUMENT"
    TOOL_EXECUTION_FAILED = "TOOL_EXECUTION_FAILED"
    TOOL_INTERNAL = "TOOL_INTERNAL"
    INVALID_REQUEST = "INVALID_REQUEST"
    TOOL_TIMEOUT = "TOOL_TIMEOUT"
    CONCURRENCY_LIMIT = "CONCURRENCY_LIMIT"
    PROVIDER_UNAVAILABLE = "PROVIDER_UNAVAILABLE"
    HOOK_ABORTED = "HOOK_ABORTED"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    REGISTRY_LOCKED = "REGISTRY_LOCKED"
    DUPLICATE_NAME = "DUPLICATE_NAME"
    REGISTRY_FULL = "REGISTRY_FULL"
    SHUTTING_DOWN = "SHUTTING_DOWN"
    APPROVAL_REQUIRED = "APPROVAL_REQUIRED"
    CALL_DENIED = "CALL_DENIED"
    RESUME_TOKEN_UNKNOWN = "RESUME_TOKEN_UNKNOWN"
    PAUSED_BATCHES_FULL = "PAUSED_BATCHES_FULL"
    DEFINITION_FORMAT_UNSUPPORTED = "DEFINITION_FORMAT_UNSUPPORTED"
    TOOL_FORBIDDEN = "TOOL_FORBIDDEN"
    BATCH_PAUSED_ELSEWHERE = "BATCH_PAUSED_ELSEWHERE"
    RESUME_FORBIDDEN = "RESUME_FORBIDDEN"
    PROVIDER_FORBIDDEN = "PROVIDER_FORBIDDEN"
    BATCH_INTERRUPTED = "BATCH_INTERRUPTED"
    STATE_UNAVAILABLE = "STATE_UNAVAILABLE"
    BATCH_UNRESUMABLE = "BATCH_UNRESUMABLE"


CODES: Final[Mapping[Reason, grpc.StatusCode]] = {
    Reason.TOOL_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Reason.TOOL_INVALID_ARGUMENT: grpc.StatusCode.INVALID_ARGUMENT,
    Reason.TOOL_EXECUTION_FAILED: grpc.StatusCode.UNKNOWN,
    Reason.TOOL_INTERNAL: grpc.StatusCode.INTERNAL,
    Reason.INVALID_REQUEST: grpc.StatusCode.INVALID_ARGUMENT,
    Reason.TOOL_TIMEOUT: grpc.StatusCode.DEADLINE_EXCEEDED,
    Reason.CONCURRENCY_LIMIT: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Reason.PROVIDER_UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    Reason.HOOK_ABORTED: grpc.StatusCode.ABORTED,
    Reason.UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
    Reason.REGISTRY_LOCKED: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.DUPLICATE_NAME: grpc.StatusCode.ALREADY_EXISTS,
    Reason.REGISTRY_FULL: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Reason.SHUTTING_DOWN: grpc.StatusCode.UNAVAILABLE,
    Reason.APPROVAL_REQUIRED: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.CALL_DENIED: grpc.StatusCode.PERMISSION_DENIED,
    Reason.RESUME_TOKEN_UNKNOWN: grpc.StatusCode.NOT_FOUND,
    Reason.PAUSED_BATCHES_FULL: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Reason.DEFINITION_FORMAT_UNSUPPORTED: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.TOOL_FORBIDDEN: grpc.StatusCode.PERMISSION_DENIED,
    Reason.BATCH_PAUSED_ELSEWHERE: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.RESUME_FORBIDDEN: grpc.StatusCode.PERMISSION_DENIED,
    Reason.PROVIDER_FORBIDDEN: grpc.StatusCode.PERMISSION_DENIED,
    Reason.BATCH_INTERRUPTED: grpc.StatusCode.FAILED_PRECONDITION,
    Reason.STATE_UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    Reason.BATCH_UNRESUMABLE: grpc.StatusCode.FAILED_PRECONDITION,
}
TABLE_REASONS: Final = frozenset(reason.value for reason in Reason)
"""Every reason string of the table, for checks on what a peer sent."""

MAX_MESSAGE_BYTES: Final = 1024
"""A status message is cut to this many bytes of UTF-8 (and to twice as many once
percent-encoded for the ``grpc-message`` header)."""
MAX_METADATA_BYTES: Final = 1024
"""The ErrorInfo metadata, keys and values, is cut to this many bytes in all.

With these caps every error's trailers stay under 6 KiB whatever the request held: gRPC's
default limit on received metadata is 8 KiB, and a client over it sees RESOURCE_EXHAUSTED
instead of the error."""
_MAX_METADATA_VALUE_BYTES: Final = 512
_MAX_METADATA_ENTRIES: Final = 16

_TOOL_ERROR_REASONS: Final[Mapping[type[ToolError], Reason]] = {
    ToolError.InvalidArgument: Reason.TOOL_INVALID_ARGUMENT,
    ToolError.ExecutionFailed: Reason.TOOL_EXECUTION_FAILED,
    ToolError.Internal: Reason.TOOL_INTERNAL,
}
_TOOL_ERRORS_BY_REASON: Final[Mapping[str, type[ToolError]]] = {
    reason.value: kind for kind, reason in _TOOL_ERROR_REASONS.items()
}


@final
@dataclass(frozen=True, slots=True)
class ErrorStatus:
    """An error as a gRPC status: code, message and ErrorInfo, bounded in size (the message
    and metadata are cut to ``MAX_MESSAGE_BYTES`` and ``MAX_METADATA_BYTES``)."""

    code: grpc.StatusCode
    reason: str
    message: str
    metadata: Mapping[str, str]

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", _bounded_message(self.message))
        object.__setattr__(self, "metadata", _bounded_metadata(self.metadata))

    @classmethod
    def of(cls, reason: Reason, message: str, **metadata: str) -> ErrorStatus:
        return cls(CODES[reason], reason.value, message, metadata)

    def to_proto(self) -> status_pb2.Status:
        """The google.rpc.Status with its ErrorInfo detail."""
        detail = any_pb2.Any()
        detail.Pack(
            error_details_pb2.ErrorInfo(reason=self.reason, domain=DOMAIN, metadata=self.metadata)
        )
        return status_pb2.Status(code=self.code.value[0], message=self.message, details=[detail])

    def trailing_metadata(self) -> tuple[tuple[str, bytes]]:
        """The ``grpc-status-details-bin`` trailer carrying the google.rpc.Status."""
        return ((DETAILS_KEY, self.to_proto().SerializeToString()),)


def _bounded_message(message: str) -> str:
    limit = 2 * MAX_MESSAGE_BYTES
    if (
        len(message) <= MAX_MESSAGE_BYTES
        and message.isascii()
        and message.isprintable()
        and len(message) + 2 * message.count("%") <= limit
    ):
        return message  # the common case, checked at C speed
    message = shorten_utf8(message, MAX_MESSAGE_BYTES)
    while _percent_encoded_length(message) > limit:
        message = shorten_utf8(message, len(message.encode()) * 3 // 4)
    return message


_PERCENT_ENCODED: Final = bytes(b for b in range(256) if not 0x20 <= b <= 0x7E or b == 0x25)


def _percent_encoded_length(message: str) -> int:
    """The length of ``message`` in the ``grpc-message`` header, which percent-encodes every
    byte outside printable ASCII."""
    encoded = message.encode()
    plain = len(encoded.translate(None, _PERCENT_ENCODED))
    return plain + 3 * (len(encoded) - plain)


def _bounded_metadata(metadata: Mapping[str, str]) -> dict[str, str]:
    bounded: dict[str, str] = {}
    room = MAX_METADATA_BYTES
    for key, value in list(metadata.items())[:_MAX_METADATA_ENTRIES]:
        key = shorten_utf8(str(key), 64)
        value = value if isinstance(value, str) else message_of(value)  # pyright: ignore[reportUnnecessaryIsInstance]
        limit = min(_MAX_METADATA_VALUE_BYTES, room - len(key.encode()))
        if limit < 16:
            break
        bounded[key] = value = shorten_utf8(value, limit)
        room -= len(key.encode()) + len(value.encode())
    return bounded


def table_reason(reason: str, code: grpc.StatusCode) -> Reason:
    """``reason`` if the table has it; otherwise the table's reason for a failure with
    ``code`` that came from elsewhere (a provider that is no llmworker server, or gRPC):
    ``TOOL_TIMEOUT`` for a deadline, ``PROVIDER_UNAVAILABLE`` for anything else."""
    if reason in TABLE_REASONS:
        return Reason(reason)
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return Reason.TOOL_TIMEOUT
    return Reason.PROVIDER_UNAVAILABLE


def status_of(error: ToolError | ToolServerError | ToolRegistryError, tool: str) -> ErrorStatus:
    """The status that carries ``error`` raised for the tool ``tool``."""
    match error:
        case ToolError():
            reason = _TOOL_ERROR_REASONS.get(type(error), Reason.TOOL_EXECUTION_FAILED)
            text = str(ToolServerError.ToolExecution(str(error)))
            return ErrorStatus.of(reason, text, tool=tool, tool_error=error.message)
        case ToolServerError.ToolNotFound():
            return ErrorStatus.of(Reason.TOOL_NOT_FOUND, str(error), tool=shorten(tool))
        case ToolServerError.ToolTimeout():
            return ErrorStatus.of(Reason.TOOL_TIMEOUT, str(error), tool=shorten(tool))
        case ToolServerError.CallDenied():
            return ErrorStatus.of(Reason.CALL_DENIED, str(error), tool=shorten(tool))
        case ToolServerError.ToolExecution() if isinstance(error.__cause__, ToolError):
            return status_of(error.__cause__, tool)
        case ToolRegistryError.DuplicateName():
            return ErrorStatus.of(Reason.DUPLICATE_NAME, str(error), tool=tool)
        case RemoteServiceError():
            # The code follows the reason, so a provider cannot send a pair off the table.
            reason = table_reason(error.reason, error.code)
            metadata = {"tool": shorten(tool)}
            metadata.update((key, value) for key, value in error.metadata.items() if key != "tool")
            return ErrorStatus(CODES[reason], reason.value, error.message, metadata)
        case _:
            return ErrorStatus.of(Reason.TOOL_EXECUTION_FAILED, str(error), tool=tool)


def _error_info(trailing_metadata: _Metadata | None) -> ErrorStatus | None:
    for key, value in trailing_metadata or ():
        if key != DETAILS_KEY or not isinstance(value, bytes):
            continue
        try:
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info) and info.domain == DOMAIN:
                    code = _CODES_BY_NUMBER.get(status.code, grpc.StatusCode.UNKNOWN)
                    return ErrorStatus(code, info.reason, status.message, dict(info.metadata))
        except DecodeError:
            return None  # a peer that sent garbage: treated as one that sent no ErrorInfo
    return None


_CODES_BY_NUMBER: Final = {code.value[0]: code for code in grpc.StatusCode}


def tool_error_from_status(
    code: grpc.StatusCode,
    message: str,
    trailing_metadata: _Metadata | None,
) -> ToolError | ToolServerError | ToolRegistryError:
    """Rebuild the error a server sent; a tool's own error comes back as its ToolError."""
    status = _error_info(trailing_metadata)
    if status is None:
        reason = "PROVIDER_UNAVAILABLE" if code is grpc.StatusCode.UNAVAILABLE else code.name
        return RemoteServiceError(code, reason, message or code.name, {})
    tool = status.metadata.get("tool", "")
    tool_error = _TOOL_ERRORS_BY_REASON.get(status.reason)
    if tool_error is not None:
        return tool_error(status.metadata.get("tool_error", ""))
    if status.reason == Reason.TOOL_NOT_FOUND:
        return ToolServerError.ToolNotFound(tool)
    if status.reason == Reason.DUPLICATE_NAME:
        return ToolRegistryError.DuplicateName(tool)
    return RemoteServiceError(status.code, status.reason, status.message, status.metadata)


def _parts(error: grpc.RpcError) -> tuple[grpc.StatusCode, str, _Metadata]:
    if isinstance(error, grpc.aio.AioRpcError):
        return error.code(), error.details() or "", tuple(error.trailing_metadata() or ())
    if isinstance(error, grpc.Call):
        trailers = tuple((item.key, item.value) for item in error.trailing_metadata() or ())
        return error.code(), error.details() or "", trailers
    return grpc.StatusCode.UNKNOWN, str(error), ()


def tool_error_from_rpc(error: grpc.RpcError) -> ToolError | ToolServerError | ToolRegistryError:
    """``tool_error_from_status`` of a failed call."""
    return tool_error_from_status(*_parts(error))


def error_from_rpc(error: grpc.RpcError) -> ToolServerError | ToolRegistryError:
    """``error_from_status`` of a failed call."""
    return error_from_status(*_parts(error))


def error_from_status(
    code: grpc.StatusCode,
    message: str,
    trailing_metadata: _Metadata | None,
) -> ToolServerError | ToolRegistryError:
    """Rebuild the error a server sent, as its ToolServerHandle would have raised it."""
    error = tool_error_from_status(code, message, trailing_metadata)
    if isinstance(error, ToolError):
        wrapped = ToolServerError.ToolExecution(str(error))
        wrapped.__cause__ = error
        return wrapped
    return error
