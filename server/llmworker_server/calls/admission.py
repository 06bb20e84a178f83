"""Letting calls in and counting them out: the drain gate, the checks a call passes, the
caller's token, the in-flight count and its limit, and the call log.

CallTool and CallToolStream run a call in one shape, every step of it here::

    call = admission.admit(request, context)  # counted in flight from here
    if isinstance(call, ErrorStatus):
        call = await admission.admit_or_abort(call, request, context, "CallTool")
    name, input_json, call_id, metadata, deadline, timeout, caller, log_id, started = call
    try:
        ...  # run the call
    except BaseException as error:
        status = admission.ended(name, call_id or log_id, error, started, caller)
        if status is None:
            raise  # nobody is left to answer
    else:
        admission.finish(name, "OK", started, caller)
        return ...
    await abort(context, status)

A batch counts its calls in with ``reserve`` and out with ``release``.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterable
from typing import TypeAlias

from llmworker import CallMetadata
from llmworker._wire import NO_METADATA, ErrorStatus, Reason, shorten
from llmworker.v1 import tool_service_pb2 as pb

from ..ops.call_log import CallLog
from ..rpc.audit import CURRENT_RPC
from ..rpc.auth import Caller, CallerCheck, use_scope
from ..rpc.drain import DrainGate
from ..rpc.handlers import (
    SHUTTING_DOWN,
    CallerContext,
    Context,
    MalformedRequest,
    abort,
    is_requested_cancel,
    malformed_status,
)
from ..state.held import HeldBatch
from .failures import CallFailures
from .limits import CallLimits
from .requests import EMPTY_NAME, call_problem

__all__ = ["AdmittedCall", "CallAdmission"]

AdmittedCall: TypeAlias = tuple[
    str, str, str, CallMetadata, float | None, float | None, str, str, float
]
"""A call that passed the checks: name, input, call id, metadata, the caller's deadline, the
server's timeout, the caller's label ("" when callers are not checked), the id the server
logs it under and its start (``time.perf_counter()``). (A plain tuple: one is made per call,
and a NamedTuple costs 5x more.)"""


class CallAdmission:
    """The calls of one ToolService: admitted within ``limits``, counted while in flight,
    logged to ``call_log`` when they end, their failures answered by ``failures``."""

    def __init__(
        self,
        limits: CallLimits,
        failures: CallFailures,
        call_log: CallLog | None,
        gate: DrainGate,
        auth: CallerCheck | None,
    ) -> None:
        self._limits = limits
        self._failures = failures
        self._call_log = call_log
        self._gate = gate
        self._auth = auth
        self._in_flight = 0
        self._call_ids = itertools.count()
        # Characters that fit every input limit even at 4 bytes each: one comparison per call.
        self._surely_fits = (
            min([limits.max_input_bytes, *limits.tool_max_input_bytes.values()]) // 4
        )

    @property
    def in_flight(self) -> int:
        """Calls running now."""
        return self._in_flight

    @property
    def call_log(self) -> CallLog | None:
        """Where ended calls are logged (None: nowhere); a batch logs each of its calls."""
        return self._call_log

    def admit(
        self,
        request: pb.CallToolRequest | MalformedRequest,
        context: CallerContext,
        *,
        held: bool = False,
        caller: Caller | None = None,
    ) -> AdmittedCall | ErrorStatus:
        """The call ``request`` asks for, counted in flight, once every check passed
        (``finish`` or ``ended`` counts it out); else the refusal: SHUTTING_DOWN while the
        server drains (``admit_or_abort`` waits at the gate, then admits it ``held``), a
        malformed request, no name, a caller without a token for the tool, an input too
        large, a bad call id or metadata, too many calls in flight.

        ``caller`` is one its transport authenticated already (the MCP front: a bearer or
        an OAuth token): its scope is checked and its label logged instead of ``context``'s
        token, even on a server without ``--auth-tokens``."""
        if self._gate.closed and not held:
            return SHUTTING_DOWN
        if isinstance(request, MalformedRequest):
            return malformed_status(request)
        name = request.name
        if not name:
            return EMPTY_NAME
        label = ""
        if caller is not None:
            if not caller.scope.allows(name):
                return caller.scope.forbidden(name, caller)
            use_scope(caller.scope)
            label = caller.label
        elif self._auth is not None:
            admitted = self._auth.admit(context, (name,))
            if isinstance(admitted, ErrorStatus):
                return admitted
            label = admitted.label
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
        remaining = context.time_remaining()  # None without a deadline, though typed float
        timeout = self._limits.server_timeout(name, remaining)
        deadline = (  # no typing.cast: that would be one more function call per call
            None
            if remaining is None  # pyright: ignore[reportUnnecessaryComparison]
            else time.monotonic() + remaining
        )
        self._in_flight += 1
        return (
            name,
            input_json,
            call_id,
            frozen,
            deadline,
            timeout,
            label,
            str(next(self._call_ids)),
            time.perf_counter(),
        )

    async def admit_or_abort(
        self,
        refusal: ErrorStatus,
        request: pb.CallToolRequest | MalformedRequest,
        context: Context,
        rpc: str,
    ) -> AdmittedCall:
        """What follows ``admit`` refusing ``request`` to ``rpc``: while the server drains,
        the call waits at the gate and is admitted once let through; any other refusal ends
        it."""
        CURRENT_RPC.set(rpc)
        if refusal is SHUTTING_DOWN and await self._gate.hold():
            call = self.admit(request, context, held=True)
            if not isinstance(call, ErrorStatus):
                return call
            refusal = call
        await abort(context, refusal)

    def finish(
        self, name: str, label: str, started: float, caller: str, transport: str = "grpc"
    ) -> None:
        """A call counted in by ``admit`` ended as ``label`` (OK, CANCELLED or a code name);
        ``caller`` is the label of the caller's token, if any; it came over ``transport``
        (grpc, mcp)."""
        self._in_flight -= 1
        if self._call_log is not None:
            self._call_log.record(name, label, started, caller, transport)

    def ended(
        self,
        name: str,
        log_id: str,
        error: BaseException,
        started: float,
        caller: str,
        stream: bool = False,
        transport: str = "grpc",
    ) -> ErrorStatus | None:
        """``finish`` for a call that raised ``error``: the status answering it (logged
        under ``log_id`` when unexpected), or None, to raise ``error`` again, when nobody is
        left to answer (the client cancelled, its deadline passed, a ``stream``'s reader
        left: gRPC closed it with ``GeneratorExit``, which from a unary call is a hook's
        defect and answered as one)."""
        status: ErrorStatus | None = None
        try:
            if not (stream and isinstance(error, GeneratorExit)) and not (
                isinstance(error, asyncio.CancelledError) and is_requested_cancel()
            ):  # a CancelledError nobody asked for is a hook's defect, answered as a crash
                status = self._failures.status_for(name, log_id, error)
        finally:
            label = "CANCELLED" if status is None else status.code.name
            self.finish(name, label, started, caller, transport)
        return status

    def reserve(self, calls: int, name: str) -> ErrorStatus | None:
        """Count ``calls`` in flight, or the refusal when they would pass the limit."""
        if self._in_flight + calls > self._limits.max_concurrent_calls:
            return self._over_limit(name, calls)
        self._in_flight += calls
        return None

    def release(self, calls: int) -> None:
        """``calls`` counted in by ``reserve`` ended."""
        self._in_flight -= calls

    def next_call_id(self) -> str:
        """A fresh id the server logs unexpected failures under."""
        return str(next(self._call_ids))

    async def wait_idle(self, poll: float = 0.01) -> None:
        """Return once no call is running or held (polled: the call path stays free of it)."""
        while self._in_flight or self._gate.held:  # noqa: ASYNC110 - an Event would cost every call a set/clear
            await asyncio.sleep(poll)

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

    def resumer_of(self, context: Context, held: HeldBatch) -> str | ErrorStatus:
        """The label of a caller that may resume ``held`` ("" when callers are not
        checked): the caller that paused it, within its scope, or an approver whose
        ``approves`` globs match every pending call's tool; else why not."""
        if self._auth is None:
            return ""
        if held.owner:
            caller = self._auth.caller(context)
            if isinstance(caller, ErrorStatus):
                return caller
            if caller.label != held.owner:
                pending = [call.name for call in held.paused.pending_calls]
                approves = caller.approves
                if approves is not None and all(approves.allows(name) for name in pending):
                    use_scope(caller.scope)
                    return caller.label
                return _resume_forbidden(caller.label, held.owner, pending)
        return self.caller_of(context, held.names.values())

    def _over_limit(self, name: str, calls: int) -> ErrorStatus:
        limit = self._limits.max_concurrent_calls
        more = "" if calls == 1 else f" and this batch has {calls} calls"
        return ErrorStatus.of(
            Reason.CONCURRENCY_LIMIT,
            f"{self._in_flight} calls are in flight{more}, the server's limit is {limit}; "
            "retry with backoff, send smaller batches, or raise --max-concurrent-calls",
            tool=shorten(name),
        )


def _resume_forbidden(caller: str, owner: str, tools: list[str]) -> ErrorStatus:
    shown = shorten(", ".join(sorted(set(tools))), 200)
    return ErrorStatus.of(
        Reason.RESUME_FORBIDDEN,
        f"the token labelled '{caller}' may not resume this batch: the caller '{owner}' "
        f"paused it, and only it, or a token whose approves globs match its pending tools "
        f"({shown}), may decide it; nothing ran and the batch stays resumable by its owner",
        tool=shorten(tools[0]) if tools else "",
    )
