"""What a CallToolRequest may carry beside name and input (the call id and metadata), and
the call it becomes once admitted."""

from __future__ import annotations

import re
from typing import Final, TypeAlias

from llmworker import CallMetadata, ToolBatchAborted
from llmworker._wire import (
    ABORT_CALL_KEY,
    ABORT_REASON_KEY,
    NO_METADATA,
    ErrorStatus,
    Reason,
    shorten,
)
from llmworker.v1 import tool_service_pb2 as pb

__all__ = [
    "MAX_CALL_ID_CHARS",
    "AdmittedCall",
    "aborted_status",
    "call_metadata",
    "call_problem",
]

MAX_CALL_ID_CHARS: Final = 128
MAX_METADATA_ENTRIES: Final = 64
MAX_METADATA_VALUE_BYTES: Final = 4096
_CALL_ID: Final = re.compile(r"[\x20-\x7e]{1,128}")
_METADATA_KEY: Final = re.compile(r"[a-z0-9._-]{1,64}")


AdmittedCall: TypeAlias = tuple[str, str, str, CallMetadata, float | None, float | None, str]
"""A call that passed the checks: name, input, call id, metadata, the caller's deadline, the
server's timeout and the caller's label ("" when callers are not checked). (A plain tuple:
one is made per call, and a NamedTuple costs 5x more.)"""


def call_problem(request: pb.CallToolRequest) -> ErrorStatus | None:
    """The refusal of a call id or metadata outside the contract, or None. Metadata values
    are never echoed: they may be credentials."""
    call_id = request.call_id
    name = shorten(request.name)
    if call_id and not _CALL_ID.fullmatch(call_id):
        return _refused(
            name,
            f"call_id {shorten(call_id)!r} of the call to '{name}' is not 1-"
            f"{MAX_CALL_ID_CHARS} printable ASCII characters; send the model's tool-call id "
            "or none",
        )
    metadata = request.metadata
    if not metadata:
        return None
    if len(metadata) > MAX_METADATA_ENTRIES:
        return _refused(
            name,
            f"the call to '{name}' carries {len(metadata)} metadata entries; at most "
            f"{MAX_METADATA_ENTRIES} are allowed",
        )
    for key, value in metadata.items():
        if not _METADATA_KEY.fullmatch(key):
            return _refused(
                name,
                f"metadata key {shorten(repr(key))} of the call to '{name}' is invalid; use "
                "1-64 characters of a-z, 0-9, '.', '_' or '-'",
            )
        if len(value) * 4 > MAX_METADATA_VALUE_BYTES and (
            len(value.encode(errors="replace")) > MAX_METADATA_VALUE_BYTES
        ):
            return _refused(
                name,
                f"metadata value under {key!r} of the call to '{name}' is over "
                f"{MAX_METADATA_VALUE_BYTES} bytes of UTF-8; send less",
            )
    return None


def call_metadata(request: pb.CallToolRequest) -> CallMetadata:
    """The request's metadata as the immutable mapping a ToolCall carries."""
    metadata = request.metadata
    return CallMetadata(dict(metadata)) if metadata else NO_METADATA


def _refused(name: str, message: str) -> ErrorStatus:
    return ErrorStatus.of(Reason.INVALID_REQUEST, message, tool=name)


def aborted_status(error: ToolBatchAborted, name: str) -> ErrorStatus:
    """HOOK_ABORTED for a hook's ``Abort``, with the call and reason for clients to rebuild
    the ``ToolBatchAborted``."""
    metadata = {ABORT_CALL_KEY: shorten(error.call_id), ABORT_REASON_KEY: error.reason}
    if name:
        metadata["tool"] = shorten(name)
    return ErrorStatus.of(Reason.HOOK_ABORTED, str(error), **metadata)
