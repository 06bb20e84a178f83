"""A result's attachments in each provider's tool-result message: Anthropic carries images as
image blocks (the SDK's own request types accept them), and every format says in text what
it cannot carry, so nothing a tool returned is dropped silently."""

from __future__ import annotations

import base64

from anthropic.types import ToolResultBlockParam, UserMessageParam
from google.genai import types as genai
from openai.types.chat import ChatCompletionToolMessageParam
from openai.types.responses.response_input_param import FunctionCallOutput

from llmworker import (
    Audio,
    DefinitionFormat,
    EmbeddedResource,
    Image,
    ResourceLink,
    ToolCall,
    ToolResult,
    tool_results_message,
)
from tests.provider_sdk_support import exactly

PNG = b"\x89PNG\r\n\x1a\n0000"
RESULT = ToolResult(
    "c1",
    "the chart",
    attachments=(
        Image(PNG, "image/png"),
        Image(b"BM....", "image/bmp"),
        Audio(b"RIFF", "audio/wav"),
        ResourceLink("file:///r.pdf", "report"),
        EmbeddedResource("test://notes", text="line one"),
    ),
)
CALLS = [ToolCall("c1", "chart", "{}")]


def test_anthropic_carries_images_as_image_blocks_and_notes_the_rest() -> None:
    message = tool_results_message(DefinitionFormat.ANTHROPIC, [RESULT], CALLS)
    exactly(UserMessageParam, message)
    (block,) = message["content"]
    exactly(ToolResultBlockParam, block)
    content = block["content"]
    assert isinstance(content, list)
    assert content[0] == {"type": "text", "text": "the chart"}
    assert content[1] == {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(PNG).decode(),
        },
    }
    notes = [part["text"] for part in content[2:] if part["type"] == "text"]
    assert notes[0].startswith("[attachment not shown (image/bmp, 6 bytes)")
    assert notes[1].startswith("[attachment not shown (audio/wav, 4 bytes)")
    assert notes[2] == "[resource link: file:///r.pdf (report)]"
    assert notes[3] == "[resource test://notes]\nline one"


def test_text_only_formats_read_one_note_per_attachment() -> None:
    (chat,) = tool_results_message(DefinitionFormat.OPENAI_CHAT, [RESULT], CALLS)
    exactly(ChatCompletionToolMessageParam, chat)
    lines = chat["content"].split("\n")
    assert lines[0] == "the chart"
    assert "image/png, 12 bytes" in lines[1]
    assert "OpenAI tool messages carry text only" in lines[1]
    (responses,) = tool_results_message(DefinitionFormat.OPENAI_RESPONSES, [RESULT], CALLS)
    exactly(FunctionCallOutput, responses)
    assert responses["output"] == chat["content"].replace(
        "OpenAI tool messages carry text only", "function_call_output carries text here"
    )
    gemini = tool_results_message(DefinitionFormat.GEMINI, [RESULT], CALLS)
    genai.Content.model_validate(gemini)
    output = gemini["parts"][0]["functionResponse"]["response"].get("output")
    assert isinstance(output, str)
    assert output.startswith("the chart\n[attachment not shown (image/png")


def test_a_structured_result_keeps_its_value_and_lists_its_attachments_for_gemini() -> None:
    structured = ToolResult(
        "c1", "{}", structured={"total": 3}, attachments=(Image(PNG, "image/png"),)
    )
    gemini = tool_results_message(DefinitionFormat.GEMINI, [structured], CALLS)
    response = gemini["parts"][0]["functionResponse"]["response"]
    assert response.get("output") == {"total": 3}
    assert response.get("attachments") == [
        "[attachment not shown (image/png, 12 bytes): Gemini function responses carry JSON only]"
    ]
    genai.Content.model_validate(gemini)


def test_a_result_without_attachments_is_unchanged() -> None:
    plain = ToolResult("c1", "text")
    message = tool_results_message(DefinitionFormat.ANTHROPIC, [plain], CALLS)
    assert message["content"][0]["content"] == "text"
