"""Numbers JSON does not have, over the wire: refused in every RPC's input as
``TOOL_INVALID_ARGUMENT`` naming where, in results as ``TOOL_INTERNAL`` naming the tool and
where; the server goes on serving."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import grpc
import grpc.aio
import pytest
from google.rpc import error_details_pb2  # pyright: ignore[reportMissingTypeStubs]

from llmworker import (
    Continue,
    DefinitionFormat,
    Mutable,
    PostToolCallContext,
    PostToolCallOutcome,
    ToolMeta,
    ToolOutput,
    ToolResult,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llmworker._wire.messages import format_number
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from tests.grpc_support import failure_of, serve
from tests.support import definition_of

Stub = tool_service_pb2_grpc.ToolServiceStub
NOT_JSON = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "9" * 400 + ".0"]
ADVICE = "send a finite number there, or null or a string"


@tool_registry
class FloatTools:
    @tool
    async def scale(self, x: float) -> float:
        """Twice ``x``."""
        return 2 * x

    @tool(requires_approval=True)
    async def guarded(self, x: float) -> float:
        """``x``, once approved."""
        return x

    @tool
    async def echo(self, text: str) -> str:
        """``text``."""
        return text


class RawTool:
    """A hand-written tool: reads its raw input with ``json.loads``."""

    async def execute(self, input_json: str) -> str:
        return json.dumps(json.loads(input_json))


class StructuredTool:
    """A hand-written tool whose structured result holds ``float(v)`` for its input's ``v``."""

    async def execute(self, input_json: str) -> ToolOutput:
        return ToolOutput("rows", {"rows": [{"v": float(json.loads(input_json)["v"])}]})


def marked_hook(context: PostToolCallContext) -> PostToolCallOutcome:
    """Makes the result of ``marked`` a structured one holding NaN: a hook's mistake."""
    if context.call.name == "marked":
        result = context.result
        context.result = ToolResult(result.call_id, "x", structured={"deep": [float("nan")]})
    return Continue()


@asynccontextmanager
async def float_server() -> AsyncGenerator[Stub, None]:
    worker: Worker[Mutable] = Worker()
    worker.register_tools(tool_definitions(FloatTools()))
    worker.register_tools(
        [
            definition_of("raw", RawTool()),
            definition_of("structured", StructuredTool()),
            lambda: (ToolMeta("marked"), RawTool()),
        ]
    )
    worker.add_post_tool_call_hook(marked_hook)
    async with serve(worker=worker) as served, grpc.aio.insecure_channel(served.target) as channel:
        yield Stub(channel)


async def assert_still_serving(stub: Stub) -> None:
    reply = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "ok"}'))
    assert reply.output == "ok"


def info_of(status: object) -> error_details_pb2.ErrorInfo:
    info = error_details_pb2.ErrorInfo()
    assert isinstance(status, pb.CallResult)
    assert status.error.details[0].Unpack(info)
    return info


@pytest.mark.parametrize("literal", NOT_JSON)
@pytest.mark.parametrize(
    ("name", "template", "path"),
    [("scale", '{"x": @}', "$.x"), ("raw", '{"rows": [{"v": 1}, {"v": @}]}', "$.rows[1].v")],
)
async def test_call_tool_refuses_it_as_an_invalid_argument_naming_its_path(
    literal: str, name: str, template: str, path: str
) -> None:
    async with float_server() as stub:
        request = pb.CallToolRequest(name=name, input_json=template.replace("@", literal))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CallTool(request)
        failure = failure_of(caught.value)
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "TOOL_INVALID_ARGUMENT",
        )
        assert failure.message.startswith(f"Tool execution failed: Invalid argument: {path}: ")
        assert ADVICE in failure.message
        assert failure.metadata["tool"] == name
        await assert_still_serving(stub)


async def test_call_tool_stream_refuses_it() -> None:
    async with float_server() as stub:
        request = pb.CallToolRequest(name="raw", input_json='{"a": [Infinity]}')
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            _ = [event async for event in stub.CallToolStream(request)]
        failure = failure_of(caught.value)
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "TOOL_INVALID_ARGUMENT",
        )
        assert "$.a[0]: Infinity is not JSON (JSON numbers are finite); " + ADVICE in (
            failure.message
        )
        await assert_still_serving(stub)


async def test_call_tools_refuses_only_that_call() -> None:
    async with float_server() as stub:
        batch = pb.CallToolsRequest(
            calls=[
                pb.CallToolRequest(call_id="1", name="scale", input_json='{"x": 1e400}'),
                pb.CallToolRequest(call_id="2", name="scale", input_json='{"x": 1.5}'),
            ]
        )
        reply = await stub.CallTools(batch, timeout=10)
        refused, ran = reply.completed.results
        assert refused.is_error
        assert info_of(refused).reason == "TOOL_INVALID_ARGUMENT"
        assert refused.error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        assert "$.x: 1e400 is out of the range of a 64-bit float" in refused.output
        assert (ran.is_error, ran.output) == (False, "3.0")
        await assert_still_serving(stub)


async def test_run_provider_tool_calls_answers_the_model_with_the_refusal() -> None:
    async with float_server() as stub:
        calls = [("c1", '{"x": NaN}'), ("c2", '{"x": 1}')]
        chat = {
            "role": "assistant",
            "tool_calls": [
                {"id": id_, "type": "function", "function": {"name": "raw", "arguments": text}}
                for id_, text in calls
            ],
        }
        reply = await stub.RunProviderToolCalls(
            pb.RunProviderToolCallsRequest(
                format=format_number(DefinitionFormat.OPENAI_CHAT),
                model_output_json=json.dumps(chat),
            ),
            timeout=10,
        )
        refused, ran = json.loads(reply.results_message_json)
        assert refused["tool_call_id"] == "c1"
        assert refused["content"].startswith("Invalid argument: $.x: NaN is not JSON")
        assert ran["content"] == '{"x": 1}'
        await assert_still_serving(stub)


async def test_model_output_that_is_not_json_names_where() -> None:
    async with float_server() as stub:
        content = '[{"type": "tool_use", "id": "t1", "name": "raw", "input": {"x": [-Infinity]}}]'
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.RunProviderToolCalls(
                pb.RunProviderToolCallsRequest(
                    format=format_number(DefinitionFormat.ANTHROPIC), model_output_json=content
                ),
                timeout=10,
            )
        failure = failure_of(caught.value)
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_REQUEST",
        )
        assert "$.x[0]: -inf is not valid JSON; use a finite number" in failure.message
        await assert_still_serving(stub)


async def test_resume_batch_refuses_an_edited_input_holding_it() -> None:
    async with float_server() as stub:
        paused = await stub.CallTools(
            pb.CallToolsRequest(
                calls=[pb.CallToolRequest(call_id="1", name="guarded", input_json='{"x": 1}')]
            ),
            timeout=10,
        )
        edit = pb.EditedApproval(input_json='{"x": -Infinity}')
        decision = pb.CallDecision(call_id="1", approve_with_input=edit)
        done = await stub.ResumeBatch(
            pb.ResumeBatchRequest(resume_token=paused.paused.resume_token, decisions=[decision]),
            timeout=10,
        )
        result = done.completed.results[0]
        assert info_of(result).reason == "TOOL_INVALID_ARGUMENT"
        assert "$.x: -Infinity is not JSON (JSON numbers are finite)" in result.output
        await assert_still_serving(stub)


@pytest.mark.parametrize(("value", "shown"), [("inf", "inf"), ("nan", "nan")])
async def test_a_hand_written_non_finite_result_is_tool_internal_naming_tool_and_path(
    value: str, shown: str
) -> None:
    async with float_server() as stub:
        request = pb.CallToolRequest(name="structured", input_json=f'{{"v": "{value}"}}')
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CallTool(request)
        failure = failure_of(caught.value)
        assert (failure.code, failure.reason) == (grpc.StatusCode.INTERNAL, "TOOL_INTERNAL")
        assert (
            f"the structured result of 'structured' has {shown} at $.rows[0].v, which JSON "
            "cannot represent; return null, a string or a finite number there"
        ) in failure.message
        gemini = {"parts": [{"functionCall": {"name": "structured", "args": {"v": value}}}]}
        reply = await stub.RunProviderToolCalls(
            pb.RunProviderToolCallsRequest(
                format=format_number(DefinitionFormat.GEMINI), model_output_json=json.dumps(gemini)
            ),
            timeout=10,
        )
        answer = json.loads(reply.results_message_json)["parts"][0]["functionResponse"]
        assert "the structured result of 'structured' has" in answer["response"]["error"]
        await assert_still_serving(stub)


async def test_a_hooks_non_finite_result_is_tool_internal_naming_tool_and_path() -> None:
    async with float_server() as stub:
        reply = await stub.CallTools(
            pb.CallToolsRequest(
                calls=[pb.CallToolRequest(call_id="1", name="marked", input_json="{}")]
            ),
            timeout=10,
        )
        result = reply.completed.results[0]
        assert info_of(result).reason == "TOOL_INTERNAL"
        assert "the structured result of 'marked' is not JSON ($.deep[0]: nan is not valid" in (
            result.output
        )
        await assert_still_serving(stub)
