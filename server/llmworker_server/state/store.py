"""The interface every paused-batch store keeps, whatever its engine.

- ``hold`` keeps a paused batch and returns its token (None when ``limit`` live batches, or
  ``max_bytes`` of their requests, are held; a batch that paused again on resume is kept
  whatever the limit, replacing the one it came from in the same step).
- ``find`` / ``find_id`` read a batch without using it up: the checks on the caller and the
  decisions come before anything is spent.
- ``claim`` spends it, once: of any number of concurrent claims, on any processes sharing the
  store, one gets True. It records which calls may run, so that a batch whose process died
  while they ran answers ``Interrupted`` from then on instead of running twice.
- ``finish`` marks a claimed batch resumed once its resume ran to the end: for
  ``RESUMED_KEPT`` seconds (or the ttl, if shorter) its token answers ``Resumed``, so a
  client whose response was lost learns its calls ran; ``forget`` drops a claimed batch
  nothing of ran (a pre-hook aborted it); ``release`` gives a claim back when nothing ran
  and the batch could not be kept paused again. A claim whose resume ended otherwise (the
  client went away mid-run) stays ``Interrupted``.
- ``page`` lists live batches oldest first; ``refresh`` updates ``count`` and
  ``oldest_created`` for the metrics, and forgets what expired.

Errors of the engine (a file that cannot be written, a database down) raise
``StateUnavailable``, naming the store and what to do.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Final

from llmworker import DefinitionFormat, Paused

from ..errors import ServerError
from .held import (
    BatchSummary,
    Elsewhere,
    HeldBatch,
    Interrupted,
    Resumed,
    Unknown,
    Unresumable,
)

__all__ = [
    "RESUMED_KEPT",
    "Found",
    "PausedStore",
    "SavedBatches",
    "StateUnavailable",
    "summary_of",
]

Found = HeldBatch | Unknown | Interrupted | Resumed | Elsewhere | Unresumable

RESUMED_KEPT: Final = 600.0
"""How long (seconds) a finished resume's token still answers ``Resumed``."""


class StateUnavailable(ServerError):
    """The store could not be read or written; the message names it and the cause."""


class SavedBatches:
    """How a shared store turns a batch into text and back: the server's worker's
    ``save_paused`` and ``load_paused`` (read at each use: a registry's worker moves)."""

    def __init__(self, save: Callable[[Paused], str], load: Callable[[str], Paused]) -> None:
        self.save = save
        self.load = load


class PausedStore(abc.ABC):
    """Paused batches by token, bounded in count and age (``ttl`` seconds)."""

    kind: str
    shared: bool  # other processes (and this one after a restart) see its batches
    replica: str = ""  # the memory store's process name; "" for a shared store

    max_bytes: int

    def __init__(self, ttl: float, limit: int) -> None:
        self.ttl = ttl
        self.limit = limit
        self.count = 0
        self.oldest_created: float | None = None

    async def open(self) -> None:  # noqa: B027 - a store with nothing to open keeps it
        """Connect, and create or upgrade the schema."""

    async def close(self) -> None:  # noqa: B027
        """Let go of connections and threads."""

    @abc.abstractmethod
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
    ) -> tuple[str, HeldBatch] | None: ...

    @abc.abstractmethod
    async def find(self, token: str) -> Found: ...

    @abc.abstractmethod
    async def find_id(self, batch_id: str) -> Found: ...

    @abc.abstractmethod
    async def claim(self, batch_id: str, may_have_run: Sequence[str]) -> bool: ...

    @abc.abstractmethod
    async def finish(self, batch_id: str) -> None: ...

    @abc.abstractmethod
    async def forget(self, batch_id: str) -> None: ...

    @abc.abstractmethod
    async def release(self, batch_id: str) -> None: ...

    @abc.abstractmethod
    async def page(self, after: tuple[float, str] | None, limit: int) -> list[BatchSummary]: ...

    @abc.abstractmethod
    async def refresh(self) -> None: ...

    def describe(self) -> str:
        """How logs and errors name the store (no password)."""
        return self.kind


def summary_of(held: HeldBatch) -> BatchSummary:
    """What ListPausedBatches shows of ``held``."""
    paused = held.paused
    awaiting = set(paused.awaiting_approval)
    pending = tuple(
        (call.id, call.name, call.input_json, call.id in awaiting) for call in paused.pending_calls
    )
    return BatchSummary(
        held.batch_id, held.owner, paused.reason, pending, held.created_at, held.expires_at
    )
