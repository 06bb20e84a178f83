"""``WatchDefinitions``: the definitions pushed to each watcher when the registry changes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from llmworker._wire import ErrorStatus, Reason
from llmworker.v1 import tool_service_pb2 as pb

from ..registry.registry import Registry
from ..rpc.drain import DrainGate
from ..rpc.handlers import SHUTTING_DOWN, Context, MalformedRequest, abort, abort_malformed
from .listing import DefinitionListing

__all__ = ["DefinitionsWatch"]


class DefinitionsWatch:
    """The watchers of one registry: at most ``max_watchers``, woken at each change, ended
    with UNAVAILABLE / SHUTTING_DOWN by ``close``."""

    def __init__(
        self, registry: Registry, listing: DefinitionListing, gate: DrainGate, max_watchers: int
    ) -> None:
        self._listing = listing
        self._gate = gate
        self._max_watchers = max_watchers
        self._watchers = 0
        self._change = asyncio.Event()  # replaced at each change: one wake-up for all
        self._closed = False
        registry.on_change(self._changed)

    @property
    def watchers(self) -> int:
        return self._watchers

    def close(self) -> None:
        """End every watch (the server is stopping) and refuse new ones."""
        self._closed = True
        self._change.set()

    async def watch_definitions(
        self, request: pb.WatchDefinitionsRequest | MalformedRequest, context: Context
    ) -> AsyncIterator[bytes]:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        if self._closed or self._gate.closed:
            await abort(context, SHUTTING_DOWN)
        if self._watchers >= self._max_watchers:
            await abort(context, self._full())
        self._watchers += 1
        try:
            known, first = request.known_fingerprint, True
            while not self._closed:
                change = self._change
                listing = self._listing.listing_for(
                    context, request.format, request.anthropic_cache_control
                )
                if isinstance(listing, ErrorStatus):
                    await abort(context, listing)
                if listing.fingerprint != known:
                    yield listing.full
                    known = listing.fingerprint
                elif first:
                    yield listing.unchanged
                first = False
                await change.wait()  # set at the next change, or by close
        finally:
            self._watchers -= 1
        await abort(context, SHUTTING_DOWN)

    def _changed(self) -> None:
        change, self._change = self._change, asyncio.Event()
        change.set()

    def _full(self) -> ErrorStatus:
        return ErrorStatus.of(
            Reason.CONCURRENCY_LIMIT,
            f"{self._watchers} definition watchers are connected, the server's limit is "
            f"{self._max_watchers}; retry with backoff, share one watch per process, or raise "
            "--max-watchers",
        )
