"""ToolMeta: immutable, value-equal, deep-frozen schema."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from llmworker import ToolMeta, canonical_json

SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "tags": {"type": "array"}},
    "required": ["query"],
}


def test_builders_return_new_values_and_leave_the_original_alone() -> None:
    bare = ToolMeta("search")
    described = bare.with_description("Search the web")
    typed = described.with_input_schema(SCHEMA)

    assert (bare.name, bare.description) == ("search", "")
    assert bare.input_schema == {"type": "object", "properties": {}}
    assert (described.name, described.description) == ("search", "Search the web")
    assert typed.input_schema == SCHEMA
    assert described.input_schema == {"type": "object", "properties": {}}


def test_equality_and_hash_are_by_value() -> None:
    one = ToolMeta("search", "d", SCHEMA)
    two = ToolMeta("search").with_description("d").with_input_schema(json.loads(json.dumps(SCHEMA)))
    assert one == two
    assert hash(one) == hash(two)
    assert one != one.with_description("other")
    assert one != ToolMeta("other", "d", SCHEMA)
    assert len({one, two}) == 1


def test_schema_is_copied_so_the_caller_cannot_change_it_later() -> None:
    source: dict[str, Any] = copy.deepcopy(SCHEMA)
    meta = ToolMeta("search").with_input_schema(source)
    source["required"].append("tags")
    source["properties"]["query"]["type"] = "integer"
    assert meta.input_schema == SCHEMA


MUTATIONS: list[Callable[[Any], object]] = [
    lambda s: s.__setitem__("type", "array"),
    lambda s: s.pop("type"),
    lambda s: s.update({"x": 1}),
    lambda s: s.clear(),
    lambda s: s.setdefault("x", 1),
    lambda s: s["properties"].__setitem__("x", {}),
    lambda s: s["properties"]["query"].__delitem__("type"),
    lambda s: s["required"].append("tags"),
    lambda s: s["required"].__setitem__(0, "x"),
    lambda s: s["required"].extend(["x"]),
    lambda s: s["required"].sort(),
]


@pytest.mark.parametrize("mutate", MUTATIONS)
def test_schema_refuses_mutation_at_every_depth(mutate: Callable[[Any], object]) -> None:
    meta = ToolMeta("search", "", SCHEMA)
    with pytest.raises(TypeError, match="immutable"):
        mutate(meta.input_schema)
    assert meta.input_schema == SCHEMA


def test_frozen_schema_serialises_copies_and_pickles_like_plain_json() -> None:
    schema = ToolMeta("search", "", SCHEMA).input_schema
    assert json.loads(json.dumps(schema)) == SCHEMA
    assert copy.deepcopy(schema) == SCHEMA
    restored = pickle.loads(pickle.dumps(schema))
    assert restored == SCHEMA
    with pytest.raises(TypeError):
        restored["required"].append("x")
    thawed = dict(schema)
    thawed["type"] = "changed"
    assert schema["type"] == "object"


def test_attributes_cannot_be_reassigned() -> None:
    meta = ToolMeta("search")
    with pytest.raises(AttributeError):
        meta.name = "other"  # type: ignore[misc]  # pyright: ignore[reportAttributeAccessIssue]


@pytest.mark.parametrize("name", ["", "has space", "a" * 65, "dotted.name", "ünïcode"])
def test_invalid_names_are_refused_with_the_rule(name: str) -> None:
    with pytest.raises(ValueError, match="use 1-64 characters of A-Z, a-z, 0-9"):
        ToolMeta(name)


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "string"}, "top-level type must be 'object'"),
        ({"type": "object", "default": float("nan")}, r"\$\.default: nan is not valid JSON"),
        ({"type": "object", "properties": {1: {}}}, r"\$\.properties: key 1 is not a string"),
        ({"type": "object", "x": {1, 2}}, r"\$\.x: set is not a JSON value"),
    ],
)
def test_malformed_schemas_are_refused_with_the_path(schema: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ToolMeta("tool", "", schema)


def test_canonical_json_is_sorted_compact_utf8() -> None:
    meta = ToolMeta("cafe", "Crème brûlée", {"type": "object", "b": 1, "a": [2, 1]})
    assert (
        canonical_json(meta.to_json_object())
        == (
            '{"description":"Crème brûlée","input_schema":{"a":[2,1],"b":1,"type":"object"},'
            '"name":"cafe"}'
        ).encode()
    )
