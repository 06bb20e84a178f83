"""A model's tool calls in, the results message out: pure functions over the providers' JSON.

>>> calls = tool_calls_from(DefinitionFormat.ANTHROPIC, response["content"])
>>> outcome = await worker.call_tools(calls)
>>> messages.append(tool_results_message(DefinitionFormat.ANTHROPIC, outcome.results))

No provider SDK is needed: model output is the JSON (text, or parsed) the API returned.
OpenAI Chat takes the assistant message or its ``tool_calls``; Responses the ``output``
items (or the response); Anthropic the assistant message or its ``content`` blocks; Gemini a
candidate's ``content``, its ``parts``, or the response (its first candidate).

The results message is typed per format (a TypedDict for each provider's shape), so it goes
into a conversation held as ``list[Mapping[str, object]]`` or ``list[object]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Literal, NotRequired, TypeAlias, cast, overload

from typing_extensions import TypedDict

from .._model.calls import ToolCall, ToolResult
from .._model.json_values import JsonValue, canonical_json
from .._model.text import shorten
from .attachment_parts import (
    AnthropicToolResultContent,
    anthropic_content,
    attachment_notes,
    with_attachment_notes,
)
from .definition_formats import DefinitionFormat

__all__ = [
    "AnthropicToolResultBlock",
    "AnthropicToolResultsMessage",
    "GeminiFunctionResponse",
    "GeminiFunctionResponsePart",
    "GeminiFunctionResult",
    "GeminiToolResultsContent",
    "OpenAIChatToolMessage",
    "OpenAIResponsesFunctionCallOutput",
    "ToolResultsMessage",
    "tool_calls_from",
    "tool_results_message",
]

_OPENAI_CHAT = (DefinitionFormat.OPENAI_CHAT, DefinitionFormat.OPENAI_CHAT_STRICT)
_OPENAI_RESPONSES = (DefinitionFormat.OPENAI_RESPONSES, DefinitionFormat.OPENAI_RESPONSES_STRICT)
_ANTHROPIC = (DefinitionFormat.ANTHROPIC, DefinitionFormat.ANTHROPIC_STRICT)
_GEMINI_CALL_KEYS = ("functionCall", "function_call")  # JSON, and the SDK's to_json_dict()
_DERIVED_ID = re.compile(r"gemini-[0-9]+-.+", re.DOTALL)


class OpenAIChatToolMessage(TypedDict):
    """An OpenAI Chat ``tool`` message: the result of one call."""

    role: Literal["tool"]
    tool_call_id: str
    content: str


class OpenAIResponsesFunctionCallOutput(TypedDict):
    """An OpenAI Responses ``function_call_output`` input item: the result of one call."""

    type: Literal["function_call_output"]
    call_id: str
    output: str


class AnthropicToolResultBlock(TypedDict):
    """An Anthropic ``tool_result`` content block: the result of one call."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[AnthropicToolResultContent]  # blocks when the result has attachments
    is_error: NotRequired[bool]


class AnthropicToolResultsMessage(TypedDict):
    """The Anthropic user message answering a turn's ``tool_use`` blocks."""

    role: Literal["user"]
    content: list[AnthropicToolResultBlock]


class GeminiFunctionResult(TypedDict, total=False):
    """A Gemini ``functionResponse.response``: ``output`` (the result) or ``error``, never
    both; ``attachments`` says what a structured result carried beside it (one line each)."""

    output: JsonValue
    error: str
    attachments: list[str]


class GeminiFunctionResponse(TypedDict):
    """A Gemini ``functionResponse``: by tool name, with the model's call id if it gave one."""

    name: str
    response: GeminiFunctionResult
    id: NotRequired[str]


class GeminiFunctionResponsePart(TypedDict):
    """A Gemini part holding one ``functionResponse``."""

    functionResponse: GeminiFunctionResponse


class GeminiToolResultsContent(TypedDict):
    """The Gemini user content answering a turn's ``functionCall`` parts."""

    role: Literal["user"]
    parts: list[GeminiFunctionResponsePart]


ToolResultsMessage: TypeAlias = (
    list[OpenAIChatToolMessage]
    | list[OpenAIResponsesFunctionCallOutput]
    | AnthropicToolResultsMessage
    | GeminiToolResultsContent
)
"""What ``tool_results_message`` gives for a format known only at run time."""


class _Reader:
    """Typed access to untrusted JSON, with errors naming the path."""

    def __init__(self, form: DefinitionFormat) -> None:
        self.form = form

    def fail(self, path: str, problem: str) -> ValueError:
        return ValueError(
            f"{self.form.value} model output, {path}: {problem}; pass the JSON the provider's "
            "API returned"
        )

    def mapping(self, value: object, path: str) -> Mapping[str, object]:
        if not isinstance(value, Mapping):
            raise self.fail(path, f"expected an object, got {type(value).__name__}")
        return cast("Mapping[str, object]", value)

    def array(self, value: object, path: str) -> Sequence[object]:
        if not isinstance(value, list):
            raise self.fail(path, f"expected an array, got {type(value).__name__}")
        return cast("list[object]", value)

    def string(self, value: object, path: str) -> str:
        if not isinstance(value, str):
            raise self.fail(path, f"expected a string, got {type(value).__name__}")
        return value


def tool_calls_from(form: DefinitionFormat, model_output: object) -> list[ToolCall]:
    """The tool calls in ``model_output`` (JSON text or parsed), in the model's order;
    ``ValueError`` names the path of anything malformed."""
    reader = _Reader(form)
    output: object = model_output
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except (ValueError, RecursionError) as error:
            raise reader.fail("$", f"not JSON ({shorten(str(error), 200)})") from None
    if form in _OPENAI_CHAT:
        return _openai_chat(reader, output)
    if form in _OPENAI_RESPONSES:
        return _openai_responses(reader, output)
    if form in _ANTHROPIC:
        return _anthropic(reader, output)
    return _gemini(reader, output)


def _items(reader: _Reader, output: object, key: str) -> tuple[Sequence[object], str]:
    """The list under ``key`` of an object, or ``output`` itself when it is the list."""
    if _is_object(output):
        container = reader.mapping(output, "$")
        return reader.array(container.get(key, []), f"$.{key}"), f"$.{key}"
    return reader.array(output, "$"), "$"


def _is_object(value: object) -> bool:
    """Whether ``value`` is a JSON object (without narrowing it to an unknown Mapping)."""
    return isinstance(value, Mapping)


def _openai_chat(reader: _Reader, output: object) -> list[ToolCall]:
    items, path = _items(reader, output, "tool_calls")
    calls: list[ToolCall] = []
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        call = reader.mapping(item, where)
        function = reader.mapping(call.get("function"), f"{where}.function")
        calls.append(
            ToolCall(
                reader.string(call.get("id"), f"{where}.id"),
                reader.string(function.get("name"), f"{where}.function.name"),
                reader.string(function.get("arguments"), f"{where}.function.arguments"),
            )
        )
    return calls


def _openai_responses(reader: _Reader, output: object) -> list[ToolCall]:
    items, path = _items(reader, output, "output")
    calls: list[ToolCall] = []
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        entry = reader.mapping(item, where)
        if entry.get("type") != "function_call":
            continue  # messages, reasoning and other output items
        calls.append(
            ToolCall(
                reader.string(entry.get("call_id"), f"{where}.call_id"),
                reader.string(entry.get("name"), f"{where}.name"),
                reader.string(entry.get("arguments"), f"{where}.arguments"),
            )
        )
    return calls


def _anthropic(reader: _Reader, output: object) -> list[ToolCall]:
    items, path = _items(reader, output, "content")
    calls: list[ToolCall] = []
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        block = reader.mapping(item, where)
        if block.get("type") != "tool_use":
            continue  # text and thinking blocks
        arguments = reader.mapping(block.get("input"), f"{where}.input")
        calls.append(
            ToolCall(
                reader.string(block.get("id"), f"{where}.id"),
                reader.string(block.get("name"), f"{where}.name"),
                canonical_json(cast("JsonValue", dict(arguments))).decode(),
            )
        )
    return calls


def _gemini(reader: _Reader, output: object) -> list[ToolCall]:
    response: Mapping[str, object] = reader.mapping(output, "$") if _is_object(output) else {}
    if "candidates" in response:
        candidates = reader.array(response["candidates"], "$.candidates")
        if not candidates:
            return []
        output = reader.mapping(candidates[0], "$.candidates[0]").get("content", {})
    items, path = _items(reader, output, "parts")
    calls: list[ToolCall] = []
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        part = reader.mapping(item, where)
        key = next((key for key in _GEMINI_CALL_KEYS if key in part), None)
        if key is None:
            continue
        call = reader.mapping(part[key], f"{where}.{key}")
        name = reader.string(call.get("name"), f"{where}.{key}.name")
        arguments = reader.mapping(call.get("args", {}), f"{where}.{key}.args")
        given = call.get("id")
        call_id = given if isinstance(given, str) and given else _derived_id(index, name)
        calls.append(
            ToolCall(call_id, name, canonical_json(cast("JsonValue", dict(arguments))).decode())
        )
    return calls


def _derived_id(index: int, name: str) -> str:
    """The id of a Gemini call that came without one: stable for the part and the name."""
    return f"gemini-{index}-{name}"


@overload
def tool_results_message(
    form: Literal[DefinitionFormat.OPENAI_CHAT, DefinitionFormat.OPENAI_CHAT_STRICT],
    results: Sequence[ToolResult],
    calls: Sequence[ToolCall] = (),
) -> list[OpenAIChatToolMessage]: ...
@overload
def tool_results_message(
    form: Literal[DefinitionFormat.OPENAI_RESPONSES, DefinitionFormat.OPENAI_RESPONSES_STRICT],
    results: Sequence[ToolResult],
    calls: Sequence[ToolCall] = (),
) -> list[OpenAIResponsesFunctionCallOutput]: ...
@overload
def tool_results_message(
    form: Literal[DefinitionFormat.ANTHROPIC, DefinitionFormat.ANTHROPIC_STRICT],
    results: Sequence[ToolResult],
    calls: Sequence[ToolCall] = (),
) -> AnthropicToolResultsMessage: ...
@overload
def tool_results_message(
    form: Literal[DefinitionFormat.GEMINI], results: Sequence[ToolResult], calls: Sequence[ToolCall]
) -> GeminiToolResultsContent: ...
@overload
def tool_results_message(
    form: DefinitionFormat, results: Sequence[ToolResult], calls: Sequence[ToolCall]
) -> ToolResultsMessage: ...
def tool_results_message(
    form: DefinitionFormat,
    results: Sequence[ToolResult],
    calls: Sequence[ToolCall] = (),
) -> ToolResultsMessage:
    """What to append to the conversation for ``results``: OpenAI Chat ``tool`` messages,
    Responses ``function_call_output`` items, one Anthropic user message of ``tool_result``
    blocks, or one Gemini user content of ``functionResponse`` parts (Gemini answers by
    tool name: pass the ``calls`` the results answer, for Gemini and for a format known only
    at run time)."""
    if form in _OPENAI_CHAT:
        return [
            OpenAIChatToolMessage(
                role="tool",
                tool_call_id=result.call_id,
                content=with_attachment_notes(result, "OpenAI tool messages carry text only"),
            )
            for result in results
        ]
    if form in _OPENAI_RESPONSES:
        return [
            OpenAIResponsesFunctionCallOutput(
                type="function_call_output",
                call_id=result.call_id,
                output=with_attachment_notes(result, "function_call_output carries text here"),
            )
            for result in results
        ]
    if form in _ANTHROPIC:
        blocks: list[AnthropicToolResultBlock] = []
        for result in results:
            block = AnthropicToolResultBlock(
                type="tool_result", tool_use_id=result.call_id, content=anthropic_content(result)
            )
            if result.is_error:
                block["is_error"] = True
            blocks.append(block)
        return AnthropicToolResultsMessage(role="user", content=blocks)
    return GeminiToolResultsContent(role="user", parts=_gemini_parts(results, calls))


_GEMINI_CARRIES = "Gemini function responses carry JSON only"


def _gemini_parts(
    results: Sequence[ToolResult], calls: Sequence[ToolCall]
) -> list[GeminiFunctionResponsePart]:
    names = {call.id: call.name for call in calls}
    parts: list[GeminiFunctionResponsePart] = []
    for result in results:
        name = names.get(result.call_id)
        if name is None:
            raise ValueError(
                f"gemini results: no call with id '{shorten(result.call_id)}' among the calls "
                "passed; Gemini answers a call by its tool name, so pass the calls too"
            )
        # Gemini reads "error" as the failure and "output" as the result: never a bare object
        response: GeminiFunctionResult
        if result.is_error:
            response = {"error": result.content}
        elif result.structured is not None:
            response = {"output": result.structured}
            if result.attachments:
                response["attachments"] = attachment_notes(result, _GEMINI_CARRIES)
        else:
            response = {"output": with_attachment_notes(result, _GEMINI_CARRIES)}
        answer = GeminiFunctionResponse(name=name, response=response)
        if not _DERIVED_ID.fullmatch(result.call_id):
            answer["id"] = result.call_id  # the model's own id, given back to match its call
        parts.append(GeminiFunctionResponsePart(functionResponse=answer))
    return parts
