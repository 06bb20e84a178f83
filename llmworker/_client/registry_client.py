"""A client of the internal ToolRegistry service: contribute tools from another process."""

from __future__ import annotations

from typing import Final, final

import grpc
import grpc.aio

from .._model.tool_meta import ToolMeta
from .._wire.messages import definition_message
from .._wire.status import error_from_rpc
from .._wire.tls import ClientTls, aio_channel
from ..v1 import tool_registry_pb2 as pb
from .channel_owner import ChannelOwner

__all__ = ["ToolRegistryClient"]

_SERVICE: Final = "/llmworker.v1.ToolRegistry/"


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
        self._channel = aio_channel(target, tls)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self._timeout = timeout
        self._register = self._channel.unary_unary(
            _SERVICE + "RegisterTool",
            request_serializer=pb.RegisterToolRequest.SerializeToString,
            response_deserializer=pb.RegisterToolResponse.FromString,
        )
        self._unregister = self._channel.unary_unary(
            _SERVICE + "UnregisterTool",
            request_serializer=pb.UnregisterToolRequest.SerializeToString,
            response_deserializer=pb.UnregisterToolResponse.FromString,
        )
        self._lock = self._channel.unary_unary(
            _SERVICE + "LockRegistry",
            request_serializer=pb.LockRegistryRequest.SerializeToString,
            response_deserializer=pb.LockRegistryResponse.FromString,
        )

    async def register_tool(self, meta: ToolMeta, provider_target: str) -> str:
        """Register ``meta``, served by ``provider_target``; returns the new fingerprint."""
        request = pb.RegisterToolRequest(
            definition=definition_message(meta), provider_target=provider_target
        )
        try:
            response = await self._register(request, metadata=self._metadata, timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error) from None
        return response.fingerprint

    async def unregister_tool(self, name: str, provider_target: str = "") -> str:
        """Remove the contributed tool ``name`` (only if ``provider_target``, when given,
        registered it); returns the new fingerprint. ``ToolServerError.ToolNotFound`` for
        an unknown name, ``RemoteServiceError`` for a locked registry or a tool another
        provider (or the server itself) serves."""
        request = pb.UnregisterToolRequest(name=name, provider_target=provider_target)
        try:
            response = await self._unregister(
                request, metadata=self._metadata, timeout=self._timeout
            )
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error) from None
        return response.fingerprint

    async def lock(self) -> str:
        """Lock the server's registry; returns the final fingerprint."""
        try:
            response = await self._lock(
                pb.LockRegistryRequest(), metadata=self._metadata, timeout=self._timeout
            )
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error) from None
        return response.fingerprint
