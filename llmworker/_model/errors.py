"""The error types of the tool system, one base per layer.

    ToolError                      raised by a Tool's execute()
    ├── ToolError.InvalidArgument  "Invalid argument: {message}"
    ├── ToolError.ExecutionFailed  "Execution failed: {message}"
    └── ToolError.Internal         "Internal error: {message}"

    ToolServerError                raised by ToolServerHandle
    ├── ToolServerError.DuplicateName  "Tool with name '{name}' already registered"
    ├── ToolServerError.ToolNotFound   "Tool '{name}' not found"
    ├── ToolServerError.ToolExecution  "Tool execution failed: {message}"
    ├── ToolServerError.ToolTimeout    "Tool '{name}' did not finish within {seconds} s"
    ├── ToolServerError.CallDenied     "Tool call '{call_id}' to '{name}' was denied: ..."
    └── RemoteServiceError             a remote server's refusal: code, reason, metadata

    ToolRegistryError              raised by Worker registration
    └── ToolRegistryError.DuplicateName  "Tool with name '{name}' already registered"
                                   (the same class as ToolServerError.DuplicateName)

    WorkerError                    misuse of a Worker or a batch
    ├── WorkerStateError           the Worker was moved by lock()/unlock(), or is locked
    ├── ToolBatchAborted           a hook aborted a call_tools() batch or a call_tool() call
    └── ToolCallPaused             a pre-hook paused a call_tool() call (in outcomes.py,
                                   beside the Paused it carries, so no import goes back)

    StrictSchemaError (ValueError) a schema strict mode cannot take (formats)

Variants are subclasses, so ``except ToolError`` catches all of them, and are reachable as
attributes of their base (``ToolError.InvalidArgument``), mirroring the Rust enums.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, final

from .text import message_of, shorten

if TYPE_CHECKING:
    import grpc


__all__ = [
    "RemoteServiceError",
    "StrictSchemaError",
    "ToolBatchAborted",
    "ToolError",
    "ToolRegistryError",
    "ToolServerError",
    "WorkerError",
    "WorkerStateError",
]


class ToolError(Exception):
    """A tool could not produce a result; ``message`` is the variant's payload."""

    InvalidArgument: ClassVar[type[InvalidArgument]]
    ExecutionFailed: ClassVar[type[ExecutionFailed]]
    Internal: ClassVar[type[Internal]]

    _prefix: ClassVar[str] = "Tool error"

    def __init__(self, message: str) -> None:
        # ``raise ToolError.ExecutionFailed(error)`` is common: keep the text, not the object.
        message = message if isinstance(message, str) else message_of(message)  # pyright: ignore[reportUnnecessaryIsInstance]
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{self._prefix}: {self.message}"


class InvalidArgument(ToolError):
    """The input did not match the tool's schema; the model should fix its arguments."""

    _prefix = "Invalid argument"


class ExecutionFailed(ToolError):
    """The tool ran and failed."""

    _prefix = "Execution failed"


class Internal(ToolError):
    """A defect in the tool or the tool system, not in the model's input."""

    _prefix = "Internal error"


class ToolServerError(Exception):
    """Looking up, registering or calling a tool on a ToolServer failed."""

    DuplicateName: ClassVar[type[DuplicateName]]
    ToolNotFound: ClassVar[type[ToolNotFound]]
    ToolExecution: ClassVar[type[ToolExecution]]
    ToolTimeout: ClassVar[type[ToolTimeout]]
    CallDenied: ClassVar[type[CallDenied]]


class ToolNotFound(ToolServerError):
    """No tool is registered under this name (echoed shortened: it came from a caller)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Tool '{shorten(name)}' not found")
        self.name = name


class ToolExecution(ToolServerError):
    """The tool raised a ToolError; ``message`` is that error's text."""

    def __init__(self, message: str) -> None:
        super().__init__(f"Tool execution failed: {message}")
        self.message = message


class ToolTimeout(ToolServerError):
    """The call was still running at its deadline (``ToolCall.deadline``) and was cancelled."""

    def __init__(self, name: str, seconds: float) -> None:
        super().__init__(f"Tool '{shorten(name)}' did not finish within {seconds:.3g} s")
        self.name = name
        self.seconds = seconds


class CallDenied(ToolServerError):
    """A decision denied the call when its paused batch resumed; the tool did not run."""

    def __init__(self, call_id: str, name: str, reason: str) -> None:
        because = f": {shorten(reason, 1000)}" if reason else ""
        super().__init__(f"Tool call '{shorten(call_id)}' to '{shorten(name)}' was denied{because}")
        self.call_id = call_id
        self.name = name
        self.reason = reason


@final
class RemoteServiceError(ToolServerError):
    """A remote ToolServer refused or could not run a call for a reason that is no tool's
    error: a timeout, the concurrency limit, an unreachable provider, a locked registry..."""

    def __init__(
        self, code: grpc.StatusCode, reason: str, message: str, metadata: Mapping[str, str]
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.metadata: dict[str, str] = dict(metadata)


class ToolRegistryError(Exception):
    """Registering tools through a Worker failed; nothing from the failed call was kept."""

    DuplicateName: ClassVar[type[DuplicateName]]


class DuplicateName(ToolRegistryError, ToolServerError):
    """A tool with this name is already registered, or appears twice in one batch.

    One class, reachable as ``ToolRegistryError.DuplicateName`` (what registration raises)
    and ``ToolServerError.DuplicateName``: either ``except`` catches it."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Tool with name '{name}' already registered")
        self.name = name


class WorkerError(Exception):
    """A Worker was used in a way its state does not allow, or a batch was stopped."""


class WorkerStateError(WorkerError):
    """The Worker was consumed by lock()/unlock(), or is locked and cannot change tools."""


class ToolBatchAborted(WorkerError):
    """A hook returned ``Abort(reason)``; the rest of the batch did not run.

    ``after_execution`` is True when a post-tool-call hook aborted: the batch's calls ran."""

    def __init__(self, reason: str, call_id: str, *, after_execution: bool = False) -> None:
        super().__init__(f"Tool batch aborted by a hook at call '{call_id}': {reason}")
        self.reason = reason
        self.call_id = call_id
        self.after_execution = after_execution


class StrictSchemaError(ValueError):
    """A schema strict mode cannot take; names the tool and the JSON path."""

    def __init__(self, tool: str, path: str, problem: str) -> None:
        super().__init__(
            f"tool '{tool}': its input schema cannot be made strict at {path}: {problem}; "
            "change the tool's parameters, or use a format without strict mode"
        )
        self.tool = tool
        self.path = path


def _nest(base: type[Exception], attribute: str, variant: type[Exception]) -> None:
    setattr(base, attribute, variant)
    variant.__qualname__ = f"{base.__name__}.{attribute}"


_nest(ToolError, "InvalidArgument", InvalidArgument)
_nest(ToolError, "ExecutionFailed", ExecutionFailed)
_nest(ToolError, "Internal", Internal)
ToolServerError.DuplicateName = DuplicateName  # the same class, named below
_nest(ToolServerError, "ToolNotFound", ToolNotFound)
_nest(ToolServerError, "ToolExecution", ToolExecution)
_nest(ToolServerError, "ToolTimeout", ToolTimeout)
_nest(ToolServerError, "CallDenied", CallDenied)
_nest(ToolRegistryError, "DuplicateName", DuplicateName)
