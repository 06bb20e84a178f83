"""Plumbing shared by the services: lenient request parsing, aborts, handler tables."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, NoReturn, Protocol, TypeVar, final

import grpc
import grpc.aio
from google.protobuf.message import DecodeError

from llmworker._wire import ErrorStatus, Reason

from .audit import AUDIT, CURRENT_RPC, REFUSALS
from .drain import DrainGate
from .failure_log import FailureLog

__all__ = [
    "SHUTTING_DOWN",
    "CallerContext",
    "Context",
    "MalformedRequest",
    "abort",
    "abort_malformed",
    "add_service",
    "guarded",
    "is_requested_cancel",
    "malformed_status",
    "server_streaming",
    "unary",
]

_FAILURES = FailureLog()
SHUTTING_DOWN: Final = ErrorStatus.of(
    Reason.SHUTTING_DOWN,
    "the server is shutting down and takes no new calls; retry on another replica or after "
    "it restarts (the call did not run)",
)

RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT")

Context = grpc.aio.ServicerContext[Any, Any]


class CallerContext(Protocol):
    """What checking a caller and admitting a call read of a request: its metadata (the
    bearer token), its deadline and its connection's verified certificate. A gRPC context
    is one; the MCP front makes one of an HTTP request."""

    def invocation_metadata(self) -> Iterable[tuple[str, str | bytes]] | None: ...

    def time_remaining(self) -> float | None: ...

    def auth_context(self) -> Mapping[str, Iterable[bytes]]: ...


@final
@dataclass(frozen=True, slots=True)
class MalformedRequest:
    """A request body protobuf could not parse (e.g. a string field that is not UTF-8)."""

    problem: str


def _lenient(parse: Callable[[bytes], RequestT]) -> Callable[[bytes], RequestT | MalformedRequest]:
    """Parse a request, turning a parse failure into a value the handler reports as
    INVALID_ARGUMENT (gRPC itself would answer INTERNAL)."""

    def deserialize(data: bytes) -> RequestT | MalformedRequest:
        try:
            return parse(data)
        except DecodeError as error:
            return MalformedRequest(str(error))

    return deserialize


async def abort(context: Context, status: ErrorStatus) -> NoReturn:
    """End the call with ``status`` and its ErrorInfo (a refusal goes to the audit trail)."""
    if status.reason in REFUSALS:
        AUDIT.refused(status)
    await context.abort(status.code, status.message, status.trailing_metadata())


async def abort_malformed(context: Context, request: MalformedRequest) -> NoReturn:
    await abort(context, malformed_status(request))


def malformed_status(request: MalformedRequest) -> ErrorStatus:
    return ErrorStatus.of(
        Reason.INVALID_REQUEST,
        f"the request is not a valid protobuf message ({request.problem}); string fields "
        "must be UTF-8",
    )


def is_requested_cancel() -> bool:
    """Whether the running task was asked to cancel (the client left, its deadline passed,
    or the server is stopping), as opposed to code raising ``CancelledError`` by itself."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def guarded(
    behavior: Callable[[RequestT, Context], Awaitable[ResponseT]],
    method: str,
    gate: DrainGate | None = None,
) -> Callable[[RequestT, Context], Awaitable[ResponseT]]:
    """``behavior``, answering any unexpected exception with INTERNAL / TOOL_INTERNAL (and
    logging it) instead of gRPC's bare UNKNOWN; an abort or a requested cancel passes.
    While ``gate`` drains, a call waits at it first."""

    async def handle(request: RequestT, context: Context) -> ResponseT:
        CURRENT_RPC.set(method)
        if gate is not None and gate.closed and not await gate.hold():
            await abort(context, SHUTTING_DOWN)
        try:
            return await behavior(request, context)
        except grpc.aio.AbortError:
            raise
        except asyncio.CancelledError as error:
            if is_requested_cancel():
                raise
            problem: BaseException = error
        except BaseException as error:
            problem = error
        await _abort_failed(context, method, problem)

    return handle


def guarded_stream(
    behavior: Callable[[RequestT, Context], AsyncIterator[ResponseT]], method: str
) -> Callable[[RequestT, Context], AsyncIterator[ResponseT]]:
    """``guarded`` for a server-streaming ``behavior``: what it raises unexpectedly, after
    the messages it sent, ends the stream with INTERNAL / TOOL_INTERNAL."""

    async def handle(request: RequestT, context: Context) -> AsyncIterator[ResponseT]:
        CURRENT_RPC.set(method)
        try:
            async for message in behavior(request, context):
                yield message
            return
        except (grpc.aio.AbortError, GeneratorExit):
            raise  # an abort, or the stream closed (the client left)
        except asyncio.CancelledError as error:
            if is_requested_cancel():
                raise
            problem: BaseException = error
        except BaseException as error:
            problem = error
        if context.cancelled() or context.done():
            return  # the call is over (the client left, or its status went out): nobody to tell
        await _abort_failed(context, method, problem)

    return handle


async def _abort_failed(context: Context, method: str, problem: BaseException) -> NoReturn:
    _FAILURES.report_where(method, f"method={method}", problem)
    await abort(
        context,
        ErrorStatus.of(
            Reason.TOOL_INTERNAL,
            f"{method} failed inside the server ({type(problem).__name__}); the server "
            "logged it; retry, and report it if it persists",
        ),
    )


def unary(
    behavior: Callable[[RequestT | MalformedRequest, Context], Awaitable[ResponseT]],
    parse: Callable[[bytes], RequestT],
    serialize: Callable[[ResponseT], bytes],
) -> grpc.RpcMethodHandler[Any, Any]:
    """A unary-unary handler whose requests are parsed leniently."""
    return grpc.unary_unary_rpc_method_handler(
        behavior, request_deserializer=_lenient(parse), response_serializer=serialize
    )


def server_streaming(
    behavior: Callable[[RequestT | MalformedRequest, Context], AsyncIterator[ResponseT]],
    parse: Callable[[bytes], RequestT],
    serialize: Callable[[ResponseT], bytes],
) -> grpc.RpcMethodHandler[Any, Any]:
    """A unary-stream handler whose requests are parsed leniently."""
    return grpc.unary_stream_rpc_method_handler(
        behavior,  # grpc.aio takes an async generator here
        request_deserializer=_lenient(parse),
        response_serializer=serialize,
    )


def add_service(
    server: grpc.aio.Server, name: str, handlers: dict[str, grpc.RpcMethodHandler[Any, Any]]
) -> None:
    """Serve ``handlers`` as the service ``name`` (registered methods: the fast path)."""
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(name, handlers),))
    server.add_registered_method_handlers(name, handlers)
