"""What a request may carry: a CallToolRequest's call id and metadata, a CallTools batch;
the refusals of what it may not."""

from __future__ import annotations

import re
from typing import Final

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

from .limits import CallLimits

__all__ = [
    "EMPTY_NAME",
    "MAX_CALL_ID_CHARS",
    "aborted_status",
    "batch_problem",
    "call_metadata",
    "call_problem",
    "invalid",
]

MAX_CALL_ID_CHARS: Final = 128
MAX_METADATA_ENTRIES: Final = 64
MAX_METADATA_VALUE_BYTES: Final = 4096
_CALL_ID: Final = re.compile(r"[\x20-\x7e]{1,128}")
_METADATA_KEY: Final = re.compile(r"[a-z0-9._-]{1,64}")
EMPTY_NAME: Final = ErrorStatus.of(
    Reason.INVALID_REQUEST, "the tool name is empty; pass a name from ListDefinitionsSorted"
)


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


def batch_problem(request: pb.CallToolsRequest, limits: CallLimits) -> ErrorStatus | None:
    """The refusal of a batch that is empty, too long, or holds a call without a name or a
    unique call id or that one call could not carry, or None."""
    calls = request.calls
    limit = limits.max_batch_calls
    if not calls:
        return invalid("the batch has no calls; send at least one CallToolRequest")
    if len(calls) > limit:
        return invalid(
            f"the batch has {len(calls)} calls; this server takes at most {limit} "
            "(--max-batch-calls); split it"
        )
    seen: set[str] = set()
    for index, call in enumerate(calls):
        if not call.name:
            return invalid(f"call {index} of the batch has an empty tool name")
        if not call.call_id:
            return invalid(
                f"call {index} of the batch (to '{shorten(call.name)}') has no call_id; "
                "every call of a batch needs one, unique in the batch"
            )
        if call.call_id in seen:
            return invalid(
                f"call_id {shorten(repr(call.call_id))} appears twice in the batch; "
                "call ids must be unique in a batch"
            )
        seen.add(call.call_id)
        problem = call_problem(call) or limits.input_too_large(call.name, call.input_json)
        if problem is not None:
            return problem
    return None


def call_metadata(request: pb.CallToolRequest) -> CallMetadata:
    """The request's metadata as the immutable mapping a ToolCall carries."""
    metadata = request.metadata
    return CallMetadata(dict(metadata)) if metadata else NO_METADATA


def invalid(message: str) -> ErrorStatus:
    """INVALID_REQUEST with ``message``."""
    return ErrorStatus.of(Reason.INVALID_REQUEST, message)


def _refused(name: str, message: str) -> ErrorStatus:
    return ErrorStatus.of(Reason.INVALID_REQUEST, message, tool=name)


def aborted_status(error: ToolBatchAborted, name: str) -> ErrorStatus:
    """HOOK_ABORTED for a hook's ``Abort``, with the call and reason for clients to rebuild
    the ``ToolBatchAborted``."""
    metadata = {ABORT_CALL_KEY: shorten(error.call_id), ABORT_REASON_KEY: error.reason}
    if name:
        metadata["tool"] = shorten(name)
    return ErrorStatus.of(Reason.HOOK_ABORTED, str(error), **metadata)
