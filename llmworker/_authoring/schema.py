"""JSON Schemas for tool arguments, in the shapes LLM providers accept.

``SchemaStyle.DEFAULT`` is pydantic's schema without generated titles (nested models under
``$defs`` and referenced with ``$ref``). ``INLINE`` replaces every ``$ref`` with its
definition, for providers that reject references. ``OPENAI_STRICT`` is inline and rewritten by
the strict-mode rules the strict definition formats apply (``_strict``): every object has
``additionalProperties: false`` and lists all its properties as required; a property that had
a default becomes nullable (sending ``null`` selects the default) and loses its ``default``;
what strict mode cannot express is refused when the tool is declared.
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from collections.abc import Mapping
from typing import Annotated, Any, cast

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from typing_extensions import is_typeddict

from .._formats.strict import strict_schema
from .._model.json_values import JsonObject
from .._model.tool import ToolOutput

__all__ = ["SchemaStyle", "arguments_schema", "is_structured", "output_schema"]

_Schema = dict[str, object]


class SchemaStyle(enum.Enum):
    """How nested models appear in a tool's input schema."""

    DEFAULT = "default"
    INLINE = "inline"
    OPENAI_STRICT = "openai-strict"


class _WithoutTitles(GenerateJsonSchema):
    """Pydantic's generator minus the titles it derives from class and field names."""

    def field_title_should_be_set(self, schema: object) -> bool:
        return False

    def generate(self, schema: object, mode: str = "validation") -> JsonSchemaValue:
        result = super().generate(schema, mode)  # type: ignore[arg-type]
        result.pop("title", None)
        for definition in cast("dict[str, _Schema]", result.get("$defs", {})).values():
            definition.pop("title", None)
        return result


def arguments_schema(model: type[BaseModel], style: SchemaStyle, tool_name: str) -> _Schema:
    """The input schema of ``model`` in ``style``; ``ValueError`` names what cannot be done."""
    schema = cast("_Schema", model.model_json_schema(schema_generator=_WithoutTitles))
    return _styled(schema, style, tool_name)


def is_structured(annotation: object) -> bool:
    """Whether a return annotation describes a JSON object: a pydantic model, a dataclass,
    a TypedDict or a ``dict``/``Mapping`` with ``str`` keys (not ``ToolOutput``, which a
    tool returns as it is)."""
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if annotation is ToolOutput:
        return False
    if isinstance(annotation, type):
        kind = cast("type[object]", annotation)
        return (
            issubclass(kind, BaseModel | dict)
            or dataclasses.is_dataclass(kind)
            or is_typeddict(kind)
        )
    origin = typing.get_origin(annotation)
    return origin in (dict, Mapping) and typing.get_args(annotation)[:1] == (str,)


def output_schema(annotation: Any, style: SchemaStyle, tool_name: str) -> _Schema:
    """The schema of a structured return annotation as it serialises, in ``style``."""
    adapter = TypeAdapter[Any](annotation)
    schema = cast(
        "_Schema", adapter.json_schema(mode="serialization", schema_generator=_WithoutTitles)
    )
    return _styled(schema, style, tool_name)


def _styled(schema: _Schema, style: SchemaStyle, tool_name: str) -> _Schema:
    if style is SchemaStyle.DEFAULT:
        return schema
    definitions = cast("dict[str, _Schema]", schema.pop("$defs", {}))
    inlined = cast("_Schema", _inline(schema, definitions, (), tool_name))
    if style is SchemaStyle.OPENAI_STRICT:
        return cast("_Schema", strict_schema(cast("JsonObject", inlined), tool_name))
    return inlined


def _inline(
    value: object, definitions: dict[str, _Schema], seen: tuple[str, ...], tool: str
) -> object:
    if isinstance(value, list):
        return [_inline(item, definitions, seen, tool) for item in cast("list[object]", value)]
    if not isinstance(value, dict):
        return value
    node = cast("_Schema", value)
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        name = reference.removeprefix("#/$defs/")
        if name in seen:
            raise ValueError(
                f"tool '{tool}': model {name!r} refers to itself, so its schema cannot be "
                "inlined; use SchemaStyle.DEFAULT (with $defs) for recursive models"
            )
        siblings = {key: item for key, item in node.items() if key != "$ref"}
        target = cast("_Schema", _inline(definitions[name], definitions, (*seen, name), tool))
        return {**target, **siblings}
    return {key: _inline(item, definitions, seen, tool) for key, item in node.items()}
