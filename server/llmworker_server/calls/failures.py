"""The status answering a call that failed: the tool's error, a pause or abort outside a
batch, the server's timeout, or a crash in a hook or the worker (logged, and redacted with
``--redact-errors``)."""

from __future__ import annotations

from llmworker import ToolBatchAborted, ToolCallPaused, ToolError, ToolServerError
from llmworker._wire import ErrorStatus, Reason, message_of, shorten, status_of

from ..rpc.failure_log import FailureLog, unexpected_cause
from .requests import aborted_status

__all__ = ["CallFailures"]


class CallFailures:
    """Maps what a call raised to its status, logging the unexpected under the call's id."""

    def __init__(self, *, redact: bool = False) -> None:
        self._redact = redact
        self._log = FailureLog()

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
        self._log.report(name, call_id, cause)
        metadata = {**status.metadata, "call_id": call_id}
        if not self._redact:
            return ErrorStatus(status.code, status.reason, status.message, metadata)
        hidden = f"the tool failed unexpectedly; the server logged it as call_id={call_id}"
        metadata["tool_error"] = hidden
        return ErrorStatus(status.code, status.reason, f"Tool execution failed: {hidden}", metadata)

    def crashed(self, name: str, call_id: str, error: BaseException) -> ErrorStatus:
        """The status answering a crash in a hook or the worker, logged under ``call_id``."""
        self._log.report(name, call_id, error)
        detail = "" if self._redact else f": {type(error).__name__}: {message_of(error)}"
        return ErrorStatus.of(
            Reason.TOOL_INTERNAL,
            f"the call to '{shorten(name)}' failed inside the server{detail}; the server "
            f"logged it as call_id={call_id}",
            tool=shorten(name),
            call_id=call_id,
        )


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


def _timed_out(name: str, timeout: float) -> ErrorStatus:
    return ErrorStatus.of(
        Reason.TOOL_TIMEOUT,
        f"Tool '{shorten(name)}' did not finish within {timeout:.3g} s, the server's timeout "
        "for it; raise --call-timeout or --tool-timeout, or make the tool faster",
        tool=shorten(name),
    )
