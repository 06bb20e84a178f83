"""A client of the internal ToolRegistry service: contribute tools from another process."""

from __future__ import annotations

from typing import final

import grpc
import grpc.aio

from .._model.tool_meta import ToolMeta
from .._wire.messages import definition_message
from .._wire.stubs import LOCK_REGISTRY, REGISTER_TOOL, UNREGISTER_TOOL, bind, raise_failure
from .._wire.tls import ClientTls, aio_channel
from ..v1 import tool_registry_pb2 as pb
from .channel_owner import ChannelOwner

__all__ = ["ToolRegistryClient"]


@final
class ToolRegistryClient(ChannelOwner):
    """Registers tools served by a provider with a ToolServer's internal listener.

    >>> async with ToolRegistryClient("unix:///run/llmworker.sock", token) as registry:
    ...     await registry.register_tool(meta, provider_target="127.0.0.1:50061")

    Raises ``ToolRegistryError.DuplicateName`` for a taken name, and ``RemoteServiceError``
    for a locked registry (reason ``REGISTRY_LOCKED``), a wrong token (``UNAUTHENTICATED``),
    a malformed or oversized definition or an unusable provider target (``INVALID_REQUEST``),
    or a listing that would outgrow the server's message limit (``REGISTRY_FULL``).
    """

    def __init__(
        self,
        target: str,
        token: str | None = None,
        *,
        timeout: float = 10.0,
        tls: ClientTls | None = None,
    ) -> None:
        """``token`` goes with every call as ``authorization: Bearer``, as the remote handles
        send theirs (one with a line break is refused: ``ValueError``)."""
        self._channel = aio_channel(target, tls, token=token)
        self._timeout = timeout
        self._register = bind(REGISTER_TOOL, self._channel)
        self._unregister = bind(UNREGISTER_TOOL, self._channel)
        self._lock = bind(LOCK_REGISTRY, self._channel)

    async def register_tool(self, meta: ToolMeta, provider_target: str) -> str:
        """Register ``meta``, served by ``provider_target``; returns the new fingerprint."""
        request = pb.RegisterToolRequest(
            definition=definition_message(meta), provider_target=provider_target
        )
        try:
            response = await self._register(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as rpc_error:
            raise_failure(rpc_error)
        return response.fingerprint

    async def unregister_tool(self, name: str, provider_target: str = "") -> str:
        """Remove the contributed tool ``name`` (only if ``provider_target``, when given,
        registered it); returns the new fingerprint. ``ToolServerError.ToolNotFound`` for
        an unknown name, ``RemoteServiceError`` for a locked registry or a tool another
        provider (or the server itself) serves."""
        request = pb.UnregisterToolRequest(name=name, provider_target=provider_target)
        try:
            response = await self._unregister(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as rpc_error:
            raise_failure(rpc_error)
        return response.fingerprint

    async def lock(self) -> str:
        """Lock the server's registry; returns the final fingerprint."""
        try:
            response = await self._lock(pb.LockRegistryRequest(), timeout=self._timeout)
        except grpc.aio.AioRpcError as rpc_error:
            raise_failure(rpc_error)
        return response.fingerprint
