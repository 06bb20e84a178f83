"""Provider tool calls in, results messages out: the documented shapes round-trip through a
Worker."""

from __future__ import annotations

import json

import grpc.aio
import pytest

from llmworker import (
    Completed,
    DefinitionFormat,
    Mutable,
    ToolCall,
    Worker,
    tool_calls_from,
    tool_definitions,
    tool_results_message,
)
from llmworker._wire.messages import format_number
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import failure_of, serve
from tests.server_tools import ServerTestTools


def worker() -> Worker[Mutable]:
    made: Worker[Mutable] = Worker()
    made.register_tools(tool_definitions(ServerTestTools()))
    return made


async def run(calls: list[ToolCall]) -> Completed:
    outcome = await worker().call_tools(calls)
    assert isinstance(outcome, Completed)
    return outcome


async def test_openai_chat_tool_calls_round_trip() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "echo", "arguments": '{"text": "hi"}'}},
            {"id": "call_2", "type": "function",
             "function": {"name": "nope", "arguments": "{}"}},
        ],
    }  # fmt: skip
    calls = tool_calls_from(DefinitionFormat.OPENAI_CHAT, json.dumps(message))
    assert calls == [ToolCall("call_1", "echo", '{"text": "hi"}'), ToolCall("call_2", "nope", "{}")]
    outcome = await run(calls)
    assert tool_results_message(DefinitionFormat.OPENAI_CHAT_STRICT, outcome.results) == [
        {"role": "tool", "tool_call_id": "call_1", "content": "hi"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Tool 'nope' not found"},
    ]


async def test_openai_responses_function_calls_round_trip() -> None:
    response: dict[str, object] = {
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "echo",
             "arguments": '{"text": "x"}'},
        ]
    }  # fmt: skip
    calls = tool_calls_from(DefinitionFormat.OPENAI_RESPONSES, response)
    assert calls == [ToolCall("call_9", "echo", '{"text": "x"}')]
    outcome = await run(calls)
    assert tool_results_message(DefinitionFormat.OPENAI_RESPONSES, outcome.results) == [
        {"type": "function_call_output", "call_id": "call_9", "output": "x"}
    ]


async def test_anthropic_tool_use_blocks_round_trip_with_errors_marked() -> None:
    content: list[dict[str, object]] = [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_01", "name": "echo", "input": {"text": "é"}},
        {"type": "tool_use", "id": "toolu_02", "name": "echo", "input": {}},
    ]
    calls = tool_calls_from(DefinitionFormat.ANTHROPIC, {"role": "assistant", "content": content})
    assert calls[0] == ToolCall("toolu_01", "echo", '{"text":"é"}')
    outcome = await run(calls)
    message = tool_results_message(DefinitionFormat.ANTHROPIC, outcome.results)
    assert message == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "é"},
            {"type": "tool_result", "tool_use_id": "toolu_02", "is_error": True,
             "content": "Invalid argument: text: Field required"},
        ],
    }  # fmt: skip


async def test_gemini_function_calls_get_stable_ids_and_answers_by_name() -> None:
    response = {
        "candidates": [
            {"content": {"role": "model", "parts": [
                {"text": "calling"},
                {"functionCall": {"name": "echo", "args": {"text": "g"}}},
                {"functionCall": {"name": "echo", "args": {"text": "h"}}},
            ]}}
        ]
    }  # fmt: skip
    calls = tool_calls_from(DefinitionFormat.GEMINI, response)
    assert [call.id for call in calls] == ["gemini-1-echo", "gemini-2-echo"]
    assert calls == tool_calls_from(DefinitionFormat.GEMINI, response)  # stable
    outcome = await run(calls)
    assert tool_results_message(DefinitionFormat.GEMINI, outcome.results, calls) == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "echo", "response": {"output": "g"}}},
            {"functionResponse": {"name": "echo", "response": {"output": "h"}}},
        ],
    }
    with pytest.raises(ValueError, match="pass the calls too"):  # type checkers refuse it too
        tool_results_message(DefinitionFormat.GEMINI, outcome.results)  # type: ignore[call-overload]  # pyright: ignore[reportCallIssue, reportArgumentType]


async def test_gemini_ids_the_model_gave_are_answered_and_the_sdks_snake_case_is_read() -> None:
    parts = [
        {"function_call": {"id": "fc-1", "name": "echo", "args": {"text": "g"}}},
        {"functionCall": {"name": "echo", "args": {"text": "h"}}},
    ]
    calls = tool_calls_from(DefinitionFormat.GEMINI, parts)
    assert [(call.id, call.input_json) for call in calls] == [
        ("fc-1", '{"text":"g"}'),
        ("gemini-1-echo", '{"text":"h"}'),
    ]
    outcome = await run(calls)
    assert tool_results_message(DefinitionFormat.GEMINI, outcome.results, calls) == {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": "fc-1", "name": "echo", "response": {"output": "g"}}},
            {"functionResponse": {"name": "echo", "response": {"output": "h"}}},
        ],
    }


MALFORMED: list[tuple[DefinitionFormat, object, str]] = [
        (DefinitionFormat.OPENAI_CHAT, {"tool_calls": [{"id": 1, "function": {"name": "x",
          "arguments": "{}"}}]}, r"\$\.tool_calls\[0\]\.id"),
        (DefinitionFormat.OPENAI_CHAT, {"tool_calls": [{"id": "a", "function": {"name": "x",
          "arguments": {}}}]}, r"\$\.tool_calls\[0\]\.function\.arguments"),
        (DefinitionFormat.ANTHROPIC, [{"type": "tool_use", "id": "a", "name": "x", "input": []}],
         r"\$\[0\]\.input"),
        (DefinitionFormat.GEMINI, {"parts": "nope"}, r"\$\.parts"),
        (DefinitionFormat.OPENAI_RESPONSES, "{not json", r"\$: not JSON"),
]  # fmt: skip


@pytest.mark.parametrize(("form", "output", "path"), MALFORMED)
def test_malformed_model_output_names_the_path(
    form: DefinitionFormat, output: object, path: str
) -> None:
    with pytest.raises(ValueError, match=path):
        tool_calls_from(form, output)


async def test_the_server_runs_a_models_tool_calls_and_answers_in_its_format() -> None:
    demo: Worker[Mutable] = Worker()
    demo.register_tools(tool_definitions(DemoTools()))
    async with (
        serve(worker=demo) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        chat = {"role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "echo", "arguments": '{"text": "hi"}'}},
            {"id": "call_2", "type": "function",
             "function": {"name": "no_such_tool", "arguments": "{}"}},
        ]}  # fmt: skip
        reply = await stub.RunProviderToolCalls(
            pb.RunProviderToolCallsRequest(
                format=format_number(DefinitionFormat.OPENAI_CHAT),
                model_output_json=json.dumps(chat),
            ),
            timeout=10,
        )
        assert reply.results_message_json == (
            '[{"content":"hi","role":"tool","tool_call_id":"call_1"},'
            '{"content":"Tool \'no_such_tool\' not found","role":"tool",'
            '"tool_call_id":"call_2"}]'
        )
        await stub.CallTool(pb.CallToolRequest(name="kv_set", input_json='{"key":"a","value":"1"}'))
        content: list[dict[str, object]] = [
            {"type": "tool_use", "id": "toolu_1", "name": "whoami", "input": {}},
            {"type": "tool_use", "id": "toolu_2", "name": "kv_delete", "input": {"key": "a"}},
        ]
        paused = await stub.RunProviderToolCalls(
            pb.RunProviderToolCallsRequest(
                format=format_number(DefinitionFormat.ANTHROPIC),
                model_output_json=json.dumps({"role": "assistant", "content": content}),
                metadata={"user": "ada"},
            ),
            timeout=10,
        )
        assert paused.WhichOneof("outcome") == "paused"
        assert [call.awaiting_approval for call in paused.paused.pending_calls] == [False, True]
        approve = pb.CallDecision(call_id="toolu_2", approve=pb.Approval())
        done = await stub.ResumeBatch(
            pb.ResumeBatchRequest(resume_token=paused.paused.resume_token, decisions=[approve]),
            timeout=10,
        )
        message = json.loads(done.completed.results_message_json)
        assert message["role"] == "user"
        first, second = message["content"]
        assert json.loads(first["content"])["metadata"] == {"user": "ada"}
        assert (second["tool_use_id"], second["content"]) == ("toolu_2", "deleted")
        plain = await stub.CallTools(
            pb.CallToolsRequest(calls=[pb.CallToolRequest(call_id="x", name="echo",
                                                          input_json='{"text": "y"}')]),
            timeout=10,
        )  # fmt: skip
        assert not plain.completed.results_message_json  # only provider batches have one


@pytest.mark.parametrize(
    "request_",
    [
        pb.RunProviderToolCallsRequest(model_output_json="{}"),
        pb.RunProviderToolCallsRequest(
            format=format_number(DefinitionFormat.ANTHROPIC), model_output_json="[1]"
        ),
        pb.RunProviderToolCallsRequest(
            format=format_number(DefinitionFormat.GEMINI), model_output_json='{"parts": []}'
        ),
    ],
)
async def test_provider_output_the_server_cannot_read_is_an_invalid_request(
    request_: pb.RunProviderToolCallsRequest,
) -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.RunProviderToolCalls(request_, timeout=10)
        assert failure_of(caught.value).reason == "INVALID_REQUEST"
