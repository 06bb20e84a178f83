"""Validation follows the strict schemas: arguments valid against a zoo tool's strict schema
(``null`` for optional fields, at the top and inside nested models) the tool takes; ones the
schema refuses, the tool refuses too, naming the field."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]
from jsonschema.protocols import Validator  # type: ignore[import-untyped]

from llmworker import DefinitionFormat, ToolError, ToolServerError
from tests.provider_sdk_support import input_schemas, worker_of

TOOL_SETS: Final = {"count_nodes": "recursive_zoo", "span": "tuple_zoo"}  # others: "zoo"
ORDER: Final[dict[str, Any]] = {
    "customer": {"name": "Ada", "email": "ada@example.org"},
    "items": [{"sku": "ABC-123", "quantity": 2, "color": "red",
               "dimensions": {"width": 1.5, "height": 2, "unit": "in"}}],
    "gift": True,
    "coupon": "SAVE10",
}  # fmt: skip
PET: Final = {"color": "green", "size": "m", "amount": 3, "pet": {"kind": "dog", "good": False},
              "shade": "red"}  # fmt: skip
PLOT: Final = {"points": [{"x": 1, "y": 2}], "tags": [{"label": "b"}, {"label": "a"}]}
SPAN: Final = {"corners": [{"x": 0, "y": 0}, {"x": 4, "y": 3}]}
WINDOW: Final = {"window": {"start": 9, "end": 17}, "repeat": 2}
TREE: Final[dict[str, Any]] = {"root": {"name": "r", "children": [{"name": "a", "children": []}]}}

# tool, arguments valid against its strict schema, its result
VALID: Final[list[tuple[str, dict[str, Any], str]]] = [
    ("ping", {}, "pong"),
    ("place_order", ORDER, '{"customer":"Ada","lines":1,"units":2,"gift":true}'),
    ("place_order", {"customer": {"name": "Bo", "email": None},
                     "items": [{"sku": "XYZ-999", "quantity": 3, "color": None,
                                "dimensions": None}],
                     "gift": None, "coupon": None},
     '{"customer":"Bo","lines":1,"units":3,"gift":false}'),
    ("place_order", {"customer": {"name": "Cy", "email": None},
                     "items": [{"sku": "XYZ-999", "quantity": None, "color": None,
                                "dimensions": {"width": 1, "height": 1, "unit": None}}],
                     "gift": None, "coupon": None},
     '{"customer":"Cy","lines":1,"units":1,"gift":false}'),
    ("classify", PET, "green/m/3/dog/red"),
    ("classify", {**PET, "amount": "lots", "pet": {"kind": "cat", "lives": 3}, "shade": None},
     "green/m/'lots'/cat/-"),
    ("classify", {**PET, "pet": {"kind": "cat", "lives": None}}, "green/m/3/cat/red"),
    ("plot", PLOT, "1.0:2.0 ['a', 'b']"),
    ("plot", {"points": [], "tags": None}, " []"),
    ("plot", {"points": [{"x": 1, "y": None}], "tags": None}, "1.0:0.0 []"),
    ("span", SPAN, "4.0x3.0"),
    ("span", {"corners": [{"x": 1, "y": None}, {"x": 2, "y": None}]}, "1.0x0.0"),
    ("schedule", WINDOW, "9-17 x2"),
    ("schedule", {**WINDOW, "repeat": None}, "9-17 x0"),
    ("schedule", {"window": {"start": 9, "end": None}, "repeat": 1}, "9-? x1"),
    ("count_nodes", TREE, "2"),
    ("count_nodes", {"root": {"name": "r", "children": None}}, "1"),
]  # fmt: skip


def schema_errors(
    name: str, arguments: dict[str, Any], form: DefinitionFormat
) -> list[ValidationError]:
    """Where ``arguments`` break the input schema ``form`` gives the zoo tool ``name``."""
    schema = input_schemas(TOOL_SETS.get(name, "zoo"), form)[name]
    return list(validator_of(schema).iter_errors(arguments))


def validator_of(schema: dict[str, Any]) -> Validator:
    """A JSON Schema 2020-12 validator, typed as the protocol (the class's own stubs are
    partly untyped)."""
    validator: Validator = Draft202012Validator(schema)
    return validator


async def call(name: str, arguments: object) -> str:
    """What the zoo tool ``name`` answers to ``arguments``."""
    worker = worker_of("zoo", "recursive_zoo", "tuple_zoo")
    return await worker.call_tool(name, json.dumps(arguments))


def without_nulls(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` with every ``null`` member of an object, at any depth, left out."""

    def pruned(members: dict[str, Any]) -> dict[str, Any]:
        return {key: item for key, item in members.items() if item is not None}

    result: dict[str, Any] = json.loads(json.dumps(value), object_hook=pruned)
    return result


@pytest.mark.parametrize(("name", "arguments"), [case[:2] for case in VALID])
def test_valid_arguments_satisfy_the_strict_schema(name: str, arguments: dict[str, Any]) -> None:
    errors = schema_errors(name, arguments, DefinitionFormat.OPENAI_CHAT_STRICT)
    assert [error.message for error in errors] == []


@pytest.mark.parametrize(("name", "arguments", "result"), VALID)
async def test_the_tool_takes_arguments_its_strict_schema_takes(
    name: str, arguments: dict[str, Any], result: str
) -> None:
    assert await call(name, arguments) == result


@pytest.mark.parametrize(
    ("name", "arguments", "result"), [case[:3] for case in VALID if case[0] not in TOOL_SETS]
)
async def test_leaving_optional_fields_out_is_anthropic_strict_and_means_null(
    name: str, arguments: dict[str, Any], result: str
) -> None:
    """Anthropic's strict mode keeps optional fields optional (and not nullable)."""
    pruned = without_nulls(arguments)
    errors = schema_errors(name, pruned, DefinitionFormat.ANTHROPIC_STRICT)
    assert [error.message for error in errors] == []
    assert await call(name, pruned) == result


def changed(value: Any, path: tuple[str | int, ...], new: object) -> Any:
    """A deep copy of ``value`` with ``new`` at ``path`` (the member removed when ``new``
    is ``KeyError``)."""
    copy = json.loads(json.dumps(value))
    *parents, last = path
    target = copy
    for step in parents:
        target = target[step]
    if new is KeyError:
        del target[last]
    else:
        target[last] = new
    return copy


# tool, valid arguments, the path changed and its new value (KeyError: removed), where the
# tool's message says the problem is; both the strict schema and the tool refuse it
INVALID: Final[list[tuple[str, Any, tuple[str | int, ...], object, str]]] = [
    ("ping", {}, ("extra",), 1, "extra"),
    ("place_order", ORDER, ("items",), [], "items"),
    ("place_order", ORDER, ("items", 0, "sku"), "abc-123", "items[0].sku"),
    ("place_order", ORDER, ("items", 0, "quantity"), 0, "items[0].quantity"),
    ("place_order", ORDER, ("items", 0, "dimensions", "width"), 0, "items[0].dimensions.width"),
    ("place_order", ORDER, ("items", 0, "color"), "blue", "items[0].color"),
    ("place_order", ORDER, ("customer", "name"), "", "customer.name"),
    ("place_order", ORDER, ("coupon",), "no!", "coupon"),
    ("classify", PET, ("size",), "xl", "size"),
    ("classify", PET, ("amount",), 1.5, "amount.int"),
    ("classify", PET, ("pet", "kind"), "fish", "pet.Cat.kind"),
    ("plot", PLOT, ("points", 0, "x"), KeyError, "points[0].x"),
    ("span", SPAN, ("corners", 1), KeyError, "corners[1]"),
    ("schedule", WINDOW, ("repeat",), 11, "repeat"),
    ("schedule", WINDOW, ("window", "start"), "nine", "window.start"),
    ("count_nodes", TREE, ("root", "children", 0, "name"), KeyError, "root.children[0].name"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "valid", "path", "new", "where"),
    INVALID,
)
async def test_arguments_the_strict_schema_refuses_the_tool_refuses(
    name: str, valid: dict[str, Any], path: tuple[str | int, ...], new: object, where: str
) -> None:
    arguments = changed(valid, path, new)
    errors = schema_errors(name, arguments, DefinitionFormat.OPENAI_CHAT_STRICT)
    assert errors
    for error in errors:  # refused for the change, not something else
        assert path[: len(error.absolute_path)] == tuple(error.absolute_path), error.message
    with pytest.raises(ToolServerError.ToolExecution) as caught:
        await call(name, arguments)
    assert isinstance(caught.value.__cause__, ToolError.InvalidArgument)
    assert caught.value.__cause__.message.startswith(f"{where}: "), caught.value
