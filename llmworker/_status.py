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

# googleapis-common-protos ships .pyi files but no py.typed, so mypy skips them (Any);
# pyright reads the .pyi files and checks these uses.
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from ._errors import ToolError, ToolRegistryError, ToolServerError

__all__ = [
    "DOMAIN",
    "ErrorStatus",
    "Reason",
    "RemoteServiceError",
    "error_from_rpc",
    "error_from_status",
    "status_of",
    "tool_error_from_rpc",
    "tool_error_from_status",
]

DOMAIN: Final = "llmworker"
DETAILS_KEY: Final = "grpc-status-details-bin"

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
}

_TOOL_ERROR_REASONS: Final[Mapping[type[ToolError], Reason]] = {
    ToolError.InvalidArgument: Reason.TOOL_INVALID_ARGUMENT,
    ToolError.ExecutionFailed: Reason.TOOL_EXECUTION_FAILED,
    ToolError.Internal: Reason.TOOL_INTERNAL,
}
_TOOL_ERRORS_BY_REASON: Final[Mapping[str, type[ToolError]]] = {
    reason.value: kind for kind, reason in _TOOL_ERROR_REASONS.items()
}


@final
class RemoteServiceError(ToolServerError):
    """A remote ToolServer refused or could not run a call for a reason that is no tool's
    error: a timeout, the concurrency limit, an unreachable provider, a locked registry..."""

    def __init__(
        self, code: grpc.StatusCode, reason: str, message: str, metadata: Mapping[str, str]
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.metadata = dict(metadata)


@final
@dataclass(frozen=True, slots=True)
class ErrorStatus:
    """An error as a gRPC status: code, message and ErrorInfo."""

    code: grpc.StatusCode
    reason: str
    message: str
    metadata: Mapping[str, str]

    @classmethod
    def of(cls, reason: Reason, message: str, **metadata: str) -> ErrorStatus:
        return cls(CODES[reason], reason.value, message, metadata)

    def trailing_metadata(self) -> tuple[tuple[str, bytes]]:
        """The ``grpc-status-details-bin`` trailer carrying the google.rpc.Status."""
        detail = any_pb2.Any()
        detail.Pack(
            error_details_pb2.ErrorInfo(reason=self.reason, domain=DOMAIN, metadata=self.metadata)
        )
        status = status_pb2.Status(code=self.code.value[0], message=self.message, details=[detail])
        return ((DETAILS_KEY, status.SerializeToString()),)


def status_of(error: ToolError | ToolServerError | ToolRegistryError, tool: str) -> ErrorStatus:
    """The status that carries ``error`` raised for the tool ``tool``."""
    match error:
        case ToolError():
            reason = _TOOL_ERROR_REASONS.get(type(error), Reason.TOOL_EXECUTION_FAILED)
            text = str(ToolServerError.ToolExecution(str(error)))
            return ErrorStatus.of(reason, text, tool=tool, tool_error=error.message)
        case ToolServerError.ToolNotFound():
            return ErrorStatus.of(Reason.TOOL_NOT_FOUND, str(error), tool=tool)
        case ToolServerError.ToolExecution() if isinstance(error.__cause__, ToolError):
            return status_of(error.__cause__, tool)
        case ToolServerError.DuplicateName() | ToolRegistryError.DuplicateName():
            return ErrorStatus.of(Reason.DUPLICATE_NAME, str(error), tool=tool)
        case RemoteServiceError():
            metadata = {"tool": tool, **error.metadata}
            return ErrorStatus(error.code, error.reason, error.message, metadata)
        case _:
            return ErrorStatus.of(Reason.TOOL_EXECUTION_FAILED, str(error), tool=tool)


def _error_info(trailing_metadata: _Metadata | None) -> ErrorStatus | None:
    for key, value in trailing_metadata or ():
        if key != DETAILS_KEY or not isinstance(value, bytes):
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info) and info.domain == DOMAIN:
                code = _CODES_BY_NUMBER.get(status.code, grpc.StatusCode.UNKNOWN)
                return ErrorStatus(code, info.reason, status.message, dict(info.metadata))
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
