"""The registration check: before a new or changed tool is accepted, the provider it names
must serve exactly that definition (``GetTool``), so no registration can claim a provider's
target with another description, schema or approval flag."""

from __future__ import annotations

import logging
from typing import Final

import grpc
import grpc.aio

from llmworker import ToolMeta
from llmworker._wire import (
    GET_TOOL,
    ErrorStatus,
    Reason,
    bind,
    meta_from_message,
    printable,
    shorten,
)
from llmworker.v1 import tool_pb2
from llmworker.v1 import tool_service_pb2 as tool_pb

__all__ = ["serving_problem"]

_log: Final = logging.getLogger("llmworker.server.registry")


async def serving_problem(
    channel: grpc.aio.Channel, meta: ToolMeta, target: str, check_timeout: float
) -> ErrorStatus | None:
    """Why ``target`` (reached through ``channel``) cannot take calls to ``meta``'s tool: it
    must answer ``GetTool(name)`` within ``check_timeout`` seconds with exactly the definition
    registered. A provider without GetTool (UNIMPLEMENTED) answered all the same and is
    accepted unchecked."""
    name = meta.name
    get_tool = bind(GET_TOOL, channel)
    shown, where = shorten(name), printable(target, 200)
    try:
        reply = await get_tool(tool_pb.GetToolRequest(name=name), timeout=check_timeout)
    except grpc.aio.AioRpcError as error:
        code = error.code()
        if code is grpc.StatusCode.UNIMPLEMENTED:
            _log.warning("provider %s has no GetTool: tool=%s accepted unchecked", where, shown)
            return None
        if code is grpc.StatusCode.NOT_FOUND:
            return ErrorStatus.of(
                Reason.INVALID_REQUEST,
                f"the provider at {where} does not serve tool '{shown}' (GetTool answered "
                "NOT_FOUND); register only tools the provider serves",
                tool=shown,
            )
        return ErrorStatus.of(
            Reason.PROVIDER_UNAVAILABLE,
            f"the provider at {where} did not answer GetTool('{shown}') within "
            f"{check_timeout:.3g} s ({code.name}); start it, serving "
            "llmworker.v1.ToolService, before it registers",
            tool=shown,
        )
    differences = _differences(meta, reply.definition)
    if differences:
        return ErrorStatus.of(
            Reason.INVALID_REQUEST,
            f"the provider at {where} serves tool '{shown}' with another definition than "
            f"the one registered (they differ in {', '.join(differences)}); register the "
            "definition the provider serves",
            tool=shown,
        )
    return None


def _differences(registered: ToolMeta, served: tool_pb2.ToolDefinition) -> list[str]:
    """The fields in which the definition a provider serves differs from ``registered``."""
    try:
        meta = meta_from_message(served)
    except ValueError:
        return ["input_schema_json or output_schema_json (the served one is not valid)"]
    fields = {
        "name": (registered.name, meta.name),
        "description": (registered.description, meta.description),
        "input_schema": (registered.input_schema, meta.input_schema),
        "title": (registered.title, meta.title),
        "output_schema": (registered.output_schema, meta.output_schema),
        "annotations": (registered.annotations, meta.annotations),
        "requires_approval": (registered.requires_approval, meta.requires_approval),
    }
    return [field for field, (left, right) in fields.items() if left != right]
