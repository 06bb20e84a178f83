"""Zoo tools: the parameter shapes the decorators take, for the provider-SDK tests.

``Zoo`` holds what every format (strict ones too) can express; ``RecursiveZoo`` a model
that refers to itself, ``TupleZoo`` a tuple (both refused by Anthropic's strict mode) and
``MapZoo`` maps with free keys (refused by every strict mode), each alone so that a format
refusing one of them does not hide the rest.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Annotated, Literal, NotRequired

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from llmworker import tool, tool_registry

__all__ = ["MapZoo", "RecursiveZoo", "TupleZoo", "Zoo"]


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Dimensions(BaseModel):
    width: Annotated[float, Field(gt=0)]
    height: Annotated[float, Field(gt=0)]
    unit: Literal["cm", "in"] = "cm"


class Item(BaseModel):
    sku: Annotated[str, Field(pattern=r"^[A-Z]{3}-[0-9]{3}$")]
    quantity: Annotated[int, Field(ge=1, le=99)] = 1
    color: Color | None = None
    dimensions: Dimensions | None = None


class Customer(BaseModel):
    name: Annotated[str, Field(min_length=1, max_length=40)]
    email: str | None = None


class Receipt(BaseModel):
    """What an order comes to."""

    customer: str
    lines: int
    units: int
    gift: bool


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool = True


class Tag(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: str


@dataclass
class Point:
    x: float
    y: float = 0.0


class Window(TypedDict):
    start: int
    end: NotRequired[int]


@tool_registry
class Zoo:
    """Every shape strict mode can express."""

    @tool
    async def ping(self) -> str:
        """Answer pong."""
        return "pong"

    @tool
    async def place_order(
        self,
        customer: Customer,
        items: Annotated[list[Item], Field(min_length=1, max_length=5)],
        gift: bool = False,
        coupon: Annotated[str, Field(pattern=r"^[A-Z0-9]{4,8}$")] | None = None,
    ) -> Receipt:
        """Place an order for a customer."""
        return Receipt(
            customer=customer.name,
            lines=len(items),
            units=sum(item.quantity for item in items),
            gift=gift,
        )

    @tool
    async def classify(
        self,
        color: Color,
        size: Literal["s", "m", "l"],
        amount: int | str,
        pet: Cat | Dog,
        shade: Color | None = None,
    ) -> str:
        """Classify a thing by colour, size, amount and pet."""
        shown = shade.value if shade else "-"
        return f"{color.value}/{size}/{amount!r}/{pet.kind}/{shown}"

    @tool
    async def plot(self, points: list[Point], tags: set[Tag] | None = None) -> str:
        """Plot points with tags."""
        labels = sorted(tag.label for tag in tags or ())
        return f"{','.join(f'{point.x}:{point.y}' for point in points)} {labels}"

    @tool
    async def schedule(self, window: Window, repeat: Annotated[int, Field(ge=0, le=10)] = 0) -> str:
        """Schedule a job in a time window."""
        return f"{window['start']}-{window.get('end', '?')} x{repeat}"


class Node(BaseModel):
    name: str
    children: list[Node] = []


@tool_registry
class RecursiveZoo:
    """A tree: a model that refers to itself."""

    @tool
    async def count_nodes(self, root: Node) -> int:
        """Count the nodes of a tree."""
        return _size(root)


def _size(node: Node) -> int:
    return 1 + sum(_size(child) for child in node.children)


@tool_registry
class TupleZoo:
    """A tuple of models: an array whose items each have their own schema."""

    @tool
    async def span(self, corners: tuple[Point, Point]) -> str:
        """The box between two corners."""
        low, high = corners
        return f"{high.x - low.x}x{high.y - low.y}"


@tool_registry
class MapZoo:
    """Maps with free keys, which strict mode cannot name."""

    @tool
    async def label(self, labels: dict[str, str], weights: dict[str, float] | None = None) -> str:
        """Label things by key."""
        return ",".join(f"{key}={labels[key]}" for key in sorted(labels)) + f" {weights}"
