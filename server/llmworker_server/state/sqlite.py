"""``--state sqlite:///PATH`` (the default): paused batches in one SQLite file on this host.

WAL mode, so readers never wait for a writer; every write transaction is ``BEGIN IMMEDIATE``
and waits up to ``busy_timeout`` for another process's, so the ``--workers N`` processes of
one host share the file safely. ``synchronous=NORMAL``: a process killed at any moment loses
nothing committed (a power cut may lose the last transactions). The connection lives on one
thread of its own; a lock keeps this process's transactions one at a time on it.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncGenerator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final, LiteralString, TypeVar

from .sql_store import Row, SqlStore
from .store import SavedBatches, StateUnavailable

__all__ = ["SqliteStore"]

_BUSY_TIMEOUT_MS: Final = 10_000
_T = TypeVar("_T")


class _SqliteTx:
    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    async def execute(self, sql: LiteralString, params: Sequence[object] = ()) -> int:
        return await self._store.on_thread(lambda db: db.execute(_qmarks(sql), params).rowcount)

    async def fetch(self, sql: LiteralString, params: Sequence[object] = ()) -> list[Row]:
        return await self._store.on_thread(
            lambda db: [tuple(row) for row in db.execute(_qmarks(sql), params).fetchall()]
        )


class SqliteStore(SqlStore):
    """Paused batches in the SQLite file ``path`` (created 0600, its directory 0700)."""

    kind = "sqlite"

    def __init__(self, path: Path, ttl: float, limit: int, saved: SavedBatches) -> None:
        super().__init__(ttl, limit, saved)
        self.path = path
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="llmworker-sqlite")
        self._db: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()

    def describe(self) -> str:
        return f"sqlite://{self.path}"  # the path is absolute: sqlite:///PATH

    async def open(self) -> None:
        await self.on_thread(lambda _db: None)
        await self.migrate()
        await self.refresh()

    async def close(self) -> None:
        db = self._db
        if db is not None:
            await asyncio.get_running_loop().run_in_executor(self._thread, db.close)
            self._db = None
        self._thread.shutdown(wait=True)

    @asynccontextmanager
    async def transaction(self, lock: int | None = None) -> AsyncGenerator[_SqliteTx]:
        async with self._lock:
            await self.on_thread(lambda db: db.execute("BEGIN IMMEDIATE"))
            try:
                yield _SqliteTx(self)
            except BaseException:
                await self.on_thread(lambda db: db.execute("ROLLBACK"))
                raise
            await self.on_thread(lambda db: db.execute("COMMIT"))

    async def on_thread(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``work`` on the store's thread with its connection (opened on first use)."""

        def run() -> _T:
            return work(self._connection())

        try:
            return await asyncio.get_running_loop().run_in_executor(self._thread, run)
        except (sqlite3.Error, OSError) as error:
            raise StateUnavailable(
                f"the paused-batch store {self.describe()} failed: {error}; check the file "
                "and its directory are writable by this user and the disk has room"
            ) from error

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.path.touch(mode=0o600, exist_ok=True)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            self._db = db
        return self._db


def _qmarks(sql: str) -> str:
    return sql.replace("%s", "?")
