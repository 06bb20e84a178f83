"""``--state memory``: paused batches in this process's memory (a restart forgets them).

Tokens carry this process's replica name, so a token another process made is told apart
(``Elsewhere``) and its caller learns to resume there. Inputs are bounded in bytes too. A
claimed batch waits in ``_claimed`` while its resume runs (one cut short stays there for a
ttl); a finished one leaves its digest in ``_resumed``; each keeps at most ``_MAX_RESUMED``.
"""

from __future__ import annotations

import hmac
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

from llmworker import DefinitionFormat, Paused

from .held import (
    BatchSummary,
    Elsewhere,
    HeldBatch,
    Interrupted,
    Resumed,
    Unknown,
    new_secret,
    parse_token,
    secret_digest,
)
from .store import RESUMED_KEPT, Found, PausedStore, summary_of

__all__ = ["MemoryStore"]

_REPLICA: Final = re.compile(r"[0-9a-f]{8}")
_MAX_RESUMED: Final = 10_000


class MemoryStore(PausedStore):
    """Paused batches by id in a dict, bounded in count, bytes and age."""

    kind = "memory"
    shared = False

    def __init__(
        self, ttl: float, limit: int, max_bytes: int = 64 * 1024 * 1024, replica: str = ""
    ) -> None:
        super().__init__(ttl, limit)
        self.replica = replica or secrets.token_hex(4)
        self.max_bytes = max_bytes
        self._held: dict[str, tuple[HeldBatch, str]] = {}  # id: (batch, digest of its secret)
        self._claimed: dict[str, tuple[HeldBatch, str, float, tuple[str, ...]]] = {}
        self._resumed: OrderedDict[str, tuple[str, float]] = OrderedDict()  # digest, claimed
        self._bytes = 0

    @property
    def held(self) -> int:
        return len(self._held)

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
        self._sweep()
        if replaces is not None:
            self._claimed.pop(replaces, None)
        full = len(self._held) >= self.limit or self._bytes + size > self.max_bytes
        if full and not resumed:
            return None
        batch_id, secret = secrets.token_hex(8), new_secret()
        now = time.time()
        held = HeldBatch(batch_id, paused, names, size, now, now + self.ttl, form, owner)
        self._held[batch_id] = (held, secret_digest(secret))
        self._bytes += size
        self._count()
        return f"{self.replica}.{batch_id}.{secret}", held

    async def find(self, token: str) -> Found:
        parsed = parse_token(token)
        if parsed is None:
            return Unknown()
        replica, batch_id, secret = parsed
        if replica != self.replica:
            return Elsewhere(replica) if _REPLICA.fullmatch(replica) else Unknown()
        digest = self._digest_of(batch_id)
        if digest is None or not hmac.compare_digest(digest, secret_digest(secret)):
            return Unknown()
        return await self.find_id(batch_id)

    async def find_id(self, batch_id: str) -> Found:
        claimed = self._claimed.get(batch_id)
        if claimed is not None:
            return Interrupted(batch_id, claimed[2], claimed[3])
        resumed = self._resumed.get(batch_id)
        if resumed is not None:
            if resumed[1] + min(self.ttl, RESUMED_KEPT) > time.time():
                return Resumed(batch_id, resumed[1])
            del self._resumed[batch_id]
        entry = self._held.get(batch_id)
        if entry is None:
            return Unknown()
        if entry[0].expires_at <= time.time():
            self._drop(batch_id)
            return Unknown()
        return entry[0]

    async def claim(self, batch_id: str, may_have_run: Sequence[str]) -> bool:
        found = await self.find_id(batch_id)
        if not isinstance(found, HeldBatch):
            return False
        digest = self._held[batch_id][1]
        self._drop(batch_id)
        self._claimed[batch_id] = (found, digest, time.time(), tuple(may_have_run))
        return True

    async def finish(self, batch_id: str) -> None:
        claimed = self._claimed.pop(batch_id, None)
        if claimed is not None:
            self._resumed[batch_id] = (claimed[1], claimed[2])
            while len(self._resumed) > _MAX_RESUMED:
                self._resumed.popitem(last=False)

    async def forget(self, batch_id: str) -> None:
        self._claimed.pop(batch_id, None)
        self._drop(batch_id)

    async def release(self, batch_id: str) -> None:
        # The resume took the batch object itself, so there is nothing to give back (and
        # this store's hold never fails): the batch ends, having run nothing.
        await self.forget(batch_id)

    def _digest_of(self, batch_id: str) -> str | None:
        """The digest of the batch's secret, whether held, being resumed or resumed."""
        if batch_id in self._held:
            return self._held[batch_id][1]
        if batch_id in self._claimed:
            return self._claimed[batch_id][1]
        resumed = self._resumed.get(batch_id)
        return None if resumed is None else resumed[0]

    async def page(self, after: tuple[float, str] | None, limit: int) -> list[BatchSummary]:
        self._sweep()
        ordered = sorted(
            (entry[0] for entry in self._held.values()),
            key=lambda held: (held.created_at, held.batch_id),
        )
        if after is not None:
            ordered = [held for held in ordered if (held.created_at, held.batch_id) > after]
        return [summary_of(held) for held in ordered[:limit]]

    async def refresh(self) -> None:
        self._sweep()

    def _drop(self, batch_id: str) -> None:
        entry = self._held.pop(batch_id, None)
        if entry is not None:
            self._bytes -= entry[0].size
        self._count()

    def _count(self) -> None:
        self.count = len(self._held)
        self.oldest_created = min(
            (entry[0].created_at for entry in self._held.values()), default=None
        )

    def _sweep(self) -> None:
        now = time.time()
        for batch_id in [key for key, entry in self._held.items() if entry[0].expires_at <= now]:
            self._drop(batch_id)
        # a claim cut short answers Interrupted for a ttl, as in a shared store; the oldest
        # go first beyond _MAX_RESUMED (claims are kept in the order they were made)
        stale = [key for key, entry in self._claimed.items() if entry[2] + self.ttl <= now]
        stale += list(self._claimed)[: max(0, len(self._claimed) - _MAX_RESUMED)]
        for batch_id in stale:
            self._claimed.pop(batch_id, None)
        kept = min(self.ttl, RESUMED_KEPT)
        while self._resumed and next(iter(self._resumed.values()))[1] + kept <= now:
            self._resumed.popitem(last=False)
