"""``--otel`` over MCP: a SERVER span for every MCP request, from the server's own tracer
provider (the gRPC spans' one), so a call over MCP is traced as one over gRPC is, and a
call it forwards to a provider goes out in a CLIENT span under it.

- The name is MCP's convention, ``tools/call echo`` (the method, and the tool it names);
  the attributes are ``mcp.method.name``, ``mcp.protocol.version``, ``jsonrpc.request.id``,
  ``gen_ai.operation.name`` (``execute_tool``) and ``gen_ai.tool.name`` for a call, and
  ``llmworker.tool.name`` as on the gRPC spans.
- The parent is the W3C trace context in the request's ``params._meta`` (``traceparent``,
  ``tracestate``: where MCP clients put it), read with the configured propagators.
- A tool result with ``isError`` ends the span with status ERROR and our reason; a JSON-RPC
  error with its code.

Imported with ``--otel`` only, in place of the SDK's own middleware, which reads the global
tracer provider this server does not set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode

from .tools import REASON_META

__all__ = ["McpSpans"]

_MAX_NAME: Final = 128


class McpSpans:
    """Server middleware: each request inside a SERVER span of ``tracer``."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self._tracer = tracer

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        name = ctx.params.get("name") if ctx.params else None
        tool = name[:_MAX_NAME] if isinstance(name, str) else None
        attributes: dict[str, str] = {
            "mcp.method.name": ctx.method,
            "mcp.protocol.version": ctx.protocol_version,
        }
        if ctx.request_id is not None:
            attributes["jsonrpc.request.id"] = str(ctx.request_id)[:_MAX_NAME]
        if ctx.method == "tools/call" and tool is not None:
            attributes["gen_ai.operation.name"] = "execute_tool"
            attributes["gen_ai.tool.name"] = tool
            attributes["llmworker.tool.name"] = tool
        span = self._tracer.start_span(
            f"{ctx.method} {tool}" if tool else ctx.method,
            context=_parent(ctx.meta),
            kind=SpanKind.SERVER,
            attributes=attributes,
        )
        with trace.use_span(span, end_on_exit=True):
            try:
                result = await call_next(ctx)
            except MCPError as error:
                span.set_attribute("rpc.response.status_code", str(error.error.code))
                span.set_status(Status(StatusCode.ERROR, error.error.message))
                raise
            except BaseException as error:
                span.set_status(Status(StatusCode.ERROR, type(error).__name__))
                raise
            failed = _failure_of(result)
            if failed is not None:
                span.set_status(Status(StatusCode.ERROR, failed))
            return result


def _failure_of(result: HandlerResult) -> str | None:
    """Why a tool result (a model, or the dict it was dumped to) is an error, or None."""
    if isinstance(result, types.CallToolResult):
        fields: dict[str, Any] = result.model_dump(by_alias=True)
    elif isinstance(result, dict):
        fields = result
    else:
        return None
    if fields.get("isError") is not True:
        return None
    meta: object = fields.get("_meta")
    reason = cast("dict[str, object]", meta).get(REASON_META) if isinstance(meta, dict) else None
    return str(reason or "isError")


def _parent(meta: Mapping[str, Any] | None) -> Context | None:
    """The trace context in a request's ``_meta``, or None (a new trace)."""
    if not meta:
        return None
    carrier = {key: value for key, value in meta.items() if isinstance(value, str)}
    return propagate.extract(carrier) if carrier else None
