"""``tools/list`` and ``tools/call`` on the server's registry: the same scoped listing, and
the same admission, limits, validation, call log and metrics as a gRPC CallTool.

A refusal or a failure is a tool result with ``isError`` and our reason under ``_meta``
(MCP's rule: the model reads it and corrects itself), except a tool that does not exist,
which is the JSON-RPC error ``-32602`` MCP prescribes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Iterable, Mapping
from typing import Any, Final

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request

from llmworker import (
    DefinitionsSnapshot,
    JsonValue,
    Progress,
    StreamEvent,
    ToolCall,
    ToolOutput,
    ToolResult,
    ToolServerError,
    client_channel,
)
from llmworker._wire import ErrorStatus, Reason, attachments_from, shorten, status_of
from llmworker.v1 import tool_service_pb2 as pb

from ..calls.admission import AdmittedCall, CallAdmission
from ..calls.responses import CallResponses
from ..registry.registry import Registry
from ..rpc.audit import CURRENT_CALLER
from ..rpc.auth import Caller, CallerCheck, Scope
from .approval import can_elicit, cannot_ask, decided_call
from .approval_rounds import ApprovalRounds, approval_token
from .client_input import LogLevels, RoundChannel, SessionChannel, earlier_answers
from .tools import mcp_tool, refusal_result, tool_result

__all__ = ["HttpCaller", "McpCalls"]

_log = logging.getLogger("llmworker.server.mcp")
_INVALID_PARAMS: Final = -32602
MCP: Final = "mcp"
"""The transport MCP calls are logged and counted under."""
Context = ServerRequestContext[Any, Request]


class HttpCaller:
    """An MCP request's HTTP headers as the caller checks read them: its bearer token;
    no deadline (``--tool-timeout`` applies) and no client certificate. The front leaves
    the caller it authenticated (a ``Caller``) in the request's ASGI scope under ``KEY``."""

    __slots__ = ("_authorization",)
    KEY: Final = "llmworker.caller"

    def __init__(self, headers: Mapping[str, str]) -> None:
        self._authorization = headers.get("authorization")

    @classmethod
    def of(cls, ctx: Context) -> HttpCaller:
        """The caller of ``ctx``'s HTTP request."""
        request = ctx.request
        return cls({} if request is None else request.headers)

    def invocation_metadata(self) -> Iterable[tuple[str, str | bytes]] | None:
        return () if self._authorization is None else (("authorization", self._authorization),)

    def time_remaining(self) -> float | None:
        return None

    def auth_context(self) -> Mapping[str, Iterable[bytes]]:
        return {}


class McpCalls:
    """The tool methods of the MCP front, over ``registry``'s worker."""

    def __init__(
        self,
        registry: Registry,
        admission: CallAdmission,
        responses: CallResponses,
        auth: CallerCheck | None,
        approvals: ApprovalRounds,
        max_sessions: int,
    ) -> None:
        self._registry = registry
        self._approvals = approvals
        self._admission = admission
        self._responses = responses
        self._auth = auth
        self._listed: tuple[DefinitionsSnapshot, list[types.Tool]] | None = None
        self._log_levels = LogLevels(max_sessions)

    async def list_tools(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = self._tools()
        caller = _caller_of(ctx)
        if caller is None and self._auth is not None:  # not checked at the door: check here
            checked = self._auth.caller(HttpCaller.of(ctx))
            if isinstance(checked, ErrorStatus):
                raise MCPError(_INVALID_PARAMS, checked.message)
            caller = checked
        if caller is not None:
            tools = _scoped(tools, caller.scope)
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        self, ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        arguments = json.dumps(params.arguments or {}, ensure_ascii=False, separators=(",", ":"))
        try:
            request = pb.CallToolRequest(name=params.name, input_json=arguments)
        except UnicodeEncodeError as error:  # a lone surrogate (\ud800) in the JSON body
            return refusal_result(_not_unicode(error))
        admission = self._admission
        call = admission.admit(request, HttpCaller.of(ctx), caller=_caller_of(ctx))
        if isinstance(call, ErrorStatus):
            return refusal_result(call)
        name, _, call_id, _, _, _, caller, log_id, started = call
        found = self._registry.handle.get_tool(name)
        if found is not None and found[0].requires_approval:
            return await self._decided(ctx, call, params)
        channel = self._channel(ctx, name, params)
        try:
            with client_channel(channel):
                output = await self._run(ctx, call)
            response = self._responses.response_of(name, output)
        except BaseException as error:  # a hook or the worker failed: never the process
            await channel.flush()
            if isinstance(channel, RoundChannel) and channel.pending:
                admission.finish(name, "INPUT_REQUIRED", started, caller, transport=MCP)
                return channel.input_required()
            status = admission.ended(name, call_id or log_id, error, started, caller, transport=MCP)
            if status is None:
                raise  # the client cancelled
        else:
            await channel.flush()
            admission.finish(name, "OK", started, caller, transport=MCP)
            attachments = attachments_from(response.attachments)
            return tool_result(response.output, response.structured_output_json, attachments)
        if status.reason == Reason.TOOL_NOT_FOUND:
            raise MCPError(_INVALID_PARAMS, f"{status.message}; list the tools with tools/list")
        if isinstance(channel, RoundChannel) and channel.missing is not None:
            raise missing_capability(name, channel.missing)
        return refusal_result(status)

    async def set_logging_level(
        self, ctx: Context, params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        """``logging/setLevel`` (2025-11-25): the session's tools log at that level and up."""
        session = None if ctx.request is None else ctx.request.headers.get("mcp-session-id")
        if session is not None:
            self._log_levels.set(session, params.level)
        return types.EmptyResult()

    def _channel(
        self, ctx: Context, name: str, params: types.CallToolRequestParams
    ) -> SessionChannel | RoundChannel:
        """What the call's tool may ask and log through, on the request's revision."""
        if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
            session = None if ctx.request is None else ctx.request.headers.get("mcp-session-id")
            return SessionChannel(ctx, name, self._log_levels.allowed(session))
        state = earlier_answers(params.request_state)
        return RoundChannel(ctx, name, _input_responses(params), state)

    async def _run(self, ctx: Context, call: AdmittedCall) -> str | ToolOutput:
        """The admitted call's output, its progress sent when the client asked for it."""
        name, input_json, call_id, metadata, deadline, timeout, _, log_id, _ = call
        worker = self._registry.worker
        if ctx.meta is not None and "progress_token" in ctx.meta:
            events = worker.stream_tool(
                name,
                input_json,
                call_id=call_id or log_id,
                metadata=metadata,
                deadline=deadline,
                timeout=timeout,
            )
            return await _with_progress(ctx, events)
        return await worker.call_tool_output(
            name,
            input_json,
            call_id=call_id or log_id,
            metadata=metadata,
            deadline=deadline,
            timeout=timeout,
        )

    async def _decided(
        self, ctx: Context, call: AdmittedCall, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """A call of a tool that requires approval: asked, then run or denied (on 2026-07-28
        over rounds, the call held meanwhile as a paused batch)."""
        name, input_json, call_id, metadata, deadline, timeout, caller, log_id, started = call
        planned = ToolCall(call_id or log_id, name, input_json, metadata, deadline, timeout)
        admission = self._admission
        CURRENT_CALLER.set(caller)  # the audit trail names who decided
        try:
            outcome: ToolResult | ErrorStatus | types.InputRequiredResult
            if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
                with client_channel(self._channel(ctx, name, params)):  # the tool may ask too
                    outcome = await decided_call(ctx, self._registry.worker, planned)
            else:
                outcome = await self._approval_round(ctx, planned, caller, params)
            if isinstance(outcome, types.InputRequiredResult):
                admission.finish(name, "INPUT_REQUIRED", started, caller, transport=MCP)
                return outcome
            if isinstance(outcome, ToolResult):
                result = self._result_of(name, outcome)
            else:
                result = refusal_result(outcome)
        except BaseException as error:  # a hook or the worker failed: never the process
            status = admission.ended(name, log_id, error, started, caller, transport=MCP)
            if status is None:
                raise  # the client cancelled
            return refusal_result(status)
        admission.finish(name, _label_of(outcome), started, caller, transport=MCP)
        return result

    async def _approval_round(
        self, ctx: Context, call: ToolCall, caller: str, params: types.CallToolRequestParams
    ) -> ToolResult | ErrorStatus | types.InputRequiredResult:
        """Revision 2026-07-28: the first round pauses the call and asks; the next brings
        the answer with the state naming the held batch."""
        token = approval_token(params.request_state)
        if token is not None:
            return await self._approvals.decide(token, _input_responses(params), call, caller)
        if not can_elicit(ctx):
            return cannot_ask(call.name)
        return await self._approvals.start(call, caller)

    def _result_of(self, name: str, result: ToolResult) -> types.CallToolResult:
        """A decided call's result, within the message limit as any call's."""
        if result.error is not None:
            return refusal_result(status_of(result.error, name))
        output = ToolOutput(result.content, result.structured, result.attachments)
        try:
            response = self._responses.response_of(name, output)
        except ToolServerError as error:
            return refusal_result(status_of(error, name))
        attachments = attachments_from(response.attachments)
        return tool_result(response.output, response.structured_output_json, attachments)

    def _tools(self) -> list[types.Tool]:
        """Every registry tool as an MCP tool, in the registry's order, converted once per
        registry change."""
        snapshot = self._registry.handle.definitions_snapshot()
        listed = self._listed
        if listed is None or listed[0] is not snapshot:
            listed = self._listed = (snapshot, [mcp_tool(meta) for meta in snapshot.definitions])
        return listed[1]


async def _with_progress(ctx: Context, events: AsyncGenerator[StreamEvent]) -> str | ToolOutput:
    """The result of a streamed call, its progress sent to the client as
    ``notifications/progress`` on the call's token (chunks are in the result's text)."""
    try:
        async for event in events:
            if isinstance(event, Progress):
                try:
                    await ctx.session.report_progress(
                        event.progress, event.total, event.message or None
                    )
                except Exception as error:  # a client gone: the call goes on
                    _log.debug("progress not delivered: %s", error)
            elif isinstance(event, ToolOutput):
                plain = event.structured is None and not event.attachments
                return event.text if plain else event
    finally:
        await events.aclose()  # cancels the call if it still runs
    raise AssertionError("stream_tool ends with the result")


def _input_responses(params: types.CallToolRequestParams) -> dict[str, JsonValue]:
    """The client's answers a request brings (2026-07-28), as JSON by their keys."""
    return {
        key: response.model_dump(by_alias=True, mode="json", exclude_none=True)
        for key, response in (params.input_responses or {}).items()
    }


def missing_capability(tool: str, capability: str) -> MCPError:
    """The JSON-RPC error for a call whose tool needed a capability the client did not
    declare in its request's ``_meta`` (2026-07-28)."""
    return MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"tool '{shorten(tool)}' needs the client's '{capability}' capability, and this "
        "request did not declare it; declare it in _meta, or call another tool",
        {"requiredCapabilities": {capability: {}}},
    )


def _not_unicode(error: UnicodeEncodeError) -> ErrorStatus:
    return ErrorStatus.of(
        Reason.INVALID_REQUEST,
        f"the tool name or arguments are not valid Unicode ({error.reason} at character "
        f"{error.start}, e.g. a lone surrogate escape); send text that encodes as UTF-8",
    )


def _label_of(outcome: ToolResult | ErrorStatus) -> str:
    """How the call log shows the end of a decided call."""
    if isinstance(outcome, ErrorStatus):
        return outcome.code.name
    return "OK" if outcome.error is None else status_of(outcome.error, "").code.name


def _scoped(tools: list[types.Tool], scope: Scope) -> list[types.Tool]:
    return [tool for tool in tools if scope.allows(tool.name)]


def _caller_of(ctx: Context) -> Caller | None:
    """The caller the front authenticated for this request (None: callers are not checked)."""
    request = ctx.request
    caller: object = None if request is None else request.scope.get(HttpCaller.KEY)
    return caller if isinstance(caller, Caller) else None
