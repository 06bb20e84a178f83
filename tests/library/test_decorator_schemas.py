"""Schemas generated for each supported parameter type, with a valid and an invalid input,
and the INLINE / OPENAI_STRICT schema styles."""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from llmworker import SchemaStyle, ToolError, ToolMeta, tool, tool_registry


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str
    number: int = 1


@dataclass
class Point:
    x: float
    y: float


class Customer(BaseModel):
    name: str
    address: Address
    tags: list[str] = []


@tool_registry
class Typed:
    @tool
    def text(self, value: str) -> str:
        return repr(value)

    @tool
    def integer(self, value: int) -> str:
        return repr(value)

    @tool
    def number(self, value: float) -> str:
        return repr(value)

    @tool
    def flag(self, value: bool) -> str:
        return repr(value)

    @tool
    def with_default(self, value: int = 3) -> str:
        return repr(value)

    @tool
    def optional(self, value: str | None) -> str:
        return repr(value)

    @tool
    def literal(self, value: Literal["asc", "desc"]) -> str:
        return repr(value)

    @tool
    def enumeration(self, value: Color) -> str:
        return repr(value)

    @tool
    def listing(self, value: list[int]) -> str:
        return repr(value)

    @tool
    def mapping(self, value: dict[str, float]) -> str:
        return repr(value)

    @tool
    def model(self, value: Address) -> str:
        return repr(value)

    @tool
    def data(self, value: Point) -> str:
        return repr(value)

    @tool
    def timestamp(self, value: datetime.datetime) -> str:
        return repr(value)


COLOR = {"type": "string", "enum": ["red", "blue"]}
ADDRESS = {
    "type": "object",
    "properties": {"street": {"type": "string"}, "number": {"type": "integer", "default": 1}},
    "required": ["street"],
}
POINT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
    "required": ["x", "y"],
}

CASES: list[tuple[str, dict[str, Any], dict[str, Any], str, str, str]] = [
    # tool, value schema, $defs, valid input, its result, invalid input -> message
    ("text", {"type": "string"}, {}, '"hi"', "'hi'", "5"),
    ("integer", {"type": "integer"}, {}, "42", "42", '"forty"'),
    ("number", {"type": "number"}, {}, "1.5", "1.5", '"x"'),
    ("flag", {"type": "boolean"}, {}, "true", "True", '"maybe"'),
    ("with_default", {"type": "integer", "default": 3}, {}, "7", "7", "[]"),
    ("optional", {"anyOf": [{"type": "string"}, {"type": "null"}]}, {}, "null", "None", "1"),
    ("literal", {"type": "string", "enum": ["asc", "desc"]}, {}, '"asc"', "'asc'", '"up"'),
    ("enumeration", {"$ref": "#/$defs/Color"}, {"Color": COLOR}, '"red"', "<Color.RED: 'red'>",
     '"green"'),
    ("listing", {"type": "array", "items": {"type": "integer"}}, {}, "[1, 2]", "[1, 2]", '["a"]'),
    ("mapping", {"type": "object", "additionalProperties": {"type": "number"}}, {},
     '{"a": 1}', "{'a': 1.0}", '{"a": "b"}'),
    ("model", {"$ref": "#/$defs/Address"}, {"Address": ADDRESS},
     '{"street": "Main"}', "Address(street='Main', number=1)", '{"number": 2}'),
    ("data", {"$ref": "#/$defs/Point"}, {"Point": POINT}, '{"x": 1, "y": 2}',
     "Point(x=1.0, y=2.0)", '{"x": 1}'),
    ("timestamp", {"type": "string", "format": "date-time"}, {}, '"2026-11-29T12:00:00Z"',
     "datetime.datetime(2026, 11, 29, 12, 0, tzinfo=TzInfo(0))", '"yesterday"'),
]  # fmt: skip

ERRORS = {
    "text": "value: Input should be a valid string (got 5)",
    "integer": "value: Input should be a valid integer, unable to parse string as an integer "
    "(got 'forty')",
    "number": "value: Input should be a valid number, unable to parse string as a number (got 'x')",
    "flag": "value: Input should be a valid boolean, unable to interpret input (got 'maybe')",
    "with_default": "value: Input should be a valid integer (got [])",
    "optional": "value: Input should be a valid string (got 1)",
    "literal": "value: Input should be 'asc' or 'desc' (got 'up')",
    "enumeration": "value: Input should be 'red' or 'blue' (got 'green')",
    "listing": "value[0]: Input should be a valid integer, unable to parse string as an integer "
    "(got 'a')",
    "mapping": "value.a: Input should be a valid number, unable to parse string as a number "
    "(got 'b')",
    "model": "value.street: Field required",
    "data": "value.y: Field required",
    "timestamp": "value: Input should be a valid datetime or date, input is too short "
    "(got 'yesterday')",
}


def meta_of(name: str) -> ToolMeta:
    method = vars(Typed)[name]
    return method.definition_for(Typed()).meta  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("name", "value_schema", "definitions", "valid", "result", "invalid"),
    CASES,
    ids=[case[0] for case in CASES],
)
async def test_schema_validation_and_message_per_type(
    name: str,
    value_schema: dict[str, Any],
    definitions: dict[str, Any],
    valid: str,
    result: str,
    invalid: str,
) -> None:
    meta = meta_of(name)
    expected: dict[str, Any] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"value": value_schema},
    }
    if "default" not in value_schema:
        expected["required"] = ["value"]
    if definitions:
        expected["$defs"] = definitions
    assert meta.input_schema == expected

    _, instance = vars(Typed)[name].definition_for(Typed())()
    assert await instance.execute(f'{{"value": {valid}}}') == result
    with pytest.raises(ToolError.InvalidArgument) as caught:
        await instance.execute(f'{{"value": {invalid}}}')
    assert caught.value.message == ERRORS[name]


def test_every_case_has_an_error_message() -> None:
    assert {case[0] for case in CASES} == set(ERRORS)


@tool_registry(schema_style=SchemaStyle.INLINE)
class Inline:
    @tool
    def save(self, customer: Customer, limit: int = 5) -> str:
        return customer.name

    @tool(schema_style=SchemaStyle.OPENAI_STRICT)
    def save_strict(self, customer: Customer, note: str | None = None, limit: int = 5) -> str:
        return f"{customer.name} {note} {limit} {customer.address.number}"


INLINE_CUSTOMER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "address": ADDRESS,
        "tags": {"type": "array", "items": {"type": "string"}, "default": []},
    },
    "required": ["name", "address"],
}


def test_inline_style_replaces_refs_with_their_definitions() -> None:
    assert Inline().save.definition().meta.input_schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {"customer": INLINE_CUSTOMER, "limit": {"type": "integer", "default": 5}},
        "required": ["customer"],
    }


def test_openai_strict_style_closes_objects_and_requires_every_property() -> None:
    strict_address = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "street": {"type": "string"},
            "number": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["street", "number"],
    }
    assert Inline().save_strict.definition().meta.input_schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "customer": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string"},
                    "address": strict_address,
                    "tags": {
                        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]
                    },
                },
                "required": ["name", "address", "tags"],
            },
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["customer", "note", "limit"],
    }


async def test_openai_strict_null_selects_the_default_of_a_top_level_argument() -> None:
    _, instance = Inline().save_strict.definition()()
    result = await instance.execute(
        '{"customer": {"name": "Ada", "address": {"street": "Main"}}, "note": null, "limit": null}'
    )
    assert result == "Ada None 5 1"


def test_recursive_models_cannot_be_inlined_and_say_what_to_use() -> None:
    class Node(BaseModel):
        children: list[Node] = []

    with pytest.raises(ValueError, match=r"'Node' refers to itself.*use SchemaStyle.DEFAULT"):

        @tool_registry(schema_style=SchemaStyle.INLINE)
        class Tree:
            @tool
            def walk(self, root: Node) -> str:
                return ""
