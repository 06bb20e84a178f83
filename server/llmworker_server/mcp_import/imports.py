"""Every imported MCP server: their links started with the server, waited for before the
registry can lock, and stopped with it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Final

from ..registry.registry import Registry
from ..rpc.token_file import Globs
from .imported_tool import OutgoingSpan
from .link import McpServerLink
from .settings import McpServerSettings

__all__ = ["McpImports"]

_FIRST_CONNECT_SECONDS: Final = 10.0
_STOP_SECONDS: Final = 10.0


class McpImports:
    """The links to ``servers``, whose tools join ``registry``; a tool whose registry name
    matches ``require_approval`` needs a decision before it runs."""

    def __init__(
        self,
        servers: Sequence[McpServerSettings],
        registry: Registry,
        *,
        separator: str,
        require_approval: Sequence[str],
        lease: float,
        span: OutgoingSpan | None = None,
    ) -> None:
        approval = Globs(tuple(require_approval)) if require_approval else None
        self.links = [
            McpServerLink(
                settings,
                registry,
                separator=separator,
                approval=approval,
                check_every=lease / 4,
                lease=lease,
                span=span,
            )
            for settings in servers
        ]

    def owns(self, provider: str) -> bool:
        """Whether ``provider`` is an imported MCP server (not a gRPC provider to check)."""
        return any(link.settings.provider == provider for link in self.links)

    async def start(self) -> None:
        """Connect to every server, waiting up to 10 s for each first attempt, so a registry
        that locks at start holds the tools of the servers that answered."""
        for link in self.links:
            link.start()
        await asyncio.gather(*(link.first_attempt(_FIRST_CONNECT_SECONDS) for link in self.links))

    async def stop(self) -> None:
        """Stop every link (10 s at most: a server stuck closing does not hold the stop)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_STOP_SECONDS):
                await asyncio.gather(*(link.stop() for link in self.links))
