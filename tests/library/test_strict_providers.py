"""Each provider's strict rules: Anthropic keeps optional properties optional and moves the
keywords it does not take into the description; both count nesting through ``$ref`` and take
a tagged union as ``anyOf``."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from llmworker import (
    DefinitionFormat,
    Mutable,
    StrictSchemaError,
    ToolFactory,
    ToolMeta,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llmworker._formats.strict import ANTHROPIC, strict_schema
from tests.support import EchoTool


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool = True


class Kennel(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


@tool_registry
class Shelter:
    @tool
    async def adopt(
        self,
        kennel: Kennel,
        count: Annotated[int, Field(ge=1, le=3)] = 1,
        note: Annotated[str, Field(max_length=20, description="for the keeper")] = "",
    ) -> str:
        """Adopt pets."""
        return f"{type(kennel.pet).__name__}:{count}:{note}"


def worker_of(*factories: ToolFactory) -> Worker[Mutable]:
    worker: Worker[Mutable] = Worker()
    worker.register_tools(factories)
    return worker


def definitions(worker: Worker[Mutable], form: DefinitionFormat) -> Any:
    return json.loads(worker.tool_server_handle().definitions_for(form).json)


async def test_anthropic_strict_keeps_optional_fields_optional_and_describes_bounds() -> None:
    worker = worker_of(*tool_definitions(Shelter()))
    schema = definitions(worker, DefinitionFormat.ANTHROPIC_STRICT)[0]["input_schema"]
    assert schema["required"] == ["kennel"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["count"] == {
        "type": "integer",
        "description": "{default: 1, maximum: 3, minimum: 1}",
    }
    assert schema["properties"]["note"]["description"] == (
        'for the keeper\n\n{default: "", maxLength: 20}'
    )
    cat = schema["$defs"]["Cat"]
    assert cat["additionalProperties"] is False
    assert cat["required"] == ["kind"]
    # the bounds moved into the description are still enforced, naming the field
    assert await worker.call_tool("adopt", '{"kennel": {"pet": {"kind": "dog"}}}') == "Dog:1:"
    with pytest.raises(Exception, match="count: Input should be less than or equal to 3"):
        await worker.call_tool("adopt", '{"kennel": {"pet": {"kind": "dog"}}, "count": 4}')


def test_a_tagged_union_is_the_any_of_of_its_branches_and_other_one_ofs_are_refused() -> None:
    worker = worker_of(*tool_definitions(Shelter()))
    for form, key in (
        (DefinitionFormat.OPENAI_CHAT_STRICT, None),
        (DefinitionFormat.ANTHROPIC_STRICT, "input_schema"),
    ):
        entry = definitions(worker, form)[0]
        schema = entry[key] if key else entry["function"]["parameters"]
        pet = schema["$defs"]["Kennel"]["properties"]["pet"]
        assert "oneOf" not in pet
        assert "discriminator" not in pet
        assert pet["anyOf"] == [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]
    one_of = {"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}]}}}
    with pytest.raises(StrictSchemaError, match="does not support 'oneOf'") as raised:
        strict_schema(ToolMeta("t", "", one_of).input_schema, "t")
    assert raised.value.path == "$.properties.x.oneOf"


def nested_definitions(levels: int) -> dict[str, object]:
    """A schema whose objects nest ``levels`` deep through a chain of ``$defs``."""
    defs: dict[str, object] = {f"L{levels - 1}": {"type": "object", "properties": {}}}
    for level in range(levels - 2, 0, -1):
        defs[f"L{level}"] = {
            "type": "object",
            "properties": {"next": {"$ref": f"#/$defs/L{level + 1}"}},
            "required": ["next"],
        }
    return {
        "type": "object",
        "properties": {"next": {"$ref": "#/$defs/L1"}},
        "required": ["next"],
        "$defs": defs,
    }


def test_nesting_is_counted_through_references() -> None:
    assert strict_schema(ToolMeta("t", "", nested_definitions(10)).input_schema, "t")
    with pytest.raises(StrictSchemaError, match="nest 11 levels deep") as raised:
        strict_schema(ToolMeta("t", "", nested_definitions(11)).input_schema, "t")
    assert raised.value.path == "$.$defs.L10"  # the deepest object, reached through L1..L9


def test_anthropic_strict_refuses_recursion_and_tuples_naming_them() -> None:
    tree = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            }
        },
    }
    meta = ToolMeta("tree", "", tree)
    assert strict_schema(meta.input_schema, "tree")  # OpenAI takes recursion
    with pytest.raises(StrictSchemaError, match=r"no recursive schema \(Node -> Node\)"):
        strict_schema(meta.input_schema, "tree", ANTHROPIC)
    tuple_of_two: dict[str, object] = {"type": "array", "prefixItems": [{}, {}]}
    pair = {"type": "object", "properties": {"p": tuple_of_two}}
    with pytest.raises(StrictSchemaError, match="takes no tuples") as raised:
        strict_schema(ToolMeta("pair", "", pair).input_schema, "pair", ANTHROPIC)
    assert raised.value.path == "$.properties.p.prefixItems"


def test_anthropic_strict_checks_the_per_request_limits() -> None:
    many = worker_of(*(ToolFactory(ToolMeta(f"t{i:02}"), EchoTool) for i in range(21)))
    with pytest.raises(ValueError, match="21 tools, over the 20 strict tools Anthropic takes"):
        many.tool_server_handle().definitions_for(DefinitionFormat.ANTHROPIC_STRICT)
    assert definitions(many, DefinitionFormat.ANTHROPIC)  # the loose format takes them
    loose = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(25)}}
    optional = worker_of(ToolFactory(ToolMeta("wide", "", loose), EchoTool))
    with pytest.raises(ValueError, match="25 optional properties, over the 24"):
        optional.tool_server_handle().definitions_for(DefinitionFormat.ANTHROPIC_STRICT)
