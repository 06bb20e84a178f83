"""ListDefinitionsSorted: the registry's definitions, as llmworker sends them or in a
provider's format, each serialised once per registry change and then sent as bytes."""

from __future__ import annotations

from typing import NamedTuple

from llmworker._formats import DefinitionFormat, FormattedDefinitions
from llmworker._status import ErrorStatus, Reason
from llmworker._tool_server import DefinitionsSnapshot
from llmworker._wire import definition_format, definitions_response
from llmworker.v1 import tool_service_pb2 as pb

from .registry import Registry
from .rpc import Context, MalformedRequest, abort, abort_malformed

__all__ = ["DefinitionListing", "Listing"]


class Listing(NamedTuple):
    """One registry version's answer: its fingerprint, the full response and the
    ``unchanged`` one, serialised."""

    fingerprint: str
    full: bytes
    unchanged: bytes


class DefinitionListing:
    """Answers ListDefinitionsSorted from responses cached per registry version."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._definitions: tuple[DefinitionsSnapshot, Listing] | None = None
        self._formatted: dict[tuple[DefinitionFormat, bool], tuple[FormattedDefinitions, Listing]]
        self._formatted = {}

    async def list_definitions_sorted(
        self, request: pb.ListDefinitionsSortedRequest | MalformedRequest, context: Context
    ) -> bytes:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        listing = self.listing_for(request.format, request.anthropic_cache_control)
        if isinstance(listing, ErrorStatus):
            await abort(context, listing)
        return (
            listing.unchanged if request.known_fingerprint == listing.fingerprint else listing.full
        )

    def listing_for(
        self, number: pb.DefinitionFormat.ValueType, cache_last: bool
    ) -> Listing | ErrorStatus:
        """The listing a request asks for: in provider format ``number`` (0: plain)."""
        return self.formatted(number, cache_last) if number else self.plain()

    def plain(self) -> Listing:
        """The definitions as llmworker sends them, for the registry's current version."""
        snapshot = self._registry.handle.definitions_snapshot()
        cached = self._definitions
        if cached is None or cached[0] is not snapshot:
            listing = Listing(
                snapshot.fingerprint,
                definitions_response(snapshot),
                _unchanged(snapshot.fingerprint),
            )
            cached = self._definitions = (snapshot, listing)
        return cached[1]

    def formatted(
        self, number: pb.DefinitionFormat.ValueType, cache_last: bool
    ) -> Listing | ErrorStatus:
        """The definitions in the provider format ``number``, or why they cannot be."""
        try:
            form = definition_format(number)
        except ValueError as error:
            return ErrorStatus.of(Reason.INVALID_REQUEST, str(error))
        assert form is not None, "format 0 (unspecified) is the plain listing"
        try:
            formatted = self._registry.handle.definitions_for(form, cache_last=cache_last)
        except ValueError as error:
            return ErrorStatus.of(Reason.DEFINITION_FORMAT_UNSUPPORTED, str(error))
        key = (form, cache_last)
        cached = self._formatted.get(key)
        if cached is None or cached[0] is not formatted:
            full = pb.ListDefinitionsSortedResponse(
                definitions_json=formatted.json.decode(), fingerprint=formatted.fingerprint
            ).SerializeToString()
            cached = self._formatted[key] = (
                formatted,
                Listing(formatted.fingerprint, full, _unchanged(formatted.fingerprint)),
            )
        return cached[1]


def _unchanged(fingerprint: str) -> bytes:
    return pb.ListDefinitionsSortedResponse(
        fingerprint=fingerprint, unchanged=True
    ).SerializeToString()
