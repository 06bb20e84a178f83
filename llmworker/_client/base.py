"""What the async and the sync remote handle share, none of it I/O (as httpx's
``BaseClient``): the server's definitions as last fetched, the reading methods that answer
from them, and the requests the handles send."""

from __future__ import annotations

from collections.abc import Mapping

from .._formats.definition_formats import DefinitionFormat, FormattedDefinitions, format_definitions
from .._model.definitions import DefinitionsSnapshot
from .._model.json_values import canonical_json
from .._model.tool_meta import ToolMeta
from .._wire.messages import meta_from_message
from ..v1 import tool_service_pb2 as pb

__all__ = ["DefinitionsCache", "RemoteHandleBase", "stream_request"]


class DefinitionsCache:
    """The last definitions a server sent, with their fingerprint, and each format of them
    asked for since."""

    __slots__ = ("by_name", "formatted", "snapshot")

    def __init__(self) -> None:
        self.snapshot = DefinitionsSnapshot((), b"[]", "")
        self.by_name: dict[str, ToolMeta] = {}
        self.formatted: dict[tuple[DefinitionFormat, bool], FormattedDefinitions | ValueError]
        self.formatted = {}

    def list_request(self) -> pb.ListDefinitionsSortedRequest:
        """ListDefinitionsSorted, answered ``unchanged`` if the server holds these."""
        return pb.ListDefinitionsSortedRequest(known_fingerprint=self.snapshot.fingerprint)

    def watch_request(self) -> pb.WatchDefinitionsRequest:
        """WatchDefinitions from these definitions on."""
        return pb.WatchDefinitionsRequest(known_fingerprint=self.snapshot.fingerprint)

    def update(self, response: pb.ListDefinitionsSortedResponse) -> bool:
        """Hold the definitions ``response`` carries; True if they changed."""
        if response.unchanged:
            return False
        metas = tuple(meta_from_message(message) for message in response.definitions)
        body = canonical_json([meta.to_json_object() for meta in metas])
        self.snapshot = DefinitionsSnapshot(metas, body, response.fingerprint)
        self.by_name = {meta.name: meta for meta in metas}
        self.formatted = {}
        return True

    def in_format(self, form: DefinitionFormat, cache_last: bool) -> FormattedDefinitions:
        """The definitions in ``form``, built once per change (a refusal too)."""
        key = (form, cache_last)
        result = self.formatted.get(key)
        if result is None:
            try:
                result = format_definitions(self.snapshot.definitions, form, cache_last=cache_last)
            except ValueError as error:
                result = error
            self.formatted[key] = result
        if isinstance(result, ValueError):
            raise result.with_traceback(None)  # a fresh traceback: it would grow per raise
        return result


class RemoteHandleBase:
    """The reading methods of a remote handle, answered from its cached definitions (as
    ``ToolServerHandle``'s are from its registry), with no call to the server."""

    __slots__ = ()

    _cache: DefinitionsCache

    def tool_definitions_sorted(self) -> tuple[ToolMeta, ...]:
        """The cached definitions, sorted by name."""
        return self._cache.snapshot.definitions

    def definitions_fingerprint(self) -> str:
        """The server's fingerprint of the cached definitions (equal on every replica that
        holds the same ones)."""
        return self._cache.snapshot.fingerprint

    def definitions_snapshot(self) -> DefinitionsSnapshot:
        """The cached definitions with their canonical JSON and the server's fingerprint."""
        return self._cache.snapshot

    def definitions_for(
        self, form: DefinitionFormat, *, cache_last: bool = False
    ) -> FormattedDefinitions:
        """The cached definitions in a provider's shape, as ``ToolServerHandle.definitions_for``
        (built once per change of the cached definitions, and raising as it raises).

        >>> tools = handle.definitions_for(DefinitionFormat.OPENAI_CHAT).json
        """
        return self._cache.in_format(form, cache_last)

    def __len__(self) -> int:
        """How many tools the cached definitions hold."""
        return len(self._cache.by_name)

    def __contains__(self, name: object) -> bool:
        """Whether the cached definitions hold a tool named ``name``."""
        return name in self._cache.by_name


def stream_request(
    name: str, input_json: str, call_id: str, metadata: Mapping[str, str] | None
) -> pb.CallToolRequest:
    """The CallToolStream request of a handle's ``stream_tool``."""
    request = pb.CallToolRequest(name=name, input_json=input_json, call_id=call_id)
    request.metadata.update(metadata or {})
    return request
