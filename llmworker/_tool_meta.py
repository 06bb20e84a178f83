"""ToolMeta: the immutable name, description and input schema of a tool."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, final

from ._json import FrozenJsonObject, JsonObject, canonical_json, freeze_json_object
from ._text import shorten

__all__ = ["ToolMeta"]

_NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_EMPTY_OBJECT_SCHEMA: Final = freeze_json_object({"type": "object", "properties": {}})


@final
class ToolMeta:
    """What an LLM is told about a tool; fixed once registered.

    >>> meta = ToolMeta("search").with_description("Search the web").with_input_schema(
    ...     {"type": "object", "properties": {"query": {"type": "string"}}})
    >>> meta.name
    'search'

    Builders return new values; the schema is deep-frozen, so nobody holding a ToolMeta can
    change what was registered. Names follow what LLM providers accept: 1-64 characters of
    ``A-Z a-z 0-9 _ -``.
    """

    __slots__ = ("_description", "_input_schema", "_name")

    def __init__(
        self,
        name: str,
        description: str = "",
        input_schema: Mapping[str, object] | None = None,
    ) -> None:
        if not _NAME_PATTERN.fullmatch(name):
            raise ValueError(
                f"tool name {shorten(name)!r} is invalid: use 1-64 characters of A-Z, a-z, 0-9, "
                "'_' or '-' (the names LLM providers accept)"
            )
        self._name = name
        self._description = description
        self._input_schema = (
            _EMPTY_OBJECT_SCHEMA if input_schema is None else _check_schema(name, input_schema)
        )

    @property
    def name(self) -> str:
        """The tool's name, unique in a registry."""
        return self._name

    @property
    def description(self) -> str:
        """What the tool does, for the model."""
        return self._description

    @property
    def input_schema(self) -> JsonObject:
        """The JSON Schema of the tool's input; read-only at every depth."""
        return self._input_schema

    def with_description(self, description: str) -> ToolMeta:
        """A copy of this meta with ``description``."""
        return ToolMeta(self._name, description, self._input_schema)

    def with_input_schema(self, input_schema: Mapping[str, object]) -> ToolMeta:
        """A copy of this meta with ``input_schema`` (deep-copied and frozen)."""
        return ToolMeta(self._name, self._description, input_schema)

    def to_json_object(self) -> JsonObject:
        """The meta as the JSON object LLM requests carry: name, description, input_schema."""
        return {
            "name": self._name,
            "description": self._description,
            "input_schema": self._input_schema,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolMeta):
            return NotImplemented
        return (
            self._name == other._name
            and self._description == other._description
            and self._input_schema == other._input_schema
        )

    def __hash__(self) -> int:
        return hash((self._name, self._description, canonical_json(self._input_schema)))

    def __repr__(self) -> str:
        return (
            f"ToolMeta(name={self._name!r}, description={self._description!r}, "
            f"input_schema={dict(self._input_schema)!r})"
        )


def _check_schema(name: str, schema: Mapping[str, object]) -> FrozenJsonObject:
    try:
        frozen = freeze_json_object(schema)
    except ValueError as error:
        raise ValueError(f"input schema of tool '{name}' is not JSON: {error}") from None
    schema_type = frozen.get("type", "object")
    if schema_type != "object":
        raise ValueError(
            f"input schema of tool '{name}' has type {shorten(repr(schema_type))}: tool input "
            "is a JSON object, so the schema's top-level type must be 'object'"
        )
    return frozen
