"""Definitions against the providers' published SDK types and JSON Schema: golden files per
(tool set, format), the SDKs' tool params, and each provider's strict-mode rules (checked
independently, and for Anthropic against its SDK's own schema transform)."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest
from anthropic import transform_schema
from anthropic.types import ToolParam
from google.genai import types as genai
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionToolParam

from llmworker import DefinitionFormat, canonical_json
from tests.provider_sdk_support import (
    ANTHROPIC,
    CHAT,
    RESPONSES,
    TOOL_SETS,
    check_golden,
    check_golden_directory,
    definitions,
    exactly,
    input_schemas,
    worker_of,
)

FORMATS: Final = list(DefinitionFormat)
STRICT: Final = [form for form in FORMATS if form.strict]
REFUSED: Final = {
    *(("map_zoo", form) for form in STRICT),  # free-key maps cannot be strict
    ("recursive_zoo", DefinitionFormat.ANTHROPIC_STRICT),  # nor, for Anthropic, recursion
    ("tuple_zoo", DefinitionFormat.ANTHROPIC_STRICT),  # and tuples
}
CASES: Final = [
    pytest.param(tool_set, form, id=f"{tool_set}-{form.value}")
    for tool_set in TOOL_SETS
    for form in FORMATS
]
ACCEPTED: Final = [case for case in CASES if tuple(case.values) not in REFUSED]


@pytest.mark.parametrize(("tool_set", "form"), CASES)
def test_definitions_match_their_golden_file_and_are_canonical_bytes(
    tool_set: str, form: DefinitionFormat
) -> None:
    handle = worker_of(tool_set).tool_server_handle()
    golden = f"definitions/{tool_set}.{form.value}.json"
    if (tool_set, form) in REFUSED:
        with pytest.raises(ValueError, match=r"^tool '\w+': ") as refused:
            handle.definitions_for(form)
        check_golden(golden, {"refused": str(refused.value)})
        return
    formatted = handle.definitions_for(form)  # any other refusal fails here
    parsed = json.loads(formatted.json)
    assert formatted.json == canonical_json(parsed)
    check_golden(golden, parsed)


def test_every_golden_definitions_file_has_a_case() -> None:
    expected = {f"{tool_set}.{form.value}.json" for tool_set in TOOL_SETS for form in FORMATS}
    check_golden_directory("definitions", expected)


@pytest.mark.parametrize(("tool_set", "form"), ACCEPTED)
def test_each_entry_is_exactly_the_sdks_tool_param(tool_set: str, form: DefinitionFormat) -> None:
    body = definitions(tool_set, form, cache_last=True)
    if form is DefinitionFormat.GEMINI:
        (entry,) = body
        tool = genai.Tool.model_validate(entry)  # extra="forbid": unknown keys fail
        assert tool.model_dump(by_alias=True, exclude_none=True) == entry
        declarations = tool.function_declarations or []
        metas = worker_of(tool_set).tool_server_handle().tool_definitions_sorted()
        assert [declaration.name for declaration in declarations] == [meta.name for meta in metas]
        for declaration in declarations:
            assert declaration.parameters_json_schema is not None
            assert declaration.parameters is None  # the two are mutually exclusive
        return
    for entry in body:
        if form in CHAT:
            exactly(ChatCompletionFunctionToolParam, entry)  # = ChatCompletionToolParam
            assert entry["function"].get("strict", False) is form.strict
        elif form in RESPONSES:
            exactly(FunctionToolParam, entry)
            assert entry["strict"] is form.strict
        else:
            exactly(ToolParam, entry)
            assert entry.get("strict", False) is form.strict
    if form in ANTHROPIC:
        marks = [entry.get("cache_control") for entry in body]
        assert marks == [None] * (len(body) - 1) + [{"type": "ephemeral"}]


REFUSED_KEYWORDS: Final = frozenset(
    {"allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
     "patternProperties", "oneOf", "discriminator"}
)  # fmt: skip
# what anthropic.transform_schema keeps in a schema (the rest goes into the description)
ANTHROPIC_KEYWORDS: Final = frozenset(
    {"type", "enum", "const", "anyOf", "description", "title", "properties",
     "additionalProperties", "required", "items", "format", "minItems", "$ref", "$defs"}
)  # fmt: skip
ANTHROPIC_STRING_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
MAX_NESTING: Final = 10


def strict_problems(root: Any, anthropic: bool) -> list[str]:
    """Where ``root`` breaks a provider's strict-mode rules, read independently of
    llmworker: closed objects; OpenAI: ``required`` lists every property; Anthropic: only
    the keywords its SDK keeps, no recursion; both: no refused keyword, no ``$ref`` beside
    other keywords, at most 10 levels of objects counted through ``$ref``."""
    problems: list[str] = []
    defs: dict[str, Any] = root.get("$defs", {})

    def walk(node: Any, path: str, depth: int, inside: frozenset[str]) -> None:
        problems.extend(f"{path}: {keyword}" for keyword in sorted(REFUSED_KEYWORDS & set(node)))
        if anthropic:
            problems.extend(f"{path}: {key}" for key in sorted(set(node) - ANTHROPIC_KEYWORDS))
            if node.get("format", "date") not in ANTHROPIC_STRING_FORMATS:
                problems.append(f"{path}: format {node['format']}")
            if node.get("minItems", 0) not in (0, 1):
                problems.append(f"{path}: minItems {node['minItems']}")
        if "$ref" in node:
            name = node["$ref"].removeprefix("#/$defs/")
            if len(node) > 1:
                problems.append(f"{path}: $ref beside {sorted(set(node) - {'$ref'})}")
            if name not in inside:
                walk(defs[name], f"{path}->{name}", depth, inside | {name})
            elif anthropic:
                problems.append(f"{path}: recursion into {name}")
            return
        if node.get("type") == "object" or "properties" in node:
            depth += 1
            properties: dict[str, Any] = node.get("properties", {})
            if depth > MAX_NESTING:
                problems.append(f"{path}: object at level {depth}")
            if node.get("additionalProperties") is not False:
                problems.append(f"{path}: not closed (additionalProperties)")
            required = node.get("required", [])
            if anthropic and not set(required) <= set(properties):
                problems.append(f"{path}: required {required} beyond {list(properties)}")
            if not anthropic and sorted(required) != sorted(properties):
                problems.append(f"{path}: required {required} != properties {list(properties)}")
            for name, subschema in properties.items():
                walk(subschema, f"{path}.properties.{name}", depth, inside)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}.items", depth, inside)
        for key in ("anyOf", "prefixItems"):
            for index, subschema in enumerate(node.get(key, [])):
                walk(subschema, f"{path}.{key}[{index}]", depth, inside)

    if root.get("type") != "object" or "anyOf" in root:
        problems.append("$: the root is not an object")
    walk(root, "$", 0, frozenset())
    for name, definition in defs.items():
        walk(definition, f"$.$defs.{name}", 0, frozenset({name}))
    return problems


def test_the_strict_checker_catches_what_strict_mode_refuses() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(MAX_NESTING + 1):
        deep = {"type": "object", "properties": {"x": deep}, "required": ["x"],
                "additionalProperties": False}  # fmt: skip
    assert strict_problems(deep, anthropic=False) == [
        "$" + ".properties.x" * MAX_NESTING + ": object at level 11"
    ]
    loose: dict[str, Any] = {
        "type": "object", "properties": {"a": {"$ref": "#/$defs/A", "description": "d"}},
        "required": [], "$defs": {"A": {"not": {}}},
    }  # fmt: skip
    assert strict_problems(loose, anthropic=False) == [
        "$: not closed (additionalProperties)",
        "$: required [] != properties ['a']",
        "$.properties.a: $ref beside ['description']",
        "$.properties.a->A: not",
        "$.$defs.A: not",
    ]
    tree: dict[str, Any] = {
        "type": "object", "additionalProperties": False, "required": ["n"],
        "properties": {"n": {"type": "integer", "minimum": 1}, "t": {"$ref": "#/$defs/T"}},
        "$defs": {"T": {"type": "array", "items": {"$ref": "#/$defs/T"}, "minItems": 2}},
    }  # fmt: skip
    assert strict_problems(tree, anthropic=True) == [
        "$.properties.n: minimum",
        "$.properties.t->T: minItems 2",
        "$.properties.t->T.items: recursion into T",
        "$.$defs.T: minItems 2",
        "$.$defs.T.items: recursion into T",
    ]


def without_type_beside_literals(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without the ``type`` beside an ``enum`` or ``const``, which Anthropic's
    SDK drops as redundant."""

    def dropped(node: dict[str, Any]) -> dict[str, Any]:
        literal = "enum" in node or "const" in node
        return {key: item for key, item in node.items() if not (literal and key == "type")}

    result: dict[str, Any] = json.loads(json.dumps(schema), object_hook=dropped)
    return result


@pytest.mark.parametrize(("tool_set", "form"), ACCEPTED)
def test_input_schemas_are_json_schema_and_strict_ones_follow_the_rules(
    tool_set: str, form: DefinitionFormat
) -> None:
    schemas = input_schemas(tool_set, form)
    metas = worker_of(tool_set).tool_server_handle().tool_definitions_sorted()
    assert list(schemas) == [meta.name for meta in metas]
    for meta in metas:
        schema = schemas[meta.name]
        Draft202012Validator.check_schema(schema)
        anthropic = form is DefinitionFormat.ANTHROPIC_STRICT
        if anthropic:  # the SDK's own transform finds nothing to change
            assert transform_schema(schema) == without_type_beside_literals(schema)
        if form.strict:
            assert strict_problems(schema, anthropic) == [], meta.name
            openai = input_schemas(tool_set, DefinitionFormat.OPENAI_CHAT_STRICT)[meta.name]
            assert anthropic or schema == openai  # the OpenAI formats share one schema
        else:
            assert schema == meta.input_schema  # the loose formats send it as registered


def test_exactly_catches_keys_the_sdk_does_not_know() -> None:
    entry = definitions("zoo", DefinitionFormat.OPENAI_CHAT_STRICT)[0]
    with pytest.raises(AssertionError, match="dropped or changed"):
        exactly(ChatCompletionFunctionToolParam, {**entry, "cache_control": {"type": "ephemeral"}})
    with pytest.raises(AssertionError, match="dropped or changed"):
        exactly(
            ChatCompletionFunctionToolParam, {**entry, "function": {**entry["function"], "x": 1}}
        )
