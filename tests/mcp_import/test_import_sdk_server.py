"""An MCP server written with the official SDK, imported over stdio and Streamable HTTP:
its tools listed with their definitions, called with structured results, failures mapped,
progress on CallToolStream, cancellation reaching it, call metadata in ``_meta``, list
changes pushed to watchers, death and return on mutable and locked registries, scopes and
approval applied."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import grpc.aio
import mcp_types as types
import pytest
from mcp import Client
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from llmworker import Worker
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server import ServerApp, ServerConfig
from llmworker_server.mcp_import.settings import McpServerSettings
from tests.grpc_support import Served, failure_of, serve
from tests.mcp_import.support import free_port, read_events, sdk_http, sdk_stdio, wait_until
from tests.tls_support import Pki

LONG = "a_tool_with_a_very_long_name_that_goes_past_the_sixty_four_character_limit"


@pytest.fixture
async def stdio_served(tmp_path: Path) -> AsyncIterator[tuple[Served, Path]]:
    events = tmp_path / "events.jsonl"
    async with serve(None, worker=Worker(), mcp_servers=(sdk_stdio("sdk", events),)) as served:
        yield served, events


def stub_of(channel: grpc.aio.Channel) -> tool_service_pb2_grpc.ToolServiceStub:
    return tool_service_pb2_grpc.ToolServiceStub(channel)


async def test_the_tools_are_listed_with_their_definitions(
    stdio_served: tuple[Served, Path],
) -> None:
    served, _ = stdio_served
    names = [meta.name for meta in served.app.registry.handle.tool_definitions_sorted()]
    assert {"sdk__weather", "sdk__slow", "sdk__fail", "sdk__add_tool", "sdk__image"} <= set(names)
    long = [name for name in names if name.startswith("sdk__a_tool_with")]
    assert len(long) == 1
    assert len(long[0]) == 64  # mapped, not dropped
    found = served.app.registry.handle.get_tool("sdk__weather")
    assert found is not None
    weather = found[0]
    assert (weather.title, weather.description) == ("Weather", "Current weather in a city")
    assert weather.annotations.read_only is True
    assert weather.output_schema is not None
    assert "city" in json.dumps(weather.input_schema)
    assert served.app.registry.provider_of("sdk__weather") == "mcp server sdk"


async def test_a_call_returns_text_structured_output_and_images(
    stdio_served: tuple[Served, Path],
) -> None:
    served, _ = stdio_served
    async with grpc.aio.insecure_channel(served.target) as channel:
        stub = stub_of(channel)
        reply = await stub.CallTool(
            pb.CallToolRequest(name="sdk__weather", input_json='{"city": "Oslo"}')
        )
        assert json.loads(reply.structured_output_json) == {"city": "Oslo", "celsius": 21.5}
        image = await stub.CallTool(pb.CallToolRequest(name="sdk__image", input_json="{}"))
        assert image.output == "a red dot"
        assert [part.image.mime_type for part in image.attachments] == ["image/png"]


async def test_an_error_result_is_tool_execution_failed_with_the_servers_text(
    stdio_served: tuple[Served, Path],
) -> None:
    served, _ = stdio_served
    async with grpc.aio.insecure_channel(served.target) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await stub_of(channel).CallTool(
                pb.CallToolRequest(name="sdk__fail", input_json='{"reason": "disk full"}')
            )
    failure = failure_of(raised.value)
    assert failure.reason == "TOOL_EXECUTION_FAILED"
    assert "disk full" in failure.message


async def test_progress_arrives_on_call_tool_stream_and_metadata_in_meta(
    stdio_served: tuple[Served, Path],
) -> None:
    served, _ = stdio_served
    async with grpc.aio.insecure_channel(served.target) as channel:
        stub = stub_of(channel)
        request = pb.CallToolRequest(
            name="sdk__slow", input_json='{"steps": 3, "delay": 0.1}', call_id="c-1"
        )
        events = [event async for event in stub.CallToolStream(request)]
        progress = [event.progress for event in events if event.HasField("progress")]
        assert progress
        assert (progress[-1].progress, progress[-1].total) == (3, 3)
        assert progress[-1].message == "step 3"
        assert events[-1].result.output == "done after 3 steps"
        echoed = await stub.CallTool(
            pb.CallToolRequest(
                name="sdk__echo_meta", input_json="{}", call_id="c-2", metadata={"user": "ada"}
            )
        )
    meta = json.loads(echoed.output)
    assert meta["io.llmworker/call_id"] == "c-2"
    assert meta["io.llmworker/metadata"] == {"user": "ada"}


async def test_a_cancelled_call_is_cancelled_on_the_mcp_server(
    stdio_served: tuple[Served, Path],
) -> None:
    served, events = stdio_served
    async with grpc.aio.insecure_channel(served.target) as channel:
        request = pb.CallToolRequest(name="sdk__slow", input_json='{"steps": 50, "delay": 0.2}')
        stream = stub_of(channel).CallToolStream(request)
        async for event in stream:
            if event.HasField("progress"):
                break  # it runs on the MCP server
        stream.cancel()
    await wait_until(
        lambda: any(event.get("event") == "cancelled" for event in read_events(events)),
        10.0,
        "the MCP server to see the call cancelled",
    )


async def test_a_tool_added_at_run_time_reaches_a_watcher(tmp_path: Path) -> None:
    # a lease of 120 s lists the tools every 30 s: only the server's notice brings it sooner
    settings = sdk_stdio("sdk", tmp_path / "events.jsonl")
    async with (
        serve(None, worker=Worker(), mcp_servers=(settings,), provider_lease=120.0) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = stub_of(channel)
        watch = stub.WatchDefinitions(pb.WatchDefinitionsRequest())
        first = await watch.read()
        assert isinstance(first, pb.ListDefinitionsSortedResponse)
        await stub.CallTool(
            pb.CallToolRequest(name="sdk__add_tool", input_json='{"name": "fresh"}')
        )
        while True:
            update = await asyncio.wait_for(watch.read(), 10.0)
            assert isinstance(update, pb.ListDefinitionsSortedResponse)
            if any(d.name == "sdk__fresh" for d in update.definitions):
                break
        watch.cancel()
        reply = await stub.CallTool(pb.CallToolRequest(name="sdk__fresh", input_json="{}"))
        assert reply.output == "I am fresh"


async def test_a_dead_server_leaves_a_mutable_registry_and_comes_back(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    async with sdk_http(free_port(), events) as mcp:
        settings = McpServerSettings("web", url=mcp.url)
        async with serve(
            None, worker=Worker(), mcp_servers=(settings,), provider_lease=2.0
        ) as served:
            handle = served.app.registry.handle
            assert "web__weather" in handle
            mcp.kill()
            await wait_until(lambda: "web__weather" not in handle, 10.0, "its tools to leave")
            await mcp.start()
            await wait_until(lambda: "web__weather" in handle, 40.0, "its tools to return")
            async with grpc.aio.insecure_channel(served.target) as channel:
                reply = await stub_of(channel).CallTool(
                    pb.CallToolRequest(name="web__weather", input_json='{"city": "Lima"}')
                )
            assert json.loads(reply.structured_output_json)["city"] == "Lima"


async def test_a_dead_server_answers_provider_unavailable_on_a_locked_registry(
    tmp_path: Path,
) -> None:
    events = tmp_path / "events.jsonl"
    async with sdk_http(free_port(), events) as mcp:
        settings = McpServerSettings("web", url=mcp.url)
        async with serve(
            None, worker=Worker(), mcp_servers=(settings,), lock_at_start=True, provider_lease=2.0
        ) as served:
            assert served.app.registry.is_locked
            request = pb.CallToolRequest(name="web__weather", input_json='{"city": "Rome"}')
            async with grpc.aio.insecure_channel(served.target) as channel:
                stub = stub_of(channel)
                mcp.kill()
                await wait_until(lambda: not _connected(served, "web"), 10.0, "the link to notice")
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await stub.CallTool(request)
                failure = failure_of(raised.value)
                assert (failure.code, failure.reason) == (
                    grpc.StatusCode.UNAVAILABLE,
                    "PROVIDER_UNAVAILABLE",
                )
                assert "'web'" in failure.message
                await asyncio.sleep(3.0)  # past the lease: a locked registry keeps the tool
                assert "web__weather" in served.app.registry.handle
                await mcp.start()
                await wait_until(lambda: _connected(served, "web"), 40.0, "the link to return")
                reply = await stub.CallTool(request)
                assert json.loads(reply.structured_output_json)["city"] == "Rome"


async def test_a_bearer_token_and_include_exclude_globs(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token-for-the-mcp-server\n")
    token_file.chmod(0o600)
    async with sdk_http(
        free_port(), tmp_path / "e", token="s3cret-token-for-the-mcp-server"
    ) as mcp:
        settings = McpServerSettings(
            "web",
            url=mcp.url,
            token_file=token_file,
            include=("weather", "fail", "slow"),
            exclude=("slow",),
            prefix="w",
        )
        async with serve(None, worker=Worker(), mcp_servers=(settings,)) as served:
            names = {meta.name for meta in served.app.registry.handle.tool_definitions_sorted()}
            assert names == {"w__weather", "w__fail"}
        wrong = McpServerSettings("web", url=mcp.url)  # no token: refused, nothing imported
        async with serve(None, worker=Worker(), mcp_servers=(wrong,)) as served:
            assert len(served.app.registry.handle) == 0


async def test_scopes_and_approval_apply_to_imported_tools(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(
        json.dumps(
            {
                "tokens": [
                    {"token": "narrow-caller-token-1234", "tools": ["sdk__weather"], "label": "n"}
                ]
            }
        )
    )
    tokens.chmod(0o600)
    settings = sdk_stdio("sdk", tmp_path / "events.jsonl")
    async with serve(
        None,
        worker=Worker(),
        mcp_servers=(settings,),
        auth_tokens=tokens,
        require_approval=("sdk__weather",),
    ) as served:
        bearer = (("authorization", "Bearer narrow-caller-token-1234"),)
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = stub_of(channel)
            listing = await stub.ListDefinitionsSorted(
                pb.ListDefinitionsSortedRequest(), metadata=bearer
            )
            assert [d.name for d in listing.definitions] == ["sdk__weather"]
            assert listing.definitions[0].requires_approval
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await stub.CallTool(
                    pb.CallToolRequest(name="sdk__fail", input_json='{"reason": "x"}'),
                    metadata=bearer,
                )
            assert failure_of(raised.value).code is grpc.StatusCode.PERMISSION_DENIED
            call = pb.CallToolRequest(
                name="sdk__weather", input_json='{"city": "Kyiv"}', call_id="w"
            )
            paused = await stub.CallTools(pb.CallToolsRequest(calls=[call]), metadata=bearer)
            assert [(c.call_id, c.awaiting_approval) for c in paused.paused.pending_calls] == [
                ("w", True)
            ]
            decided = await stub.ResumeBatch(
                pb.ResumeBatchRequest(
                    resume_token=paused.paused.resume_token,
                    decisions=[pb.CallDecision(call_id="w", approve=pb.Approval())],
                ),
                metadata=bearer,
            )
            result = decided.completed.results[0]
            assert json.loads(result.structured_output_json)["city"] == "Kyiv"


def _connected(served: Served, name: str) -> bool:
    imports = served.app.imports
    assert imports is not None
    return any(link.name == name and link.connected for link in imports.links)


async def test_the_trace_context_reaches_the_mcp_server(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = ServerConfig(
        port=0,
        log_level="WARNING",
        otel=True,
        mcp_servers=(sdk_stdio("sdk", tmp_path / "events.jsonl"),),
    )
    app = ServerApp(config, Worker(), tracer_provider=provider)
    await app.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
            reply = await stub_of(channel).CallTool(
                pb.CallToolRequest(name="sdk__echo_meta", input_json="{}")
            )
    finally:
        await app.stop(grace=0)
    meta = json.loads(reply.output)
    (hop,) = [span for span in exporter.get_finished_spans() if span.name == "tools/call echo_meta"]
    assert hop.kind is SpanKind.CLIENT
    assert hop.context is not None
    trace_id, span_id = f"{hop.context.trace_id:032x}", f"{hop.context.span_id:016x}"
    assert meta["traceparent"].split("-")[1:3] == [trace_id, span_id]
    (server_span,) = [
        span for span in exporter.get_finished_spans() if span.kind is SpanKind.SERVER
    ]
    assert hop.parent is not None
    assert server_span.context is not None
    assert hop.parent.span_id == server_span.context.span_id


async def test_mcp_clients_of_the_front_call_imported_tools_and_hear_changes(
    tmp_path: Path,
) -> None:
    settings = sdk_stdio("sdk", tmp_path / "events.jsonl")
    changed = asyncio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with serve(
        None, worker=Worker(), mcp_servers=(settings,), mcp_address="127.0.0.1:0"
    ) as served:
        url = f"http://127.0.0.1:{served.app.mcp_port}/mcp"
        async with Client(url, mode="legacy", message_handler=on_message, cache=None) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            assert {"sdk__weather", "sdk__slow"} <= listed
            steps: list[float] = []

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                steps.append(progress)

            result = await client.call_tool(
                "sdk__slow", {"steps": 3, "delay": 0.05}, progress_callback=on_progress
            )
            assert result.content[0] == types.TextContent(type="text", text="done after 3 steps")
            assert steps
            await client.call_tool("sdk__add_tool", {"name": "later"})
            await asyncio.wait_for(changed.wait(), 10.0)
            listed = {tool.name for tool in (await client.list_tools()).tools}
            assert "sdk__later" in listed


async def test_a_server_that_stops_answering_leaves_and_returns(tmp_path: Path) -> None:
    async with sdk_http(free_port(), tmp_path / "events.jsonl") as mcp:
        assert mcp.process is not None
        settings = McpServerSettings("web", url=mcp.url)
        async with serve(
            None, worker=Worker(), mcp_servers=(settings,), provider_lease=2.0
        ) as served:
            handle = served.app.registry.handle
            assert "web__weather" in handle
            mcp.process.send_signal(signal.SIGSTOP)  # connections open, no answer ever
            try:
                await wait_until(lambda: "web__weather" not in handle, 20.0, "its tools to leave")
            finally:
                mcp.process.send_signal(signal.SIGCONT)
            await wait_until(lambda: "web__weather" in handle, 40.0, "its tools to return")


async def test_a_server_over_tls_is_trusted_through_its_ca_file(tmp_path: Path) -> None:
    pki = Pki.create(tmp_path / "pki")
    tls = (pki.server.cert, pki.server.key)
    async with sdk_http(free_port(), tmp_path / "events.jsonl", tls=tls) as mcp:
        assert mcp.url.startswith("https://127.0.0.1:")
        trusted = McpServerSettings("web", url=mcp.url, ca_file=pki.ca.cert)
        strange = McpServerSettings("odd", url=mcp.url, ca_file=pki.other_ca.cert)
        async with serve(None, worker=Worker(), mcp_servers=(trusted, strange)) as served:
            names = {meta.name for meta in served.app.registry.handle.tool_definitions_sorted()}
            assert "web__weather" in names
            assert not any(name.startswith("odd__") for name in names)  # not its CA: refused


async def test_a_deadline_ends_the_call_on_the_mcp_server_too(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    async with (
        serve(None, worker=Worker(), mcp_servers=(sdk_stdio("sdk", events),)) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        request = pb.CallToolRequest(name="sdk__slow", input_json='{"steps": 100, "delay": 0.1}')
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await stub_of(channel).CallTool(request, timeout=1.0)
        assert raised.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        await wait_until(
            lambda: any(event.get("event") == "cancelled" for event in read_events(events)),
            10.0,
            "the MCP server to see the call cancelled",
        )
