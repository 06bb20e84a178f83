"""The close-and-context-manager part shared by the clients that own an asyncio channel."""

from __future__ import annotations

from types import TracebackType
from typing import Self

import grpc.aio

__all__ = ["ChannelOwner"]


class ChannelOwner:
    """Owns ``_channel``: ``close()`` it, or use the object as ``async with``."""

    _channel: grpc.aio.Channel

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()
