"""Validation follows the schema the model saw at every depth: ``null`` selects a nested
field's default, and nested lists stop at their first invalid item; the nested values keep
their own classes and rules."""

from __future__ import annotations

import json
from typing import Any, NotRequired

import pydantic.dataclasses
import pytest
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)
from typing_extensions import TypedDict

from llmworker import (
    Mutable,
    SchemaStyle,
    ToolServerError,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)

SEEN: list[Any] = []


class Address(BaseModel):
    street: str
    country: str | None = None
    zip_codes: list[int] = Field(default_factory=lambda: [0])


class Customer(BaseModel):
    model_config = ConfigDict(str_strip_whitespace=True, frozen=True)

    name: str
    address: Address
    previous: list[Address] = []
    _visits: int = PrivateAttr(default=1)

    @field_validator("name")
    @classmethod
    def capitalised(cls, name: str) -> str:
        return name.capitalize()

    @model_validator(mode="after")
    def seen(self) -> Customer:
        SEEN.append(type(self))
        return self


@pydantic.dataclasses.dataclass
class Dimensions:
    width: int
    depth: int = 1
    notes: list[str] = Field(default_factory=list)


class Tree(BaseModel):
    label: str
    weight: int = 1
    children: list[Tree] = []


class Greeting(BaseModel):
    text: str

    def __init__(self, text: str = "hi", **extra: Any) -> None:
        super().__init__(text=text.upper(), **extra)


@tool_registry
class Shop:
    @tool(schema_style=SchemaStyle.OPENAI_STRICT)
    async def order(
        self, customer: Customer, box: Dimensions, greeting: Greeting | None = None
    ) -> str:
        """Take an order."""
        SEEN.extend([customer, box, greeting])
        return "ok"

    @tool
    async def plant(self, tree: Tree) -> str:
        """Plant a tree."""
        SEEN.append(tree)
        return "ok"


@pytest.fixture
def worker() -> Worker[Mutable]:
    SEEN.clear()
    made: Worker[Mutable] = Worker()
    made.register_tools(tool_definitions(Shop()))
    return made


async def test_null_selects_the_default_of_nested_fields(worker: Worker[Mutable]) -> None:
    order = {
        "customer": {
            "name": "  ada ",
            "address": {"street": "Main", "country": None, "zip_codes": None},
            "previous": [{"street": "Old", "country": None, "zip_codes": [7]}],
        },
        "box": {"width": 2, "depth": None, "notes": None},
        "greeting": None,
    }
    assert await worker.call_tool("order", json.dumps(order)) == "ok"
    customer, box, greeting = SEEN[-3:]
    assert customer == Customer(
        name="Ada",
        address=Address(street="Main", country=None, zip_codes=[0]),
        previous=[Address(street="Old", zip_codes=[7])],
    )
    assert box == Dimensions(width=2, depth=1, notes=[])
    assert greeting is None


async def test_nested_values_keep_their_classes_config_and_validators(
    worker: Worker[Mutable],
) -> None:
    order = {
        "customer": {"name": " bob ", "address": {"street": "Main"}},
        "box": {"width": 2},
        "greeting": {"text": "hello"},
    }
    assert await worker.call_tool("order", json.dumps(order)) == "ok"
    validated_type, customer, box, greeting = SEEN[-4:]
    assert validated_type is Customer  # the after-validator saw the model's own class
    assert type(customer) is Customer
    assert type(customer.address) is Address
    assert type(box) is Dimensions
    assert customer.name == "Bob"  # config (strip) and the field validator both applied
    assert customer.__pydantic_private__ == {"_visits": 1}  # private attributes initialised
    assert customer.model_fields_set == {"name", "address"}
    with pytest.raises(ValueError, match="frozen"):
        customer.name = "Eve"
    assert type(greeting) is Greeting
    assert greeting.text == "HELLO"


async def test_a_nested_list_stops_at_its_first_invalid_item(worker: Worker[Mutable]) -> None:
    for where in ("address", "previous"):
        bad_address = {"street": "Main", "zip_codes": ["x"] * 10_000}
        customer: dict[str, Any] = {"name": "ada", "address": {"street": "Main"}}
        customer[where] = bad_address if where == "address" else [bad_address]
        order = {"customer": customer, "box": {"width": 1, "notes": [1] * 10_000}}
        with pytest.raises(ToolServerError.ToolExecution) as raised:
            await worker.call_tool("order", json.dumps(order))
        message = str(raised.value)
        assert "zip_codes[0]: Input should be a valid integer" in message
        assert "box.notes[0]: Input should be a valid string" in message
        assert "zip_codes[1]" not in message
        assert "more problems" not in message


async def test_recursive_models_follow_the_rules_at_every_level(worker: Worker[Mutable]) -> None:
    tree: dict[str, Any] = {
        "label": "a",
        "children": [{"label": "b", "weight": None, "children": [None]}],
    }
    with pytest.raises(ToolServerError.ToolExecution, match=r"tree\.children\[0\]\.children\[0\]"):
        await worker.call_tool("plant", json.dumps({"tree": tree}))
    tree["children"] = [{"label": "b", "weight": None, "children": [{"label": "c"}]}]
    assert await worker.call_tool("plant", json.dumps({"tree": tree})) == "ok"
    planted = SEEN[-1]
    assert type(planted) is Tree
    assert type(planted.children[0].children[0]) is Tree
    assert planted.children[0].weight == 1


async def test_a_wrong_type_for_a_nested_model_is_refused_naming_it(
    worker: Worker[Mutable],
) -> None:
    with pytest.raises(
        ToolServerError.ToolExecution, match=r"tree: Input should be an object \(got \[1, 2\]\)"
    ):
        await worker.call_tool("plant", '{"tree": [1, 2]}')


class Window(TypedDict):
    start: int
    end: NotRequired[int]
    label: NotRequired[str | None]


@tool_registry
class Calendar:
    @tool
    async def book(self, window: Window, pets: list[Tree | Address] | None = None) -> str:
        """Book a window."""
        SEEN.append(window)
        return "ok"


async def test_null_for_a_key_that_is_not_required_leaves_it_out() -> None:
    worker: Worker[Mutable] = Worker()
    worker.register_tools(tool_definitions(Calendar()))
    window = {"start": 9, "end": None, "label": None}
    assert await worker.call_tool("book", json.dumps({"window": window})) == "ok"
    assert SEEN[-1] == {"start": 9, "label": None}  # a key that takes null keeps it


async def test_union_choices_are_named_by_their_models_in_errors() -> None:
    worker: Worker[Mutable] = Worker()
    worker.register_tools(tool_definitions(Calendar()))
    with pytest.raises(ToolServerError.ToolExecution) as raised:
        await worker.call_tool("book", '{"window": {"start": 1}, "pets": [{"street": 1}]}')
    assert "pets[0].Tree.label: Field required" in str(raised.value)
    assert "pets[0].Address.street: Input should be a valid string" in str(raised.value)
