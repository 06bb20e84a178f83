"""Paused batches held between CallTools and ResumeBatch, behind single-use tokens.

A token is ``<replica>.<id>.<secret>``: the replica names the process that holds the batch
(random at start), the id finds the batch, the secret is compared in constant time. Batches
live in this process's memory only (a restart forgets them), for at most ``ttl`` seconds, and
at most ``limit`` of them and ``max_bytes`` of their inputs at once; a token another replica
made is told apart (``elsewhere``), so its caller learns to resume there.
"""

from __future__ import annotations

import hmac
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Final

from llmworker import DefinitionFormat, Paused

__all__ = ["HeldBatch", "PausedBatches"]

_MAX_TOKEN_CHARS: Final = 128
_REPLICA: Final = re.compile(r"[0-9a-f]{8}")


@dataclass(slots=True)
class HeldBatch:
    """A paused batch, the tool name of each of its calls, the caller label it belongs to
    ("" when callers are not checked), and when it expires."""

    paused: Paused
    names: dict[str, str]
    size: int
    secret: str = field(repr=False)
    expires: float  # time.monotonic()
    expires_at: float  # seconds since the epoch, for the client
    form: DefinitionFormat | None = None  # set for a batch from RunProviderToolCalls
    owner: str = ""


class PausedBatches:
    """Paused batches by token, bounded in count, bytes and age."""

    def __init__(
        self, ttl: float, limit: int, max_bytes: int = 64 * 1024 * 1024, replica: str = ""
    ) -> None:
        self.replica = replica or secrets.token_hex(4)
        self.ttl = ttl
        self.limit = limit
        self.max_bytes = max_bytes
        self._held: dict[str, HeldBatch] = {}
        self._bytes = 0

    def __len__(self) -> int:
        self._sweep()
        return len(self._held)

    @property
    def held(self) -> int:
        """How many batches are held, expired ones included until the next sweep: safe to
        read from another thread (the metrics'), which must not sweep."""
        return len(self._held)

    def hold(
        self,
        paused: Paused,
        names: dict[str, str],
        size: int,
        *,
        resumed: bool = False,
        form: DefinitionFormat | None = None,
        owner: str = "",
    ) -> tuple[str, HeldBatch] | None:
        """Keep ``paused``, which holds at most ``size`` bytes of requests (the CallTools
        request, plus the ResumeBatch requests that edited it); its token and record, or
        None when the store is full. A batch that paused again on resume is kept whatever
        the limits: refusing it would lose the batch its caller was promised (it freed its
        place a moment before, so the store outgrows its limits by the resumes in flight at
        most)."""
        self._sweep()
        full = len(self._held) >= self.limit or self._bytes + size > self.max_bytes
        if full and not resumed:
            return None
        key, secret = secrets.token_hex(8), secrets.token_urlsafe(24)
        now = time.monotonic()
        held = HeldBatch(
            paused, names, size, secret, now + self.ttl, time.time() + self.ttl, form, owner
        )
        self._held[key] = held
        self._bytes += size
        return f"{self.replica}.{key}.{secret}", held

    def elsewhere(self, token: str) -> str | None:
        """The replica that made ``token`` when it is another one's (None: this one's, or no
        token of any replica)."""
        replica, dot, _ = token[:_MAX_TOKEN_CHARS].partition(".")
        if not dot or replica == self.replica or not _REPLICA.fullmatch(replica):
            return None
        return replica

    def find(self, token: str) -> HeldBatch | None:
        """The batch ``token`` names, if it is known and not expired (it stays held)."""
        replica, _, rest = token[:_MAX_TOKEN_CHARS].partition(".")
        if replica != self.replica:
            return None
        key, _, secret = rest.partition(".")
        held = self._held.get(key)
        if held is None or not hmac.compare_digest(held.secret.encode(), secret.encode()):
            return None
        if held.expires <= time.monotonic():
            self._drop(key)
            return None
        return held

    def take(self, token: str) -> HeldBatch | None:
        """As ``find``, and forget the batch: a token resumes once."""
        held = self.find(token)
        if held is not None:
            self._drop(token.split(".", 2)[1])
        return held

    def _drop(self, key: str) -> None:
        held = self._held.pop(key, None)
        if held is not None:
            self._bytes -= held.size

    def _sweep(self) -> None:
        now = time.monotonic()
        for key in [key for key, held in self._held.items() if held.expires <= now]:
            self._drop(key)
