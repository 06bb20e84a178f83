"""The demo tool set that ``make run`` serves: echo, a calculator, a clock, a key-value store
(whose deletes need a person's approval), an order validator, ``whoami``, which reports
the call's context, and ``countdown``, which streams; all written with the decorators."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import datetime
import math
import zoneinfo
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Final, Literal

from pydantic import BaseModel, Field

from llmworker import ToolContext, ToolError, description, tool, tool_registry

__all__ = ["CallIdentity", "DemoTools", "Order"]

_BINARY: Final[dict[type[ast.operator], Callable[[float, float], float]]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_UNARY: Final[dict[type[ast.unaryop], Callable[[float], float]]] = {
    ast.USub: lambda a: -a,
    ast.UAdd: lambda a: +a,
}
_MAX_EXPRESSION: Final = 200
_MAX_EXPONENT: Final = 100
_MAX_KEYS: Final = 10_000
_MAX_STORE_CHARACTERS: Final = 16 * 1024 * 1024


class Address(BaseModel):
    street: str
    city: str
    postcode: Annotated[str, Field(pattern=r"^[0-9A-Z -]{3,10}$")]


class OrderLine(BaseModel):
    sku: Annotated[str, Field(min_length=1, max_length=32)]
    quantity: Annotated[int, Field(ge=1, le=1000)]
    unit_price: Annotated[float, Field(ge=0)]


class Order(BaseModel):
    customer: str
    lines: Annotated[list[OrderLine], Field(min_length=1, max_length=100)]
    ship_to: Address
    priority: Literal["standard", "express"] = "standard"


class CallIdentity(BaseModel):
    """Who called, as the tool sees it."""

    call_id: str
    tool: str
    metadata: dict[str, str]
    seconds_left: float | None


@tool_registry
class DemoTools:
    """Useful small tools; the key-value store is state shared by every call."""

    def __init__(self) -> None:
        self._store: dict[str, str] = {}
        self._stored = 0  # characters of keys and values held
        self._lock = asyncio.Lock()

    @tool
    async def echo(self, text: Annotated[str, description("text to send back")]) -> str:
        """Return the text unchanged."""
        return text

    @tool
    async def calculate(
        self, expression: Annotated[str, description("arithmetic, e.g. '(2 + 3) * 4 / 5'")]
    ) -> float:
        """Evaluate an arithmetic expression with + - * / // % ** and parentheses."""
        if len(expression) > _MAX_EXPRESSION:
            raise ToolError.InvalidArgument(
                f"expression is {len(expression)} characters; the limit is {_MAX_EXPRESSION}"
            )
        try:
            tree = ast.parse(expression, mode="eval")
        except SyntaxError as error:
            raise ToolError.InvalidArgument(f"expression is not arithmetic: {error.msg}") from None
        result = _evaluate(tree.body)
        if not math.isfinite(result):
            raise ToolError.ExecutionFailed(f"the result {result} is not a finite number")
        return result

    @tool
    async def now(
        self,
        timezone: Annotated[str, description("IANA time zone, e.g. 'Europe/Paris'")] = "UTC",
    ) -> str:
        """The current date and time in ISO 8601."""
        try:
            zone = zoneinfo.ZoneInfo(timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ToolError.InvalidArgument(
                f"unknown time zone {timezone!r}; use an IANA name such as 'Europe/Paris'"
            ) from None
        return datetime.datetime.now(zone).isoformat(timespec="seconds")

    @tool
    async def kv_set(
        self,
        key: Annotated[str, Field(min_length=1, max_length=256)],
        value: Annotated[str, Field(max_length=65536)],
    ) -> str:
        """Store a value under a key (replacing any previous value); the store holds at most
        10,000 keys and 16 Mi characters."""
        async with self._lock:
            self._put(key, value)
        return "ok"

    def _put(self, key: str, value: str) -> None:
        previous = self._store.get(key)
        cost = len(key) + len(value) if previous is None else len(value) - len(previous)
        if previous is None and len(self._store) >= _MAX_KEYS:
            raise ToolError.ExecutionFailed(
                f"the store is full ({_MAX_KEYS} keys); replace an existing key's value"
            )
        if self._stored + cost > _MAX_STORE_CHARACTERS:
            raise ToolError.ExecutionFailed(
                f"the store is full ({_MAX_STORE_CHARACTERS} characters); store less"
            )
        self._store[key] = value
        self._stored += cost

    @tool
    async def kv_get(self, key: str) -> str:
        """The value stored under a key."""
        try:
            return self._store[key]
        except KeyError:
            raise ToolError.ExecutionFailed(f"no value under key {key!r}; set it first") from None

    @tool(title="Delete a key", destructive=True, idempotent=True, requires_approval=True)
    async def kv_delete(self, key: str) -> str:
        """Delete the value under a key: "deleted", or "absent" when there was none. A
        person approves each call first."""
        async with self._lock:
            value = self._store.pop(key, None)
            if value is None:
                return "absent"
            self._stored -= len(key) + len(value)
        return "deleted"

    @tool(title="Who am I", read_only=True, idempotent=True, open_world=False)
    async def whoami(self, context: ToolContext) -> CallIdentity:
        """Report the call as the tool sees it: its id, the tool, the caller's metadata and
        the seconds left before its deadline. (A demo: it shows metadata values to the model,
        so send none that are secret to it.)"""
        left = context.time_remaining()
        return CallIdentity(
            call_id=context.call_id,
            tool=context.tool_name,
            metadata=dict(context.metadata),
            seconds_left=None if left is None else round(left, 3),
        )

    @tool(read_only=True, idempotent=True, open_world=False)
    async def countdown(
        self,
        n: Annotated[int, Field(ge=1, le=10_000)],
        context: ToolContext,
        delay: Annotated[float, Field(ge=0, le=10)] = 0.05,
    ) -> AsyncIterator[str]:
        """Count down from n, one line per step and `delay` seconds apart, reporting progress
        (a demo of streaming: CallToolStream shows each step as it happens). A countdown
        cancelled before its end stores "cancelled" under `countdown.<call id>`."""
        try:
            for step in range(n):
                context.report_progress(step + 1, n, f"{n - step} to go")
                yield f"{n - step}\n"
                await asyncio.sleep(delay)
        except asyncio.CancelledError:
            with contextlib.suppress(ToolError):  # a full store loses the note, not the cancel
                self._put(f"countdown.{context.call_id}", "cancelled")
            raise

    @tool
    async def kv_list(self) -> list[str]:
        """Every key in the store, sorted."""
        return sorted(self._store)

    @tool
    async def validate_order(self, order: Order) -> dict[str, object]:
        """Check an order and return its total."""
        total = sum(line.quantity * line.unit_price for line in order.lines)
        return {"customer": order.customer, "lines": len(order.lines), "total": round(total, 2)}


def _evaluate(node: ast.expr) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ToolError.InvalidArgument(
                f"exponent {right} is too large (limit {_MAX_EXPONENT})"
            )
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ToolError.ExecutionFailed("division by zero") from None
    raise ToolError.InvalidArgument(
        f"'{ast.unparse(node)}' is not allowed; use numbers, + - * / // % ** and parentheses"
    )
