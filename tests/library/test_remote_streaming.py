"""Streams across processes: the remote handles' stream_tool, and a provider's tool whose
progress and chunks cross both hops (or that an older provider answers with CallTool)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from pathlib import Path

import grpc
import grpc.aio
import pytest

from llmworker import (
    OutputChunk,
    Progress,
    RemoteToolServerHandle,
    StreamEvent,
    SyncRemoteToolServerHandle,
    ToolMeta,
    ToolOutput,
    ToolRegistryClient,
    ToolServerError,
    Worker,
    tool_definitions,
)
from llmworker.v1 import tool_service_pb2 as pb
from llmworker_server.app import ServerApp
from llmworker_server.config import ServerConfig
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import Served, serve

TOKEN = "stream-token-for-tests"


@contextlib.asynccontextmanager
async def demo_server() -> AsyncGenerator[Served]:
    """A server with the demo tools and no internal listener."""
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=worker, internal=False) as served:
        yield served


@contextlib.asynccontextmanager
async def front_server(tmp_path: Path) -> AsyncGenerator[ServerApp]:
    config = ServerConfig(
        port=0, log_level="WARNING", internal_socket=tmp_path / "internal.sock", token=TOKEN
    )
    app = ServerApp(config, Worker())
    await app.start()
    try:
        yield app
    finally:
        await app.stop(grace=0)


def texts(events: list[StreamEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, OutputChunk))


def blocking_stream(target: str, input_json: str) -> list[StreamEvent]:
    """Stream countdown with the blocking handle (in a thread: the server runs on the loop)."""
    with SyncRemoteToolServerHandle(target) as blocking:
        return list(blocking.stream_tool("countdown", input_json))


async def test_the_remote_handles_stream_a_call(tmp_path: Path) -> None:
    async with demo_server() as served:
        countdown = '{"n": 3, "delay": 0.06}'
        async with await RemoteToolServerHandle.connect(served.target) as handle:
            events = [event async for event in handle.stream_tool("countdown", countdown)]
            assert texts(events) == "3\n2\n1\n"
            assert events[-1] == ToolOutput("3\n2\n1\n")
            assert Progress(1.0, 3.0, "3 to go") in events
            with pytest.raises(ToolServerError.ToolNotFound):
                [event async for event in handle.stream_tool("nope", "{}")]
        events = await asyncio.to_thread(blocking_stream, served.target, countdown)
        assert events[-1] == ToolOutput("3\n2\n1\n")
        assert texts(events) == "3\n2\n1\n"


async def test_a_providers_stream_crosses_both_hops(tmp_path: Path) -> None:
    async with front_server(tmp_path) as front, demo_server() as provider:
        provided = provider.app.registry.handle.get_tool("countdown")
        assert provided is not None
        assert front.internal_target is not None
        async with ToolRegistryClient(front.internal_target, TOKEN) as registry:
            await registry.register_tool(provided[0], provider.target)
        async with await RemoteToolServerHandle.connect(f"127.0.0.1:{front.port}") as handle:
            stream = handle.stream_tool("countdown", '{"n": 3, "delay": 0.06}')
            events = [event async for event in stream]
        assert texts(events) == "3\n2\n1\n"
        assert any(isinstance(event, Progress) and event.total == 3 for event in events)
        assert events[-1] == ToolOutput("3\n2\n1\n")


async def unary_only_provider() -> tuple[grpc.aio.Server, str]:
    """A provider of an older release: CallTool only, no CallToolStream."""

    async def call_tool(request: pb.CallToolRequest, context: object) -> pb.CallToolResponse:
        return pb.CallToolResponse(output=f"unary:{request.input_json}")

    handler = grpc.unary_unary_rpc_method_handler(
        call_tool,
        request_deserializer=pb.CallToolRequest.FromString,
        response_serializer=pb.CallToolResponse.SerializeToString,
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("llmworker.v1.ToolService", {"CallTool": handler}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


async def test_a_provider_without_call_tool_stream_is_called_unary(tmp_path: Path) -> None:
    old, target = await unary_only_provider()
    try:
        async with front_server(tmp_path) as front:
            assert front.internal_target is not None
            async with ToolRegistryClient(front.internal_target, TOKEN) as registry:
                await registry.register_tool(ToolMeta("legacy"), target)
            async with await RemoteToolServerHandle.connect(f"127.0.0.1:{front.port}") as handle:
                events = [event async for event in handle.stream_tool("legacy", "{}")]
        assert events == [ToolOutput("unary:{}")]
    finally:
        await old.stop(0)
