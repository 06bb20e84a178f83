"""ListPausedBatches: the paused batches a caller may decide, oldest first, a page at a time.

A caller sees the batches it paused and those whose pending tools its ``approves`` globs all
match (every batch when callers are not checked), the same rule ResumeBatch applies. A page
token is the position of the last batch shown, so pages stay right while batches come and
go; one request reads at most ``_MAX_SCANNED`` batches, so a caller that may see few of
many gets short pages (with a next token) rather than a slow answer.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable
from typing import Final, cast

from google.protobuf.timestamp_pb2 import Timestamp

from llmworker._wire import ErrorStatus
from llmworker.v1 import tool_service_pb2 as pb

from ..rpc.auth import CallerCheck
from ..rpc.handlers import Context, MalformedRequest, abort, abort_malformed
from ..state.held import BatchSummary
from ..state.store import PausedStore, StateUnavailable
from .not_held import state_unavailable
from .requests import invalid

__all__ = ["PausedListing"]

_DEFAULT_PAGE: Final = 50
_MAX_PAGE: Final = 500
_MAX_SCANNED: Final = 5_000
_MAX_TOKEN_CHARS: Final = 200
_BATCH_ID: Final = re.compile(r"[0-9a-f]{16}")


class PausedListing:
    """Pages of ``store``'s paused batches, as each caller may see them."""

    def __init__(self, store: PausedStore, auth: CallerCheck | None) -> None:
        self._store = store
        self._auth = auth

    async def list_paused_batches(
        self, request: pb.ListPausedBatchesRequest | MalformedRequest, context: Context
    ) -> pb.ListPausedBatchesResponse:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        if request.page_size < 0:
            await abort(context, invalid("page_size must be 0 (the default, 50) or more"))
        size = min(request.page_size or _DEFAULT_PAGE, _MAX_PAGE)
        after = _position(request.page_token)
        if isinstance(after, ErrorStatus):
            await abort(context, after)
        visible = self._visibility(context)
        if isinstance(visible, ErrorStatus):
            await abort(context, visible)
        shown: list[BatchSummary] = []
        scanned, last, exhausted = 0, after, False
        try:
            while len(shown) < size and scanned < _MAX_SCANNED and not exhausted:
                page = await self._store.page(last, size)
                scanned += len(page)
                exhausted = len(page) < size  # the store has no more after this page
                for index, summary in enumerate(page):
                    last = (summary.created_at, summary.batch_id)
                    if visible(summary):
                        shown.append(summary)
                        if len(shown) == size:
                            exhausted = exhausted and index == len(page) - 1
                            break
            if exhausted:
                last = None
        except StateUnavailable as error:
            await abort(context, state_unavailable(error))
        return pb.ListPausedBatchesResponse(
            batches=[_message(summary) for summary in shown],
            next_page_token="" if last is None else _token(last),
        )

    def _visibility(self, context: Context) -> ErrorStatus | Callable[[BatchSummary], bool]:
        if self._auth is None:
            return _everything
        caller = self._auth.caller(context)
        if isinstance(caller, ErrorStatus):
            return caller
        label, approves = caller.label, caller.approves

        def visible(summary: BatchSummary) -> bool:
            if summary.owner == label:
                return True
            return approves is not None and all(approves.allows(name) for name in summary.tools)

        return visible


def _everything(_summary: BatchSummary) -> bool:
    return True


def _token(position: tuple[float, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(position)).encode()).decode()


def _position(token: str) -> tuple[float, str] | ErrorStatus | None:
    if not token:
        return None
    bad = invalid(
        "page_token is not one ListPausedBatches returned; pass next_page_token "
        "unchanged, or none for the first page"
    )
    if len(token) > _MAX_TOKEN_CHARS:
        return bad
    try:
        decoded: object = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, binascii.Error, UnicodeError, RecursionError):
        return bad
    if not isinstance(decoded, list) or len(cast("list[object]", decoded)) != 2:
        return bad
    created, batch_id = cast("list[object]", decoded)
    if isinstance(created, bool) or not isinstance(created, int | float):
        return bad
    if not isinstance(batch_id, str) or not _BATCH_ID.fullmatch(batch_id):
        return bad
    try:
        position = float(created)
    except OverflowError:
        return bad
    return (position, batch_id) if math.isfinite(position) else bad


def _message(summary: BatchSummary) -> pb.PausedBatchSummary:
    created, expires = Timestamp(), Timestamp()
    created.FromNanoseconds(int(summary.created_at * 1e9))
    expires.FromNanoseconds(int(summary.expires_at * 1e9))
    return pb.PausedBatchSummary(
        batch_id=summary.batch_id,
        caller=summary.owner,
        pending_calls=[
            pb.PendingCall(call_id=call_id, name=name, input_json=body, awaiting_approval=waits)
            for call_id, name, body, waits in summary.pending
        ],
        reason=summary.reason,
        create_time=created,
        expire_time=expires,
    )
