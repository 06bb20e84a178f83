"""The internal ToolRegistry service: RegisterTool, UnregisterTool and LockRegistry for
provider identities (``ProviderCheck``), and the channels to the providers that contributed
tools."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Final, NoReturn

import grpc
import grpc.aio

from llmworker import ClientTls, RemoteTool, ToolMeta, ToolRegistryError
from llmworker._wire import (
    ErrorStatus,
    Reason,
    aio_channel,
    meta_from_message,
    printable,
    shorten,
)
from llmworker.v1 import tool_registry_pb2 as pb

from ..errors import RegistryFullError, RegistryLockedError
from ..rpc.audit import AUDIT, CURRENT_CALLER, REFUSALS
from ..rpc.drain import DrainGate
from ..rpc.handlers import (
    SHUTTING_DOWN,
    Context,
    MalformedRequest,
    abort,
    abort_malformed,
    add_service,
    guarded,
    unary,
)
from .provider_identity import ProviderCheck, ProviderIdentity
from .provider_target import target_problem
from .provider_tool import ProviderTool
from .registry import Registry
from .serving_check import serving_problem

__all__ = ["RegistryService"]

_log = logging.getLogger("llmworker.server.registry")
_SERVICE: Final = "llmworker.v1.ToolRegistry"
_CHANNEL_LINGER_SECONDS: Final = 30.0  # a gone provider's channel, for calls still on it
MAX_DESCRIPTION_CHARS: Final = 16 * 1024
"""The longest description RegisterTool takes."""
MAX_SCHEMA_BYTES: Final = 128 * 1024
"""The largest input schema RegisterTool takes, as canonical JSON."""


class RegistryService:
    """``llmworker.v1.ToolRegistry``: RegisterTool, UnregisterTool and LockRegistry, for
    the provider identities ``check`` knows."""

    def __init__(
        self,
        registry: Registry,
        check: ProviderCheck,
        provider_timeout: float | None,
        gate: DrainGate | None = None,
        provider_tls: ClientTls | None = None,
        check_timeout: float = 5.0,
        interceptors: Sequence[grpc.aio.ClientInterceptor] = (),
    ) -> None:
        self._registry = registry
        self._check = check
        self._provider_timeout = provider_timeout
        self._gate = gate
        self._provider_tls = provider_tls
        self._check_timeout = check_timeout
        self._interceptors = interceptors
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._closing: set[asyncio.Task[None]] = set()  # channels being closed

    def add_to(self, server: grpc.aio.Server) -> None:
        add_service(
            server,
            _SERVICE,
            {
                "RegisterTool": unary(
                    guarded(self.register_tool, "RegisterTool"),
                    pb.RegisterToolRequest.FromString,
                    pb.RegisterToolResponse.SerializeToString,
                ),
                "LockRegistry": unary(
                    guarded(self.lock_registry, "LockRegistry"),
                    pb.LockRegistryRequest.FromString,
                    pb.LockRegistryResponse.SerializeToString,
                ),
                "UnregisterTool": unary(
                    guarded(self.unregister_tool, "UnregisterTool"),
                    pb.UnregisterToolRequest.FromString,
                    pb.UnregisterToolResponse.SerializeToString,
                ),
            },
        )

    async def _identify(self, context: Context) -> ProviderIdentity:
        """The provider identity of the request; an unknown one is refused UNAUTHENTICATED
        before anything reads the request, and before a draining server holds it."""
        identity = self._check.identify(context)
        if isinstance(identity, ErrorStatus):
            await _refuse(context, identity)
        CURRENT_CALLER.set(identity.label)
        gate = self._gate
        if gate is not None and gate.closed and not await gate.hold():
            await _refuse(context, SHUTTING_DOWN)
        return identity

    async def register_tool(
        self, request: pb.RegisterToolRequest | MalformedRequest, context: Context
    ) -> pb.RegisterToolResponse:
        identity = await self._identify(context)
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        problem = _definition_problem(request)
        if problem is not None:
            await _refuse(context, ErrorStatus.of(Reason.INVALID_REQUEST, problem))
        try:
            meta = meta_from_message(request.definition)
        except ValueError as error:
            await _refuse(context, ErrorStatus.of(Reason.INVALID_REQUEST, str(error)))
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
        refusal = (
            identity.tool_refusal(meta.name)
            or identity.target_refusal(meta.name, target)
            or self._owner_refusal(identity, meta.name)
            or self._early_refusal(meta, target, identity)
        )
        if refusal is not None:
            await _refuse(context, refusal)
        if self._check_timeout > 0 and not self._is_renewal(meta, target):
            refusal = await serving_problem(
                self._channel(target), meta, target, self._check_timeout
            )
            if refusal is None:  # the registry may have changed while the provider answered
                refusal = self._owner_refusal(identity, meta.name) or self._early_refusal(
                    meta, target, identity
                )
            if refusal is not None:
                self._drop_unused_channel(target)
                await _refuse(context, refusal)
        arrived = not self._registry.has_provider(target)
        try:
            if self._registry.is_locked:
                changed = self._reattach(meta, target, identity)
            else:
                changed = self._registry.register_remote(
                    meta, lambda: ProviderTool(self._remote(meta, target)), target, identity.label
                )
        except RegistryLockedError as error:
            refusal = ErrorStatus.of(Reason.REGISTRY_LOCKED, str(error), tool=meta.name)
            await _refuse(context, refusal)
        except ToolRegistryError.DuplicateName as error:
            refusal = ErrorStatus.of(Reason.DUPLICATE_NAME, str(error), tool=meta.name)
            await _refuse(context, refusal)
        except RegistryFullError as error:
            refusal = ErrorStatus.of(Reason.REGISTRY_FULL, str(error), tool=meta.name)
            await _refuse(context, refusal)
        if arrived:
            _log.info("provider arrived: %s (identity %s)", printable(target, 200), identity.label)
        if changed:
            _log.info(
                "registered tool=%s provider=%s identity=%s",
                meta.name,
                printable(target, 200),
                identity.label,
            )
        return pb.RegisterToolResponse(fingerprint=self._registry.handle.definitions_fingerprint())

    def _remote(self, meta: ToolMeta, target: str) -> RemoteTool:
        return RemoteTool(
            self._channel(target),
            meta.name,
            self._provider_timeout,
            approved_upstream=meta.requires_approval,  # this server asks the person
        )

    def _is_renewal(self, meta: ToolMeta, target: str) -> bool:
        current = self._registry.handle.get_tool(meta.name)
        return (
            current is not None
            and current[0] == meta
            and self._registry.provider_of(meta.name) == target
        )

    def _owner_refusal(
        self, identity: ProviderIdentity, name: str, *, removing: bool = False
    ) -> ErrorStatus | None:
        """Why ``identity`` may not act on the contributed tool ``name``: another identity
        registered it. An identity with ``may_lock`` (an operator's) may remove any tool:
        so a revoked identity's tools can go."""
        owner = self._registry.owner_of(name)
        if owner is None or owner == identity.label or (removing and identity.may_lock):
            return None
        shown = shorten(name)
        return ErrorStatus.of(
            Reason.PROVIDER_FORBIDDEN,
            f"tool '{shown}' belongs to the provider identity '{owner}', and only it may "
            f"renew, replace, re-attach or unregister it (this request is from "
            f"'{identity.label}'); register another name, or use that identity's token",
            tool=shown,
        )

    def _early_refusal(
        self, meta: ToolMeta, target: str, identity: ProviderIdentity
    ) -> ErrorStatus | None:
        """A refusal known without asking the provider: a name another provider (or this
        server) serves, or a locked registry that cannot take this definition."""
        current = self._registry.handle.get_tool(meta.name)
        provider = self._registry.provider_of(meta.name)
        if self._registry.is_locked:
            if current is None or current[0] != meta or provider is None:
                try:
                    self._registry.reattach(meta, target, identity.label)  # raises why
                except RegistryLockedError as error:
                    return ErrorStatus.of(Reason.REGISTRY_LOCKED, str(error), tool=meta.name)
            return None
        if current is not None and provider != target:
            taken = ToolRegistryError.DuplicateName(meta.name)
            return ErrorStatus.of(Reason.DUPLICATE_NAME, str(taken), tool=meta.name)
        return None

    def _reattach(self, meta: ToolMeta, target: str, identity: ProviderIdentity) -> bool:
        """A locked tool re-attached to ``target`` (its definition unchanged)."""
        tool = self._registry.reattach(meta, target, identity.label)
        if tool is None:
            return False
        if isinstance(tool, ProviderTool):
            tool.rebind(self._remote(meta, target))
        _log.info("tool=%s re-attached to provider=%s", meta.name, printable(target, 200))
        return True

    def _drop_unused_channel(self, target: str) -> None:
        """A channel opened only to check a refused registration: closed at once."""
        if not self._registry.has_provider(target):
            self._retire_channel(target, 0.0)

    async def unregister_tool(
        self, request: pb.UnregisterToolRequest | MalformedRequest, context: Context
    ) -> pb.UnregisterToolResponse:
        identity = await self._identify(context)
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        name, target = request.name, request.provider_target
        shown = shorten(name)
        refusal = self._owner_refusal(identity, name, removing=True)
        if refusal is not None:
            await _refuse(context, refusal)
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
            await _refuse(context, status)
        try:
            self._registry.unregister(name)
        except RegistryLockedError as error:
            await _refuse(context, ErrorStatus.of(Reason.REGISTRY_LOCKED, str(error), tool=shown))
        _log.info(
            "unregistered tool=%s provider=%s identity=%s",
            shown,
            printable(provider, 200),
            identity.label,
        )
        self.forget_if_gone(provider)
        return pb.UnregisterToolResponse(
            fingerprint=self._registry.handle.definitions_fingerprint()
        )

    def forget_if_gone(self, provider: str) -> None:
        """Once ``provider`` has no tools left, log it and close its channel after the
        calls still on it had time to finish."""
        if self._registry.has_provider(provider):
            return
        _log.info("provider left: %s", printable(provider, 200))
        self._retire_channel(provider, self._provider_timeout or _CHANNEL_LINGER_SECONDS)

    def _retire_channel(self, target: str, linger: float) -> None:
        """Close ``target``'s channel after ``linger`` seconds (for the calls still on it)."""
        channel = self._channels.pop(target, None)
        if channel is not None:
            task = asyncio.get_running_loop().create_task(_close_later(channel, linger))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def lock_registry(
        self, request: pb.LockRegistryRequest | MalformedRequest, context: Context
    ) -> pb.LockRegistryResponse:
        identity = await self._identify(context)
        if not identity.may_lock:
            await abort(
                context,
                ErrorStatus.of(
                    Reason.PROVIDER_FORBIDDEN,
                    f"the provider identity '{identity.label}' may not lock the registry; "
                    'give it "may_lock": true in the server\'s --provider-tokens file',
                ),
            )
        if not self._registry.is_locked:
            _log.info("LockRegistry by identity %s", identity.label)
        self._registry.lock()
        return pb.LockRegistryResponse(fingerprint=self._registry.handle.definitions_fingerprint())

    def _channel(self, target: str) -> grpc.aio.Channel:
        channel = self._channels.get(target)
        if channel is None:
            channel = aio_channel(target, self._provider_tls, interceptors=self._interceptors)
            self._channels[target] = channel
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


async def _refuse(context: Context, status: ErrorStatus) -> NoReturn:
    """Abort with ``status``: every ToolRegistry error is a refusal (nothing was registered),
    so each goes to the audit trail, PROVIDER_UNAVAILABLE and TOOL_NOT_FOUND too."""
    if status.reason not in REFUSALS:
        AUDIT.refused(status)
    await abort(context, status)


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
