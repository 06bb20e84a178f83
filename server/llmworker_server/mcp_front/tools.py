"""Registry tools as MCP tools, and a call's result or refusal as an MCP tool result."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Final

import mcp_types as types

from llmworker import (
    Attachment,
    Audio,
    EmbeddedResource,
    Image,
    JsonObject,
    ResourceLink,
    ToolMeta,
    canonical_json,
)
from llmworker._wire import ErrorStatus

__all__ = ["REASON_META", "mcp_tool", "refusal_result", "tool_result"]

REASON_META: Final = "io.llmworker/reason"
"""The ``_meta`` key of a refused or failed call's reason (from the README's table)."""


def mcp_tool(meta: ToolMeta) -> types.Tool:
    """``meta`` as ``tools/list`` shows it: name, title, description, the schemas and the
    behaviour hints that are set."""
    hints = meta.annotations
    annotations = (
        types.ToolAnnotations(
            read_only_hint=hints.read_only,
            destructive_hint=hints.destructive,
            idempotent_hint=hints.idempotent,
            open_world_hint=hints.open_world,
        )
        if hints
        else None
    )
    output = meta.output_schema
    return types.Tool(
        name=meta.name,
        title=meta.title or None,
        description=meta.description,
        input_schema=_plain(meta.input_schema),
        output_schema=None if output is None else _plain(output),
        annotations=annotations,
    )


def tool_result(
    text: str, structured_json: str, attachments: Sequence[Attachment] = ()
) -> types.CallToolResult:
    """A call's result: its text (none when it is empty and attachments follow), then its
    attachments as image, audio and resource blocks, and its structured output (JSON text,
    "" for none) as ``structuredContent``."""
    content: list[types.ContentBlock] = []
    if text or not attachments:  # a result of attachments alone shows no empty text
        content.append(types.TextContent(type="text", text=text))
    content.extend(_block(attachment) for attachment in attachments)
    if not structured_json:
        return types.CallToolResult(content=content)
    structured: object = json.loads(structured_json)
    return types.CallToolResult(content=content, structured_content=structured)


def refusal_result(status: ErrorStatus) -> types.CallToolResult:
    """A call that failed or was refused, as the result the model reads: ``isError``, the
    message, and the reason under ``_meta``."""
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text=status.message)], is_error=True
    )
    result.meta = {REASON_META: status.reason}
    return result


def _block(attachment: Attachment) -> types.ContentBlock:
    match attachment:
        case Image():
            return types.ImageContent(data=_base64(attachment.data), mime_type=attachment.mime_type)
        case Audio():
            return types.AudioContent(data=_base64(attachment.data), mime_type=attachment.mime_type)
        case ResourceLink():
            return types.ResourceLink(
                uri=attachment.uri,
                name=attachment.name or attachment.uri,
                mime_type=attachment.mime_type or None,
                description=attachment.description or None,
            )
        case EmbeddedResource():
            mime_type = attachment.mime_type or None
            if attachment.text is not None:
                contents: types.TextResourceContents | types.BlobResourceContents = (
                    types.TextResourceContents(
                        uri=attachment.uri, mime_type=mime_type, text=attachment.text
                    )
                )
            else:
                contents = types.BlobResourceContents(
                    uri=attachment.uri, mime_type=mime_type, blob=_base64(attachment.blob or b"")
                )
            return types.EmbeddedResource(resource=contents)


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _plain(schema: JsonObject) -> dict[str, object]:
    """A deep-frozen schema as the plain dicts and lists pydantic models take."""
    plain: dict[str, object] = json.loads(canonical_json(schema))
    return plain
