"""``--state postgresql://…``: paused batches in PostgreSQL, shared by every replica.

psycopg 3's asyncio connections from a ``psycopg_pool.AsyncConnectionPool`` (sized by
``--state-pool-size``). Transactions run at READ COMMITTED; a hold takes a transaction-scoped
advisory lock, so the live count it checks against ``--max-paused-batches`` holds across
replicas, and the schema's creation or upgrade takes another, so replicas starting together
upgrade once.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from typing import Final, LiteralString

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from .sql_store import Row, SqlStore
from .store import SavedBatches, StateUnavailable

__all__ = ["PostgresStore"]

_OPEN_TIMEOUT_SECONDS: Final = 10.0
_CONNECTION_WAIT_SECONDS: Final = 5.0
"""How long a request waits for a connection (the database down: STATE_UNAVAILABLE then)."""
_CONNECTION_SETTINGS: Final[dict[str, object]] = {
    "connect_timeout": int(_CONNECTION_WAIT_SECONDS),
    # A statement, or a wait for a lock (the hold lock, a row), ends after 5 s; a session
    # left inside a transaction (its replica gone) is ended by the server after 60 s.
    "options": "-c statement_timeout=5000 -c lock_timeout=5000 "
    "-c idle_in_transaction_session_timeout=60000",
    # A peer that vanished (a partition, no RST) is noticed in about 25 s, not hours.
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
}


class _PostgresTx:
    def __init__(self, connection: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
        self._connection = connection

    async def execute(self, sql: LiteralString, params: Sequence[object] = ()) -> int:
        cursor = await self._connection.execute(sql, params)
        return cursor.rowcount

    async def fetch(self, sql: LiteralString, params: Sequence[object] = ()) -> list[Row]:
        cursor = await self._connection.execute(sql, params)
        return list(await cursor.fetchall())


class PostgresStore(SqlStore):
    """Paused batches in the PostgreSQL database ``url`` names."""

    kind = "postgresql"

    def __init__(
        self, url: str, shown: str, ttl: float, limit: int, saved: SavedBatches, pool_size: int
    ) -> None:
        super().__init__(ttl, limit, saved)
        self._shown = shown
        self._pool: AsyncConnectionPool[psycopg.AsyncConnection[tuple[object, ...]]] = (
            AsyncConnectionPool(
                url,
                min_size=1,
                max_size=pool_size,
                open=False,
                timeout=_CONNECTION_WAIT_SECONDS,
                kwargs=_CONNECTION_SETTINGS,
            )
        )

    def describe(self) -> str:
        return self._shown

    async def open(self) -> None:
        try:
            await self._pool.open(wait=True, timeout=_OPEN_TIMEOUT_SECONDS)
        except (PoolTimeout, psycopg.Error) as error:
            await self._pool.close()
            raise StateUnavailable(
                f"could not connect to the paused-batch store {self._shown} within "
                f"{_OPEN_TIMEOUT_SECONDS:g} s ({error}); check the server is up and the URL, "
                "user and password are right"
            ) from error
        await self.migrate()
        await self.refresh()

    async def close(self) -> None:
        await self._pool.close()

    @asynccontextmanager
    async def transaction(
        self, lock: int | None = None, *, write: bool = True
    ) -> AsyncGenerator[_PostgresTx]:
        try:
            async with self._pool.connection() as connection, connection.transaction():
                tx = _PostgresTx(connection)
                if lock is not None:
                    await tx.execute("SELECT pg_advisory_xact_lock(%s)", [lock])
                yield tx
        except (PoolTimeout, psycopg.Error) as error:
            raise StateUnavailable(
                f"the paused-batch store {self._shown} failed: {error}; check the "
                "PostgreSQL server is up and reachable"
            ) from error
