"""Strict-mode schemas: a tool's input schema rewritten to the rules of a provider's strict
tool use, or refused naming the tool and the path that cannot follow.

Both providers: the root is an object; every object has ``additionalProperties: false``;
``not``, ``if``/``then``/``else``, ``dependentRequired``, ``dependentSchemas``,
``patternProperties``, free-key maps and ``allOf`` of several parts are refused (an ``allOf``
of one schema is merged into its parent, as pydantic writes it; a discriminated ``oneOf`` is
the ``anyOf`` of its disjoint branches); a ``$ref`` with sibling keywords is inlined.

- ``OPENAI``: every property is required, one that was optional becoming nullable (sending
  ``null`` selects its default) and losing its ``default``; recursion is allowed; at most 5,000
  object properties, 10 levels of nesting (counted through ``$ref``), 1,000 enum values and
  120,000 characters of names, enum and const values.
- ``ANTHROPIC``: optional properties stay optional; recursive schemas and tuples
  (``prefixItems``) are refused; keywords outside what Anthropic's strict tool use takes
  (numeric and length bounds, ``pattern``, ``default``, other string formats, ``minItems``
  above 1…) move into the description as ``{keyword: value}``, as Anthropic's SDK moves them;
  validation still enforces them. ``check_anthropic_request`` checks the per-request limits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, cast

from .._model.errors import StrictSchemaError
from .._model.json_values import JsonObject, JsonValue, canonical_json, thaw

__all__ = [
    "ANTHROPIC",
    "OPENAI",
    "StrictRules",
    "check_anthropic_request",
    "strict_schema",
]

MAX_PROPERTIES: Final = 5_000
MAX_DEPTH: Final = 10
MAX_ENUM_VALUES: Final = 1_000
MAX_STRING_CHARS: Final = 120_000
ANTHROPIC_MAX_TOOLS: Final = 20
ANTHROPIC_MAX_OPTIONAL: Final = 24
ANTHROPIC_MAX_UNIONS: Final = 16
_REFUSED: Final = (
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
)
_ANTHROPIC_KEPT: Final = frozenset(
    {
        "type",
        "enum",
        "const",
        "anyOf",
        "description",
        "title",
        "properties",
        "additionalProperties",
        "required",
        "items",
        "format",
        "minItems",
        "$ref",
        "$defs",
    }
)
_ANTHROPIC_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_Schema = dict[str, JsonValue]


@dataclass(frozen=True)
class StrictRules:
    """What one provider's strict mode takes."""

    provider: str
    all_required: bool
    recursion: bool
    kept: frozenset[str] | None = None  # None: every keyword not refused is kept


OPENAI: Final = StrictRules("OpenAI", all_required=True, recursion=True)
ANTHROPIC: Final = StrictRules(
    "Anthropic", all_required=False, recursion=False, kept=_ANTHROPIC_KEPT
)


@dataclass
class _Walk:
    tool: str
    rules: StrictRules
    definitions: Mapping[str, JsonValue]
    properties: int = 0
    enum_values: int = 0
    characters: int = 0
    depths: dict[str, tuple[int, str]] = field(default_factory=dict[str, tuple[int, str]])

    def refuse(self, path: str, problem: str) -> StrictSchemaError:
        return StrictSchemaError(self.tool, path, problem)


def strict_schema(schema: JsonObject, tool: str, rules: StrictRules = OPENAI) -> _Schema:
    """A strict copy of ``schema`` (the input schema of ``tool``) by ``rules``;
    ``StrictSchemaError`` when strict mode cannot express it."""
    root = cast("_Schema", thaw(schema))
    definitions = cast("dict[str, JsonValue]", root.get("$defs", {}))
    walk = _Walk(tool, rules, definitions)
    if root.get("type", "object") != "object" or "anyOf" in root:
        raise walk.refuse("$", "the root must be an object, not a union")
    if not rules.recursion:
        _refuse_recursion(definitions, walk)
    strict = _node(root, "$", walk)
    for name, definition in definitions.items():
        walk.characters += len(name)
        cast("_Schema", strict["$defs"])[name] = _node(
            cast("_Schema", definition), f"$.$defs.{name}", walk
        )
    depth, path = _deepest(strict, "$", walk, ())
    if depth > MAX_DEPTH:
        raise walk.refuse(path, f"objects nest {depth} levels deep, over the {MAX_DEPTH} allowed")
    if walk.properties > MAX_PROPERTIES:
        raise walk.refuse("$", f"{walk.properties} properties, over the {MAX_PROPERTIES} allowed")
    if walk.enum_values > MAX_ENUM_VALUES:
        raise walk.refuse("$", f"{walk.enum_values} enum values, over {MAX_ENUM_VALUES}")
    if walk.characters > MAX_STRING_CHARS:
        raise walk.refuse(
            "$", f"{walk.characters} characters of names and values, over {MAX_STRING_CHARS}"
        )
    return strict


def check_anthropic_request(schemas: Sequence[tuple[str, _Schema]]) -> None:
    """Refuse strict tools Anthropic would refuse in one request: more than 20 tools, or
    across their schemas more than 24 optional properties or 16 properties with a union."""
    if len(schemas) > ANTHROPIC_MAX_TOOLS:
        raise ValueError(
            f"{len(schemas)} tools, over the {ANTHROPIC_MAX_TOOLS} strict tools Anthropic takes "
            "in one request; use ANTHROPIC (not strict), or serve fewer tools"
        )
    optional = unions = 0
    for _, schema in schemas:
        counts = _property_counts(schema)
        optional, unions = optional + counts[0], unions + counts[1]
    for count, limit, what in (
        (optional, ANTHROPIC_MAX_OPTIONAL, "optional properties"),
        (unions, ANTHROPIC_MAX_UNIONS, "properties with anyOf"),
    ):
        if count > limit:
            names = ", ".join(name for name, _ in schemas)
            raise ValueError(
                f"the strict tools ({_shortened(names)}) have {count} {what}, over the "
                f"{limit} Anthropic takes in one request; use ANTHROPIC (not strict), or make "
                "fewer parameters optional"
            )


def _shortened(names: str) -> str:
    return names if len(names) <= 200 else names[:197] + "..."


def _property_counts(node: JsonValue) -> tuple[int, int]:
    """(optional properties, properties whose schema is a union) anywhere in ``node``."""
    optional = unions = 0
    if isinstance(node, list):
        for item in node:
            counts = _property_counts(item)
            optional, unions = optional + counts[0], unions + counts[1]
    elif isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict):
            required = node.get("required", [])
            for name, subschema in properties.items():
                optional += name not in cast("list[str]", required)
                if isinstance(subschema, dict):
                    unions += "anyOf" in subschema or isinstance(subschema.get("type"), list)
        for value in node.values():
            counts = _property_counts(value)
            optional, unions = optional + counts[0], unions + counts[1]
    return optional, unions


def _node(schema: _Schema, path: str, walk: _Walk, chain: tuple[str, ...] = ()) -> _Schema:
    """``schema`` made strict, recursively; ``chain`` names the definitions being inlined."""
    schema = _merged_all_of(_one_of_as_any_of(schema, path, walk), path, walk)
    for keyword in _REFUSED:
        if keyword in schema:
            raise walk.refuse(f"{path}.{keyword}", f"strict mode does not support '{keyword}'")
    reference = schema.get("$ref")
    if isinstance(reference, str) and len(schema) > 1:
        schema, chain = _inlined(schema, reference, path, walk, chain)
    _count_values(schema, path, walk)
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
            result[key] = _node(value, f"{path}.{key}", walk, chain)
        elif key in ("anyOf", "prefixItems") and isinstance(value, list):
            if key == "prefixItems" and walk.rules.kept is not None:
                raise walk.refuse(
                    f"{path}.prefixItems",
                    f"{walk.rules.provider} strict mode takes no tuples; use a list or a model",
                )
            result[key] = [
                _node(item, f"{path}.{key}[{index}]", walk, chain)
                if isinstance(item, dict)
                else item
                for index, item in enumerate(value)
            ]
        else:
            result[key] = value
    properties = schema.get("properties")
    if schema.get("type") == "object" or isinstance(properties, dict):
        _strict_object(schema, result, path, walk, chain)
    if "$defs" in schema:
        result["$defs"] = {}
    return _described(result, walk) if walk.rules.kept is not None else result


def _count_values(schema: _Schema, path: str, walk: _Walk) -> None:
    values = schema.get("enum")
    if isinstance(values, list):
        walk.enum_values += len(values)
        walk.characters += sum(len(value) for value in values if isinstance(value, str))
        if walk.rules.kept is not None and any(isinstance(v, dict | list) for v in values):
            raise walk.refuse(f"{path}.enum", "strict mode takes only strings, numbers in enums")
    constant = schema.get("const")
    if isinstance(constant, str):
        walk.characters += len(constant)


def _strict_object(
    schema: _Schema, result: _Schema, path: str, walk: _Walk, chain: tuple[str, ...]
) -> None:
    properties = cast("dict[str, JsonValue]", schema.get("properties", {}))
    required = set(cast("list[str]", schema.get("required", [])))
    strict_properties: _Schema = {}
    for name, subschema in properties.items():
        walk.properties += 1
        walk.characters += len(name)
        where = f"{path}.properties.{name}"
        strict = _node(cast("_Schema", subschema), where, walk, chain)
        needs_null = walk.rules.all_required and name not in required
        strict_properties[name] = _nullable(strict) if needs_null else strict
    result["properties"] = strict_properties
    if walk.rules.all_required:
        result["required"] = list(properties)
    result["additionalProperties"] = False


def _described(schema: _Schema, walk: _Walk) -> _Schema:
    """``schema`` with the keywords the provider does not take moved into its description."""
    kept = cast("frozenset[str]", walk.rules.kept)
    moved = {key: value for key, value in schema.items() if key not in kept}
    if schema.get("format") not in (None, *_ANTHROPIC_FORMATS):
        moved["format"] = schema["format"]
    if schema.get("minItems") not in (None, 0, 1):
        moved["minItems"] = schema["minItems"]
    if not moved:
        return schema
    result = {key: value for key, value in schema.items() if key not in moved}
    listed = ", ".join(f"{key}: {canonical_json(value).decode()}" for key, value in moved.items())
    description = result.get("description")
    prefix = f"{description}\n\n" if isinstance(description, str) else ""
    result["description"] = f"{prefix}{{{listed}}}"
    return result


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


def _one_of_as_any_of(schema: _Schema, path: str, walk: _Walk) -> _Schema:
    """A discriminated ``oneOf`` (pydantic's tagged union) as the ``anyOf`` it equals: its
    branches are disjoint. Any other ``oneOf`` is refused."""
    if "oneOf" not in schema:
        return schema
    if "discriminator" not in schema:
        raise walk.refuse(f"{path}.oneOf", "strict mode does not support 'oneOf'; use anyOf")
    rest = {key: value for key, value in schema.items() if key not in ("oneOf", "discriminator")}
    return {**rest, "anyOf": schema["oneOf"]}


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


def _references(node: JsonValue) -> set[str]:
    if isinstance(node, list):
        return set[str]().union(*(_references(item) for item in node))
    if not isinstance(node, dict):
        return set()
    found = set[str]().union(*(_references(value) for value in node.values()))
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        found.add(reference.removeprefix("#/$defs/"))
    return found


def _refuse_recursion(definitions: Mapping[str, JsonValue], walk: _Walk) -> None:
    edges = {name: _references(definition) for name, definition in definitions.items()}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in chain:
            cycle = " -> ".join((*chain[chain.index(name) :], name))
            raise walk.refuse(
                f"$.$defs.{name}",
                f"{walk.rules.provider} strict mode takes no recursive schema ({cycle})",
            )
        for target in sorted(edges.get(name, ())):
            visit(target, (*chain, name))

    for name in sorted(edges):
        visit(name, ())


def _deepest(node: JsonValue, path: str, walk: _Walk, chain: tuple[str, ...]) -> tuple[int, str]:
    """How many objects nest at the deepest point of ``node``, following ``$ref`` (a
    definition already on ``chain``, the recursion, counts once), and that point's path."""
    if isinstance(node, list):
        found = [_deepest(item, f"{path}[{i}]", walk, chain) for i, item in enumerate(node)]
        return max(found, default=(0, path))
    if not isinstance(node, dict):
        return 0, path
    best = (0, path)
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        name = reference.removeprefix("#/$defs/")
        if name not in chain and name in walk.definitions:
            best = _definition_depth(name, walk, chain)
    for key, value in node.items():
        if key != "$defs" and isinstance(value, dict | list):
            best = max(best, _deepest(value, f"{path}.{key}", walk, chain), key=_depth)
    if isinstance(node.get("properties"), dict):
        return best[0] + 1, best[1]
    return best


def _definition_depth(name: str, walk: _Walk, chain: tuple[str, ...]) -> tuple[int, str]:
    """The depth of definition ``name``, computed once (exact unless it is recursive)."""
    cached = walk.depths.get(name)
    if cached is None:
        cached = _deepest(walk.definitions[name], f"$.$defs.{name}", walk, (*chain, name))
        walk.depths[name] = cached
    return cached


def _depth(found: tuple[int, str]) -> int:
    return found[0]
