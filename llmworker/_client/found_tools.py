"""What ``search_tools`` gives back: the tools SearchTools ranked for a query, best first."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import final

from .._formats.definition_formats import DefinitionFormat, FormattedDefinitions
from .._model.tool_meta import ToolMeta
from .._wire.messages import format_number, meta_from_message
from ..v1 import tool_service_pb2 as pb

__all__ = ["FoundTools", "found_tools", "search_request"]


@final
@dataclass(frozen=True, slots=True)
class FoundTools:
    """The tools a search found, best first: their definitions and their ``scores`` (higher
    is better; comparable within one search only), and with a format asked for, the same
    tools as that provider's ``tools`` JSON (``formatted``; None without one)."""

    definitions: tuple[ToolMeta, ...]
    scores: tuple[float, ...]
    formatted: FormattedDefinitions | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The found tools' names, best first."""
        return tuple(meta.name for meta in self.definitions)


def search_request(query: str, limit: int, form: DefinitionFormat | None) -> pb.SearchToolsRequest:
    """SearchTools for ``query`` (the server checks it and the limit, naming the field)."""
    request = pb.SearchToolsRequest(query=query, limit=limit)
    if form is not None:
        request.format = format_number(form)
    return request


def found_tools(response: pb.SearchToolsResponse, form: DefinitionFormat | None) -> FoundTools:
    formatted = None
    if form is not None:
        encoded = response.definitions_json.encode()
        formatted = FormattedDefinitions(form, encoded, hashlib.sha256(encoded).hexdigest())
    return FoundTools(
        tuple(meta_from_message(definition) for definition in response.definitions),
        tuple(response.scores),
        formatted,
    )
