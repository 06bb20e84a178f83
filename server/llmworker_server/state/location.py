"""Where paused batches live: ``--state`` read, checked, and opened as a store.

``memory``; ``sqlite:///ABSOLUTE/PATH`` or ``sqlite:PATH``; ``postgresql://…`` (or
``postgres://…``, any libpq URL). Unset, the server uses ``paused-batches.db`` in its state
directory: ``--state-dir``, else ``$LLMWORKER_STATE_DIR``, else ``$XDG_STATE_HOME/llmworker``,
else ``~/.local/state/llmworker``. The URL may come from ``--state-file`` or
``$LLMWORKER_STATE`` instead, so no password shows in ``ps``; logs show it without password.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from pathlib import Path
from typing import Final

from ..errors import ConfigError
from .memory import MemoryStore
from .store import PausedStore, SavedBatches

__all__ = ["STATE_ENV", "default_state_dir", "open_store", "shown_url", "state_problem"]

STATE_ENV: Final = "LLMWORKER_STATE"
STATE_DIR_ENV: Final = "LLMWORKER_STATE_DIR"
_DEFAULT_FILE: Final = "paused-batches.db"
_PASSWORD_SETTING: Final = re.compile(
    r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]*)", re.IGNORECASE
)


def default_state_dir() -> Path:
    """The state directory when ``--state-dir`` is not given."""
    named = os.environ.get(STATE_DIR_ENV)
    if named:
        return Path(named)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "llmworker"


def shown_url(url: str) -> str:
    """``url`` as logs may show it: every password (``user:PASSWORD@``, a ``password=``
    parameter or conninfo key) replaced by ``***``."""
    masked = _PASSWORD_SETTING.sub(r"\1***", url)
    try:
        parts = urllib.parse.urlsplit(masked)
        password = parts.password
    except ValueError:  # a netloc urllib cannot read: show none of it
        return "(a --state value that is no URL)"
    if password is None:
        return masked
    host = parts.netloc.rpartition("@")[2]
    user = urllib.parse.quote(parts.username or "", safe="")
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def state_problem(url: str) -> str | None:
    """Why ``url`` names no store this server opens, or None."""
    if url == "memory" or url.startswith(("postgresql://", "postgres://")):
        return None
    if url.startswith("sqlite:"):
        return None if _sqlite_path(url) is not None else (
            "--state sqlite: needs a file: sqlite:///ABSOLUTE/PATH or sqlite:RELATIVE/PATH"
        )  # fmt: skip
    return (
        f"--state {shown_url(url)!r} is no store: use memory, sqlite:///PATH or "
        "postgresql://USER@HOST/DATABASE"
    )


def open_store(
    url: str, state_dir: Path | None, ttl: float, limit: int, saved: SavedBatches, pool_size: int
) -> PausedStore:
    """The store ``url`` names (unopened): the default SQLite file when it is empty."""
    if url == "memory":
        return MemoryStore(ttl, limit)
    if url.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore  # psycopg loads only for PostgreSQL

        return PostgresStore(url, shown_url(url), ttl, limit, saved, pool_size)
    from .sqlite import SqliteStore

    path = _sqlite_path(url) if url else (state_dir or default_state_dir()) / _DEFAULT_FILE
    if path is None:
        raise ConfigError(state_problem(url) or "")
    return SqliteStore(path.absolute(), ttl, limit, saved)


def _sqlite_path(url: str) -> Path | None:
    rest = url.removeprefix("sqlite:")
    if rest.startswith("//"):  # sqlite:///ABSOLUTE: the empty host, then the path
        rest = rest[2:]
        if not rest.startswith("/"):
            return None
    rest = urllib.parse.unquote(rest)
    if rest.startswith("/"):
        rest = "/" + rest.lstrip("/")  # sqlite:////abs is /abs, not //abs
    return Path(rest) if rest and rest not in {"/", "."} else None
