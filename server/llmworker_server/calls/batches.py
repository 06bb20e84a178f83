"""CallTools and ResumeBatch: one model turn's calls as a batch, paused for approval.

A batch runs exactly as ``Worker.call_tools`` on the server's worker. A paused one is held
in the ``PausedStore`` under a single-use token until ResumeBatch brings the decisions; the
store's claim makes one resume of it run, on whichever process it reaches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Final

from llmworker import (
    BatchOutcome,
    Completed,
    Decision,
    DefinitionFormat,
    Deny,
    Paused,
    ToolBatchAborted,
    ToolCall,
    ToolResult,
    tool_calls_from,
)
from llmworker._wire import ErrorStatus, Reason, definition_format
from llmworker.v1 import tool_service_pb2 as pb

from ..registry.registry import Registry
from ..rpc.audit import AUDIT
from ..rpc.handlers import Context, MalformedRequest, abort, abort_malformed
from ..state.held import HeldBatch
from ..state.store import Found, PausedStore, StateUnavailable
from .admission import CallAdmission
from .batch_messages import BatchMessages
from .decisions import decision_name, decisions_of
from .failures import CallFailures
from .limits import CallLimits
from .not_held import not_held, state_unavailable
from .requests import aborted_status, batch_problem, call_metadata, invalid
from .responses import CallResponses

__all__ = ["BatchCalls"]

_log = logging.getLogger("llmworker.server.batches")

_DRAFT_ID: Final = "0" * 16
_DRAFT_TOKEN: Final = "x" * 64  # no token is longer: a draft answer is as large as the real one


class BatchCalls:
    """The batch RPCs of a ToolService: its calls admitted and counted by ``admission``,
    their results sent as ``responses`` and ``failures`` make them, paused batches held in
    ``paused``."""

    def __init__(
        self,
        admission: CallAdmission,
        failures: CallFailures,
        responses: CallResponses,
        registry: Registry,
        limits: CallLimits,
        paused: PausedStore,
    ) -> None:
        self._admission = admission
        self._failures = failures
        self._responses = responses
        self._registry = registry
        self._limits = limits
        self._paused = paused
        self._messages = BatchMessages(admission, failures, responses, limits)

    @property
    def paused(self) -> PausedStore:
        return self._paused

    async def call_tools(
        self, request: pb.CallToolsRequest | MalformedRequest, context: Context
    ) -> pb.CallToolsResponse:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        return await self._start(request, context, None)

    async def run_provider_tool_calls(
        self, request: pb.RunProviderToolCallsRequest | MalformedRequest, context: Context
    ) -> pb.RunProviderToolCallsResponse:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        batch, form, problem = self._provider_batch(request)
        if problem is not None:
            await abort(context, problem)
        assert form is not None
        response = await self._start(batch, context, form)
        if response.WhichOneof("outcome") == "paused":
            return pb.RunProviderToolCallsResponse(paused=response.paused)
        message = response.completed.results_message_json
        return pb.RunProviderToolCallsResponse(results_message_json=message)

    def _provider_batch(
        self, request: pb.RunProviderToolCallsRequest
    ) -> tuple[pb.CallToolsRequest, DefinitionFormat | None, ErrorStatus | None]:
        """The CallTools batch a provider's model output holds, or the refusal."""
        empty = pb.CallToolsRequest()
        try:
            form = definition_format(request.format)
        except ValueError as error:
            return empty, None, invalid(str(error))
        if form is None:
            return empty, None, invalid("set format: the provider format of model_output_json")
        output = request.model_output_json
        too_large = self._limits.input_too_large("RunProviderToolCalls", output)
        if too_large is not None:
            return empty, None, too_large
        try:
            calls = tool_calls_from(form, output)
        except ValueError as error:
            return empty, None, invalid(str(error))
        if not calls:
            return (
                empty,
                None,
                invalid(
                    f"model_output_json holds no {form.value} tool calls; send the model's "
                    "response only when it calls tools"
                ),
            )
        metadata = dict(request.metadata)
        messages = [
            pb.CallToolRequest(
                call_id=call.id, name=call.name, input_json=call.input_json, metadata=metadata
            )
            for call in calls
        ]
        return pb.CallToolsRequest(calls=messages), form, None

    async def _start(
        self, request: pb.CallToolsRequest, context: Context, form: DefinitionFormat | None
    ) -> pb.CallToolsResponse:
        caller = self._admission.caller_of(context, (message.name for message in request.calls))
        if isinstance(caller, ErrorStatus):
            await abort(context, caller)
        problem = batch_problem(request, self._limits)
        if problem is not None:
            await abort(context, problem)
        remaining = context.time_remaining()
        limits = self._limits
        calls = [
            ToolCall(
                message.call_id,
                message.name,
                message.input_json,
                call_metadata(message),
                *limits.limits_of(message.name, remaining),
            )
            for message in request.calls
        ]
        names = {call.id: call.name for call in calls}
        refused = self._admission.reserve(len(calls), calls[0].name)
        if refused is not None:
            await abort(context, refused)
        size = request.ByteSize()
        return await self._run(context, len(calls), names, size, calls, None, form, caller, caller)

    async def _find(self, request: pb.ResumeBatchRequest, context: Context) -> HeldBatch:
        if request.resume_token and request.batch_id:
            await abort(context, invalid("set resume_token or batch_id, not both"))
        try:
            if request.batch_id:
                found = await self._paused.find_id(request.batch_id[:64])
            else:
                found = await self._paused.find(request.resume_token)
        except StateUnavailable as error:
            await abort(context, state_unavailable(error))
        if not isinstance(found, HeldBatch):
            await abort(context, not_held(found, self._paused.replica))
        return found

    async def _claim(self, held: HeldBatch, decisions: Mapping[str, Decision]) -> Found | None:
        """Spend ``held`` for this resume: None, or what it turned out to be (another resume
        claimed it first, or it expired)."""
        awaiting = set(held.paused.awaiting_approval)
        may_run = [
            call.id
            for call in held.paused.pending_calls
            if not isinstance(decisions.get(call.id), Deny)
            and (call.id not in awaiting or call.id in decisions)
        ]
        if await self._paused.claim(held.batch_id, may_run):
            return None
        return await self._paused.find_id(held.batch_id)

    async def resume_batch(
        self, request: pb.ResumeBatchRequest | MalformedRequest, context: Context
    ) -> pb.CallToolsResponse:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        held = await self._find(request, context)
        caller = self._admission.resumer_of(context, held)
        if isinstance(caller, ErrorStatus):
            await abort(context, caller)  # the token stays usable by its caller
        decisions, problem = decisions_of(request, held, self._limits)
        if problem is not None:
            await abort(context, problem)  # the token stays usable
        pending = len(held.paused.pending_calls)
        refused = self._admission.reserve(pending, held.paused.paused_call.name)
        if refused is not None:
            await abort(context, refused)  # the token stays usable: retry later
        try:
            lost = await self._claim(held, decisions)
        except BaseException as error:  # the store down, or the RPC cancelled meanwhile
            self._admission.release(pending)
            if isinstance(error, StateUnavailable):
                await abort(context, state_unavailable(error))
            raise
        if lost is not None:
            self._admission.release(pending)
            await abort(context, not_held(lost, self._paused.replica))
        for call in held.paused.pending_calls:
            decision = decisions.get(call.id)
            if decision is not None:
                name = decision_name(decision)
                AUDIT.decided(held.batch_id, call.id, call.name, name, held.owner)
        remaining = context.time_remaining()
        for call in held.paused.pending_calls:  # the deadlines start again now
            call.deadline, call.timeout = self._limits.limits_of(call.name, remaining)
        size = held.size + request.ByteSize()
        return await self._run(
            context,
            pending,
            held.names,
            size,
            held.paused,
            decisions,
            held.form,
            caller,
            held.owner,
            held.batch_id,
        )

    async def _run(
        self,
        context: Context,
        count: int,
        names: dict[str, str],
        size: int,
        work: list[ToolCall] | Paused,
        decisions: Mapping[str, Decision] | None,
        form: DefinitionFormat | None,
        caller: str,
        owner: str,
        resumed: str | None = None,
    ) -> pb.CallToolsResponse:
        """Run or resume (the claimed batch ``resumed``) the batch, its ``count`` calls
        already reserved (released here), for the caller labelled ``caller``; a batch that
        pauses stays ``owner``'s, and replaces the one it resumed."""
        started = time.perf_counter()
        worker = self._registry.worker
        try:
            if isinstance(work, Paused):
                outcome: BatchOutcome = await worker.resume(work, decisions)
            else:
                outcome = await worker.call_tools(work)
        except BaseException as error:
            if resumed is not None:
                await self._ended_early(resumed, error)
            if isinstance(error, ToolBatchAborted):
                await abort(context, aborted_status(error, ""))
            raise
        finally:
            self._admission.release(count)
        if isinstance(outcome, Completed):
            if resumed is not None:
                await self._settle(self._paused.finish, resumed)
            self._log(outcome.results, names, started, caller)
            completed = self._messages.completed(outcome.results, names)
            if form is not None:  # the batch came from RunProviderToolCalls
                completed.results_message_json = self._messages.provider_message(
                    form, outcome.results, names
                )
            return pb.CallToolsResponse(completed=completed)
        return await self._hold(context, outcome, names, size, form, owner, resumed)

    async def _hold(
        self,
        context: Context,
        outcome: Paused,
        names: dict[str, str],
        size: int,
        form: DefinitionFormat | None,
        owner: str,
        resumed: str | None,
    ) -> pb.CallToolsResponse:
        """Keep a batch that paused (again, when it is the claimed batch ``resumed``: nothing
        of it ran, so a refusal here gives the claim back) and answer its token."""
        now = time.time()
        draft = HeldBatch(_DRAFT_ID, outcome, names, size, now, now + self._paused.ttl, form, owner)
        message = self._messages.paused(_DRAFT_TOKEN, draft)
        if message.ByteSize() > self._limits.max_output_bytes - 8:
            await self._give_back(resumed)
            await abort(
                context,
                invalid(
                    f"the paused batch is {message.ByteSize()} bytes, more than a response may "
                    "carry (--max-message-bytes); nothing ran: send fewer or smaller calls"
                ),
            )
        try:
            held = await self._paused.hold(
                outcome,
                names,
                size,
                resumed=resumed is not None,
                form=form,
                owner=owner,
                replaces=resumed,
            )
        except StateUnavailable as error:
            await self._give_back(resumed)
            await abort(context, state_unavailable(error))
        except BaseException:
            await self._give_back(resumed)
            raise
        if held is None:
            await abort(context, await self._full())
        token, record = held
        message.resume_token, message.batch_id = token, record.batch_id
        message.expire_time.FromNanoseconds(int(record.expires_at * 1e9))
        return pb.CallToolsResponse(paused=message)

    async def _ended_early(self, batch_id: str, error: BaseException) -> None:
        """A resume of ``batch_id`` raised: a pre-hook's abort ran nothing, so the batch is
        over; otherwise (the client gone, a post-hook's abort) calls may have run, and the
        claim stays, answering BATCH_INTERRUPTED, so nothing runs twice."""
        if isinstance(error, ToolBatchAborted) and not error.after_execution:
            await self._settle(self._paused.forget, batch_id)
        else:
            _log.warning(
                "the resume of batch %s ended early (%s); it stays interrupted until it expires",
                batch_id,
                type(error).__name__,
            )

    async def _give_back(self, resumed: str | None) -> None:
        if resumed is not None:
            await self._settle(self._paused.release, resumed)

    async def _settle(self, step: Callable[[str], Awaitable[None]], batch_id: str) -> None:
        """Run ``step`` (finish, forget, release) on a claimed batch, shielded from the
        caller's cancellation; one the store cannot reach now stays claimed (interrupted)
        until it expires."""
        try:
            await asyncio.shield(step(batch_id))
        except StateUnavailable as error:
            _log.warning("batch %s stays claimed until it expires: %s", batch_id, error)

    async def _full(self) -> ErrorStatus:
        with contextlib.suppress(StateUnavailable):
            await self._paused.refresh()
        return ErrorStatus.of(
            Reason.PAUSED_BATCHES_FULL,
            f"the store {self._paused.describe()} holds {self._paused.count} paused batches "
            f"(--max-paused-batches {self._paused.limit}, {self._paused.max_bytes} bytes of "
            "requests at most); nothing ran: resume or abandon "
            "paused batches, retry later, or raise the limit",
        )

    def _log(
        self, results: list[ToolResult], names: dict[str, str], started: float, caller: str
    ) -> None:
        log = self._admission.call_log
        if log is None:
            return
        for result in results:
            label = "OK" if not result.is_error else "ERROR"
            log.record(names.get(result.call_id, ""), label, started, caller)
