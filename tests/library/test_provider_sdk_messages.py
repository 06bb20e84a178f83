"""Each provider's documented tool-call response, parsed by its own SDK first, round-trips:
``tool_calls_from`` reads the calls the SDK reads, a Worker runs them, and
``tool_results_message`` answers in a shape the SDK's request types take (the whole next
request validates), matching a golden file per format."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest
from anthropic.types import Message, ToolResultBlockParam, ToolUseBlock, UserMessageParam
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from google.genai import types as genai
from openai.types.chat import ChatCompletion, ChatCompletionToolMessageParam
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses import Response, ResponseFunctionToolCall
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from openai.types.responses.response_input_param import FunctionCallOutput

from llmworker import (
    Completed,
    DefinitionFormat,
    ToolCall,
    ToolResult,
    tool_calls_from,
    tool_results_message,
)
from tests.provider_sdk_support import (
    ANTHROPIC,
    CHAT,
    RESPONSES,
    check_golden,
    check_golden_directory,
    exactly,
    no_extras,
    worker_of,
)

ORDER: Final = {
    "customer": {"name": "Ada", "email": None},
    "items": [{"sku": "ABC-123", "quantity": 2, "color": None, "dimensions": None}],
    "gift": None,
    "coupon": None,
}
# what the model calls: two tools that answer, one with a structured result, one that
# fails and one that does not exist
CALLS: Final[list[tuple[str, dict[str, Any]]]] = [
    ("echo", {"text": "héllo"}),
    ("calculate", {"expression": "(2 + 3) * 4 / 5"}),
    ("place_order", ORDER),
    ("kv_get", {"key": "missing"}),
    ("no_such_tool", {}),
]
ERRORS: Final = [False, False, False, True, True]
USER: Final = "Echo héllo, work out (2 + 3) * 4 / 5, order one ABC-123 and read 'missing'."

CHAT_COMPLETION: Final[dict[str, Any]] = {
    "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
    "object": "chat.completion",
    "created": 1741570283,
    "model": "gpt-4.1-2025-04-14",
    "choices": [{
        "index": 0,
        "message": {
            "role": "assistant", "content": None, "refusal": None, "annotations": [],
            "tool_calls": [
                {"id": f"call_{index}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(arguments)}}
                for index, (name, arguments) in enumerate(CALLS)
            ],
        },
        "logprobs": None,
        "finish_reason": "tool_calls",
    }],
    "usage": {"prompt_tokens": 320, "completion_tokens": 96, "total_tokens": 416},
    "service_tier": "default",
    "system_fingerprint": "fp_b7faba9ef5",
}  # fmt: skip
RESPONSE_OUTPUT: Final[list[dict[str, Any]]] = [
    {"type": "reasoning", "id": "rs_67ccd2bf", "summary": []},
    *(
        {"type": "function_call", "id": f"fc_{index}", "call_id": f"call_{index}", "name": name,
         "arguments": json.dumps(arguments), "status": "completed"}
        for index, (name, arguments) in enumerate(CALLS)
    ),
]  # fmt: skip
ANTHROPIC_CONTENT: Final[list[dict[str, Any]]] = [
    {"type": "text", "text": "I'll run those tools."},
    *(
        {"type": "tool_use", "id": f"toolu_0{index}", "name": name, "input": arguments}
        for index, (name, arguments) in enumerate(CALLS)
    ),
]  # fmt: skip
GEMINI_RESPONSE: Final[dict[str, Any]] = {
    "candidates": [{
        "content": {"role": "model", "parts": [
            {"functionCall": {"name": name, "args": arguments}} for name, arguments in CALLS
        ]},
        "finishReason": "STOP",
        "index": 0,
    }],
    "usageMetadata": {"promptTokenCount": 310, "candidatesTokenCount": 88, "totalTokenCount": 398},
    "modelVersion": "gemini-2.5-flash",
    "responseId": "mUTMaLiGNf2",
}  # fmt: skip


def responses_payload(form: DefinitionFormat) -> dict[str, Any]:
    """A whole Responses API response, its ``tools`` the definitions as sent."""
    handle = worker_of("demo", "zoo").tool_server_handle()
    return {
        "id": "resp_67ccd2bed1ec8190",
        "object": "response",
        "created_at": 1741476542,
        "model": "gpt-4.1-2025-04-14",
        "status": "completed",
        "output": RESPONSE_OUTPUT,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": json.loads(handle.definitions_for(form).json),
    }


def read_with_the_sdk(form: DefinitionFormat) -> tuple[object, object, list[tuple[str, str]]]:
    """The example as raw JSON and as the SDK's own dump of its parse, and the (name,
    arguments) of each call as the SDK reads them; no part of it is unknown to the SDK."""
    if form in CHAT:
        completion = ChatCompletion.model_validate(CHAT_COMPLETION)
        no_extras(completion)
        chat_message = completion.choices[0].message
        read = [
            (call.function.name, call.function.arguments)
            for call in chat_message.tool_calls or []
            if call.type == "function"
        ]
        raw_message = CHAT_COMPLETION["choices"][0]["message"]
        return raw_message, chat_message.model_dump(mode="json"), read
    if form in RESPONSES:
        payload = responses_payload(form)
        response = Response.model_validate(payload)
        no_extras(response)
        calls = [item for item in response.output if isinstance(item, ResponseFunctionToolCall)]
        read = [(call.name, call.arguments) for call in calls]
        return payload, response.model_dump(mode="json"), read
    if form in ANTHROPIC:
        raw: dict[str, object] = {
            "id": "msg_01Aq9w938a90dw8q", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": ANTHROPIC_CONTENT,
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 420, "output_tokens": 130},
        }  # fmt: skip
        anthropic_message = Message.model_validate(raw)
        no_extras(anthropic_message)
        content = anthropic_message.content
        blocks = [block for block in content if isinstance(block, ToolUseBlock)]
        read = [(block.name, json.dumps(block.input)) for block in blocks]
        return raw, anthropic_message.model_dump(mode="json"), read
    gemini = genai.GenerateContentResponse.model_validate(GEMINI_RESPONSE)  # extra="forbid"
    read = [(call.name or "", json.dumps(call.args)) for call in gemini.function_calls or []]
    return GEMINI_RESPONSE, gemini.model_dump(mode="json", by_alias=True, exclude_none=True), read


def next_request(
    form: DefinitionFormat, calls: list[ToolCall], results: list[ToolResult]
) -> object:
    """The results message, after checking it and the whole next request (the user's turn,
    the model's calls, the results, the tools) against the SDK's request types."""
    message: Any = tool_results_message(form, results, calls)
    tools: Any = json.loads(
        worker_of("demo", "zoo").tool_server_handle().definitions_for(form).json
    )
    user = {"role": "user", "content": USER}
    request: dict[str, object]
    if form in CHAT:
        for item in message:
            exactly(ChatCompletionToolMessageParam, item)
        assistant = {
            "role": "assistant",
            "tool_calls": CHAT_COMPLETION["choices"][0]["message"]["tool_calls"],
        }
        request = {"model": "gpt-4.1", "messages": [user, assistant, *message], "tools": tools}
        exactly(CompletionCreateParamsNonStreaming, request)
    elif form in RESPONSES:
        for item in message:
            exactly(FunctionCallOutput, item)
        request = {"model": "gpt-4.1", "input": [user, *RESPONSE_OUTPUT, *message], "tools": tools}
        exactly(ResponseCreateParamsNonStreaming, request)
    elif form in ANTHROPIC:
        for block in message["content"]:
            exactly(ToolResultBlockParam, block)
        assert [block.get("is_error", False) for block in message["content"]] == ERRORS
        exactly(UserMessageParam, message)
        model_turn = {"role": "assistant", "content": ANTHROPIC_CONTENT}
        request = {"model": "claude-sonnet-4-5", "max_tokens": 1024,
                   "messages": [user, model_turn, message], "tools": tools}  # fmt: skip
        exactly(MessageCreateParamsNonStreaming, request)
    else:
        content = genai.Content.model_validate(message)  # extra="forbid"
        assert content.model_dump(by_alias=True, exclude_none=True) == message
        responses = [part.function_response for part in content.parts or []]
        assert [response.name if response else None for response in responses] == [
            name for name, _ in CALLS
        ]
        assert [
            "error" in (response.response or {}) for response in responses if response
        ] == ERRORS
        user_turn = {"role": "user", "parts": [{"text": USER}]}
        turns = [user_turn, GEMINI_RESPONSE["candidates"][0]["content"], message]
        for turn in turns:
            genai.Content.model_validate(turn)
        genai.GenerateContentConfig.model_validate({"tools": tools})
    return message


@pytest.mark.parametrize("form", list(DefinitionFormat), ids=lambda form: form.value)
async def test_a_providers_tool_calls_round_trip_into_a_request_it_takes(
    form: DefinitionFormat,
) -> None:
    raw, dumped, read = read_with_the_sdk(form)
    calls = tool_calls_from(form, raw)
    assert tool_calls_from(form, dumped) == calls  # the SDK's dump reads the same
    assert tool_calls_from(form, json.dumps(raw)) == calls  # and so does the JSON text
    assert [(call.name, json.loads(call.input_json)) for call in calls] == CALLS
    assert [(name, json.loads(arguments)) for name, arguments in read] == CALLS
    assert len({call.id for call in calls}) == len(CALLS)
    outcome = await worker_of("demo", "zoo").call_tools(calls)
    assert isinstance(outcome, Completed)
    assert [result.is_error for result in outcome.results] == ERRORS
    assert [result.call_id for result in outcome.results] == [call.id for call in calls]
    message = next_request(form, calls, outcome.results)
    check_golden(f"results/{form.value}.json", message)  # type: ignore[arg-type]


def test_every_golden_results_file_has_a_case() -> None:
    expected = {f"{form.value}.json" for form in DefinitionFormat}
    check_golden_directory("results", expected)
