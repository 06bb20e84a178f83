"""Numbers JSON does not have (NaN, infinities, and what a float reads as one) are refused in
a call's input as ``InvalidArgument`` naming where, for every tool, and in a result as the
tool's ``Internal`` error naming the tool and where."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import BaseModel

from llmworker import (
    ApproveWithInput,
    Completed,
    JsonValue,
    Mutable,
    Paused,
    ToolCall,
    ToolError,
    ToolOutput,
    ToolServerError,
    Worker,
    canonical_json,
    tool,
    tool_definitions,
    tool_registry,
)
from tests.support import definition_of

HUGE_FLOAT = "9" * 400 + ".0"
"""A float without an exponent that is too large for one: it reads as infinity."""
HUGE_INT = "9" * 400
"""An integer too large for a float: valid JSON, refused only where a float is wanted."""
NOT_JSON = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1E+400", HUGE_FLOAT]


class Point(BaseModel):
    x: float
    y: float = 0.0


@tool_registry
class NumberTools:
    def __init__(self) -> None:
        self.ran = 0

    @tool
    def scale(self, x: float, factor: float = 2.0) -> float:
        """A sync method."""
        self.ran += 1
        return x * factor

    @tool
    async def total(self, items: list[float]) -> float:
        """An async method."""
        self.ran += 1
        return sum(items)

    @tool
    async def length(self, point: Point) -> float:
        """A pydantic model argument."""
        self.ran += 1
        return math.hypot(point.x, point.y)

    @tool
    async def keys(self, values: dict[str, object]) -> list[str]:
        """Takes any JSON value under each key."""
        self.ran += 1
        return sorted(values)

    @tool(requires_approval=True)
    async def guarded(self, x: float) -> float:
        """Runs once approved."""
        self.ran += 1
        return x

    @tool
    async def rows(self, value: float) -> dict[str, list[dict[str, float]]]:
        """Returns ``value`` times 1e10, infinity for a large ``value``."""
        return {"rows": [{"v": 1.0}, {"v": value * 1e10}]}


class RawTool:
    """A hand-written tool: it reads its raw input with ``json.loads``."""

    def __init__(self) -> None:
        self.inputs: list[object] = []

    async def execute(self, input_json: str) -> str:
        self.inputs.append(json.loads(input_json))
        return "ran"


class StructuredTool:
    """A hand-written tool returning ``{"rows": [{"v": 1.0}, {"v": float(v)}]}`` for its
    input's ``v`` (``"inf"`` or ``"nan"`` too: strings are JSON)."""

    async def execute(self, input_json: str) -> ToolOutput:
        value = float(json.loads(input_json)["v"])
        return ToolOutput("rows", {"rows": [{"v": 1.0}, {"v": value}]})


def make_worker() -> tuple[Worker[Mutable], NumberTools, RawTool]:
    tools, raw = NumberTools(), RawTool()
    worker: Worker[Mutable] = Worker()
    worker.register_tools(tool_definitions(tools))
    worker.register_tools(
        [definition_of("raw", raw), definition_of("structured", StructuredTool())]
    )
    return worker, tools, raw


async def refusal(worker: Worker[Mutable], name: str, input_json: str) -> ToolError:
    with pytest.raises(ToolServerError.ToolExecution) as raised:
        await worker.call_tool(name, input_json)
    cause = raised.value.__cause__
    assert isinstance(cause, ToolError)
    return cause


@pytest.mark.parametrize("literal", NOT_JSON)
@pytest.mark.parametrize(
    ("name", "template", "path"),
    [
        ("scale", '{"x": @}', "$.x"),
        ("total", '{"items": [1, 2.5, @]}', "$.items[2]"),
        ("length", '{"point": {"x": 1, "y": @}}', "$.point.y"),
        ("keys", '{"values": {"a": [{"b": @}]}}', "$.values.a[0].b"),
        ("raw", '{"deep": [[], {"k": [0, @]}]}', "$.deep[1].k[1]"),
    ],
)
async def test_a_number_json_does_not_have_is_an_invalid_argument_naming_its_path(
    literal: str, name: str, template: str, path: str
) -> None:
    worker, tools, raw = make_worker()
    error = await refusal(worker, name, template.replace("@", literal))
    assert type(error) is ToolError.InvalidArgument
    assert error.message.startswith(f"{path}: ")
    assert "send a finite number there, or null or a string" in error.message
    assert (tools.ran, raw.inputs) == (0, [])  # refused before the tool ran


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ("NaN", "$.x: NaN is not JSON (JSON numbers are finite); send a finite number there, "
         "or null or a string"),
        ("-Infinity", "$.x: -Infinity is not JSON (JSON numbers are finite); send a finite "
         "number there, or null or a string"),
        ("1e400", "$.x: 1e400 is out of the range of a 64-bit float, which would read it as "
         "infinity; send a finite number there, or null or a string"),
        (HUGE_FLOAT, "$.x: 99999999999999999999…(402 characters) is out of the range of a 64-bit "
         "float, which would read it as infinity; send a finite number there, or null or a "
         "string"),
    ],
)  # fmt: skip
async def test_the_message_says_what_is_wrong_and_what_to_send(literal: str, message: str) -> None:
    worker, _, _ = make_worker()
    error = await refusal(worker, "raw", f'{{"x": {literal}}}')
    assert error.message == message


async def test_every_way_of_calling_refuses_it() -> None:
    worker, _, raw = make_worker()
    locked = worker.lock()
    with pytest.raises(ToolServerError.ToolExecution, match=r"Invalid argument: \$\.x: NaN"):
        await locked.tool_server_handle().call_tool("raw", '{"x": NaN}')
    outcome = await locked.call_tools(
        [ToolCall("1", "scale", '{"x": 1e400}'), ToolCall("2", "raw", '{"x": 1}')]
    )
    assert isinstance(outcome, Completed)
    first, second = outcome.results
    assert isinstance(first.error, ToolError.InvalidArgument)
    assert first.content.startswith("Invalid argument: $.x: 1e400 is out of the range")
    assert (second.is_error, second.content) == (False, "ran")
    with pytest.raises(ToolServerError.ToolExecution, match=r"\$\.items\[0\]: Infinity"):
        async for _ in locked.stream_tool("total", '{"items": [Infinity]}'):
            pass
    assert raw.inputs == [{"x": 1}]


async def test_an_input_edited_at_approval_is_refused_too() -> None:
    worker, tools, _ = make_worker()
    paused = await worker.call_tools([ToolCall("1", "guarded", '{"x": 1}')])
    assert isinstance(paused, Paused)
    outcome = await worker.resume(paused, {"1": ApproveWithInput('{"x": -1e400}')})
    assert isinstance(outcome, Completed)
    result = outcome.results[0]
    assert isinstance(result.error, ToolError.InvalidArgument)
    assert result.content.startswith("Invalid argument: $.x: -1e400 is out of the range")
    assert tools.ran == 0


async def test_what_json_has_passes_untouched() -> None:
    worker, tools, raw = make_worker()
    texts = '{"text": "NaN, Infinity, 1e400 and ' + HUGE_FLOAT + ' are only text here"}'
    numbers = f'{{"big": {HUGE_INT}, "small": 1e-400, "e": 1e308, "phone": "+31612345678"}}'
    for input_json in (texts, numbers, '{"k": "' + "1" * 300 + '"}'):
        assert await worker.call_tool("raw", input_json) == "ran"
    assert raw.inputs[1] == {
        "big": int(HUGE_INT),
        "small": 0.0,
        "e": 1e308,
        "phone": "+31612345678",
    }
    assert await worker.call_tool("scale", '{"x": 1e300, "factor": 1e-300}') == "1.0"
    assert tools.ran == 1


LONG_TEXT = "I said 1e400 and NaN; " * 300


@pytest.mark.parametrize(
    ("input_json", "path"),
    [
        (json.dumps({"doc": LONG_TEXT})[:-1] + ', "n": [1e400]}', "$.n[0]"),
        (json.dumps({"doc": '"Infinity", he said. ' * 300})[:-1] + ', "x": -Infinity}', "$.x"),
        (json.dumps({f"k{index}": "v" for index in range(100)})[:-1] + ', "z": NaN}', "$.z"),
        ('{"a\\\\": "\\\\", "b": [' + "1, " * 600 + "NaN]}", "$.b[600]"),
    ],
)
async def test_a_long_input_is_refused_wherever_it_holds_one(input_json: str, path: str) -> None:
    worker, _, raw = make_worker()
    error = await refusal(worker, "raw", input_json)
    assert error.message.startswith(f"{path}: ")
    assert raw.inputs == []


async def test_a_long_input_holding_them_only_in_strings_passes() -> None:
    worker, _, raw = make_worker()
    for document in (LONG_TEXT, '"NaN", he said: 1e400. ' * 300):
        assert await worker.call_tool("raw", json.dumps({"doc": document, "n": 1})) == "ran"
    assert len(raw.inputs) == 2


async def test_a_large_integer_for_a_float_parameter_is_an_invalid_argument() -> None:
    worker, tools, _ = make_worker()
    error = await refusal(worker, "scale", f'{{"x": {HUGE_INT}}}')
    assert type(error) is ToolError.InvalidArgument
    assert error.message.startswith("x: Input should be a finite number (got 99999")
    error = await refusal(worker, "total", f'{{"items": [1, {HUGE_INT}]}}')
    assert error.message.startswith("items[1]: Input should be a finite number")
    # A nested model keeps its own config: the float inside it is refused all the same.
    error = await refusal(worker, "length", f'{{"point": {{"x": {HUGE_INT}}}}}')
    assert error.message.startswith("point.x: Input should be a finite number")
    error = await refusal(worker, "length", '{"point": {"x": 1, "y": "inf"}}')
    assert error.message.startswith("point.y: Input should be a finite number")
    assert tools.ran == 0


async def test_invalid_json_is_left_to_the_tools_reader() -> None:
    worker, _, _ = make_worker()
    error = await refusal(worker, "scale", '{"x": NaN')
    assert error.message.startswith("input is not valid JSON")


async def test_a_decorated_tools_non_finite_result_is_internal_naming_tool_and_path() -> None:
    worker, _, _ = make_worker()
    error = await refusal(worker, "rows", '{"value": 1e300}')
    assert type(error) is ToolError.Internal
    assert error.message.startswith("the result of 'rows' has inf at $.rows[1].v, which JSON")


@pytest.mark.parametrize(("value", "shown"), [("inf", "inf"), ("-inf", "-inf"), ("nan", "nan")])
async def test_a_hand_written_non_finite_structured_result_is_internal_naming_tool_and_path(
    value: str, shown: str
) -> None:
    worker, _, _ = make_worker()
    error = await refusal(worker, "structured", f'{{"v": "{value}"}}')
    assert type(error) is ToolError.Internal
    assert error.message == (
        f"the structured result of 'structured' has {shown} at $.rows[1].v, which JSON cannot "
        "represent; return null, a string or a finite number there"
    )
    outcome = await worker.call_tools([ToolCall("1", "structured", '{"v": 2}')])
    assert isinstance(outcome, Completed)
    assert outcome.results[0].structured == {"rows": [{"v": 1.0}, {"v": 2.0}]}


class CyclicTool:
    """A hand-written tool whose structured result holds itself, and a NaN after it."""

    async def execute(self, input_json: str) -> ToolOutput:
        given = json.loads(input_json)["n"]
        structured: dict[str, JsonValue] = {}
        structured["self"] = structured
        structured["z"] = [float(given)]
        return ToolOutput("cyclic", structured)


async def test_a_structured_result_holding_itself_is_looked_into_once() -> None:
    worker, _, _ = make_worker()
    worker.register_tool(definition_of("cyclic", CyclicTool()))
    error = await refusal(worker, "cyclic", '{"n": "nan"}')
    assert "the structured result of 'cyclic' has nan at $.z[0]" in error.message
    outcome = await worker.call_tools([ToolCall("1", "cyclic", '{"n": 1}')])
    assert isinstance(outcome, Completed)
    assert not outcome.results[0].is_error  # not JSON: the server's encoder refuses it


def test_canonical_json_names_where_a_non_finite_number_is() -> None:
    with pytest.raises(ValueError, match=r"^\$\.a\[1\]\.b: nan is not valid JSON; use a finite"):
        canonical_json({"a": [1, {"b": math.nan}]})
