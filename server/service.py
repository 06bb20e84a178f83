"""The public ``llmworker.v1.ToolService``: GetTool, CallTool, ListDefinitionsSorted."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Mapping
from typing import Final

import grpc.aio

from llmworker import Paused, ToolBatchAborted, ToolCall, ToolError, ToolServerError
from llmworker._status import ErrorStatus, Reason, status_of
from llmworker._tool_server import DefinitionsSnapshot
from llmworker._wire import definition_message, definitions_response
from llmworker.v1 import tool_service_pb2 as pb

from .call_log import CallLog
from .registry import Registry
from .rpc import Context, MalformedRequest, abort, abort_malformed, add_service, unary
from .timeouts import TimeoutWatchdog

__all__ = ["CallLimits", "ToolService"]

_SERVICE: Final = "llmworker.v1.ToolService"
_EMPTY_NAME: Final = ErrorStatus.of(
    Reason.INVALID_REQUEST, "the tool name is empty; pass a name from ListDefinitionsSorted"
)


class CallLimits:
    """Timeouts (global and per tool, seconds; None for none) and the in-flight call limit."""

    def __init__(
        self,
        call_timeout: float | None,
        tool_timeouts: Mapping[str, float],
        max_concurrent_calls: int,
    ) -> None:
        self.call_timeout = call_timeout
        self.tool_timeouts = dict(tool_timeouts)
        self.max_concurrent_calls = max_concurrent_calls

    def timeout_for(self, tool: str, deadline_remaining: float | None) -> float | None:
        timeout = self.tool_timeouts.get(tool, self.call_timeout)
        if deadline_remaining is None:
            return timeout
        return deadline_remaining if timeout is None else min(timeout, deadline_remaining)


class ToolService:
    """Serves one registry's tools; every call runs through the worker's hooks."""

    def __init__(
        self, registry: Registry, limits: CallLimits, call_log: CallLog | None = None
    ) -> None:
        self._registry = registry
        self._limits = limits
        self._call_log = call_log
        self._in_flight = 0
        self._call_ids = itertools.count()
        self._definitions: tuple[DefinitionsSnapshot, bytes, bytes] | None = None
        self._watchdog = TimeoutWatchdog()

    def add_to(self, server: grpc.aio.Server) -> None:
        add_service(
            server,
            _SERVICE,
            {
                "GetTool": unary(
                    self.get_tool,
                    pb.GetToolRequest.FromString,
                    pb.GetToolResponse.SerializeToString,
                ),
                "CallTool": unary(
                    self.call_tool,
                    pb.CallToolRequest.FromString,
                    pb.CallToolResponse.SerializeToString,
                ),
                "ListDefinitionsSorted": unary(
                    self.list_definitions_sorted, pb.ListDefinitionsSortedRequest.FromString, _as_is
                ),
            },
        )

    @property
    def in_flight(self) -> int:
        """Calls running now."""
        return self._in_flight

    async def get_tool(
        self, request: pb.GetToolRequest | MalformedRequest, context: Context
    ) -> pb.GetToolResponse:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        name = request.name
        if not name:
            await abort(context, _EMPTY_NAME)
        found = self._registry.handle.get_tool(name)
        if found is None:
            await abort(context, status_of(ToolServerError.ToolNotFound(name), name))
        return pb.GetToolResponse(definition=definition_message(found[0]))

    async def list_definitions_sorted(
        self, request: pb.ListDefinitionsSortedRequest | MalformedRequest, context: Context
    ) -> bytes:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        snapshot = self._registry.handle.definitions_snapshot()
        cached = self._definitions
        if cached is None or cached[0] is not snapshot:
            unchanged = pb.ListDefinitionsSortedResponse(
                fingerprint=snapshot.fingerprint, unchanged=True
            ).SerializeToString()
            cached = self._definitions = (snapshot, definitions_response(snapshot), unchanged)
        return cached[2] if request.known_fingerprint == snapshot.fingerprint else cached[1]

    async def call_tool(
        self, request: pb.CallToolRequest | MalformedRequest, context: Context
    ) -> pb.CallToolResponse:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        name = request.name
        if not name:
            await abort(context, _EMPTY_NAME)
        if self._in_flight >= self._limits.max_concurrent_calls:
            await abort(
                context,
                ErrorStatus.of(
                    Reason.CONCURRENCY_LIMIT,
                    f"{self._in_flight} calls are in flight, the server's limit; retry with "
                    "backoff or raise --max-concurrent-calls",
                    tool=name,
                ),
            )
        self._in_flight += 1
        started = time.perf_counter()
        label = "CANCELLED"  # unless _run returns: the client went away or its deadline passed
        try:
            output, status = await self._run(name, request.input_json, context)
            label = status.code.name if status else "OK"
        finally:
            self._in_flight -= 1
            if self._call_log is not None:
                self._call_log.record(name, label, time.perf_counter() - started)
        if status is not None:
            await abort(context, status)
        return pb.CallToolResponse(output=output)

    async def _run(
        self, name: str, input_json: str, context: Context
    ) -> tuple[str, ErrorStatus | None]:
        timeout = self._limits.timeout_for(name, context.time_remaining())
        call = ToolCall(str(next(self._call_ids)), name, input_json)
        task = asyncio.current_task()
        assert task is not None
        if timeout is not None:
            self._watchdog.watch(task, timeout)
        try:
            outcome = await self._registry.worker.call_tools((call,))
        except asyncio.CancelledError:
            if not self._watchdog.finish(task):
                raise  # the client cancelled, or its deadline passed
            task.uncancel()
            return "", ErrorStatus.of(
                Reason.TOOL_TIMEOUT,
                f"Tool '{name}' did not finish within {timeout:.3g} s (the smaller of the "
                "client deadline and the server's timeout for this tool)",
                tool=name,
            )
        except ToolBatchAborted as error:
            return "", ErrorStatus.of(Reason.HOOK_ABORTED, str(error), tool=name)
        finally:
            self._watchdog.finish(task)
        if isinstance(outcome, Paused):
            return "", ErrorStatus.of(
                Reason.HOOK_ABORTED,
                f"a pre-tool-call hook paused the call to '{name}'; pausing cannot be resumed "
                "over gRPC",
                tool=name,
            )
        result = outcome.results[0]
        if not result.is_error:
            return result.content, None
        return "", status_of(result.error or ToolError.ExecutionFailed(result.content), name)


def _as_is(response: bytes) -> bytes:
    return response
