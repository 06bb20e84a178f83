"""A result's attachments in a provider's tool-result message, as far as the format carries
them. Anthropic's ``tool_result`` takes image blocks (JPEG, PNG, GIF, WebP) beside text;
OpenAI's Chat and Responses function outputs and Gemini's ``functionResponse`` take text or
JSON only. What a format cannot carry is never dropped silently: the model reads one line
per attachment saying what it was, and an embedded text resource's text itself."""

from __future__ import annotations

import base64
from typing import Final, Literal, TypeAlias

from typing_extensions import TypedDict

from .._model.attachments import Attachment, Audio, EmbeddedResource, Image, ResourceLink
from .._model.calls import ToolResult

__all__ = [
    "AnthropicImageBlock",
    "AnthropicImageSource",
    "AnthropicTextBlock",
    "AnthropicToolResultContent",
    "anthropic_content",
    "attachment_notes",
    "with_attachment_notes",
]

_ANTHROPIC_IMAGES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


class AnthropicTextBlock(TypedDict):
    """Text inside an Anthropic ``tool_result``."""

    type: Literal["text"]
    text: str


class AnthropicImageSource(TypedDict):
    """An image's bytes, base64, and MIME type."""

    type: Literal["base64"]
    media_type: str
    data: str


class AnthropicImageBlock(TypedDict):
    """An image inside an Anthropic ``tool_result``."""

    type: Literal["image"]
    source: AnthropicImageSource


AnthropicToolResultContent: TypeAlias = AnthropicTextBlock | AnthropicImageBlock
"""A block of an Anthropic ``tool_result``'s content."""


def anthropic_content(result: ToolResult) -> str | list[AnthropicToolResultContent]:
    """A ``tool_result``'s content: the text alone, or the text then one block per
    attachment (an image as itself, the rest as a line saying what it is)."""
    if not result.attachments:
        return result.content
    blocks: list[AnthropicToolResultContent] = []
    if result.content:  # Anthropic refuses an empty text block
        blocks.append(AnthropicTextBlock(type="text", text=result.content))
    for attachment in result.attachments:
        if isinstance(attachment, Image) and attachment.mime_type in _ANTHROPIC_IMAGES:
            source = AnthropicImageSource(
                type="base64",
                media_type=attachment.mime_type,
                data=base64.b64encode(attachment.data).decode("ascii"),
            )
            blocks.append(AnthropicImageBlock(type="image", source=source))
        else:
            text = _note(attachment, "Anthropic tool results carry text and JPEG, PNG, GIF or WebP")
            blocks.append(AnthropicTextBlock(type="text", text=text))
    return blocks


def with_attachment_notes(result: ToolResult, carried: str) -> str:
    """The result's text, then a note per attachment for a format that carries text only
    (``carried`` says what it does carry)."""
    if not result.attachments:
        return result.content
    return "\n".join([result.content, *attachment_notes(result, carried)])


def attachment_notes(result: ToolResult, carried: str) -> list[str]:
    """One note per attachment, saying what it is (an embedded text resource: its text)."""
    return [_note(attachment, carried) for attachment in result.attachments]


def _note(attachment: Attachment, carried: str) -> str:
    match attachment:
        case EmbeddedResource(text=str() as text):
            return f"[resource {attachment.uri}]\n{text}"
        case ResourceLink():
            named = f" ({attachment.name})" if attachment.name else ""
            return f"[resource link: {attachment.uri}{named}]"
        case Image() | Audio():
            what = f"{attachment.mime_type}, {len(attachment.data)} bytes"
        case EmbeddedResource():
            what = f"resource {attachment.uri}, {len(attachment.blob or b'')} bytes"
    return f"[attachment not shown ({what}): {carried}]"
