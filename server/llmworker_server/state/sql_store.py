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
import os
import secrets
import socket
import time
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Final, LiteralString, Protocol, cast

from llmworker import DefinitionFormat, Paused, WorkerError

from .held import (
    SHARED_PREFIX,
    BatchSummary,
    HeldBatch,
    Interrupted,
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
from .store import Found, PausedStore, SavedBatches, summary_of

__all__ = ["SqlStore", "Tx"]

_COLUMNS: Final = (
    "id, secret_sha256, state, owner, batch, names, form, size, created_at, expires_at, "
    "claimed_at, may_have_run"
)
Row = tuple[object, ...]


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
    def transaction(self, lock: int | None = None) -> AbstractAsyncContextManager[Tx]:
        """A transaction; with ``lock`` (``SCHEMA_LOCK``, ``HOLD_LOCK``) no two processes
        run one with the same lock at once (SQLite: no two write transactions at all)."""

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
        async with self.transaction() as tx:
            await tx.execute("DELETE FROM paused_batches WHERE id = %s", [batch_id])

    async def page(self, after: tuple[float, str] | None, limit: int) -> list[BatchSummary]:
        created, batch_id = after if after is not None else (-1.0, "")
        async with self.transaction() as tx:
            rows = await tx.fetch(
                "SELECT id, owner, summary, created_at, expires_at FROM paused_batches "
                "WHERE state = 'paused' AND expires_at > %s "
                "AND (created_at > %s OR (created_at = %s AND id > %s)) "
                "ORDER BY created_at, id LIMIT %s",
                [time.time(), created, created, batch_id, limit],
            )
        return [_summary(row) for row in rows]

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
        async with self.transaction() as tx:
            rows = await tx.fetch(
                f"SELECT {_COLUMNS} FROM paused_batches WHERE id = %s", [batch_id]
            )
        if not rows:
            return Unknown()
        row = rows[0]
        digest, state, expires_at = cast("str", row[1]), row[2], cast("float", row[9])
        if secret is not None and not hmac.compare_digest(digest, secret_digest(secret)):
            return Unknown()
        if state == "running":
            ran = cast("list[str]", json.loads(cast("str", row[11]) or "[]"))
            return Interrupted(batch_id, cast("float", row[10]), tuple(ran))
        if expires_at <= time.time():
            return Unknown()
        try:
            paused = self._saved.load(cast("str", row[4]))
        except WorkerError as error:
            return Unresumable(str(error))
        form = cast("str", row[6])
        return HeldBatch(
            batch_id,
            paused,
            cast("dict[str, str]", json.loads(cast("str", row[5]))),
            int(cast("int", row[7])),
            float(cast("float", row[8])),
            float(expires_at),
            DefinitionFormat(form) if form else None,
            cast("str", row[3]),
        )


def _summary(row: Row) -> BatchSummary:
    reason, pending = cast("tuple[str, list[list[object]]]", json.loads(cast("str", row[2])))
    calls = tuple((str(call[0]), str(call[1]), str(call[2]), bool(call[3])) for call in pending)
    return BatchSummary(
        cast("str", row[0]),
        cast("str", row[1]),
        reason,
        calls,
        float(cast("float", row[3])),
        float(cast("float", row[4])),
    )
