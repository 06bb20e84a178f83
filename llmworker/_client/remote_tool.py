"""RemoteTool: a Tool whose calls run on a remote ToolService (a provider's tool, as the
server forwards it), unary or streamed."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import grpc.aio

from .._model.decisions import Approve
from .._model.errors import RemoteServiceError, ToolError
from .._model.outcomes import Paused
from .._model.text import shorten
from .._model.tool import ToolOutput
from .._runtime.context import CURRENT_CALL
from .._runtime.streaming import OutputChunk, Progress
from .._wire.status import CODES, TABLE_REASONS, Reason, table_reason, tool_error_from_rpc
from .._wire.stubs import CALL_TOOL, CALL_TOOL_STREAM, CALL_TOOLS, RESUME_BATCH, bind
from ..v1 import tool_service_pb2 as pb
from .batch import outcome_of, received_attachments, resume_request, structured_of
from .stream import event_of

__all__ = ["RemoteTool", "output_of"]


class RemoteTool:
    """A Tool whose ``execute`` runs the tool ``name`` on a remote ToolService.

    A tool's own error comes back as the same ``ToolError`` variant; a failure of the remote
    service (unreachable, timed out, overloaded) raises ``RemoteServiceError``. With
    ``approved_upstream`` (the tool requires approval, and the server forwarding to it has
    had the call approved) the call goes as a one-call batch whose approval pause is
    approved at once: the remote server would refuse a unary call to such a tool.
    """

    __slots__ = (
        "_approved_upstream",
        "_call",
        "_call_tools",
        "_resume",
        "_stream",
        "_timeout",
        "name",
    )

    def __init__(
        self,
        channel: grpc.aio.Channel,
        name: str,
        timeout: float | None = None,
        *,
        approved_upstream: bool = False,
    ) -> None:
        self.name: str = name
        self._timeout = timeout
        self._approved_upstream = approved_upstream
        self._call = bind(CALL_TOOL, channel)
        self._call_tools = bind(CALL_TOOLS, channel)
        self._resume = bind(RESUME_BATCH, channel)
        self._stream = bind(CALL_TOOL_STREAM, channel)

    async def execute(self, input_json: str) -> str | ToolOutput:
        """Run the remote tool; the call's id, metadata and deadline (``current_call()``)
        go with it."""
        request, timeout = self._request(input_json)
        try:
            if self._approved_upstream:
                return await self._approved(request, timeout)
            response = await self._call(request, timeout=timeout)
        except grpc.aio.AioRpcError as rpc_error:
            raise self._failure(rpc_error) from None
        return output_of(response)

    async def stream(self, input_json: str) -> AsyncIterator[str | ToolOutput]:
        """Run the remote tool as a stream (CallToolStream): its chunks come through, its
        progress goes to the current call, and its result ends the stream. A provider that
        does not serve CallToolStream is called with CallTool instead."""
        if self._approved_upstream:  # a batch, which does not stream
            yield _as_output(await self.execute(input_json))
            return
        request, timeout = self._request(input_json)
        context = CURRENT_CALL.get(None)
        call = self._stream(request, timeout=timeout)
        received = False
        try:
            async for wire_event in call:
                received = True
                event = event_of(wire_event)
                if isinstance(event, Progress):
                    if context is not None:
                        context.report_progress(event.progress, event.total, event.message)
                elif isinstance(event, OutputChunk):
                    yield event.text
                elif event is not None:
                    yield event
        except grpc.aio.AioRpcError as rpc_error:
            if rpc_error.code() != grpc.StatusCode.UNIMPLEMENTED or received:
                raise self._failure(rpc_error) from None
            unary = True  # an older provider: no CallToolStream
        else:
            unary = False
        finally:
            call.cancel()
        if unary:
            yield _as_output(await self.execute(input_json))

    def _request(self, input_json: str) -> tuple[pb.CallToolRequest, float | None]:
        """The request for a call, carrying the current call's id and metadata, and the
        timeout: the handle's, or what is left of the call's deadline if that is sooner."""
        request = pb.CallToolRequest(name=self.name, input_json=input_json)
        timeout = self._timeout
        context = CURRENT_CALL.get(None)
        if context is not None:
            request.call_id = context.call_id
            request.metadata.update(context.metadata)
            left = context.time_remaining()
            if left is not None and (timeout is None or left < timeout):
                timeout = left
        return request, timeout

    def _failure(self, rpc_error: grpc.aio.AioRpcError) -> BaseException:
        error = tool_error_from_rpc(rpc_error)
        if isinstance(error, RemoteServiceError) and error.reason not in TABLE_REASONS:
            return self._provider_failure(error)
        return error

    async def _approved(self, request: pb.CallToolRequest, seconds: float | None) -> ToolOutput:
        """Run ``request`` as a one-call batch, approving the pause it makes."""
        request.call_id = request.call_id or "forwarded"
        outcome = outcome_of(
            await self._call_tools(pb.CallToolsRequest(calls=[request]), timeout=seconds)
        )
        if isinstance(outcome, Paused) and request.call_id in outcome.awaiting_approval:
            approve = resume_request(outcome.resume_token, {request.call_id: Approve()})
            outcome = outcome_of(await self._resume(approve, timeout=seconds))
        if isinstance(outcome, Paused):
            raise RemoteServiceError(
                grpc.StatusCode.ABORTED,
                Reason.HOOK_ABORTED.value,
                f"the provider of tool '{self.name}' paused the call ({outcome.reason}); it "
                "cannot ask a person: approve the tool where the agent calls it",
                {},
            )
        result = outcome.results[0]
        if result.is_error:
            raise result.error or ToolError.ExecutionFailed(result.content)
        return ToolOutput(result.content, result.structured, result.attachments)

    def _provider_failure(self, error: RemoteServiceError) -> RemoteServiceError:
        """A failure that came from gRPC or a server that is no llmworker server, under the
        table's reason: the provider did not answer in time, or could not be used."""
        reason = table_reason(error.reason, error.code)
        if reason is Reason.TOOL_TIMEOUT:
            within = "" if self._timeout is None else f" within {self._timeout:.3g} s"
            message = (
                f"the provider of tool '{self.name}' did not answer{within}; check that it is "
                "running and not overloaded"
            )
        else:
            message = (
                f"the provider of tool '{self.name}' could not be used ({error.code.name}: "
                f"{shorten(error.message, 200)}); check that it is running and serves "
                "llmworker.v1.ToolService"
            )
        return RemoteServiceError(CODES[reason], reason.value, message, {})

    def __repr__(self) -> str:
        return f"RemoteTool({self.name!r})"


def _as_output(output: str | ToolOutput) -> ToolOutput:
    return output if isinstance(output, ToolOutput) else ToolOutput(output)


def output_of(response: pb.CallToolResponse) -> str | ToolOutput:
    if not response.structured_output_json and not response.attachments:
        return response.output
    return ToolOutput(
        response.output,
        structured_of(response.structured_output_json),
        received_attachments(response.attachments),
    )
