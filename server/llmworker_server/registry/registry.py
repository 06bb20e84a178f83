"""The server's registry, following the Worker typestate: its tools, which provider
contributed each (its target, and the provider identity that owns it), and the listing size
limit."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from llmworker import (
    Locked,
    Mutable,
    Tool,
    ToolDefinition,
    ToolFactory,
    ToolMeta,
    ToolRegistryError,
    ToolServerHandle,
    Worker,
)
from llmworker._wire import definition_message, shorten

from ..errors import RegistryFullError, RegistryLockedError

__all__ = ["Registry", "listing_bytes"]

_log = logging.getLogger("llmworker.server.registry")
_LISTING_OVERHEAD: Final = 2 + 64 + 2  # the fingerprint and unchanged fields


def listing_bytes(meta: ToolMeta) -> int:
    """What ``meta`` adds to the serialised ListDefinitionsSorted response."""
    size = definition_message(meta).ByteSize()
    return 1 + _varint_length(size) + size


def _varint_length(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


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
        self._tools_of: dict[str, set[str]] = {}  # the same, by provider
        self._owner_of: dict[str, str] = {}  # contributed tool -> its provider identity

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

    def register_remote(
        self, meta: ToolMeta, make_tool: Callable[[], Tool], provider: str, owner: str
    ) -> bool:
        """Register one tool of ``provider`` (owned by the identity ``owner``) whose meta is
        known, checking the limit before anything is made (``make_tool`` runs only for an
        accepted registration). The same name from the same provider replaces the tool
        (calls in flight finish on the old one); an identical definition changes nothing.
        False when nothing changed. The caller checks ownership (``owner_of``)."""
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
        self._bind(meta.name, provider, owner)
        self._listing_bytes += size
        self._changed()
        return True

    def reattach(self, meta: ToolMeta, provider: str, owner: str) -> Tool | None:
        """On a locked registry: the tool ``meta`` names, now served by ``provider``, if
        ``meta`` is exactly its definition (None: already served there); else
        ``RegistryLockedError``, since a locked tool set is fixed."""
        current = self.handle.get_tool(meta.name)
        if current is None or current[0] != meta or meta.name not in self._provider_of:
            raise RegistryLockedError(
                f"the registry is locked: tool '{shorten(meta.name)}' can only re-attach "
                "with the definition it was locked with, and new tools cannot be added; "
                "register before the server locks (see --registration-window)"
            )
        if self._provider_of[meta.name] == provider:
            return None
        self._bind(meta.name, provider, owner)
        return current[1]

    def provider_of(self, name: str) -> str | None:
        """The target of the provider that contributed ``name``; None for a local tool."""
        return self._provider_of.get(name)

    def owner_of(self, name: str) -> str | None:
        """The provider identity that registered ``name``; None for a local tool."""
        return self._owner_of.get(name)

    def owned_by(self, owners: set[str]) -> list[str]:
        """The contributed tools, sorted, whose owner is one of ``owners``."""
        return sorted(name for name, owner in self._owner_of.items() if owner in owners)

    def owners(self) -> set[str]:
        """The provider identities that own a tool."""
        return set(self._owner_of.values())

    def providers(self) -> dict[str, list[str]]:
        """Each provider's target and the names of the tools it contributed."""
        return {provider: sorted(names) for provider, names in self._tools_of.items()}

    def provider_targets(self) -> list[str]:
        """The targets of the providers with tools registered."""
        return list(self._tools_of)

    def has_provider(self, provider: str) -> bool:
        """Whether ``provider`` contributed a tool that is registered (at no cost per tool:
        every RegisterTool, renewals too, asks)."""
        return provider in self._tools_of

    def tools_of(self, provider: str) -> list[str]:
        """The names of the tools ``provider`` contributed, sorted."""
        return sorted(self._tools_of.get(provider, ()))

    def _bind(self, name: str, provider: str, owner: str) -> None:
        previous = self._provider_of.get(name)
        if previous is not None:
            self._unbind(name)
        self._provider_of[name] = provider
        self._owner_of[name] = owner
        self._tools_of.setdefault(provider, set()).add(name)

    def _unbind(self, name: str) -> None:
        del self._owner_of[name]
        provider = self._provider_of.pop(name)
        names = self._tools_of[provider]
        names.discard(name)
        if not names:
            del self._tools_of[provider]

    def unregister(self, name: str) -> None:
        """Remove the contributed tool ``name`` (calls in flight finish);
        ``RegistryLockedError`` once locked, ``KeyError`` for a name no provider gave."""
        mutable = self._writable()
        if name not in self._provider_of:
            raise KeyError(name)
        meta = mutable.unregister_tool(name)
        self._unbind(name)
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
