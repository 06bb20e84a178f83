"""``--state sqlite:///PATH`` (the default): paused batches in one SQLite file on this host.

WAL mode, so readers (a plain ``BEGIN``) never wait for a writer; every write transaction is
``BEGIN IMMEDIATE`` and waits up to ``busy_timeout`` for another process's, so the
``--workers N`` processes of one host share the file safely. ``synchronous=NORMAL``: a
process killed at any moment loses nothing committed (a power cut may lose the last
transactions). The connection lives on one thread of its own; a lock keeps this process's
transactions one at a time on it, and a transaction cut short (its RPC cancelled) is rolled
back on that thread before the next one starts there.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final, LiteralString, TypeVar

from .sql_store import Row, SqlStore
from .store import SavedBatches, StateUnavailable

__all__ = ["SqliteStore"]

_BUSY_TIMEOUT_MS: Final = 5_000
_LOCK_WAIT_SECONDS: Final = 5.0
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
    async def transaction(
        self, lock: int | None = None, *, write: bool = True
    ) -> AsyncGenerator[_SqliteTx]:
        try:
            async with asyncio.timeout(_LOCK_WAIT_SECONDS):
                await self._lock.acquire()
        except TimeoutError:
            raise StateUnavailable(
                f"the paused-batch store {self.describe()} is busy: this process's earlier "
                f"transactions did not finish within {_LOCK_WAIT_SECONDS:g} s; retry later"
            ) from None
        try:
            await self.on_thread(lambda db: db.execute("BEGIN IMMEDIATE" if write else "BEGIN"))
            yield _SqliteTx(self)
        except BaseException:
            # shielded: the rollback runs on the store's thread even when this task is
            # cancelled, before any later transaction queued there
            with contextlib.suppress(StateUnavailable):
                await asyncio.shield(self.on_thread(_roll_back))
            raise
        else:
            await asyncio.shield(self.on_thread(lambda db: db.execute("COMMIT")))
        finally:
            self._lock.release()

    async def on_thread(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``work`` on the store's thread with its connection (opened on first use)."""

        def run() -> _T:
            return work(self._connection())

        try:
            return await asyncio.get_running_loop().run_in_executor(self._thread, run)
        except sqlite3.OperationalError as error:
            raise StateUnavailable(_advice(self.describe(), error)) from error
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
            try:
                db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
                _switch_to_wal(db)
                db.execute("PRAGMA synchronous = NORMAL")
            except BaseException:
                db.close()
                raise
            self._db = db
        return self._db


def _switch_to_wal(db: sqlite3.Connection) -> None:
    """WAL mode, waiting out another opener: the switch answers "locked" at once, without
    the busy timeout, while another process holds a write lock on a file not yet in WAL
    (``--workers N`` and replicas starting together on a new file)."""
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)  # on the store's own thread, which waits for this anyway


def _roll_back(db: sqlite3.Connection) -> None:
    if db.in_transaction:
        db.execute("ROLLBACK")


def _advice(store: str, error: sqlite3.OperationalError) -> str:
    if "locked" in str(error) or "busy" in str(error):
        return (
            f"the paused-batch store {store} stayed locked by another process for "
            f"{_BUSY_TIMEOUT_MS // 1000} s ({error}); retry later, and check no other program "
            "holds the file open in a long transaction"
        )
    return (
        f"the paused-batch store {store} failed: {error}; check the file and its directory "
        "are writable by this user and the disk has room"
    )


def _qmarks(sql: str) -> str:
    return sql.replace("%s", "?")
