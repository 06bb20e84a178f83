"""The public ``llmworker.v1.ToolService``: GetTool, CallTool, ListDefinitionsSorted,
(through ``BatchCalls``) CallTools, ResumeBatch and RunProviderToolCalls, (through
``PausedListing``) ListPausedBatches, (through
``CallStreams``) CallToolStream, and (through ``DefinitionsWatch``) WatchDefinitions. Its
calls, streamed, batched or not, are admitted and counted by one ``CallAdmission``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Final, TypeVar

import grpc.aio

from llmworker import ToolServerError
from llmworker._wire import ErrorStatus, definition_message, status_of
from llmworker.v1 import tool_service_pb2 as pb

from ..ops.call_log import CallLog
from ..registry.registry import Registry
from ..rpc.auth import CallerCheck
from ..rpc.drain import DrainGate
from ..rpc.handlers import (
    Context,
    MalformedRequest,
    abort,
    abort_malformed,
    add_service,
    guarded,
    guarded_stream,
    server_streaming,
    unary,
)
from ..rpc.token_file import Globs
from ..state.memory import MemoryStore
from ..state.store import PausedStore
from .admission import CallAdmission
from .batches import BatchCalls
from .failures import CallFailures
from .limits import CallLimits
from .listing import DefinitionListing
from .paused_listing import PausedListing
from .requests import EMPTY_NAME
from .responses import CallResponses
from .search_tool import SEARCH_TOOL_NAME
from .stream import CallStreams
from .tool_search import ToolSearch
from .watch import DefinitionsWatch

if TYPE_CHECKING:  # imported with --otel only
    from ..ops.tracing import Tracing

__all__ = ["ToolService"]

RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT")

_SERVICE: Final = "llmworker.v1.ToolService"


class ToolService:
    """Serves one registry's tools; every call runs through the worker's hooks."""

    def __init__(
        self,
        registry: Registry,
        limits: CallLimits,
        call_log: CallLog | None = None,
        *,
        redact_errors: bool = False,
        gate: DrainGate | None = None,
        paused: PausedStore | None = None,
        auth: CallerCheck | None = None,
        core_tools: Sequence[str] = (),
    ) -> None:
        """``core_tools``: globs of the tools the Anthropic formats do not defer (none: no
        tool is deferred)."""
        self._registry = registry
        self._gate = gate or DrainGate()
        failures = CallFailures(redact=redact_errors)
        self._auth = auth
        self._admission = CallAdmission(limits, failures, call_log, self._gate, auth)
        self._responses = CallResponses(limits.max_output_bytes)
        self._output_surely_fits = self._responses.surely_fits
        self._listing = DefinitionListing(registry, auth, _deferred(core_tools))
        held = paused if paused is not None else MemoryStore(900.0, 1000)
        self._batches = BatchCalls(
            self._admission, failures, self._responses, registry, limits, held
        )
        self._paused_listing = PausedListing(held, auth)
        self._search = ToolSearch(registry, auth)
        self._streams = CallStreams(self._admission, self._responses, registry)
        self._watch = DefinitionsWatch(registry, self._listing, self._gate, limits.max_watchers)

    @property
    def search(self) -> ToolSearch:
        """The tool search SearchTools and the ``search_tools`` tool share."""
        return self._search

    @property
    def watch(self) -> DefinitionsWatch:
        """The definition watchers."""
        return self._watch

    @property
    def paused_batches(self) -> PausedStore:
        """The batches paused and awaiting ResumeBatch."""
        return self._batches.paused

    @property
    def admission(self) -> CallAdmission:
        """The gate, checks and counts every call passes, whichever front it came by."""
        return self._admission

    @property
    def responses(self) -> CallResponses:
        """Checks a result fits a response."""
        return self._responses

    @property
    def in_flight(self) -> int:
        """Calls running now."""
        return self._admission.in_flight

    @property
    def next_call_id(self) -> Callable[[], str]:
        """Makes a fresh id the server logs unexpected failures under."""
        return self._admission.next_call_id

    async def wait_idle(self, poll: float = 0.01) -> None:
        """Return once no call is running or held."""
        await self._admission.wait_idle(poll)

    def add_to(self, server: grpc.aio.Server, tracing: Tracing | None = None) -> None:
        """Serve the ToolService on ``server``, each RPC in a span when ``tracing``."""

        auth = self._auth

        def traced(
            method: str, behavior: Callable[[RequestT, Context], Awaitable[ResponseT]]
        ) -> Callable[[RequestT, Context], Awaitable[ResponseT]]:
            if auth is not None:  # the caller first, before the request is read
                behavior = auth.first(behavior, method)
            return behavior if tracing is None else tracing.unary(_SERVICE, method, behavior)

        def traced_stream(
            method: str, behavior: Callable[[RequestT, Context], AsyncIterator[ResponseT]]
        ) -> Callable[[RequestT, Context], AsyncIterator[ResponseT]]:
            if auth is not None:
                behavior = auth.first_stream(behavior, method)
            return behavior if tracing is None else tracing.stream(_SERVICE, method, behavior)

        def guarded_unary(
            method: str, behavior: Callable[[RequestT, Context], Awaitable[ResponseT]]
        ) -> Callable[[RequestT, Context], Awaitable[ResponseT]]:
            return traced(method, guarded(behavior, method, self._gate))

        add_service(
            server,
            _SERVICE,
            {
                "GetTool": unary(
                    guarded_unary("GetTool", self.get_tool),
                    pb.GetToolRequest.FromString,
                    pb.GetToolResponse.SerializeToString,
                ),
                "CallTool": unary(
                    traced("CallTool", self.call_tool),
                    pb.CallToolRequest.FromString,
                    pb.CallToolResponse.SerializeToString,
                ),
                "ListDefinitionsSorted": unary(
                    guarded_unary("ListDefinitionsSorted", self._listing.list_definitions_sorted),
                    pb.ListDefinitionsSortedRequest.FromString,
                    _as_is,
                ),
                "CallTools": unary(
                    guarded_unary("CallTools", self._batches.call_tools),
                    pb.CallToolsRequest.FromString,
                    pb.CallToolsResponse.SerializeToString,
                ),
                "RunProviderToolCalls": unary(
                    guarded_unary("RunProviderToolCalls", self._batches.run_provider_tool_calls),
                    pb.RunProviderToolCallsRequest.FromString,
                    pb.RunProviderToolCallsResponse.SerializeToString,
                ),
                "ResumeBatch": unary(
                    guarded_unary("ResumeBatch", self._batches.resume_batch),
                    pb.ResumeBatchRequest.FromString,
                    pb.CallToolsResponse.SerializeToString,
                ),
                "ListPausedBatches": unary(
                    guarded_unary("ListPausedBatches", self._paused_listing.list_paused_batches),
                    pb.ListPausedBatchesRequest.FromString,
                    pb.ListPausedBatchesResponse.SerializeToString,
                ),
                "SearchTools": unary(
                    guarded_unary("SearchTools", self._search.search_tools),
                    pb.SearchToolsRequest.FromString,
                    pb.SearchToolsResponse.SerializeToString,
                ),
                "CallToolStream": server_streaming(
                    traced_stream("CallToolStream", self._streams.call_tool_stream),
                    pb.CallToolRequest.FromString,
                    pb.CallToolEvent.SerializeToString,
                ),
                "WatchDefinitions": server_streaming(
                    traced_stream(
                        "WatchDefinitions",
                        guarded_stream(self._watch.watch_definitions, "WatchDefinitions"),
                    ),
                    pb.WatchDefinitionsRequest.FromString,
                    _as_is,
                ),
            },
        )

    async def get_tool(
        self, request: pb.GetToolRequest | MalformedRequest, context: Context
    ) -> pb.GetToolResponse:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        name = request.name
        if not name:
            await abort(context, EMPTY_NAME)
        refusal = self._admission.caller_refusal(context, (name,))
        if refusal is not None:
            await abort(context, refusal)
        found = self._registry.handle.get_tool(name)
        if found is None:
            await abort(context, status_of(ToolServerError.ToolNotFound(name), name))
        return pb.GetToolResponse(definition=definition_message(found[0]))

    async def call_tool(
        self, request: pb.CallToolRequest | MalformedRequest, context: Context
    ) -> pb.CallToolResponse:
        admission = self._admission
        call = admission.admit(request, context)
        if isinstance(call, ErrorStatus):
            call = await admission.admit_or_abort(call, request, context, "CallTool")
        name, input_json, call_id, metadata, deadline, timeout, caller, log_id, started = call
        try:
            output = await self._registry.worker.call_tool_output(
                name,
                input_json,
                call_id=call_id or log_id,
                metadata=metadata,
                deadline=deadline,
                timeout=timeout,
            )
            if type(output) is str and len(output) <= self._output_surely_fits:
                try:  # the common case, inline
                    response = pb.CallToolResponse(output=output)
                except UnicodeEncodeError:
                    response = self._responses.response_of(name, output)  # raises what was wrong
            else:
                response = self._responses.response_of(name, output)
        except BaseException as error:  # a hook or the worker itself failed: never the process
            status = admission.ended(name, call_id or log_id, error, started, caller)
            if status is None:
                raise  # the client cancelled, or its deadline passed
        else:
            admission.finish(name, "OK", started, caller)
            return response
        await abort(context, status)


def _as_is(response: bytes) -> bytes:
    return response


def _deferred(core_tools: Sequence[str]) -> Callable[[str], bool] | None:
    """Which tools the Anthropic formats defer: all but the core ones and ``search_tools``."""
    if not core_tools:
        return None
    core = Globs(tuple(core_tools))
    return lambda name: name != SEARCH_TOOL_NAME and not core.allows(name)
