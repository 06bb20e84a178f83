"""``--otel``: a SERVER span per call with its tool, call id and status, continuing the W3C
trace context a client sends, and carried across the hop to a provider."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import cast

import grpc
import grpc.aio
import pytest
from mcp import Client
from mcp_types import RequestParamsMeta
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, SpanKind, StatusCode

from llmworker import ToolContext, Worker, tool, tool_definitions, tool_registry
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server import ServerApp, ServerConfig
from llmworker_server.cli import main
from tests.grpc_support import Served
from tests.server_tools import ServerTestTools

_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
_PARENT = "00f067aa0ba902b7"
_TRACEPARENT = ("traceparent", f"00-{_TRACE}-{_PARENT}-01")
_TOKEN = "tracing-test-token"


@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@tool_registry
class _SpanTools:
    @tool
    async def whoami(self, call: ToolContext) -> str:
        """The id of the call this runs as."""
        return call.call_id

    @tool
    async def boom(self) -> str:
        """Fail the way a defect does."""
        raise RuntimeError("a defect")


@contextlib.asynccontextmanager
async def _traced_server(provider: TracerProvider) -> AsyncGenerator[Served, None]:
    """An in-process server with the test tools, tracing into ``provider``."""
    tools = ServerTestTools()
    worker = Worker()
    worker.register_tools([*tool_definitions(tools), *tool_definitions(_SpanTools())])
    app = ServerApp(
        ServerConfig(port=0, log_level="WARNING", otel=True), worker, tracer_provider=provider
    )
    await app.start()
    try:
        yield Served(app, tools, f"127.0.0.1:{app.port}")
    finally:
        await app.stop(grace=0)


def _ids(span: ReadableSpan) -> SpanContext:
    context: SpanContext | None = span.context
    assert context is not None
    return context


def _named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


async def test_a_call_continues_the_callers_trace_with_its_tool_call_id_and_status(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    async with (
        _traced_server(provider) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        await stub.CallTool(
            pb.CallToolRequest(name="echo", input_json='{"text": "x"}', call_id="call_7"),
            metadata=(_TRACEPARENT,),
        )
        await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "y"}'))
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.CallTool(pb.CallToolRequest(name="no_such_tool"))
    first, second, failed = _named(exporter, "llmworker.v1.ToolService/CallTool")
    assert first.kind == SpanKind.SERVER
    assert first.parent is not None
    assert f"{_ids(first).trace_id:032x}" == _TRACE
    assert f"{first.parent.span_id:016x}" == _PARENT
    assert first.attributes is not None
    assert first.attributes["llmworker.tool.name"] == "echo"
    assert first.attributes["llmworker.call_id"] == "call_7"
    assert first.attributes["rpc.grpc.status_code"] == 0
    assert first.status.status_code == StatusCode.UNSET
    assert second.parent is None  # no trace context sent: a new trace
    assert second.attributes is not None
    assert second.attributes["llmworker.call_id"] != ""  # the server's id for the call
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes is not None
    assert failed.attributes["rpc.grpc.status_code"] == grpc.StatusCode.NOT_FOUND.value[0]
    assert "NOT_FOUND" in (failed.status.description or "")


async def test_the_tool_sees_the_call_id_its_span_records(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    async with (
        _traced_server(provider) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        reply = await stub.CallTool(pb.CallToolRequest(name="whoami", input_json="{}"))
    (span,) = _named(exporter, "llmworker.v1.ToolService/CallTool")
    assert span.attributes is not None
    assert reply.output == span.attributes["llmworker.call_id"]


async def test_streams_and_batches_have_spans_too(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    async with (
        _traced_server(provider) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        stream = stub.CallToolStream(
            pb.CallToolRequest(name="echo", input_json='{"text": "s"}'),
            metadata=(_TRACEPARENT,),
        )
        events = [event async for event in stream]
        await stub.CallTools(
            pb.CallToolsRequest(
                calls=[
                    pb.CallToolRequest(name="echo", input_json='{"text": "a"}', call_id="a"),
                    pb.CallToolRequest(name="echo", input_json='{"text": "b"}', call_id="b"),
                ]
            )
        )
    assert events[-1].result.output == "s"
    (streamed,) = _named(exporter, "llmworker.v1.ToolService/CallToolStream")
    assert f"{_ids(streamed).trace_id:032x}" == _TRACE
    (batch,) = _named(exporter, "llmworker.v1.ToolService/CallTools")
    assert batch.attributes is not None
    assert list(batch.attributes["llmworker.call_id"]) == ["a", "b"]  # type: ignore[arg-type]
    assert batch.attributes["llmworker.batch.size"] == 2


@contextlib.asynccontextmanager
async def _front_and_provider(
    tmp_path: Path, provider: TracerProvider
) -> AsyncGenerator[ServerApp, None]:
    """A front with no tools of its own and, registered with it, a provider serving
    ``shout``; both trace into ``provider``."""
    front = ServerApp(
        ServerConfig(
            port=0, log_level="WARNING", internal_socket=tmp_path / "internal.sock",
            token=_TOKEN, otel=True, provider_check_timeout=0,
        ),
        Worker(),
        tracer_provider=provider,
    )  # fmt: skip
    await front.start()
    contributor = ServerApp(
        ServerConfig(
            port=0, log_level="WARNING", internal=False, token=_TOKEN, otel=True,
            tool_specs=["tests.provider_tools:ProviderTools"],
            register_with=front.internal_target,
        ),
        tracer_provider=provider,
    )  # fmt: skip
    try:
        await contributor.start()
        await _eventually(lambda: "shout" in front.registry.handle)
        yield front
    finally:
        await contributor.stop(grace=0)
        await front.stop(grace=0)


async def _eventually(condition: Callable[[], bool]) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("never happened")


async def test_a_call_forwarded_to_a_provider_is_a_child_of_the_front_call(
    tmp_path: Path, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    async with (
        _front_and_provider(tmp_path, provider) as front,
        grpc.aio.insecure_channel(f"127.0.0.1:{front.port}") as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        reply = await stub.CallTool(
            pb.CallToolRequest(name="shout", input_json='{"text": "hop"}'),
            metadata=(_TRACEPARENT,),
        )
    assert reply.output == "HOP!"
    served = [s for s in _named(exporter, "llmworker.v1.ToolService/CallTool") if s.parent]
    (hop,) = [span for span in exporter.get_finished_spans() if span.kind == SpanKind.CLIENT]
    (front_span,) = [s for s in served if s.parent and f"{s.parent.span_id:016x}" == _PARENT]
    (provider_span,) = [s for s in served if s is not front_span and s.kind == SpanKind.SERVER]
    assert hop.name == "llmworker.v1.ToolService/CallTool"
    # client -> front SERVER -> front CLIENT -> provider SERVER, one trace
    assert f"{_ids(front_span).trace_id:032x}" == _TRACE
    assert hop.parent is not None
    assert hop.parent.span_id == _ids(front_span).span_id
    assert provider_span.parent is not None
    assert provider_span.parent.span_id == _ids(hop).span_id
    assert _ids(provider_span).trace_id == _ids(front_span).trace_id
    assert provider_span.attributes is not None
    assert provider_span.attributes["llmworker.tool.name"] == "shout"


async def test_health_checks_to_providers_make_no_spans(
    tmp_path: Path, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = spans
    async with _front_and_provider(tmp_path, provider):
        await asyncio.sleep(0.5)  # health checks run meanwhile
    assert exporter.get_finished_spans() == ()


def test_an_unknown_exporter_is_refused_with_the_ones_there_are(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin-thing")
    assert main(["--demo", "--no-internal", "--port", "0", "--otel", "--loop", "asyncio"]) == 1
    assert "use otlp, console or none" in caplog.text


async def test_a_failure_is_logged_under_the_call_id_its_span_records(
    spans: tuple[TracerProvider, InMemorySpanExporter], caplog: pytest.LogCaptureFixture
) -> None:
    provider, exporter = spans
    caplog.set_level(logging.ERROR, "llmworker.server.failures")
    async with (
        _traced_server(provider) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.CallTool(pb.CallToolRequest(name="boom", input_json="{}"))
    (span,) = _named(exporter, "llmworker.v1.ToolService/CallTool")
    assert span.attributes is not None
    call_id = span.attributes["llmworker.call_id"]
    assert isinstance(call_id, str)
    assert f"call_id={call_id} raised RuntimeError" in caplog.text


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_an_mcp_call_is_traced_as_a_grpc_call_is(
    spans: tuple[TracerProvider, InMemorySpanExporter], mode: str
) -> None:
    provider, exporter = spans
    worker = Worker()
    worker.register_tools([*tool_definitions(ServerTestTools()), *tool_definitions(_SpanTools())])
    config = ServerConfig(port=0, log_level="WARNING", otel=True, mcp_address="127.0.0.1:0")
    app = ServerApp(config, worker, tracer_provider=provider)
    await app.start()
    try:
        async with Client(f"http://127.0.0.1:{app.mcp_port}/mcp", mode=mode) as client:
            meta = cast("RequestParamsMeta", {"traceparent": _TRACEPARENT[1]})  # an open map
            await client.call_tool("echo", {"text": "x"}, meta=meta)
            failed = await client.call_tool("boom", {})
            assert failed.is_error
            assert failed.meta is not None
    finally:
        await app.stop(grace=0)
    [echo] = _named(exporter, "tools/call echo")
    assert echo.kind == SpanKind.SERVER
    assert echo.parent is not None
    assert f"{_ids(echo).trace_id:032x}" == _TRACE
    assert f"{echo.parent.span_id:016x}" == _PARENT
    assert echo.attributes is not None
    assert echo.attributes["gen_ai.tool.name"] == "echo"
    assert echo.attributes["llmworker.tool.name"] == "echo"
    assert echo.status.status_code == StatusCode.UNSET
    [boom] = _named(exporter, "tools/call boom")
    assert boom.parent is None
    assert boom.status.status_code == StatusCode.ERROR
    assert boom.status.description == failed.meta["io.llmworker/reason"]
