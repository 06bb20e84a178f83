"""An MCP server's tool as a registry definition, and its ``tools/call`` result as a call's
output: the reverse of what the MCP front (``mcp_front/tools.py``) shows MCP clients."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Final

import mcp_types as types

from llmworker import (
    Attachment,
    Audio,
    EmbeddedResource,
    Image,
    JsonObject,
    ResourceLink,
    ToolAnnotations,
    ToolError,
    ToolMeta,
    ToolOutput,
)
from llmworker._wire import shorten

__all__ = ["imported_meta", "output_of"]

_MAX_DESCRIPTION_CHARS: Final = 16 * 1024  # what RegisterTool takes
_MAX_SCHEMA_BYTES: Final = 128 * 1024


def imported_meta(tool: types.Tool, name: str, requires_approval: bool) -> ToolMeta:
    """``tool`` registered as ``name``: title, description, schemas and hints kept.
    ``ValueError`` says why it cannot be (the same limits as RegisterTool)."""
    if tool.execution is not None and tool.execution.task_support == "required":
        raise ValueError("it runs only as an MCP task, which llmworker does not forward")
    description = tool.description or ""
    if len(description) > _MAX_DESCRIPTION_CHARS:
        raise ValueError(
            f"its description is {len(description)} characters, over {_MAX_DESCRIPTION_CHARS}"
        )
    for which, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
        size = 0 if schema is None else len(json.dumps(schema))
        if size > _MAX_SCHEMA_BYTES:
            raise ValueError(f"its {which} schema is {size} bytes, over {_MAX_SCHEMA_BYTES}")
    hints = tool.annotations or types.ToolAnnotations()
    return ToolMeta(
        name,
        description,
        tool.input_schema,
        title=tool.title or hints.title or "",
        output_schema=tool.output_schema,
        annotations=ToolAnnotations(
            hints.read_only_hint,
            hints.destructive_hint,
            hints.idempotent_hint,
            hints.open_world_hint,
        ),
        requires_approval=requires_approval,
    )


def output_of(result: types.CallToolResult, server: str) -> str | ToolOutput:
    """A call's output: the text blocks joined, the other blocks as attachments, the
    structured content as the structured result. An ``isError`` result raises
    ``ToolError.ExecutionFailed`` with the server's text."""
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    text = "\n".join(texts)
    if result.is_error:
        raise ToolError.ExecutionFailed(
            text or f"the MCP server '{server}' reported the call failed, saying nothing more"
        )
    attachments = tuple(
        attachment for block in result.content if (attachment := _attachment(block)) is not None
    )
    structured = _json_object(result.structured_content)
    if structured is None and not attachments:
        return text
    if not text and structured is not None and not attachments:
        text = json.dumps(structured, ensure_ascii=False)
    return ToolOutput(text, structured, attachments)


def _attachment(block: types.ContentBlock) -> Attachment | None:
    """A content block other than text as an attachment (None: text, or undecodable)."""
    try:
        match block:
            case types.ImageContent():
                return Image(_bytes(block.data), block.mime_type)
            case types.AudioContent():
                return Audio(_bytes(block.data), block.mime_type)
            case types.ResourceLink():
                return ResourceLink(
                    block.uri, block.name, block.mime_type or "", block.description or ""
                )
            case types.EmbeddedResource():
                contents = block.resource
                mime_type = contents.mime_type or ""
                if isinstance(contents, types.TextResourceContents):
                    return EmbeddedResource(contents.uri, text=contents.text, mime_type=mime_type)
                return EmbeddedResource(
                    contents.uri, blob=_bytes(contents.blob), mime_type=mime_type
                )
            case _:
                return None
    except (ValueError, binascii.Error) as error:
        raise ToolError.ExecutionFailed(
            f"a {block.type} block of the MCP server's result cannot be used: "
            f"{shorten(str(error), 200)}"
        ) from None


def _bytes(data: str) -> bytes:
    return base64.b64decode(data, validate=True)


def _json_object(value: object) -> JsonObject | None:
    """The structured content as a JSON object (the spec makes it one; nothing else is kept)."""
    if not isinstance(value, dict):
        return None
    plain: JsonObject = json.loads(json.dumps(value))
    return plain
