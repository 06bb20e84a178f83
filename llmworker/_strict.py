"""Strict-mode schemas: a tool's input schema rewritten to the rules of OpenAI's (and
Anthropic's) strict tool use, or refused naming the tool and the path that cannot follow.

The rules: the root is an object; every object has ``additionalProperties: false`` and lists
all its properties in ``required``, a property that was optional becoming nullable (sending
``null`` selects its default) and losing its ``default``; ``allOf``, ``not``,
``if``/``then``/``else``, ``dependentRequired``, ``dependentSchemas`` and
``patternProperties`` are refused (an ``allOf`` of one schema is merged into its parent, as
pydantic writes it); a ``$ref`` with sibling keywords is inlined; and the limits hold: at most
5,000 object properties, 10 levels of nesting, 1,000 enum values and 120,000 characters of
names, enum and const values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, cast

from ._json import JsonObject, JsonValue, thaw

__all__ = ["StrictSchemaError", "strict_schema"]

MAX_PROPERTIES: Final = 5_000
MAX_DEPTH: Final = 10
MAX_ENUM_VALUES: Final = 1_000
MAX_STRING_CHARS: Final = 120_000
_REFUSED: Final = (
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
)
_Schema = dict[str, JsonValue]


class StrictSchemaError(ValueError):
    """A schema strict mode cannot take; names the tool and the JSON path."""

    def __init__(self, tool: str, path: str, problem: str) -> None:
        super().__init__(
            f"tool '{tool}': its input schema cannot be made strict at {path}: {problem}; "
            "change the tool's parameters, or use a format without strict mode"
        )
        self.tool = tool
        self.path = path


@dataclass
class _Walk:
    tool: str
    definitions: Mapping[str, JsonValue]
    properties: int = 0
    enum_values: int = 0
    characters: int = 0

    def refuse(self, path: str, problem: str) -> StrictSchemaError:
        return StrictSchemaError(self.tool, path, problem)


def strict_schema(schema: JsonObject, tool: str) -> _Schema:
    """A strict copy of ``schema`` (the input schema of ``tool``); ``StrictSchemaError``
    when strict mode cannot express it."""
    root = cast("_Schema", thaw(schema))
    definitions = cast("dict[str, JsonValue]", root.get("$defs", {}))
    walk = _Walk(tool, definitions)
    if root.get("type", "object") != "object" or "anyOf" in root:
        raise walk.refuse("$", "the root must be an object, not a union")
    strict = _node(root, "$", 0, walk)
    for name, definition in definitions.items():
        walk.characters += len(name)
        cast("_Schema", strict["$defs"])[name] = _node(
            cast("_Schema", definition), f"$.$defs.{name}", 0, walk
        )
    if walk.properties > MAX_PROPERTIES:
        raise walk.refuse("$", f"{walk.properties} properties, over the {MAX_PROPERTIES} allowed")
    if walk.enum_values > MAX_ENUM_VALUES:
        raise walk.refuse("$", f"{walk.enum_values} enum values, over {MAX_ENUM_VALUES}")
    if walk.characters > MAX_STRING_CHARS:
        raise walk.refuse(
            "$", f"{walk.characters} characters of names and values, over {MAX_STRING_CHARS}"
        )
    return strict


def _node(
    schema: _Schema, path: str, depth: int, walk: _Walk, chain: tuple[str, ...] = ()
) -> _Schema:
    """``schema`` made strict, recursively; ``chain`` names the definitions being inlined."""
    schema = _merged_all_of(schema, path, walk)
    for keyword in _REFUSED:
        if keyword in schema:
            raise walk.refuse(f"{path}.{keyword}", f"strict mode does not support '{keyword}'")
    reference = schema.get("$ref")
    if isinstance(reference, str) and len(schema) > 1:
        schema, chain = _inlined(schema, reference, path, walk, chain)
    for values_key in ("enum",):
        values = schema.get(values_key)
        if isinstance(values, list):
            walk.enum_values += len(values)
            walk.characters += sum(len(value) for value in values if isinstance(value, str))
    constant = schema.get("const")
    if isinstance(constant, str):
        walk.characters += len(constant)
    result: _Schema = {}
    for key, value in schema.items():
        if key in ("properties", "$defs"):
            continue
        if key in ("items", "additionalProperties") and isinstance(value, dict):
            if key == "additionalProperties":
                raise walk.refuse(
                    f"{path}.additionalProperties",
                    "a map with free keys (additionalProperties with a schema) cannot be "
                    "strict: every key must be a named property",
                )
            result[key] = _node(value, f"{path}.{key}", depth, walk, chain)
        elif key in ("anyOf", "prefixItems") and isinstance(value, list):
            result[key] = [
                _node(item, f"{path}.{key}[{index}]", depth, walk, chain)
                if isinstance(item, dict)
                else item
                for index, item in enumerate(value)
            ]
        else:
            result[key] = value
    properties = schema.get("properties")
    if schema.get("type") == "object" or isinstance(properties, dict):
        _strict_object(schema, result, path, depth, walk, chain)
    if "$defs" in schema:
        result["$defs"] = {}
    return result


def _strict_object(
    schema: _Schema,
    result: _Schema,
    path: str,
    depth: int,
    walk: _Walk,
    chain: tuple[str, ...],
) -> None:
    if depth + 1 > MAX_DEPTH:
        raise walk.refuse(path, f"objects nest deeper than the {MAX_DEPTH} levels allowed")
    properties = cast("dict[str, JsonValue]", schema.get("properties", {}))
    required = set(cast("list[str]", schema.get("required", [])))
    strict_properties: _Schema = {}
    for name, subschema in properties.items():
        walk.properties += 1
        walk.characters += len(name)
        where = f"{path}.properties.{name}"
        strict = _node(cast("_Schema", subschema), where, depth + 1, walk, chain)
        strict_properties[name] = strict if name in required else _nullable(strict)
    result["properties"] = strict_properties
    result["required"] = list(properties)
    result["additionalProperties"] = False


def _nullable(schema: _Schema) -> _Schema:
    """An optional property as strict mode says it: nullable, without its default."""
    schema = {key: value for key, value in schema.items() if key != "default"}
    options = schema.get("anyOf")
    if isinstance(options, list):
        if {"type": "null"} not in options:
            options.append({"type": "null"})
        return schema
    description = schema.pop("description", None)
    nullable: _Schema = {"anyOf": [schema, {"type": "null"}]}
    if description is not None:
        nullable["description"] = description
    return nullable


def _merged_all_of(schema: _Schema, path: str, walk: _Walk) -> _Schema:
    parts = schema.get("allOf")
    if parts is None:
        return schema
    if not isinstance(parts, list) or len(parts) != 1 or not isinstance(parts[0], dict):
        raise walk.refuse(f"{path}.allOf", "strict mode does not support 'allOf'")
    merged = {key: value for key, value in schema.items() if key != "allOf"}
    return {**parts[0], **merged}


def _inlined(
    schema: _Schema, reference: str, path: str, walk: _Walk, chain: tuple[str, ...]
) -> tuple[_Schema, tuple[str, ...]]:
    """A ``$ref`` with siblings replaced by its definition (the siblings kept)."""
    name = reference.removeprefix("#/$defs/")
    target = walk.definitions.get(name)
    if not reference.startswith("#/$defs/") or not isinstance(target, dict):
        raise walk.refuse(f"{path}.$ref", f"the reference {reference!r} is not in $defs")
    if name in chain:
        raise walk.refuse(
            f"{path}.$ref", f"'{name}' refers to itself beside other keywords; drop them"
        )
    siblings = {key: value for key, value in schema.items() if key != "$ref"}
    return {**target, **siblings}, (*chain, name)
