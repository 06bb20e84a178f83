"""The messages of a batch's outcome: every result as a ``CallResult`` (an error with the
status CallTool would have failed with), cut to what a response may carry; the same results
as a provider's message (RunProviderToolCalls), cut the same way; and a paused batch as the
``PausedBatch`` its caller resumes."""

from __future__ import annotations

from typing import cast

from google.protobuf.timestamp_pb2 import Timestamp

from llmworker import (
    DefinitionFormat,
    JsonValue,
    ToolCall,
    ToolError,
    ToolOutput,
    ToolResult,
    ToolServerError,
    canonical_json,
    tool_results_message,
)
from llmworker._wire import shorten
from llmworker.v1 import tool_service_pb2 as pb

from ..state.held import HeldBatch
from .admission import CallAdmission
from .failures import CallFailures
from .limits import CallLimits
from .responses import CallResponses, tool_internal

__all__ = ["BatchMessages"]


class BatchMessages:
    """Builds outcome messages; failures get their log id from ``admission``."""

    def __init__(
        self,
        admission: CallAdmission,
        failures: CallFailures,
        responses: CallResponses,
        limits: CallLimits,
    ) -> None:
        self._admission = admission
        self._failures = failures
        self._responses = responses
        self._limits = limits

    def completed(self, results: list[ToolResult], names: dict[str, str]) -> pb.CompletedBatch:
        messages = [self._result(result, names.get(result.call_id, "")) for result in results]
        batch = pb.CompletedBatch(results=messages)
        limit = self._limits.max_output_bytes - 8  # the outcome field's framing
        by_size = sorted(batch.results, key=lambda message: message.ByteSize(), reverse=True)
        for message in by_size:  # over the message limit: drop the largest outputs first
            size = batch.ByteSize()
            if size <= limit:
                break
            dropped = message.ByteSize()
            name = names.get(message.call_id, "")
            message.CopyFrom(
                self._error(
                    message.call_id,
                    name,
                    tool_internal(
                        f"the batch's results are {size} bytes, over the {limit} a response may "
                        f"carry (--max-message-bytes); this result of '{shorten(name)}' "
                        f"({dropped} bytes) was dropped: send fewer or smaller calls per batch"
                    ),
                )
            )
        return batch

    def provider_message(
        self, form: DefinitionFormat, results: list[ToolResult], names: dict[str, str]
    ) -> str:
        """The message in ``form`` that appends ``results`` to the conversation, as JSON
        text; over the message limit, the largest results are replaced, one at a time, by
        an error saying they were dropped."""
        limit = self._limits.max_output_bytes - 8  # the field's framing
        calls = [ToolCall(result.call_id, names.get(result.call_id, ""), "") for result in results]
        kept = list(results)
        largest_first = sorted(
            range(len(kept)), key=lambda index: _weight(kept[index]), reverse=True
        )
        text = _message_text(form, kept, calls)
        for index in largest_first:
            size = len(text.encode())
            if size <= limit:
                break
            name = calls[index].name
            error = tool_internal(
                f"the results message is {size} bytes, over the {limit} a response may carry "
                f"(--max-message-bytes); this result of '{shorten(name)}' "
                f"(about {_weight(kept[index])} bytes) was dropped: send fewer or smaller "
                "calls per model turn"
            )
            kept[index] = ToolResult(kept[index].call_id, str(error), is_error=True, error=error)
            text = _message_text(form, kept, calls)
        return text

    def _result(self, result: ToolResult, name: str) -> pb.CallResult:
        if result.is_error:
            error = result.error or ToolError.ExecutionFailed(result.content)
            message = self._error(result.call_id, name, error)
            message.output = result.content
            return message
        try:
            output = self._responses.response_of(
                name, ToolOutput(result.content, result.structured, result.attachments)
            )
            return pb.CallResult(
                call_id=result.call_id,
                output=output.output,
                structured_output_json=output.structured_output_json,
                skipped=result.skipped,
                attachments=output.attachments,
            )
        except ToolServerError as error:  # too large, or not Unicode
            return self._error(result.call_id, name, error)

    def _error(self, call_id: str, name: str, error: ToolError | ToolServerError) -> pb.CallResult:
        status = self._failures.failed(name, self._admission.next_call_id(), error)
        return pb.CallResult(
            call_id=call_id, output=status.message, is_error=True, error=status.to_proto()
        )

    def paused(self, token: str, held: HeldBatch) -> pb.PausedBatch:
        paused = held.paused
        awaiting = set(paused.awaiting_approval)
        expire_time = Timestamp()
        expire_time.FromNanoseconds(int(held.expires_at * 1e9))
        return pb.PausedBatch(
            resume_token=token,
            pending_calls=[
                pb.PendingCall(
                    call_id=call.id,
                    name=call.name,
                    input_json=call.input_json,
                    awaiting_approval=call.id in awaiting,
                )
                for call in paused.pending_calls
            ],
            results=[self._result(result, held.names.get(result.call_id, ""))
                     for result in paused.results],
            reason=paused.reason,
            paused_call_id=paused.paused_call.id,
            expire_time=expire_time,
            batch_id=held.batch_id,
        )  # fmt: skip


def _message_text(form: DefinitionFormat, results: list[ToolResult], calls: list[ToolCall]) -> str:
    return canonical_json(cast("JsonValue", tool_results_message(form, results, calls))).decode()


def _weight(result: ToolResult) -> int:
    """About how many bytes ``result`` adds to a message."""
    structured = 0 if result.structured is None else len(canonical_json(result.structured))
    attached = sum(len(repr(attachment)) for attachment in result.attachments)
    return len(result.content.encode()) + structured + attached
