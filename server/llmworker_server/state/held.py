"""A paused batch as a store holds it, its resume token, and why a token resumes nothing.

A token is ``<prefix>.<batch id>.<secret>``: the prefix is ``lw1`` for a shared store, or the
8-hex replica of the process holding it for the memory store; the id (64 random bits) names
the batch and is no secret; the secret (192 random bits) is stored as its SHA-256 only.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from typing import Final

from llmworker import DefinitionFormat, Paused

__all__ = [
    "SHARED_PREFIX",
    "BatchSummary",
    "Elsewhere",
    "HeldBatch",
    "Interrupted",
    "Resumed",
    "Unknown",
    "Unresumable",
    "new_secret",
    "parse_token",
    "secret_digest",
]

SHARED_PREFIX: Final = "lw1"
_MAX_TOKEN_CHARS: Final = 128
_ID: Final = re.compile(r"[0-9a-f]{16}")


@dataclass(slots=True)
class HeldBatch:
    """A paused batch: the tool name of each call, the caller label it belongs to ("" when
    callers are not checked), its size in request bytes and its times (epoch seconds)."""

    batch_id: str
    paused: Paused
    names: dict[str, str]
    size: int
    created_at: float
    expires_at: float
    form: DefinitionFormat | None = None  # set for a batch from RunProviderToolCalls
    owner: str = ""


@dataclass(frozen=True, slots=True)
class BatchSummary:
    """What ListPausedBatches shows of a batch: ``pending`` holds (call id, tool name,
    input, awaiting approval) per pending call."""

    batch_id: str
    owner: str
    reason: str
    pending: tuple[tuple[str, str, str, bool], ...]
    created_at: float
    expires_at: float

    @property
    def tools(self) -> list[str]:
        return [name for _, name, _, _ in self.pending]


@dataclass(frozen=True, slots=True)
class Unknown:
    """No batch: the token or id is unknown, expired, abandoned by a hook's abort, or its
    resume finished longer ago than ``RESUMED_KEPT``."""


@dataclass(frozen=True, slots=True)
class Interrupted:
    """The batch was resumed at ``claimed_at`` and did not finish: its calls
    ``may_have_run`` may have run; it never runs again."""

    batch_id: str
    claimed_at: float
    may_have_run: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Resumed:
    """The batch was resumed at ``claimed_at`` and that resume ran to its end: its results
    went to the caller of that ResumeBatch."""

    batch_id: str
    claimed_at: float


@dataclass(frozen=True, slots=True)
class Elsewhere:
    """The memory store of another process (``replica``) made the token."""

    replica: str


@dataclass(frozen=True, slots=True)
class Unresumable:
    """The batch is held, but this process cannot rebuild it (other pre-hooks): ``why``."""

    why: str = field(default="")


def new_secret() -> str:
    return secrets.token_urlsafe(24)


def secret_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def parse_token(token: str) -> tuple[str, str, str] | None:
    """(prefix, batch id, secret) of a well-formed token, else None."""
    parts = token[:_MAX_TOKEN_CHARS].split(".")
    if len(parts) != 3 or not _ID.fullmatch(parts[1]) or not parts[2]:
        return None
    return parts[0], parts[1], parts[2]
