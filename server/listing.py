"""ListDefinitionsSorted: the registry's definitions, as llmworker sends them or in a
provider's format, each serialised once per registry change and then sent as bytes."""

from __future__ import annotations

from llmworker._formats import DefinitionFormat, FormattedDefinitions
from llmworker._status import ErrorStatus, Reason
from llmworker._tool_server import DefinitionsSnapshot
from llmworker._wire import definition_format, definitions_response
from llmworker.v1 import tool_service_pb2 as pb

from .registry import Registry
from .rpc import Context, MalformedRequest, abort, abort_malformed

__all__ = ["DefinitionListing"]


class DefinitionListing:
    """Answers ListDefinitionsSorted from responses cached per registry version."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._definitions: tuple[DefinitionsSnapshot, bytes, bytes] | None = None
        self._formatted: dict[
            tuple[DefinitionFormat, bool], tuple[FormattedDefinitions, bytes, bytes]
        ] = {}

    async def list_definitions_sorted(
        self, request: pb.ListDefinitionsSortedRequest | MalformedRequest, context: Context
    ) -> bytes:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        if request.format:
            return await self._formatted_listing(request, context)
        snapshot = self._registry.handle.definitions_snapshot()
        cached = self._definitions
        if cached is None or cached[0] is not snapshot:
            unchanged = pb.ListDefinitionsSortedResponse(
                fingerprint=snapshot.fingerprint, unchanged=True
            ).SerializeToString()
            cached = self._definitions = (snapshot, definitions_response(snapshot), unchanged)
        return cached[2] if request.known_fingerprint == snapshot.fingerprint else cached[1]

    async def _formatted_listing(
        self, request: pb.ListDefinitionsSortedRequest, context: Context
    ) -> bytes:
        """The definitions in a provider's format, serialised once per registry change."""
        try:
            form = definition_format(request.format)
        except ValueError as error:
            await abort(context, ErrorStatus.of(Reason.INVALID_REQUEST, str(error)))
        assert form is not None
        cache_last = request.anthropic_cache_control
        try:
            formatted = self._registry.handle.definitions_for(form, cache_last=cache_last)
        except ValueError as error:
            await abort(context, ErrorStatus.of(Reason.DEFINITION_FORMAT_UNSUPPORTED, str(error)))
        key = (form, cache_last)
        cached = self._formatted.get(key)
        if cached is None or cached[0] is not formatted:
            full = pb.ListDefinitionsSortedResponse(
                definitions_json=formatted.json.decode(), fingerprint=formatted.fingerprint
            ).SerializeToString()
            unchanged = pb.ListDefinitionsSortedResponse(
                fingerprint=formatted.fingerprint, unchanged=True
            ).SerializeToString()
            cached = self._formatted[key] = (formatted, full, unchanged)
        return cached[2] if request.known_fingerprint == formatted.fingerprint else cached[1]
