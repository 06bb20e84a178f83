"""ListDefinitionsSorted: the registry's definitions, as llmworker sends them or in a
provider's format, each serialised once per registry change and then sent as bytes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Final, NamedTuple

from llmworker import DefinitionFormat, DefinitionsSnapshot, FormattedDefinitions, canonical_json
from llmworker._wire import (
    ErrorStatus,
    Reason,
    definition_format,
    definitions_response,
    format_definitions,
)
from llmworker.v1 import tool_service_pb2 as pb

from ..registry.registry import Registry
from ..rpc.auth import CallerCheck, Scope
from ..rpc.handlers import Context, MalformedRequest, abort, abort_malformed

__all__ = ["DefinitionListing", "Listing"]

_MAX_SCOPED_LISTINGS: Final = 1024
_ANTHROPIC: Final = (DefinitionFormat.ANTHROPIC, DefinitionFormat.ANTHROPIC_STRICT)


class Listing(NamedTuple):
    """One registry version's answer: its fingerprint, the full response and the
    ``unchanged`` one, serialised."""

    fingerprint: str
    full: bytes
    unchanged: bytes


class DefinitionListing:
    """Answers ListDefinitionsSorted from responses cached per registry version (and, with
    caller tokens, per scope: a caller sees only the tools it may call)."""

    def __init__(
        self,
        registry: Registry,
        auth: CallerCheck | None = None,
        deferred: Callable[[str], bool] | None = None,
    ) -> None:
        """``deferred`` tells the tools the Anthropic formats mark ``defer_loading`` (those
        outside ``--core-tools``)."""
        self._registry = registry
        self._auth = auth
        self._deferred = deferred
        self._definitions: tuple[DefinitionsSnapshot, Listing] | None = None
        self._formatted: dict[tuple[DefinitionFormat, bool], tuple[FormattedDefinitions, Listing]]
        self._formatted = {}
        self._scoped: dict[tuple[Scope, int, bool], tuple[DefinitionsSnapshot, Listing]] = {}
        self._deferred_formats: dict[
            tuple[DefinitionFormat, bool], tuple[DefinitionsSnapshot, FormattedDefinitions]
        ] = {}

    async def list_definitions_sorted(
        self, request: pb.ListDefinitionsSortedRequest | MalformedRequest, context: Context
    ) -> bytes:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        listing = self.listing_for(context, request.format, request.anthropic_cache_control)
        if isinstance(listing, ErrorStatus):
            await abort(context, listing)
        return (
            listing.unchanged if request.known_fingerprint == listing.fingerprint else listing.full
        )

    def listing_for(
        self, context: Context, number: pb.DefinitionFormat.ValueType, cache_last: bool
    ) -> Listing | ErrorStatus:
        """The listing a request asks for, in provider format ``number`` (0: plain): the
        caller's view when the server checks callers."""
        if self._auth is not None:
            caller = self._auth.caller(context)
            if isinstance(caller, ErrorStatus):
                return caller
            return self.scoped(caller.scope, number, cache_last)
        return self.formatted(number, cache_last) if number else self.plain()

    def scoped(
        self, scope: Scope, number: pb.DefinitionFormat.ValueType, cache_last: bool
    ) -> Listing | ErrorStatus:
        """The listing of the tools ``scope`` allows, cached per scope and registry version."""
        snapshot = self._registry.handle.definitions_snapshot()
        key = (scope, int(number), cache_last)
        cached = self._scoped.get(key)
        if cached is not None and cached[0] is snapshot:
            return cached[1]
        listing = _scoped_listing(snapshot, scope, number, cache_last, self._deferred)
        if isinstance(listing, Listing):
            if len(self._scoped) >= _MAX_SCOPED_LISTINGS:
                self._scoped.clear()  # scopes of token files replaced by a reload
            self._scoped[key] = (snapshot, listing)
        return listing

    def plain(self) -> Listing:
        """The definitions as llmworker sends them, for the registry's current version."""
        snapshot = self._registry.handle.definitions_snapshot()
        cached = self._definitions
        if cached is None or cached[0] is not snapshot:
            cached = self._definitions = (snapshot, _plain_listing(snapshot))
        return cached[1]

    def formatted(
        self, number: pb.DefinitionFormat.ValueType, cache_last: bool
    ) -> Listing | ErrorStatus:
        """The definitions in the provider format ``number``, or why they cannot be."""
        form = _provider_form(number)
        if isinstance(form, ErrorStatus):
            return form
        try:
            if self._deferred is not None and form in _ANTHROPIC:
                formatted = self._with_deferred(form, cache_last)
            else:
                formatted = self._registry.handle.definitions_for(form, cache_last=cache_last)
        except ValueError as error:
            return ErrorStatus.of(Reason.DEFINITION_FORMAT_UNSUPPORTED, str(error))
        key = (form, cache_last)
        cached = self._formatted.get(key)
        if cached is None or cached[0] is not formatted:
            cached = self._formatted[key] = (formatted, _formatted_listing(formatted))
        return cached[1]

    def _with_deferred(self, form: DefinitionFormat, cache_last: bool) -> FormattedDefinitions:
        """The Anthropic definitions with the tools outside the core set deferred, built once
        per registry version (the library's cache knows no deferral)."""
        snapshot = self._registry.handle.definitions_snapshot()
        key = (form, cache_last)
        built = self._deferred_formats.get(key)
        if built is None or built[0] is not snapshot:
            formatted = format_definitions(
                snapshot.definitions, form, cache_last=cache_last, deferred=self._deferred
            )
            built = self._deferred_formats[key] = (snapshot, formatted)
        return built[1]


def _scoped_listing(
    snapshot: DefinitionsSnapshot,
    scope: Scope,
    number: pb.DefinitionFormat.ValueType,
    cache_last: bool,
    deferred: Callable[[str], bool] | None,
) -> Listing | ErrorStatus:
    metas = tuple(meta for meta in snapshot.definitions if scope.allows(meta.name))
    if not number:
        body = b"[" + b",".join(canonical_json(meta.to_json_object()) for meta in metas) + b"]"
        return _plain_listing(DefinitionsSnapshot(metas, body, hashlib.sha256(body).hexdigest()))
    form = _provider_form(number)
    if isinstance(form, ErrorStatus):
        return form
    try:
        formatted = format_definitions(metas, form, cache_last=cache_last, deferred=deferred)
        return _formatted_listing(formatted)
    except ValueError as error:
        return ErrorStatus.of(Reason.DEFINITION_FORMAT_UNSUPPORTED, str(error))


def _provider_form(number: pb.DefinitionFormat.ValueType) -> DefinitionFormat | ErrorStatus:
    """The provider format ``number`` (not 0) names, or INVALID_REQUEST."""
    try:
        form = definition_format(number)
    except ValueError as error:
        return ErrorStatus.of(Reason.INVALID_REQUEST, str(error))
    assert form is not None, "format 0 (unspecified) is the plain listing"
    return form


def _plain_listing(snapshot: DefinitionsSnapshot) -> Listing:
    fingerprint = snapshot.fingerprint
    return Listing(fingerprint, definitions_response(snapshot), _unchanged(fingerprint))


def _formatted_listing(formatted: FormattedDefinitions) -> Listing:
    full = pb.ListDefinitionsSortedResponse(
        definitions_json=formatted.json.decode(), fingerprint=formatted.fingerprint
    ).SerializeToString()
    return Listing(formatted.fingerprint, full, _unchanged(formatted.fingerprint))


def _unchanged(fingerprint: str) -> bytes:
    return pb.ListDefinitionsSortedResponse(
        fingerprint=fingerprint, unchanged=True
    ).SerializeToString()
