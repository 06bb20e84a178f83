"""The public ``llmworker.v1.ToolService``: GetTool, CallTool, ListDefinitionsSorted,
(through ``BatchCalls``) CallTools, ResumeBatch and RunProviderToolCalls, and (through
``CallStreams``) CallToolStream, and (through ``DefinitionsWatch``) WatchDefinitions."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Final, TypeVar, cast

import grpc.aio

from llmworker import (
    CallMetadata,
    ToolBatchAborted,
    ToolCallPaused,
    ToolError,
    ToolOutput,
    ToolServerError,
    canonical_json,
)
from llmworker._wire import (
    NO_METADATA,
    ErrorStatus,
    Reason,
    definition_message,
    message_of,
    shorten,
    status_of,
)
from llmworker.v1 import tool_service_pb2 as pb

from ..ops.call_log import CallLog
from ..registry.registry import Registry
from ..rpc.auth import CallerCheck
from ..rpc.drain import DrainGate
from ..rpc.failure_log import FailureLog, unexpected_cause
from ..rpc.handlers import (
    SHUTTING_DOWN,
    Context,
    MalformedRequest,
    abort,
    abort_malformed,
    add_service,
    guarded,
    guarded_stream,
    is_requested_cancel,
    malformed_status,
    server_streaming,
    unary,
)
from .batches import BatchCalls
from .limits import CallLimits
from .listing import DefinitionListing
from .paused_batches import PausedBatches
from .requests import AdmittedCall, aborted_status, call_problem
from .stream import CallStreams
from .watch import DefinitionsWatch

if TYPE_CHECKING:  # imported with --otel only
    from ..ops.tracing import Tracing

__all__ = ["ToolService"]

RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT")

_SERVICE: Final = "llmworker.v1.ToolService"
_EMPTY_NAME: Final = ErrorStatus.of(
    Reason.INVALID_REQUEST, "the tool name is empty; pass a name from ListDefinitionsSorted"
)


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
        paused: PausedBatches | None = None,
        auth: CallerCheck | None = None,
    ) -> None:
        self._registry = registry
        self._limits = limits
        self._call_log = call_log
        self._redact = redact_errors
        self._failures = FailureLog()
        self._in_flight = 0
        self._gate = gate or DrainGate()
        # Characters that fit every input limit even at 4 bytes each: one comparison per call.
        self._surely_fits = (
            min([limits.max_input_bytes, *limits.tool_max_input_bytes.values()]) // 4
        )
        self._output_surely_fits = limits.max_output_bytes // 4
        self._call_ids = itertools.count()
        self._auth = auth
        self._listing = DefinitionListing(registry, auth)
        held = paused if paused is not None else PausedBatches(900.0, 1000)
        self._batches = BatchCalls(self, registry, held)
        self._streams = CallStreams(self)
        self._watch = DefinitionsWatch(registry, self._listing, self._gate, limits.max_watchers)

    @property
    def registry(self) -> Registry:
        return self._registry

    @property
    def limits(self) -> CallLimits:
        return self._limits

    @property
    def call_log(self) -> CallLog | None:
        return self._call_log

    @property
    def watch(self) -> DefinitionsWatch:
        """The definition watchers."""
        return self._watch

    @property
    def paused_batches(self) -> PausedBatches:
        """The batches paused and awaiting ResumeBatch."""
        return self._batches.paused

    def add_to(self, server: grpc.aio.Server, tracing: Tracing | None = None) -> None:
        """Serve the ToolService on ``server``, each RPC in a span when ``tracing``."""

        def traced(
            method: str, behavior: Callable[[RequestT, Context], Awaitable[ResponseT]]
        ) -> Callable[[RequestT, Context], Awaitable[ResponseT]]:
            return behavior if tracing is None else tracing.unary(_SERVICE, method, behavior)

        def traced_stream(
            method: str, behavior: Callable[[RequestT, Context], AsyncIterator[ResponseT]]
        ) -> Callable[[RequestT, Context], AsyncIterator[ResponseT]]:
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

    @property
    def in_flight(self) -> int:
        """Calls running now."""
        return self._in_flight

    def reserve(self, calls: int, name: str) -> ErrorStatus | None:
        """Count ``calls`` in flight, or the refusal when they would pass the limit."""
        if self._in_flight + calls > self._limits.max_concurrent_calls:
            return self._over_limit(name, calls)
        self._in_flight += calls
        return None

    def release(self, calls: int) -> None:
        self._in_flight -= calls

    def next_call_id(self) -> str:
        """A fresh id the server logs unexpected failures under."""
        return str(next(self._call_ids))

    async def wait_idle(self, poll: float = 0.01) -> None:
        """Return once no call is running or held (polled: the call path stays free of it)."""
        while self._in_flight or self._gate.held:  # noqa: ASYNC110 - an Event would cost every call a set/clear
            await asyncio.sleep(poll)

    async def get_tool(
        self, request: pb.GetToolRequest | MalformedRequest, context: Context
    ) -> pb.GetToolResponse:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        name = request.name
        if not name:
            await abort(context, _EMPTY_NAME)
        refusal = self.caller_refusal(context, (name,))
        if refusal is not None:
            await abort(context, refusal)
        found = self._registry.handle.get_tool(name)
        if found is None:
            await abort(context, status_of(ToolServerError.ToolNotFound(name), name))
        return pb.GetToolResponse(definition=definition_message(found[0]))

    async def call_tool(
        self, request: pb.CallToolRequest | MalformedRequest, context: Context
    ) -> pb.CallToolResponse:
        if self._gate.closed and not await self._gate.hold():
            await abort(context, SHUTTING_DOWN)
        call = self.admit(request, context)
        if isinstance(call, ErrorStatus):
            await abort(context, call)
        name, input_json, call_id, metadata, deadline, timeout, caller = call
        log_id, started = self.start()
        label = "CANCELLED"  # unless the call ends: the client went away or its deadline passed
        status: ErrorStatus | None = None
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
                    response = self.response_of(name, output)  # raises what the tool did wrong
            else:
                response = self.response_of(name, output)
            label = "OK"
            return response
        except asyncio.CancelledError as error:
            if is_requested_cancel():
                raise  # the client cancelled, or its deadline passed
            status = self.crashed(name, call_id or log_id, error)  # nobody asked: a hook's defect
        except BaseException as error:  # a hook or the worker itself failed: never the process
            status = self.status_for(name, call_id or log_id, error)  # the tool's id
        finally:
            self.finish(name, label if status is None else status.code.name, started, caller)
        assert status is not None  # set on every path that neither returned nor raised
        await abort(context, status)

    def admit(
        self, request: pb.CallToolRequest | MalformedRequest, context: Context
    ) -> AdmittedCall | ErrorStatus:
        """The call ``request`` asks for once every check passed, else the refusal: a
        malformed request, no name, an input too large, a bad call id or metadata, too many
        calls in flight, a caller without a token for the tool. (The caller waits at the
        drain gate first.)"""
        if isinstance(request, MalformedRequest):
            return malformed_status(request)
        name = request.name
        if not name:
            return _EMPTY_NAME
        caller = ""
        if self._auth is not None:
            admitted = self._auth.admit(context, (name,))
            if isinstance(admitted, ErrorStatus):
                return admitted
            caller = admitted.label
        input_json = request.input_json
        if len(input_json) > self._surely_fits:  # else the input fits every limit
            too_large = self._limits.input_too_large(name, input_json)
            if too_large is not None:
                return too_large
        call_id, metadata = request.call_id, request.metadata
        frozen = NO_METADATA
        if call_id or metadata:  # rare: checked only when present
            problem = call_problem(request)
            if problem is not None:
                return problem
            frozen = CallMetadata(dict(metadata)) if metadata else NO_METADATA
        if self._in_flight >= self._limits.max_concurrent_calls:
            return self._over_limit(name, 1)
        remaining = cast("float | None", context.time_remaining())  # None: no deadline
        timeout = self._limits.server_timeout(name, remaining)
        deadline = None if remaining is None else time.monotonic() + remaining
        return name, input_json, call_id, frozen, deadline, timeout, caller

    def caller_refusal(self, context: Context, tools: Iterable[str]) -> ErrorStatus | None:
        """Why the caller may not use ``tools`` when the server checks callers, or None."""
        admitted = self.caller_of(context, tools)
        return admitted if isinstance(admitted, ErrorStatus) else None

    def caller_of(self, context: Context, tools: Iterable[str]) -> str | ErrorStatus:
        """The label of a caller that may use ``tools`` ("" when callers are not checked),
        or why it may not."""
        if self._auth is None:
            return ""
        admitted = self._auth.admit(context, tools)
        return admitted if isinstance(admitted, ErrorStatus) else admitted.label

    @property
    def gate(self) -> DrainGate:
        """Where calls wait while the server drains."""
        return self._gate

    def status_for(self, name: str, log_id: str, error: BaseException) -> ErrorStatus:
        """The status answering what a call to ``name`` raised (logged under ``log_id``
        when unexpected)."""
        if isinstance(error, ToolServerError):
            return self.failed(name, log_id, error)
        if isinstance(error, ToolCallPaused):
            return _paused_status(name, error)
        if isinstance(error, ToolBatchAborted):
            return aborted_status(error, name)
        return self.crashed(name, log_id, error)

    def start(self) -> tuple[str, float]:
        """Count a call in flight: its log id and start time (``finish`` ends it)."""
        self._in_flight += 1
        return str(next(self._call_ids)), time.perf_counter()

    def finish(self, name: str, label: str, started: float, caller: str = "") -> None:
        """A call counted by ``start`` ended as ``label`` (OK, CANCELLED or a code name);
        ``caller`` is the label of the caller's token, if any."""
        self._in_flight -= 1
        if self._call_log is not None:
            self._call_log.record(name, label, started, caller)

    def response_of(self, name: str, output: str | ToolOutput) -> pb.CallToolResponse:
        """The response carrying a result; ``ToolServerError`` (the tool's internal error)
        when it is too large or not Unicode."""
        if isinstance(output, str):
            text, structured = output, ""
        else:
            text, structured = _parts(name, output)
        if len(text) + len(structured) > self._output_surely_fits:
            self._check_output_size(name, text + structured)
        try:
            if not structured:
                return pb.CallToolResponse(output=text)
            return pb.CallToolResponse(output=text, structured_output_json=structured)
        except UnicodeEncodeError as error:
            failure = _not_unicode(name, error)
            raise failure from failure.__cause__

    def _check_output_size(self, name: str, output: str) -> None:
        size, limit = len(output.encode(errors="replace")), self._limits.max_output_bytes
        if size > limit:
            raise _tool_internal(
                f"the result of '{shorten(name)}' is {size} bytes, over the {limit} a response "
                "may carry (--max-message-bytes); return less, or raise the limit on the "
                "server and its clients"
            )

    def failed(self, name: str, call_id: str, error: ToolError | ToolServerError) -> ErrorStatus:
        """The status answering ``error`` from a call to ``name``; an unexpected failure
        behind it is logged under ``call_id``."""
        try:
            return self._answer(name, call_id, error)
        except BaseException as problem:  # what the tool raised defeats the mapping: still answer
            return self.crashed(name, call_id, problem)

    def _answer(self, name: str, call_id: str, error: ToolError | ToolServerError) -> ErrorStatus:
        if isinstance(error, ToolServerError.ToolTimeout):  # only the server's timeouts
            return _timed_out(name, error.seconds)
        status = status_of(error, name)
        cause = unexpected_cause(error)
        if cause is None:
            return status
        self._failures.report(name, call_id, cause)
        metadata = {**status.metadata, "call_id": call_id}
        if not self._redact:
            return ErrorStatus(status.code, status.reason, status.message, metadata)
        hidden = f"the tool failed unexpectedly; the server logged it as call_id={call_id}"
        metadata["tool_error"] = hidden
        return ErrorStatus(status.code, status.reason, f"Tool execution failed: {hidden}", metadata)

    def crashed(self, name: str, call_id: str, error: BaseException) -> ErrorStatus:
        """The status answering a crash in a hook or the worker, logged under ``call_id``."""
        self._failures.report(name, call_id, error)
        detail = "" if self._redact else f": {type(error).__name__}: {message_of(error)}"
        return ErrorStatus.of(
            Reason.TOOL_INTERNAL,
            f"the call to '{shorten(name)}' failed inside the server{detail}; the server "
            f"logged it as call_id={call_id}",
            tool=shorten(name),
            call_id=call_id,
        )

    def _over_limit(self, name: str, calls: int) -> ErrorStatus:
        limit = self._limits.max_concurrent_calls
        more = "" if calls == 1 else f" and this batch has {calls} calls"
        return ErrorStatus.of(
            Reason.CONCURRENCY_LIMIT,
            f"{self._in_flight} calls are in flight{more}, the server's limit is {limit}; "
            "retry with backoff, send smaller batches, or raise --max-concurrent-calls",
            tool=shorten(name),
        )


def _parts(name: str, output: ToolOutput) -> tuple[str, str]:
    if output.structured is None:
        return output.text, ""
    try:
        return output.text, canonical_json(output.structured).decode()
    except (TypeError, ValueError) as error:
        raise _tool_internal(
            f"the structured result of '{shorten(name)}' is not JSON ({error}); return a JSON "
            "object"
        ) from None


def _paused_status(name: str, paused: ToolCallPaused) -> ErrorStatus:
    if paused.paused.awaiting_approval:
        return ErrorStatus.of(
            Reason.APPROVAL_REQUIRED,
            f"Tool '{shorten(name)}' requires approval; send the call with CallTools, which "
            "pauses for a person's decision and goes on with ResumeBatch",
            tool=shorten(name),
        )
    return ErrorStatus.of(
        Reason.HOOK_ABORTED,
        f"a pre-tool-call hook paused the call to '{shorten(name)}'; a paused call resumes "
        "only in a batch: send it with CallTools",
        tool=shorten(name),
    )


def _not_unicode(name: str, error: UnicodeEncodeError) -> ToolServerError:
    return _tool_internal(
        f"the result of '{shorten(name)}' is not valid Unicode text ({error.reason} at "
        f"character {error.start}); return text that encodes as UTF-8"
    )


def _tool_internal(message: str) -> ToolServerError:
    """A result the server cannot send, reported as the tool's internal error."""
    internal = ToolError.Internal(message)
    error = ToolServerError.ToolExecution(str(internal))
    error.__cause__ = internal
    return error


def _timed_out(name: str, timeout: float) -> ErrorStatus:
    return ErrorStatus.of(
        Reason.TOOL_TIMEOUT,
        f"Tool '{shorten(name)}' did not finish within {timeout:.3g} s, the server's timeout "
        "for it; raise --call-timeout or --tool-timeout, or make the tool faster",
        tool=shorten(name),
    )


def _as_is(response: bytes) -> bytes:
    return response
