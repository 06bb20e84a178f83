"""The agent contract in the library: per-call context, structured results, annotations,
approval and decisions on paused batches."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from typing import Annotated

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from llmworker import (
    Approve,
    ApproveWithInput,
    CallMetadata,
    Completed,
    Continue,
    Deny,
    Mutable,
    Pause,
    Paused,
    PreToolCallOutcome,
    Tool,
    ToolAnnotations,
    ToolCall,
    ToolCallContext,
    ToolCallPaused,
    ToolContext,
    ToolFactory,
    ToolMeta,
    ToolOutput,
    ToolServerError,
    Worker,
    WorkerError,
    current_call,
    description,
    tool,
    tool_definitions,
    tool_registry,
)
from tests.server_tools import ServerTestTools

PLAIN_FINGERPRINT = "bfda874fb7f0243f6c1d21abaaad4648e44540960de143c6b35900c3173ce905"


class Forecast(BaseModel):
    city: str
    celsius: float


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Totals(TypedDict):
    count: int


@tool_registry
class AgentTools:
    def __init__(self) -> None:
        self.deleted: list[str] = []

    @tool(name="get-weather", title="Get weather", read_only=True, open_world=True)
    async def weather(self, city: Annotated[str, description("a city")]) -> Forecast:
        """The weather in a city."""
        return Forecast(city=city, celsius=21.5)

    @tool
    async def point(self) -> Point:
        """A point."""
        return Point(1, 2)

    @tool
    async def totals(self) -> Totals:
        """Totals."""
        return {"count": 3}

    @tool
    async def mapping(self) -> dict[str, int]:
        """A mapping."""
        return {"a": 1}

    @tool
    async def listing(self) -> list[int]:
        """Not an object: no output schema."""
        return [1, 2]

    @tool
    async def liar(self) -> Forecast:
        """Promises a model, returns a string."""
        return "not a forecast"  # type: ignore[return-value]

    @tool
    async def context(self, ctx: ToolContext, label: str = "") -> str:
        """Reports its context; ``ctx`` is not in the schema."""
        left = ctx.time_remaining()
        return json.dumps(
            {
                "call_id": ctx.call_id,
                "tool": ctx.tool_name,
                "metadata": dict(ctx.metadata),
                "label": label,
                "left": left,
            }
        )

    @tool
    def sync_context(self, ctx: ToolContext) -> str:
        """A sync tool sees its context too (in its thread)."""
        return f"{ctx.call_id}/{current_call().call_id}"

    @tool(destructive=True, idempotent=True, requires_approval=True)
    async def delete(self, path: str) -> str:
        """Deletes a path (after approval)."""
        self.deleted.append(path)
        return f"deleted {path}"

    @tool
    async def slow(self, seconds: float) -> str:
        """Sleeps."""
        await asyncio.sleep(seconds)
        return "done"


@tool_registry
class OtherTools:
    @tool(name="other_weather")
    async def weather(self, city: str) -> str:
        """Same method name, another tool name."""
        return city


class ContextReader:
    """A hand-written tool reading ``current_call()``."""

    async def execute(self, input_json: str) -> str:
        context = current_call()
        return f"{context.call_id}:{context.tool_name}:{context.metadata.get('user', '')}"


def agent_worker() -> tuple[Worker[Mutable], AgentTools]:
    tools = AgentTools()
    worker = Worker()
    worker.register_tools(tool_definitions(tools))
    return worker, tools


def meta_of(worker: Worker[Mutable], name: str) -> ToolMeta:
    found = worker.tool_server_handle().get_tool(name)
    assert found is not None
    return found[0]


def completed(outcome: Completed | Paused) -> list[tuple[str, str, bool]]:
    assert isinstance(outcome, Completed), outcome
    return [(result.call_id, result.content, result.is_error) for result in outcome.results]


# -- per-call context ------------------------------------------------------------------


async def test_a_decorator_tool_receives_its_call_context_and_the_schema_omits_it() -> None:
    worker, _ = agent_worker()
    assert "ctx" not in json.dumps(meta_of(worker, "context").input_schema)
    deadline = time.monotonic() + 30
    text = await worker.call_tool(
        "context", '{"label": "x"}', call_id="c-1", metadata={"user": "ada"}, deadline=deadline
    )
    seen = json.loads(text)
    assert seen["call_id"] == "c-1"
    assert seen["tool"] == "context"
    assert seen["metadata"] == {"user": "ada"}
    assert seen["label"] == "x"
    assert 0 < seen["left"] <= 30
    unbounded = json.loads(await worker.call_tool("context", "{}"))
    assert unbounded["left"] is None
    timed = json.loads(await worker.call_tool("context", "{}", deadline=deadline, timeout=5))
    assert 0 < timed["left"] <= 5  # the nearer of the caller's deadline and the timeout


async def test_the_context_is_not_an_argument_the_model_can_send() -> None:
    worker, _ = agent_worker()
    with pytest.raises(ToolServerError.ToolExecution, match="ctx"):
        await worker.call_tool("context", '{"ctx": {"call_id": "forged"}}')


async def test_sync_tools_and_hand_written_tools_reach_the_current_call() -> None:
    worker, _ = agent_worker()
    worker.register_tool(ToolFactory(ToolMeta("reader"), ContextReader))
    assert await worker.call_tool("sync_context", "{}", call_id="s") == "s/s"
    outcome = await worker.call_tools(
        [ToolCall("r1", "reader", "{}", {"user": "ada"}), ToolCall("r2", "reader", "{}")]
    )
    assert completed(outcome) == [("r1", "r1:reader:ada", False), ("r2", "r2:reader:", False)]


def test_current_call_outside_a_call_says_where_it_works() -> None:
    with pytest.raises(WorkerError, match="only available while a tool executes"):
        current_call()


async def test_hooks_see_and_may_rewrite_the_metadata() -> None:
    worker, _ = agent_worker()

    def add_tenant(ctx: ToolCallContext) -> PreToolCallOutcome:
        ctx.call.metadata = {**ctx.call.metadata, "tenant": "t-7"}
        return Continue()

    worker.add_pre_tool_call_hook(add_tenant)
    seen = json.loads(await worker.call_tool("context", "{}", metadata={"user": "ada"}))
    assert seen["metadata"] == {"user": "ada", "tenant": "t-7"}


def test_metadata_values_never_appear_in_reprs() -> None:
    call = ToolCall("1", "x", "{}", {"token": "s3cret-value"})
    context = ToolContext("1", "x", CallMetadata({"token": "s3cret-value"}))
    for text in (repr(call), repr(context), repr(CallMetadata.of(call.metadata))):
        assert "s3cret-value" not in text
        assert "token" in text
    with pytest.raises(TypeError):
        CallMetadata({"key": 1})  # type: ignore[dict-item]


async def test_a_call_past_its_timeout_is_cancelled_with_a_timeout_error() -> None:
    worker, _ = agent_worker()
    with pytest.raises(ToolServerError.ToolTimeout, match=r"'slow' did not finish within 0\.05 s"):
        await worker.call_tool("slow", '{"seconds": 30}', timeout=0.05)
    outcome = await worker.call_tools(
        [
            ToolCall("a", "slow", '{"seconds": 30}', timeout=0.05),
            ToolCall("b", "slow", '{"seconds": 0}', deadline=time.monotonic() + 0.01),
        ]
    )
    assert isinstance(outcome, Completed)
    late, quick = outcome.results
    assert late.is_error
    assert isinstance(late.error, ToolServerError.ToolTimeout)
    assert (quick.content, quick.is_error) == ("done", False)


# -- structured results ----------------------------------------------------------------


async def test_structured_returns_get_an_output_schema_and_a_structured_value() -> None:
    worker, _ = agent_worker()
    weather = meta_of(worker, "get-weather")
    assert weather.output_schema is not None
    assert weather.output_schema["type"] == "object"
    assert set(weather.output_schema["properties"]) == {"city", "celsius"}  # type: ignore[arg-type]
    for name in ("point", "totals", "mapping"):
        schema = meta_of(worker, name).output_schema
        assert schema is not None, name
        assert schema["type"] == "object", name
    assert meta_of(worker, "listing").output_schema is None
    assert meta_of(worker, "context").output_schema is None

    output = await worker.call_tool_output("get-weather", '{"city": "Oslo"}')
    assert isinstance(output, ToolOutput)
    assert output.structured == {"city": "Oslo", "celsius": 21.5}
    assert json.loads(output.text) == {"city": "Oslo", "celsius": 21.5}
    assert await worker.call_tool("get-weather", '{"city": "Oslo"}') == output.text
    outcome = await worker.call_tools([ToolCall("p", "point", "{}")])
    assert isinstance(outcome, Completed)
    assert outcome.results[0].structured == {"x": 1, "y": 2}
    assert await worker.call_tool_output("listing", "{}") == "[1,2]"


async def test_a_tool_breaking_its_output_promise_is_an_internal_error() -> None:
    worker, _ = agent_worker()
    with pytest.raises(ToolServerError.ToolExecution, match="promises a JSON object"):
        await worker.call_tool("liar", "{}")


# -- annotations, titles, names --------------------------------------------------------


def test_tool_options_reach_the_meta_and_names_can_differ_from_methods() -> None:
    worker, _ = agent_worker()
    weather = meta_of(worker, "get-weather")
    assert weather.title == "Get weather"
    assert weather.annotations == ToolAnnotations(read_only=True, open_world=True)
    delete = meta_of(worker, "delete")
    assert delete.requires_approval
    assert delete.annotations == ToolAnnotations(destructive=True, idempotent=True)
    plain = meta_of(worker, "point")
    assert (plain.title, plain.annotations, plain.requires_approval) == (
        "",
        ToolAnnotations(),
        False,
    )
    worker.register_tools(tool_definitions(OtherTools()))
    assert "other_weather" in worker.tool_server_handle()
    assert hasattr(AgentTools, "WeatherArgs")  # generated names follow the method


def test_a_bad_tool_name_fails_where_it_is_written() -> None:
    with pytest.raises(ValueError, match="tool name 'no spaces' is invalid"):
        tool(name="no spaces")


def test_metas_without_the_new_fields_serialise_and_fingerprint_as_before() -> None:
    worker = Worker()
    worker.register_tools(tool_definitions(ServerTestTools()))
    assert worker.tool_server_handle().definitions_fingerprint() == PLAIN_FINGERPRINT
    meta = ToolMeta("x", "d")
    assert set(meta.to_json_object()) == {"name", "description", "input_schema"}


def test_the_new_fields_are_part_of_equality_and_the_json() -> None:
    base = ToolMeta("x", "d")
    changed = [
        base.with_title("X"),
        base.with_output_schema({"type": "object"}),
        base.with_annotations(ToolAnnotations(read_only=False)),
        base.with_requires_approval(),
    ]
    assert all(meta != base for meta in changed)
    assert len({hash(meta) for meta in changed}) == 4
    assert changed[2].to_json_object()["annotations"] == {"read_only_hint": False}
    assert changed[0].with_description("e").title == "X"
    assert changed[1].with_output_schema(None).output_schema is None
    with pytest.raises(ValueError, match="output schema of tool 'x' has type 'array'"):
        base.with_output_schema({"type": "array"})


# -- approval and decisions ------------------------------------------------------------


async def test_a_tool_requiring_approval_pauses_the_batch_before_anything_runs() -> None:
    worker, tools = agent_worker()
    calls = [
        ToolCall("1", "point", "{}"),
        ToolCall("2", "nope", "{}"),
        ToolCall("3", "delete", '{"path": "/a"}'),
        ToolCall("4", "delete", '{"path": "/b"}'),
        ToolCall("5", "delete", '{"path": "/c"}'),
    ]
    paused = await worker.call_tools(calls)
    assert isinstance(paused, Paused)
    assert paused.awaiting_approval == ("3", "4", "5")
    assert [call.id for call in paused.pending_calls] == ["1", "3", "4", "5"]
    assert [result.call_id for result in paused.results] == ["2"]
    assert paused.paused_call.id == "3"
    assert "awaiting approval" in paused.reason
    assert "'delete'" in paused.reason
    assert tools.deleted == []

    outcome = await worker.resume(
        paused,
        decisions={"3": Approve(), "4": Deny("keep it"), "5": ApproveWithInput('{"path": "/z"}')},
    )
    results = completed(outcome)
    assert results[0] == ("1", '{"x":1,"y":2}', False)
    assert results[1] == ("2", "Tool 'nope' not found", True)
    assert results[2] == ("3", "deleted /a", False)
    assert results[3] == ("4", "Tool call '4' to 'delete' was denied: keep it", True)
    assert results[4] == ("5", "deleted /z", False)
    assert isinstance(outcome, Completed)
    assert isinstance(outcome.results[3].error, ToolServerError.CallDenied)
    assert sorted(tools.deleted) == ["/a", "/z"]


async def test_an_undecided_approval_pauses_again() -> None:
    worker, tools = agent_worker()
    paused = await worker.call_tools(
        [ToolCall("1", "delete", '{"path": "/a"}'), ToolCall("2", "delete", '{"path": "/b"}')]
    )
    assert isinstance(paused, Paused)
    again = await worker.resume(paused, {"1": Approve()})
    assert isinstance(again, Paused)
    assert again.awaiting_approval == ("2",)
    assert tools.deleted == []
    results = completed(await worker.resume(again, {"2": Approve()}))
    assert [content for _, content, _ in results] == ["deleted /a", "deleted /b"]


async def test_bad_decisions_are_refused_and_the_batch_stays_resumable() -> None:
    worker, _ = agent_worker()
    paused = await worker.call_tools([ToolCall("1", "delete", '{"path": "/a"}')])
    assert isinstance(paused, Paused)
    with pytest.raises(WorkerError, match="names call 'nope', which is not pending"):
        await worker.resume(paused, {"nope": Approve()})
    with pytest.raises(WorkerError, match="use Approve"):
        await worker.resume(paused, {"1": "yes"})  # type: ignore[dict-item]
    assert completed(await worker.resume(paused, {"1": Approve()})) == [("1", "deleted /a", False)]
    with pytest.raises(WorkerError, match="already resumed"):
        await worker.resume(paused, {"1": Approve()})


async def test_a_unary_call_to_a_tool_requiring_approval_raises_paused() -> None:
    worker, tools = agent_worker()
    with pytest.raises(ToolCallPaused, match="requires approval") as raised:
        await worker.call_tool("delete", '{"path": "/a"}', call_id="u")
    assert raised.value.paused.awaiting_approval == ("u",)
    outcome = await worker.resume(raised.value.paused, {"u": Approve()})
    assert completed(outcome) == [("u", "deleted /a", False)]
    assert tools.deleted == ["/a"]


async def test_a_hook_pause_carries_its_reason_and_decisions_apply_to_the_paused_call() -> None:
    worker, _ = agent_worker()
    asked: list[str] = []

    def ask(ctx: ToolCallContext) -> PreToolCallOutcome:
        if ctx.call.name == "context" and ctx.call.id not in asked:
            asked.append(ctx.call.id)
            return Pause("a person checks labels")
        return Continue()

    worker.add_pre_tool_call_hook(ask)
    paused = await worker.call_tools([ToolCall("1", "context", '{"label": "old"}')])
    assert isinstance(paused, Paused)
    assert (paused.reason, paused.awaiting_approval) == ("a person checks labels", ())
    outcome = await worker.resume(paused, {"1": ApproveWithInput('{"label": "new"}')})
    assert isinstance(outcome, Completed)
    assert json.loads(outcome.results[0].content)["label"] == "new"


def test_tools_are_tools() -> None:
    assert isinstance(ContextReader(), Tool)


async def test_decorator_tools_without_the_parameter_run_without_current_call() -> None:
    @tool_registry
    class Plain:
        @tool
        async def peek(self) -> str:
            """Reads current_call() without declaring the parameter."""
            return current_call().call_id

    worker = Worker()
    worker.register_tools(tool_definitions(Plain()))
    with pytest.raises(ToolServerError.ToolExecution, match="only available while a tool"):
        await worker.call_tool("peek", "{}", call_id="p")
