"""The tables of a shared store, by schema version: the server creates them, upgrades them
forward one version at a time, and refuses a store whose schema is newer than it knows.

The statements are written once for SQLite and PostgreSQL (``%s`` placeholders; SQLite's
engine turns them into ``?``). Version 1: one row per paused batch, its secret as a SHA-256
digest, ``state`` 'paused' until a resume claims it ('running') and deletes it when done.
"""

from __future__ import annotations

from typing import Final, LiteralString

from ..errors import ConfigError

__all__ = [
    "HOLD_LOCK",
    "MIGRATIONS",
    "SCHEMA_LOCK",
    "SCHEMA_VERSION",
    "VERSION_TABLE",
    "newer_schema",
]

SCHEMA_VERSION: Final = 1
SCHEMA_LOCK: Final = 0x6C6D7731
"""The lock (a PostgreSQL advisory lock) no two processes creating the schema share."""
HOLD_LOCK: Final = 0x6C6D7732
"""The lock held while a batch is counted against the limit and inserted."""

MIGRATIONS: Final[dict[int, tuple[LiteralString, ...]]] = {
    1: (
        """CREATE TABLE paused_batches (
            id TEXT PRIMARY KEY,
            secret_sha256 TEXT NOT NULL,
            state TEXT NOT NULL,
            owner TEXT NOT NULL,
            summary TEXT NOT NULL,
            batch TEXT NOT NULL,
            names TEXT NOT NULL,
            form TEXT NOT NULL,
            size BIGINT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL,
            claimed_at DOUBLE PRECISION,
            claimed_by TEXT,
            may_have_run TEXT
        )""",
        "CREATE INDEX paused_batches_listing ON paused_batches (state, created_at, id)",
        "CREATE INDEX paused_batches_expiry ON paused_batches (expires_at)",
        # covers the count and bytes a pause checks against the limits: no table rows read
        "CREATE INDEX paused_batches_held ON paused_batches (state, expires_at, size)",
    ),
}
"""The statements that bring the schema from the version before to each version."""

VERSION_TABLE: Final = "CREATE TABLE IF NOT EXISTS llmworker_schema (version INTEGER NOT NULL)"


def newer_schema(store: str, found: int) -> ConfigError:
    return ConfigError(
        f"the paused-batch store {store} has schema version {found}, and this server knows "
        f"versions up to {SCHEMA_VERSION}: a newer llmworker upgraded it; run that release "
        "(or newer) here, or point --state at another store"
    )
