"""The server's registry, following the Worker typestate, and the internal ToolRegistry
service that adds tools implemented by other processes."""

from __future__ import annotations

import hmac
import logging
from typing import Final

import grpc
import grpc.aio

from llmworker import (
    Locked,
    Mutable,
    RemoteTool,
    ToolDefinition,
    ToolFactory,
    ToolRegistryError,
    ToolServerHandle,
    Worker,
)
from llmworker._status import ErrorStatus, Reason
from llmworker._wire import meta_from_message
from llmworker.v1 import tool_registry_pb2 as pb

from .rpc import Context, MalformedRequest, abort, abort_malformed, add_service, unary

__all__ = ["Registry", "RegistryService"]

_log = logging.getLogger("llmworker.server.registry")
_SERVICE: Final = "llmworker.v1.ToolRegistry"


class RegistryLockedError(Exception):
    """The registry is locked; tools can no longer be added."""


class Registry:
    """Holds the server's Worker: a ``Worker[Mutable]`` until ``lock()``, then locked."""

    def __init__(self, worker: Worker[Mutable]) -> None:
        self._mutable: Worker[Mutable] | None = worker
        self.worker: Worker[Mutable] | Worker[Locked] = worker
        """The worker in its current state (for calls and hooks)."""
        self.handle: ToolServerHandle = worker.tool_server_handle()

    @property
    def is_locked(self) -> bool:
        return self._mutable is None

    def register(self, definitions: list[ToolDefinition]) -> None:
        """Register all of ``definitions`` or none; ``RegistryLockedError`` once locked."""
        if self._mutable is None:
            raise RegistryLockedError(
                "the registry is locked: the tool set is fixed, as on a Worker[Locked]; "
                "register tools before the server locks (see --registration-window)"
            )
        self._mutable.register_tools(definitions)

    def lock(self) -> None:
        """Fix the tool set (idempotent)."""
        if self._mutable is not None:
            self.worker = self._mutable.lock()
            self._mutable = None
            _log.info("registry locked with %d tools", len(self.handle))


class RegistryService:
    """``llmworker.v1.ToolRegistry``: RegisterTool and LockRegistry, behind a token."""

    def __init__(
        self, registry: Registry, token: str | None, provider_timeout: float | None
    ) -> None:
        self._registry = registry
        self._expected = f"Bearer {token}".encode() if token else None
        self._provider_timeout = provider_timeout
        self._channels: dict[str, grpc.aio.Channel] = {}

    def add_to(self, server: grpc.aio.Server) -> None:
        add_service(
            server,
            _SERVICE,
            {
                "RegisterTool": unary(
                    self.register_tool,
                    pb.RegisterToolRequest.FromString,
                    pb.RegisterToolResponse.SerializeToString,
                ),
                "LockRegistry": unary(
                    self.lock_registry,
                    pb.LockRegistryRequest.FromString,
                    pb.LockRegistryResponse.SerializeToString,
                ),
            },
        )

    async def _authorise(self, context: Context) -> None:
        if self._expected is None:
            return
        presented = b""
        for key, value in context.invocation_metadata() or ():
            if key == "authorization":
                presented = value.encode() if isinstance(value, str) else value
        if not hmac.compare_digest(presented, self._expected):
            await abort(
                context,
                ErrorStatus.of(
                    Reason.UNAUTHENTICATED,
                    "the ToolRegistry needs the server's token as 'authorization: Bearer "
                    "<token>' metadata",
                ),
            )

    async def register_tool(
        self, request: pb.RegisterToolRequest | MalformedRequest, context: Context
    ) -> pb.RegisterToolResponse:
        await self._authorise(context)
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        try:
            meta = meta_from_message(request.definition)
        except ValueError as error:
            await abort(context, ErrorStatus.of(Reason.INVALID_REQUEST, str(error)))
        target = request.provider_target
        if not target:
            await abort(
                context,
                ErrorStatus.of(
                    Reason.INVALID_REQUEST,
                    f"provider_target of tool '{meta.name}' is empty; send the gRPC target of "
                    "a server implementing llmworker.v1.ToolService",
                    tool=meta.name,
                ),
            )
        tool = RemoteTool(self._channel(target), meta.name, self._provider_timeout)
        try:
            self._registry.register([ToolFactory(meta, lambda: tool)])
        except RegistryLockedError as error:
            await abort(context, ErrorStatus.of(Reason.REGISTRY_LOCKED, str(error), tool=meta.name))
        except ToolRegistryError.DuplicateName as error:
            await abort(context, ErrorStatus.of(Reason.DUPLICATE_NAME, str(error), tool=meta.name))
        _log.info("registered tool=%s provider=%s", meta.name, target)
        return pb.RegisterToolResponse(
            fingerprint=self._registry.handle.definitions_snapshot().fingerprint
        )

    async def lock_registry(
        self, request: pb.LockRegistryRequest | MalformedRequest, context: Context
    ) -> pb.LockRegistryResponse:
        await self._authorise(context)
        self._registry.lock()
        return pb.LockRegistryResponse(
            fingerprint=self._registry.handle.definitions_snapshot().fingerprint
        )

    def _channel(self, target: str) -> grpc.aio.Channel:
        channel = self._channels.get(target)
        if channel is None:
            channel = self._channels[target] = grpc.aio.insecure_channel(target)
        return channel

    async def close(self) -> None:
        """Close the channels to providers."""
        for channel in self._channels.values():
            await channel.close()
