"""``--otel``: an OpenTelemetry span for every call, continuing the caller's trace and
carrying it on to providers.

- Every RPC of the public service gets a SERVER span named ``llmworker.v1.ToolService/<Method>``
  with the RPC semantic-convention attributes (``rpc.system``, ``rpc.service``,
  ``rpc.method``, ``rpc.grpc.status_code``) and ``llmworker.tool.name`` and
  ``llmworker.call_id`` (a call without an id gets the server's, which the tool sees too); a
  batch lists its tools and call ids. A failed call's span has status ERROR with the message.
- The parent is the W3C trace context (``traceparent``, ``tracestate``) in the request's
  metadata, read with the configured propagators (``OTEL_PROPAGATORS``).
- A call forwarded to a provider goes out in a CLIENT span whose context travels in the
  provider call's metadata; the provider, if it traces too, continues it.

The SDK is configured by the standard variables: ``OTEL_SERVICE_NAME`` (default
``llmworker``), ``OTEL_TRACES_EXPORTER`` (``otlp``, the default, ``console`` or ``none``),
``OTEL_EXPORTER_OTLP_*``, ``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*``. This module is imported
only with ``--otel``; without it no call pays anything.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Sequence
from typing import Final, TypeVar, cast

import grpc
import grpc.aio
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from llmworker import __version__
from llmworker._wire import with_metadata

from ..errors import ConfigError
from ..rpc.handlers import Context, MalformedRequest

__all__ = ["Tracing", "provider_from_environment"]

RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT")

_TOOL: Final = "llmworker.tool.name"
_CALL_ID: Final = "llmworker.call_id"
_MAX_LISTED: Final = 128


def provider_from_environment() -> TracerProvider:
    """A tracer provider exporting as the ``OTEL_*`` variables say; ValueError naming an
    exporter it does not know."""
    named = "service.name" in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    attributes = (
        {} if os.environ.get("OTEL_SERVICE_NAME") or named else {"service.name": "llmworker"}
    )
    provider = TracerProvider(resource=Resource.create(attributes))
    exporter_name = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    exporter: SpanExporter | None
    if exporter_name == "otlp":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    elif exporter_name == "console":
        exporter = ConsoleSpanExporter()
    elif exporter_name == "none":
        exporter = None
    else:
        raise ConfigError(
            f"OTEL_TRACES_EXPORTER={exporter_name!r} is not one this server knows: use otlp, "
            "console or none"
        )
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


class Tracing:
    """Spans for the service's RPCs, from ``provider``; ``next_call_id`` names calls that
    came without an id."""

    def __init__(self, provider: trace.TracerProvider, next_call_id: Callable[[], str]) -> None:
        self._tracer = provider.get_tracer("llmworker", __version__)
        self._next_call_id = next_call_id
        # The metadata keys the configured propagators read; no other key reaches them.
        self._context_keys = frozenset(propagate.get_global_textmap().fields)

    @property
    def tracer(self) -> trace.Tracer:
        """The tracer of the server's spans (the MCP front's too)."""
        return self._tracer

    def _start(self, service: str, method: str, request: object, context: Context) -> Span:
        """A SERVER span for ``request``, child of the trace context its metadata carries."""
        carrier = {
            key: value
            for key, value in context.invocation_metadata() or ()
            if key in self._context_keys and isinstance(value, str)
        }
        span = self._tracer.start_span(
            f"{service}/{method}",
            context=propagate.extract(carrier) if carrier else None,
            kind=SpanKind.SERVER,
            attributes={"rpc.system": "grpc", "rpc.service": service, "rpc.method": method},
        )
        if span.is_recording() and not isinstance(request, MalformedRequest):
            self._describe(span, request)  # an unsampled call pays for none of this
        return span

    def _describe(self, span: Span, request: object) -> None:
        """The tool and call id a request names (a single call without an id gets one)."""
        name = getattr(request, "name", None)
        if isinstance(name, str) and name:
            span.set_attribute(_TOOL, name[:_MAX_LISTED])
            call_id = getattr(request, "call_id", None)
            if call_id == "":
                call_id = self._next_call_id()
                setattr(request, "call_id", call_id)  # noqa: B010 - any request with a call_id
            if call_id is not None:
                span.set_attribute(_CALL_ID, str(call_id)[:_MAX_LISTED])
        calls: Sequence[object] = getattr(request, "calls", ())
        listed = list(calls[:_MAX_LISTED])
        if listed:
            span.set_attribute("llmworker.batch.size", len(calls))
            span.set_attribute(
                _TOOL, [str(getattr(call, "name", ""))[:_MAX_LISTED] for call in listed]
            )
            span.set_attribute(_CALL_ID, [str(getattr(call, "call_id", "")) for call in listed])

    @staticmethod
    def _finish(span: Span, context: Context, failed: bool) -> None:
        """End ``span`` with the call's status: the one it was aborted with, CANCELLED when it
        raised without one (the client left), else OK."""
        code = cast("grpc.StatusCode | None", context.code())  # None until one is set
        if failed and code in (None, grpc.StatusCode.OK):
            code = grpc.StatusCode.CANCELLED
        if code is None or code == grpc.StatusCode.OK:
            span.set_attribute("rpc.grpc.status_code", 0)
        else:
            span.set_attribute("rpc.grpc.status_code", code.value[0])
            details: object = context.details()
            span.set_status(Status(StatusCode.ERROR, f"{code.name}: {details or ''}"))
        span.end()

    def unary(
        self,
        service: str,
        method: str,
        behavior: Callable[[RequestT, Context], Awaitable[ResponseT]],
    ) -> Callable[[RequestT, Context], Awaitable[ResponseT]]:
        """``behavior`` (of a unary RPC) inside a SERVER span."""

        async def traced(request: RequestT, context: Context) -> ResponseT:
            span = self._start(service, method, request, context)
            with trace.use_span(span, end_on_exit=False):
                try:
                    response = await behavior(request, context)
                except BaseException:
                    self._finish(span, context, failed=True)
                    raise
            self._finish(span, context, failed=False)
            return response

        return traced

    def stream(
        self,
        service: str,
        method: str,
        behavior: Callable[[RequestT, Context], AsyncIterator[ResponseT]],
    ) -> Callable[[RequestT, Context], AsyncIterator[ResponseT]]:
        """``behavior`` (of a server-streaming RPC) inside a SERVER span."""

        async def traced(request: RequestT, context: Context) -> AsyncIterator[ResponseT]:
            span = self._start(service, method, request, context)
            try:
                with trace.use_span(span, end_on_exit=False):
                    async for message in behavior(request, context):
                        yield message
            except BaseException:
                self._finish(span, context, failed=True)
                raise
            self._finish(span, context, failed=False)

        return traced

    @contextlib.contextmanager
    def mcp_client_span(self, name: str) -> Generator[dict[str, str]]:
        """A CLIENT span for a request to an imported MCP server (``tools/call NAME``), and
        the trace context to send in the request's ``_meta``."""
        with self._tracer.start_as_current_span(
            name, kind=SpanKind.CLIENT, attributes={"rpc.system": "mcp"}
        ):
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            yield carrier

    def client_interceptors(self) -> list[grpc.aio.ClientInterceptor]:
        """Interceptors for the channels to providers: a call made inside a traced call goes
        in a CLIENT span whose context rides in the call's metadata."""
        return [_UnaryClientSpan(self._tracer), _StreamClientSpan(self._tracer)]


def _traced_details(
    tracer: trace.Tracer, details: grpc.aio.ClientCallDetails
) -> tuple[Span, grpc.aio.ClientCallDetails] | None:
    """A CLIENT span for a call made inside a traced one (None outside any: health checks)."""
    if not trace.get_current_span().get_span_context().is_valid:
        return None
    method = details.method.decode() if isinstance(details.method, bytes) else str(details.method)
    service, _, name = method.lstrip("/").partition("/")
    span = tracer.start_span(
        method.lstrip("/"),
        kind=SpanKind.CLIENT,
        attributes={"rpc.system": "grpc", "rpc.service": service, "rpc.method": name},
    )
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=trace.set_span_in_context(span))
    return span, with_metadata(details, *carrier.items())


class _UnaryClientSpan(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, tracer: trace.Tracer) -> None:
        self._tracer = tracer

    async def intercept_unary_unary(
        self,
        continuation: Callable[
            [grpc.aio.ClientCallDetails, RequestT],
            Awaitable[grpc.aio.UnaryUnaryCall[RequestT, ResponseT]],
        ],
        client_call_details: grpc.aio.ClientCallDetails,
        request: RequestT,
    ) -> ResponseT | grpc.aio.UnaryUnaryCall[RequestT, ResponseT]:
        traced = _traced_details(self._tracer, client_call_details)
        if traced is None:
            return await continuation(client_call_details, request)
        span, details = traced
        try:
            call = await continuation(details, request)
            code = await call.code()
        except BaseException:
            span.set_status(Status(StatusCode.ERROR, "the call did not complete"))
            span.end()
            raise
        span.set_attribute("rpc.grpc.status_code", code.value[0])
        if code != grpc.StatusCode.OK:
            span.set_status(Status(StatusCode.ERROR, code.name))
        span.end()
        return call


class _StreamClientSpan(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, tracer: trace.Tracer) -> None:
        self._tracer = tracer

    async def intercept_unary_stream(
        self,
        continuation: Callable[
            [grpc.aio.ClientCallDetails, RequestT],
            Awaitable[grpc.aio.UnaryStreamCall[RequestT, ResponseT]],
        ],
        client_call_details: grpc.aio.ClientCallDetails,
        request: RequestT,
    ) -> AsyncIterator[ResponseT] | grpc.aio.UnaryStreamCall[RequestT, ResponseT]:
        traced = _traced_details(self._tracer, client_call_details)
        if traced is None:
            return await continuation(client_call_details, request)
        span, details = traced
        try:
            call = await continuation(details, request)
        except BaseException:
            span.end()
            raise
        call.add_done_callback(lambda _: span.end())  # the stream's status is the provider's
        return call
