"""The public ``llmworker.v1.ToolService``: GetTool, CallTool, ListDefinitionsSorted."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Mapping
from typing import Final

import grpc.aio

from llmworker import ToolBatchAborted, ToolCallPaused, ToolServerError
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

    def server_timeout(self, tool: str, deadline_remaining: float | None) -> float | None:
        """The server's timeout for a call to ``tool`` when it ends the call before the
        client's deadline does; None when there is none or gRPC's deadline comes first."""
        timeout = self.tool_timeouts.get(tool, self.call_timeout)
        if timeout is None or (deadline_remaining is not None and deadline_remaining <= timeout):
            return None
        return timeout


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
            await abort(context, self._over_limit(name))
        timeout = self._limits.server_timeout(name, context.time_remaining())
        watched = None if timeout is None else self._watch(timeout)
        self._in_flight += 1
        started = time.perf_counter()
        label = "CANCELLED"  # unless the call ends: the client went away or its deadline passed
        status: ErrorStatus | None = None
        try:
            output = await self._registry.worker.call_tool(
                name, request.input_json, call_id=str(next(self._call_ids))
            )
            label = "OK"
            return pb.CallToolResponse(output=output)
        except ToolServerError as error:
            status = status_of(error, name)
        except ToolCallPaused:
            status = ErrorStatus.of(
                Reason.HOOK_ABORTED,
                f"a pre-tool-call hook paused the call to '{name}'; pausing cannot be resumed "
                "over gRPC",
                tool=name,
            )
        except asyncio.CancelledError:
            if watched is None or not self._watchdog.finish(watched[0]):
                raise  # the client cancelled, or its deadline passed
            watched[0].uncancel()
            status = _timed_out(name, watched[1])
        except ToolBatchAborted as error:
            status = ErrorStatus.of(Reason.HOOK_ABORTED, str(error), tool=name)
        finally:
            if watched is not None:
                self._watchdog.finish(watched[0])
            self._in_flight -= 1
            if self._call_log is not None:
                label = label if status is None else status.code.name
                self._call_log.record(name, label, started)
        assert status is not None  # set on every path that neither returned nor raised
        await abort(context, status)

    def _watch(self, timeout: float) -> tuple[asyncio.Task[object], float]:
        """Have the watchdog cancel this call after ``timeout`` seconds, the server's timeout
        (gRPC itself cancels the call at the client's deadline)."""
        task = asyncio.current_task()
        assert task is not None
        self._watchdog.watch(task, timeout)
        return task, timeout

    def _over_limit(self, name: str) -> ErrorStatus:
        return ErrorStatus.of(
            Reason.CONCURRENCY_LIMIT,
            f"{self._in_flight} calls are in flight, the server's limit; retry with backoff or "
            "raise --max-concurrent-calls",
            tool=name,
        )


def _timed_out(name: str, timeout: float) -> ErrorStatus:
    return ErrorStatus.of(
        Reason.TOOL_TIMEOUT,
        f"Tool '{name}' did not finish within {timeout:.3g} s, the server's timeout for it; "
        "raise --call-timeout or --tool-timeout, or make the tool faster",
        tool=name,
    )


def _as_is(response: bytes) -> bytes:
    return response
