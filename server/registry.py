"""The server's registry, following the Worker typestate, and the internal ToolRegistry
service that adds tools implemented by other processes."""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable
from typing import Final

import grpc
import grpc.aio

from llmworker import (
    ClientTls,
    Locked,
    Mutable,
    RemoteTool,
    Tool,
    ToolDefinition,
    ToolFactory,
    ToolMeta,
    ToolRegistryError,
    ToolServerHandle,
    Worker,
)
from llmworker._status import ErrorStatus, Reason
from llmworker._text import printable, shorten
from llmworker._tls import aio_channel
from llmworker._wire import definition_message, meta_from_message
from llmworker.v1 import tool_registry_pb2 as pb

from .drain import DrainGate
from .provider_target import target_problem
from .rpc import Context, MalformedRequest, abort, abort_malformed, add_service, guarded, unary

__all__ = ["Registry", "RegistryService"]

_log = logging.getLogger("llmworker.server.registry")
_SERVICE: Final = "llmworker.v1.ToolRegistry"
_LISTING_OVERHEAD: Final = 2 + 64 + 2  # the fingerprint and unchanged fields

_CHANNEL_LINGER_SECONDS: Final = 30.0  # a gone provider's channel, for calls still on it
MAX_DESCRIPTION_CHARS: Final = 16 * 1024
"""The longest description RegisterTool takes."""
MAX_SCHEMA_BYTES: Final = 128 * 1024
"""The largest input schema RegisterTool takes, as canonical JSON."""


def listing_bytes(meta: ToolMeta) -> int:
    """What ``meta`` adds to the serialised ListDefinitionsSorted response."""
    size = definition_message(meta).ByteSize()
    return 1 + _varint_length(size) + size


def _varint_length(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


class RegistryLockedError(Exception):
    """The registry is locked; tools can no longer be added."""


class RegistryFullError(ValueError):
    """The definitions listing would outgrow the largest message the server sends."""


class Registry:
    """Holds the server's Worker: a ``Worker[Mutable]`` until ``lock()``, then locked.

    The whole ``ListDefinitionsSorted`` response must fit in ``max_listing_bytes`` (the
    server's ``--max-message-bytes``): a registration that would outgrow it is refused, since
    it would break listing for every client.
    """

    def __init__(self, worker: Worker[Mutable], max_listing_bytes: int = 4 << 20) -> None:
        self._mutable: Worker[Mutable] | None = worker
        self.worker: Worker[Mutable] | Worker[Locked] = worker
        """The worker in its current state (for calls and hooks)."""
        self.handle: ToolServerHandle = worker.tool_server_handle()
        self._max_listing_bytes = max_listing_bytes
        self._listing_bytes = _LISTING_OVERHEAD + sum(
            listing_bytes(meta) for meta in self.handle.tool_definitions_sorted()
        )
        self._on_change: list[Callable[[], None]] = []
        self._provider_of: dict[str, str] = {}  # contributed tool -> its provider's target

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after every change of the tool set."""
        self._on_change.append(callback)

    def _changed(self) -> None:
        for callback in self._on_change:
            callback()

    @property
    def is_locked(self) -> bool:
        return self._mutable is None

    def register(self, definitions: list[ToolDefinition]) -> None:
        """Register all of ``definitions`` or none; ``RegistryLockedError`` once locked,
        ``RegistryFullError`` when the listing would outgrow its limit."""
        mutable = self._writable()
        before = set(self.handle.tool_definitions_sorted())
        mutable.register_tools(definitions)
        added = [meta for meta in self.handle.tool_definitions_sorted() if meta not in before]
        size = sum(listing_bytes(meta) for meta in added)
        if self._listing_bytes + size > self._max_listing_bytes:
            for meta in added:
                mutable.unregister_tool(meta.name)
            raise RegistryFullError(self._full(size, len(added)))
        self._listing_bytes += size
        self._changed()

    def register_remote(self, meta: ToolMeta, make_tool: Callable[[], Tool], provider: str) -> bool:
        """Register one tool of ``provider`` whose meta is known, checking the limit before
        anything is made (``make_tool`` runs only for an accepted registration). The same
        name from the same provider replaces the tool (calls in flight finish on the old
        one); an identical definition changes nothing. False when nothing changed."""
        mutable = self._writable()
        current = self.handle.get_tool(meta.name)
        previous = None if current is None else current[0]
        if previous is not None and self._provider_of.get(meta.name) != provider:
            raise ToolRegistryError.DuplicateName(meta.name)
        if previous == meta:
            return False  # a renewal
        size = listing_bytes(meta) - (0 if previous is None else listing_bytes(previous))
        if self._listing_bytes + size > self._max_listing_bytes:
            raise RegistryFullError(self._full(size, 1))
        if previous is None:
            mutable.register_tools([ToolFactory(meta, make_tool)])
        else:
            mutable.replace_tool(ToolFactory(meta, make_tool))
        self._provider_of[meta.name] = provider
        self._listing_bytes += size
        self._changed()
        return True

    def provider_of(self, name: str) -> str | None:
        """The target of the provider that contributed ``name``; None for a local tool."""
        return self._provider_of.get(name)

    def providers(self) -> dict[str, list[str]]:
        """Each provider's target and the names of the tools it contributed."""
        found: dict[str, list[str]] = {}
        for name, provider in self._provider_of.items():
            found.setdefault(provider, []).append(name)
        return found

    def unregister(self, name: str) -> None:
        """Remove the contributed tool ``name`` (calls in flight finish);
        ``RegistryLockedError`` once locked, ``KeyError`` for a name no provider gave."""
        mutable = self._writable()
        if name not in self._provider_of:
            raise KeyError(name)
        meta = mutable.unregister_tool(name)
        del self._provider_of[name]
        self._listing_bytes -= listing_bytes(meta)
        self._changed()

    def _writable(self) -> Worker[Mutable]:
        if self._mutable is None:
            raise RegistryLockedError(
                "the registry is locked: the tool set is fixed, as on a Worker[Locked]; "
                "register tools before the server locks (see --registration-window)"
            )
        return self._mutable

    def _full(self, size: int, count: int) -> str:
        return (
            f"registering {count} more tool(s) ({size} bytes of definitions) would make the "
            f"ListDefinitionsSorted response {self._listing_bytes + size} bytes, over the "
            f"server's {self._max_listing_bytes} (--max-message-bytes); shorten descriptions "
            "and schemas, or raise --max-message-bytes on the server and its clients"
        )

    def lock(self) -> None:
        """Fix the tool set (idempotent)."""
        if self._mutable is not None:
            self.worker = self._mutable.lock()
            self._mutable = None
            _log.info("registry locked with %d tools", len(self.handle))


class RegistryService:
    """``llmworker.v1.ToolRegistry``: RegisterTool and LockRegistry, behind a token."""

    def __init__(
        self,
        registry: Registry,
        token: str | None,
        provider_timeout: float | None,
        gate: DrainGate | None = None,
        provider_tls: ClientTls | None = None,
    ) -> None:
        self._registry = registry
        self._expected = f"Bearer {token}".encode() if token else None
        self._provider_timeout = provider_timeout
        self._gate = gate
        self._provider_tls = provider_tls
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def add_to(self, server: grpc.aio.Server) -> None:
        add_service(
            server,
            _SERVICE,
            {
                "RegisterTool": unary(
                    guarded(self.register_tool, "RegisterTool", self._gate),
                    pb.RegisterToolRequest.FromString,
                    pb.RegisterToolResponse.SerializeToString,
                ),
                "LockRegistry": unary(
                    guarded(self.lock_registry, "LockRegistry", self._gate),
                    pb.LockRegistryRequest.FromString,
                    pb.LockRegistryResponse.SerializeToString,
                ),
                "UnregisterTool": unary(
                    guarded(self.unregister_tool, "UnregisterTool", self._gate),
                    pb.UnregisterToolRequest.FromString,
                    pb.UnregisterToolResponse.SerializeToString,
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
        problem = _definition_problem(request)
        if problem is not None:
            await abort(context, ErrorStatus.of(Reason.INVALID_REQUEST, problem))
        try:
            meta = meta_from_message(request.definition)
        except ValueError as error:
            await abort(context, ErrorStatus.of(Reason.INVALID_REQUEST, str(error)))
        target = request.provider_target
        problem = target_problem(target)
        if problem is not None:
            await abort(
                context,
                ErrorStatus.of(
                    Reason.INVALID_REQUEST,
                    f"tool '{meta.name}': {problem} serving llmworker.v1.ToolService",
                    tool=meta.name,
                ),
            )
        arrived = target not in self._registry.providers()
        try:
            changed = self._registry.register_remote(
                meta,
                lambda: RemoteTool(
                    self._channel(target),
                    meta.name,
                    self._provider_timeout,
                    approved_upstream=meta.requires_approval,  # this server asks the person
                ),
                target,
            )
        except RegistryLockedError as error:
            await abort(context, ErrorStatus.of(Reason.REGISTRY_LOCKED, str(error), tool=meta.name))
        except ToolRegistryError.DuplicateName as error:
            await abort(context, ErrorStatus.of(Reason.DUPLICATE_NAME, str(error), tool=meta.name))
        except RegistryFullError as error:
            await abort(context, ErrorStatus.of(Reason.REGISTRY_FULL, str(error), tool=meta.name))
        if arrived:
            _log.info("provider arrived: %s", printable(target, 200))
        if changed:
            _log.info("registered tool=%s provider=%s", meta.name, printable(target, 200))
        return pb.RegisterToolResponse(fingerprint=self._registry.handle.definitions_fingerprint())

    async def unregister_tool(
        self, request: pb.UnregisterToolRequest | MalformedRequest, context: Context
    ) -> pb.UnregisterToolResponse:
        await self._authorise(context)
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        name, target = request.name, request.provider_target
        shown = shorten(name)
        provider = self._registry.provider_of(name)
        if provider is None or (target and target != provider):
            if self._registry.handle.get_tool(name) is None:
                status = ErrorStatus.of(
                    Reason.TOOL_NOT_FOUND,
                    f"no tool '{shown}' is registered; nothing to unregister",
                    tool=shown,
                )
            else:
                whose = "this server itself" if provider is None else "another provider"
                status = ErrorStatus.of(
                    Reason.INVALID_REQUEST,
                    f"tool '{shown}' is served by {whose}, not by the provider_target given; "
                    "only the provider that registered a tool may unregister it",
                    tool=shown,
                )
            await abort(context, status)
        try:
            self._registry.unregister(name)
        except RegistryLockedError as error:
            await abort(context, ErrorStatus.of(Reason.REGISTRY_LOCKED, str(error), tool=shown))
        _log.info("unregistered tool=%s provider=%s", shown, printable(provider, 200))
        self.forget_if_gone(provider)
        return pb.UnregisterToolResponse(
            fingerprint=self._registry.handle.definitions_fingerprint()
        )

    def forget_if_gone(self, provider: str) -> None:
        """Once ``provider`` has no tools left, log it and close its channel after the
        calls still on it had time to finish."""
        if provider in self._registry.providers():
            return
        _log.info("provider left: %s", printable(provider, 200))
        channel = self._channels.pop(provider, None)
        if channel is not None:
            linger = self._provider_timeout or _CHANNEL_LINGER_SECONDS
            task = asyncio.get_running_loop().create_task(_close_later(channel, linger))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def lock_registry(
        self, request: pb.LockRegistryRequest | MalformedRequest, context: Context
    ) -> pb.LockRegistryResponse:
        await self._authorise(context)
        self._registry.lock()
        return pb.LockRegistryResponse(fingerprint=self._registry.handle.definitions_fingerprint())

    def _channel(self, target: str) -> grpc.aio.Channel:
        channel = self._channels.get(target)
        if channel is None:
            channel = self._channels[target] = aio_channel(target, self._provider_tls)
        return channel

    def channel_of(self, provider: str) -> grpc.aio.Channel:
        """The channel calls to ``provider`` go through."""
        return self._channel(provider)

    async def close(self) -> None:
        """Close the channels to providers."""
        for task in list(self._closing):
            task.cancel()
        for channel in self._channels.values():
            await channel.close()


async def _close_later(channel: grpc.aio.Channel, seconds: float) -> None:
    try:
        await asyncio.sleep(seconds)
    finally:
        await channel.close()


def _definition_problem(request: pb.RegisterToolRequest) -> str | None:
    """What makes the definition too large to register, checked before it is parsed."""
    definition = request.definition
    name = shorten(definition.name)
    if len(definition.description) > MAX_DESCRIPTION_CHARS:
        return (
            f"the description of tool '{name}' is {len(definition.description)} characters; "
            f"RegisterTool takes at most {MAX_DESCRIPTION_CHARS}"
        )
    size = len(definition.input_schema_json.encode())
    if size > MAX_SCHEMA_BYTES:
        return (
            f"input_schema_json of tool '{name}' is {size} bytes; RegisterTool takes at "
            f"most {MAX_SCHEMA_BYTES}; move detail into the description or split the tool"
        )
    return None
