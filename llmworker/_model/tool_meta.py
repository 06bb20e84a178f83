"""ToolMeta: the immutable name, description, schemas, title and annotations of a tool."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, final

from .json_values import FrozenJsonObject, JsonObject, JsonValue, canonical_json, freeze_json_object
from .text import shorten

__all__ = ["ToolAnnotations", "ToolMeta"]

_NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_EMPTY_OBJECT_SCHEMA: Final = freeze_json_object({"type": "object", "properties": {}})


@final
@dataclass(frozen=True, slots=True)
class ToolAnnotations:
    """Hints about a tool's behaviour (MCP's tool annotations); None means unknown.

    ``read_only``: it changes nothing. ``destructive``: it may destroy or overwrite data.
    ``idempotent``: calling it again with the same input has no further effect.
    ``open_world``: it reaches the outside world. Hints only, never a security boundary.
    """

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None

    def to_json_object(self) -> dict[str, JsonValue]:
        """The hints that are set, under their wire names (``read_only_hint``...)."""
        hints = {
            "read_only_hint": self.read_only,
            "destructive_hint": self.destructive,
            "idempotent_hint": self.idempotent,
            "open_world_hint": self.open_world,
        }
        return {name: value for name, value in hints.items() if value is not None}

    def __bool__(self) -> bool:
        """Whether any hint is set."""
        hints = (self.read_only, self.destructive, self.idempotent, self.open_world)
        return any(value is not None for value in hints)


NO_ANNOTATIONS: Final = ToolAnnotations()


@final
class ToolMeta:
    """What an LLM is told about a tool; fixed once registered.

    >>> meta = ToolMeta("search").with_description("Search the web").with_input_schema(
    ...     {"type": "object", "properties": {"query": {"type": "string"}}})
    >>> meta.name
    'search'

    Builders return new values; schemas are deep-frozen, so nobody holding a ToolMeta can
    change what was registered. Names follow what LLM providers accept: 1-64 characters of
    ``A-Z a-z 0-9 _ -``. Beside name, description and input schema a tool may have a
    ``title`` for people, an ``output_schema`` for its structured result, ``annotations``
    and ``requires_approval`` (a batch pauses before running it until a decision approves).
    """

    __slots__ = (
        "_annotations",
        "_description",
        "_input_schema",
        "_name",
        "_output_schema",
        "_requires_approval",
        "_title",
    )

    def __init__(
        self,
        name: str,
        description: str = "",
        input_schema: Mapping[str, object] | None = None,
        *,
        title: str = "",
        output_schema: Mapping[str, object] | None = None,
        annotations: ToolAnnotations = NO_ANNOTATIONS,
        requires_approval: bool = False,
    ) -> None:
        if not _NAME_PATTERN.fullmatch(name):
            raise ValueError(
                f"tool name {shorten(name)!r} is invalid: use 1-64 characters of A-Z, a-z, 0-9, "
                "'_' or '-' (the names LLM providers accept)"
            )
        self._name = name
        self._description = description
        self._input_schema = (
            _EMPTY_OBJECT_SCHEMA
            if input_schema is None
            else _check_schema(name, "input", input_schema)
        )
        self._title = title
        self._output_schema = (
            None if output_schema is None else _check_schema(name, "output", output_schema)
        )
        self._annotations = annotations
        self._requires_approval = requires_approval

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

    @property
    def title(self) -> str:
        """A human-readable name for people; empty when none."""
        return self._title

    @property
    def output_schema(self) -> JsonObject | None:
        """The JSON Schema of the tool's structured result, or None for text only."""
        return self._output_schema

    @property
    def annotations(self) -> ToolAnnotations:
        """The behaviour hints; every one is None when the tool says nothing."""
        return self._annotations

    @property
    def requires_approval(self) -> bool:
        """Whether a batch pauses before running the tool until a decision approves it."""
        return self._requires_approval

    def with_description(self, description: str) -> ToolMeta:
        """A copy of this meta with ``description``."""
        return self._copy(description=description)

    def with_input_schema(self, input_schema: Mapping[str, object]) -> ToolMeta:
        """A copy of this meta with ``input_schema`` (deep-copied and frozen)."""
        return self._copy(input_schema=input_schema)

    def with_output_schema(self, output_schema: Mapping[str, object] | None) -> ToolMeta:
        """A copy of this meta with ``output_schema`` (a JSON object schema, or None)."""
        return self._copy(output_schema=(output_schema,))

    def with_title(self, title: str) -> ToolMeta:
        """A copy of this meta with ``title``."""
        return self._copy(title=title)

    def with_annotations(self, annotations: ToolAnnotations) -> ToolMeta:
        """A copy of this meta with ``annotations``."""
        return self._copy(annotations=annotations)

    def with_requires_approval(self, requires_approval: bool = True) -> ToolMeta:
        """A copy of this meta that does (or does not) require approval."""
        return self._copy(requires_approval=requires_approval)

    def _copy(
        self,
        *,
        description: str | None = None,
        input_schema: Mapping[str, object] | None = None,
        title: str | None = None,
        output_schema: tuple[Mapping[str, object] | None] | None = None,
        annotations: ToolAnnotations | None = None,
        requires_approval: bool | None = None,
    ) -> ToolMeta:
        """A copy with the given fields changed (``output_schema`` boxed: None is a value)."""
        return ToolMeta(
            self._name,
            self._description if description is None else description,
            self._input_schema if input_schema is None else input_schema,
            title=self._title if title is None else title,
            output_schema=self._output_schema if output_schema is None else output_schema[0],
            annotations=self._annotations if annotations is None else annotations,
            requires_approval=(
                self._requires_approval if requires_approval is None else requires_approval
            ),
        )

    def to_json_object(self) -> JsonObject:
        """The meta as the JSON object LLM requests carry: name, description, input_schema,
        and title, output_schema, annotations and requires_approval only when set (so a
        meta without them serialises, and fingerprints, as it always did)."""
        body: dict[str, JsonValue] = {
            "name": self._name,
            "description": self._description,
            "input_schema": self._input_schema,
        }
        if self._title:
            body["title"] = self._title
        if self._output_schema is not None:
            body["output_schema"] = self._output_schema
        if self._annotations:
            body["annotations"] = self._annotations.to_json_object()
        if self._requires_approval:
            body["requires_approval"] = True
        return body

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolMeta):
            return NotImplemented
        return self.to_json_object() == other.to_json_object()

    def __hash__(self) -> int:
        return hash(canonical_json(self.to_json_object()))

    def __repr__(self) -> str:
        extra = "".join(
            f", {key}={value!r}"
            for key, value in self.to_json_object().items()
            if key not in ("name", "description", "input_schema")
        )
        return (
            f"ToolMeta(name={self._name!r}, description={self._description!r}, "
            f"input_schema={dict(self._input_schema)!r}{extra})"
        )


def _check_schema(name: str, which: str, schema: Mapping[str, object]) -> FrozenJsonObject:
    try:
        frozen = freeze_json_object(schema)
    except ValueError as error:
        raise ValueError(f"{which} schema of tool '{name}' is not JSON: {error}") from None
    schema_type = frozen.get("type", "object")
    if schema_type != "object":
        raise ValueError(
            f"{which} schema of tool '{name}' has type {shorten(repr(schema_type))}: tool "
            f"{which} is a JSON object, so the schema's top-level type must be 'object'"
        )
    return frozen
