"""The paused-batch store on SQL: what SQLite and PostgreSQL share, over a small ``Tx``.

Each operation is one transaction. The claim is one conditional ``UPDATE … WHERE state =
'paused'``: whichever process's update changes the row resumes the batch, every other one
sees it claimed. Secrets are kept as SHA-256 digests only, so a copy of the database resumes
nothing. Engines supply ``transaction()`` (serialised for writes where the engine needs it,
so the live count checked before an insert holds) and the schema's first lock.
"""

from __future__ import annotations

import abc
import hmac
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Final, LiteralString, Protocol, cast

from llmworker import DefinitionFormat, Paused, WorkerError
from llmworker._wire import shorten

from .held import (
    SHARED_PREFIX,
    BatchSummary,
    HeldBatch,
    Interrupted,
    Resumed,
    Unknown,
    Unresumable,
    new_secret,
    parse_token,
    secret_digest,
)
from .schema import (
    HOLD_LOCK,
    MIGRATIONS,
    SCHEMA_LOCK,
    SCHEMA_VERSION,
    VERSION_TABLE,
    newer_schema,
)
from .store import RESUMED_KEPT, Found, PausedStore, SavedBatches, summary_of

__all__ = ["SqlStore", "Tx"]

_COLUMNS: Final = (
    "id, secret_sha256, state, owner, batch, names, form, size, created_at, expires_at, "
    "claimed_at, may_have_run"
)
Row = tuple[object, ...]
_log = logging.getLogger("llmworker.server.state")


class Tx(Protocol):
    """One open transaction."""

    async def execute(self, sql: LiteralString, params: Sequence[object] = ()) -> int:
        """Run ``sql``; how many rows it changed."""
        ...

    async def fetch(self, sql: LiteralString, params: Sequence[object] = ()) -> list[Row]: ...


class SqlStore(PausedStore):
    """Paused batches in the ``paused_batches`` table of a SQL engine."""

    shared = True

    def __init__(
        self, ttl: float, limit: int, saved: SavedBatches, max_bytes: int = 256 * 1024 * 1024
    ) -> None:
        super().__init__(ttl, limit)
        self.max_bytes = max_bytes
        self._saved = saved
        self._process = f"{socket.gethostname()}:{os.getpid()}"

    @abc.abstractmethod
    def transaction(
        self, lock: int | None = None, *, write: bool = True
    ) -> AbstractAsyncContextManager[Tx]:
        """A transaction; with ``lock`` (``SCHEMA_LOCK``, ``HOLD_LOCK``) no two processes
        run one with the same lock at once (SQLite: no two write transactions at all);
        ``write=False`` for one that only reads (it waits for no writer)."""

    async def migrate(self) -> None:
        """Create the schema, or bring it forward; refuse one newer than this release's."""
        async with self.transaction(SCHEMA_LOCK) as tx:
            await tx.execute(VERSION_TABLE)
            rows = await tx.fetch("SELECT version FROM llmworker_schema")
            version = int(cast("int", rows[0][0])) if rows else 0
            if version > SCHEMA_VERSION:
                raise newer_schema(self.describe(), version)
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[step]:
                    await tx.execute(statement)
            if not rows:
                await tx.execute("INSERT INTO llmworker_schema (version) VALUES (%s)", [0])
            await tx.execute("UPDATE llmworker_schema SET version = %s", [SCHEMA_VERSION])

    async def hold(
        self,
        paused: Paused,
        names: dict[str, str],
        size: int,
        *,
        form: DefinitionFormat | None,
        owner: str,
        resumed: bool,
        replaces: str | None,
    ) -> tuple[str, HeldBatch] | None:
        batch = self._saved.save(paused)
        batch_id, secret = secrets.token_hex(8), new_secret()
        now = time.time()
        held = HeldBatch(batch_id, paused, names, size, now, now + self.ttl, form, owner)
        summary = summary_of(held)
        async with self.transaction(HOLD_LOCK) as tx:
            if replaces is not None:
                await tx.execute("DELETE FROM paused_batches WHERE id = %s", [replaces])
            if not resumed:
                rows = await tx.fetch(
                    "SELECT count(*), coalesce(sum(size), 0) FROM paused_batches "
                    "WHERE state = 'paused' AND expires_at > %s",
                    [now],
                )
                count, held_bytes = int(cast("int", rows[0][0])), int(cast("int", rows[0][1]))
                if count >= self.limit or held_bytes + size > self.max_bytes:
                    return None
            await tx.execute(
                "INSERT INTO paused_batches (id, secret_sha256, state, owner, summary, batch, "
                "names, form, size, created_at, expires_at) "
                "VALUES (%s, %s, 'paused', %s, %s, %s, %s, %s, %s, %s, %s)",
                [
                    batch_id,
                    secret_digest(secret),
                    owner,
                    json.dumps([summary.reason, summary.pending], ensure_ascii=False),
                    batch,
                    json.dumps(names, ensure_ascii=False),
                    form.value if form is not None else "",
                    size,
                    now,
                    held.expires_at,
                ],
            )
        self.count += 1
        if self.oldest_created is None:
            self.oldest_created = now
        return f"{SHARED_PREFIX}.{batch_id}.{secret}", held

    async def find(self, token: str) -> Found:
        parsed = parse_token(token)
        if parsed is None or parsed[0] != SHARED_PREFIX:
            return Unknown()
        return await self._found(parsed[1], parsed[2])

    async def find_id(self, batch_id: str) -> Found:
        return await self._found(batch_id, None)

    async def claim(self, batch_id: str, may_have_run: Sequence[str]) -> bool:
        now = time.time()
        kept = now + self.ttl  # an interrupted batch answers so for a ttl after its claim
        async with self.transaction() as tx:
            changed = await tx.execute(
                "UPDATE paused_batches SET state = 'running', claimed_at = %s, "
                "claimed_by = %s, may_have_run = %s, "
                "expires_at = CASE WHEN expires_at > %s THEN expires_at ELSE %s END "
                "WHERE id = %s AND state = 'paused' AND expires_at > %s",
                [now, self._process, json.dumps(list(may_have_run)), kept, kept, batch_id, now],
            )
        if changed == 1:
            self.count = max(0, self.count - 1)
        return changed == 1

    async def finish(self, batch_id: str) -> None:
        kept = time.time() + min(self.ttl, RESUMED_KEPT)
        async with self.transaction() as tx:
            await tx.execute(
                "UPDATE paused_batches SET state = 'done', batch = '', names = '{}', "
                "summary = '[]', size = 0, expires_at = %s WHERE id = %s AND state = 'running'",
                [kept, batch_id],
            )

    async def forget(self, batch_id: str) -> None:
        async with self.transaction() as tx:
            await tx.execute("DELETE FROM paused_batches WHERE id = %s", [batch_id])

    async def release(self, batch_id: str) -> None:
        async with self.transaction() as tx:
            changed = await tx.execute(
                "UPDATE paused_batches SET state = 'paused', claimed_at = NULL, "
                "claimed_by = NULL, may_have_run = NULL "
                "WHERE id = %s AND state = 'running' AND claimed_by = %s",
                [batch_id, self._process],
            )
        self.count += changed

    async def page(self, after: tuple[float, str] | None, limit: int) -> list[BatchSummary]:
        created, batch_id = after if after is not None else (-1.0, "")
        async with self.transaction(write=False) as tx:
            rows = await tx.fetch(
                "SELECT id, owner, summary, created_at, expires_at FROM paused_batches "
                "WHERE state = 'paused' AND expires_at > %s "
                "AND (created_at, id) > (%s, %s) "  # a row value: the index seeks to the page
                "ORDER BY created_at, id LIMIT %s",
                [time.time(), created, batch_id, limit],
            )
        return [summary for summary in map(_summary, rows) if summary is not None]

    async def refresh(self) -> None:
        now = time.time()
        async with self.transaction() as tx:
            await tx.execute("DELETE FROM paused_batches WHERE expires_at <= %s", [now])
            rows = await tx.fetch(
                "SELECT count(*), min(created_at) FROM paused_batches WHERE state = 'paused'"
            )
        self.count = int(cast("int", rows[0][0]))
        oldest = rows[0][1]
        self.oldest_created = float(cast("float", oldest)) if oldest is not None else None

    async def _found(self, batch_id: str, secret: str | None) -> Found:
        async with self.transaction(write=False) as tx:
            rows = await tx.fetch(
                f"SELECT {_COLUMNS} FROM paused_batches WHERE id = %s", [batch_id]
            )
        if not rows:
            return Unknown()
        row = rows[0]
        try:
            digest, state, expires_at = _text(row[1]), _text(row[2]), _number(row[9])
            if secret is not None and not hmac.compare_digest(digest, secret_digest(secret)):
                return Unknown()
            if expires_at <= time.time() and state != "running":
                return Unknown()
            if state == "running":
                return Interrupted(batch_id, _number(row[10]), _texts(row[11]))
            if state == "done":
                return Resumed(batch_id, _number(row[10]))
            paused = self._saved.load(_text(row[4]))
            form = _text(row[6])
            return HeldBatch(
                batch_id,
                paused,
                _names(row[5]),
                int(_number(row[7])),
                _number(row[8]),
                expires_at,
                DefinitionFormat(form) if form else None,
                _text(row[3]),
            )
        except WorkerError as error:
            return Unresumable(str(error))
        except (ValueError, TypeError, RecursionError) as error:
            return Unresumable(f"its record in the store is damaged ({shorten(str(error))})")


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a column holds {type(value).__name__}, not text")
    return value


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"a column holds {type(value).__name__}, not a number")
    return float(value)


def _texts(value: object) -> tuple[str, ...]:
    decoded: object = json.loads(_text(value) if value is not None else "[]")
    if not isinstance(decoded, list):
        raise TypeError("may_have_run is not a list")
    return tuple(_text(item) for item in cast("list[object]", decoded))


def _names(value: object) -> dict[str, str]:
    decoded: object = json.loads(_text(value))
    if not isinstance(decoded, dict):
        raise TypeError("names is not an object")
    return {_text(key): _text(name) for key, name in cast("dict[object, object]", decoded).items()}


def _summary(row: Row) -> BatchSummary | None:
    """The summary a row holds; None (and a warning) for a damaged one."""
    try:
        decoded: object = json.loads(_text(row[2]))
        if not isinstance(decoded, list) or len(cast("list[object]", decoded)) != 2:
            raise TypeError("the summary is not [reason, pending]")
        reason, pending = cast("list[object]", decoded)
        if not isinstance(pending, list):
            raise TypeError("the pending calls are not a list")
        calls = tuple(_pending_call(call) for call in cast("list[object]", pending))
        return BatchSummary(
            _text(row[0]), _text(row[1]), _text(reason), calls, _number(row[3]), _number(row[4])
        )
    except (ValueError, TypeError, RecursionError) as error:
        _log.warning("a paused batch's record is damaged, left out of listings: %s", error)
        return None


def _pending_call(call: object) -> tuple[str, str, str, bool]:
    if not isinstance(call, list) or len(cast("list[object]", call)) != 4:
        raise TypeError("a pending call is not [id, name, input, awaiting]")
    call_id, name, input_json, awaiting = cast("list[object]", call)
    if not isinstance(awaiting, bool):
        raise TypeError("a pending call's awaiting flag is not true or false")
    return _text(call_id), _text(name), _text(input_json), awaiting
