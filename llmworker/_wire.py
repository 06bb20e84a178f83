"""Conversions between library values and llmworker.v1 messages."""

from __future__ import annotations

import json
from typing import cast

from ._json import canonical_json
from ._tool_meta import ToolMeta
from ._tool_server import DefinitionsSnapshot
from .v1 import tool_pb2, tool_service_pb2

__all__ = ["definition_message", "definitions_response", "meta_from_message"]


def definition_message(meta: ToolMeta) -> tool_pb2.ToolDefinition:
    """``meta`` as a ToolDefinition message; the schema as canonical JSON text."""
    return tool_pb2.ToolDefinition(
        name=meta.name,
        description=meta.description,
        input_schema_json=canonical_json(meta.input_schema).decode(),
    )


def meta_from_message(message: tool_pb2.ToolDefinition) -> ToolMeta:
    """The ToolMeta a ToolDefinition message describes; ``ValueError`` names what is wrong."""
    try:
        schema: object = json.loads(message.input_schema_json or "{}")
    except (json.JSONDecodeError, RecursionError) as error:
        raise ValueError(
            f"input_schema_json of tool '{message.name}' is not JSON ({error}); send a JSON "
            "Schema object"
        ) from None
    if not isinstance(schema, dict):
        raise ValueError(
            f"input_schema_json of tool '{message.name}' is {type(schema).__name__}, not a JSON "
            "object; send a JSON Schema object"
        )
    return ToolMeta(message.name, message.description, cast("dict[str, object]", schema))


def definitions_response(snapshot: DefinitionsSnapshot) -> bytes:
    """The serialised ListDefinitionsSortedResponse of ``snapshot``: built once per change."""
    return tool_service_pb2.ListDefinitionsSortedResponse(
        definitions=[definition_message(meta) for meta in snapshot.definitions],
        fingerprint=snapshot.fingerprint,
    ).SerializeToString()
