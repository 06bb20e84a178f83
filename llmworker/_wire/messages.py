"""Conversions between library values and llmworker.v1 messages."""

from __future__ import annotations

import json
from typing import Literal, cast

from .._formats.definition_formats import DefinitionFormat
from .._model.json_values import canonical_json
from .._model.tool_meta import ToolAnnotations, ToolMeta
from .._runtime.tool_server import DefinitionsSnapshot
from ..v1 import tool_pb2, tool_service_pb2

__all__ = [
    "definition_format",
    "definition_message",
    "definitions_response",
    "format_number",
    "meta_from_message",
]

_PREFIX = "DEFINITION_FORMAT_"


def definition_format(
    number: tool_service_pb2.DefinitionFormat.ValueType,
) -> DefinitionFormat | None:
    """The format a ``DefinitionFormat`` enum number names (None: unspecified);
    ``ValueError`` for a number this version does not know."""
    if number == 0:
        return None
    try:
        return DefinitionFormat[tool_service_pb2.DefinitionFormat.Name(number)[len(_PREFIX) :]]
    except (ValueError, KeyError):
        raise ValueError(
            f"format {number} is not a DefinitionFormat this server knows; use one of "
            + ", ".join(tool_service_pb2.DefinitionFormat.keys()[1:])
        ) from None


def format_number(form: DefinitionFormat) -> tool_service_pb2.DefinitionFormat.ValueType:
    """The enum number of ``form`` on the wire."""
    return tool_service_pb2.DefinitionFormat.Value(_PREFIX + form.name)


def definition_message(meta: ToolMeta) -> tool_pb2.ToolDefinition:
    """``meta`` as a ToolDefinition message; schemas as canonical JSON text."""
    message = tool_pb2.ToolDefinition(
        name=meta.name,
        description=meta.description,
        input_schema_json=canonical_json(meta.input_schema).decode(),
        title=meta.title,
        requires_approval=meta.requires_approval,
    )
    if meta.output_schema is not None:
        message.output_schema_json = canonical_json(meta.output_schema).decode()
    hints = meta.annotations
    if hints:
        message.annotations.SetInParent()
        for field, value in (
            ("read_only_hint", hints.read_only),
            ("destructive_hint", hints.destructive),
            ("idempotent_hint", hints.idempotent),
            ("open_world_hint", hints.open_world),
        ):
            if value is not None:
                setattr(message.annotations, field, value)
    return message


def meta_from_message(message: tool_pb2.ToolDefinition) -> ToolMeta:
    """The ToolMeta a ToolDefinition message describes; ``ValueError`` names what is wrong."""
    output_schema = (
        _schema(message.name, "output", message.output_schema_json)
        if message.output_schema_json
        else None
    )
    return ToolMeta(
        message.name,
        message.description,
        _schema(message.name, "input", message.input_schema_json or "{}"),
        title=message.title,
        output_schema=output_schema,
        annotations=_annotations(message.annotations)
        if message.HasField("annotations")
        else ToolAnnotations(),
        requires_approval=message.requires_approval,
    )


def _annotations(message: tool_pb2.ToolAnnotations) -> ToolAnnotations:
    def hint(field: Literal[
        "read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"
    ]) -> bool | None:  # fmt: skip
        return getattr(message, field) if message.HasField(field) else None

    return ToolAnnotations(
        hint("read_only_hint"),
        hint("destructive_hint"),
        hint("idempotent_hint"),
        hint("open_world_hint"),
    )


def _schema(name: str, which: str, text: str) -> dict[str, object]:
    try:
        schema: object = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        raise ValueError(
            f"{which}_schema_json of tool '{name}' is not JSON ({error}); send a JSON Schema object"
        ) from None
    if not isinstance(schema, dict):
        raise ValueError(
            f"{which}_schema_json of tool '{name}' is {type(schema).__name__}, not a JSON "
            "object; send a JSON Schema object"
        )
    return cast("dict[str, object]", schema)


def definitions_response(snapshot: DefinitionsSnapshot) -> bytes:
    """The serialised ListDefinitionsSortedResponse of ``snapshot``: built once per change."""
    return tool_service_pb2.ListDefinitionsSortedResponse(
        definitions=[definition_message(meta) for meta in snapshot.definitions],
        fingerprint=snapshot.fingerprint,
    ).SerializeToString()
