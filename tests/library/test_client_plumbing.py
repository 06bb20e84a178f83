"""The clients' plumbing: every RPC defined once and matching the proto, the caller token
checked the same way by every client, and the remote handles' reading methods against a
real server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest
from google.protobuf.descriptor import FileDescriptor
from google.protobuf.message import Message

from llmworker import (
    DefinitionFormat,
    RemoteToolServerHandle,
    SyncRemoteToolServerHandle,
    ToolRegistryClient,
    Worker,
)
from llmworker._wire import stubs
from llmworker.v1 import tool_registry_pb2, tool_service_pb2
from llmworker_server.app import ServerApp
from llmworker_server.config import ServerConfig
from tests.grpc_support import serve

TOKEN = "plumbing-token-for-tests"
BROKEN_TOKENS = ["line\rbreak", "line\nbreak", "trailing\r\n"]

_SERVICES: dict[str, FileDescriptor] = {
    "ToolService": tool_service_pb2.DESCRIPTOR,
    "ToolRegistry": tool_registry_pb2.DESCRIPTOR,
}


@pytest.mark.parametrize(
    "method",
    [
        stubs.GET_TOOL,
        stubs.CALL_TOOL,
        stubs.CALL_TOOLS,
        stubs.RESUME_BATCH,
        stubs.CALL_TOOL_STREAM,
        stubs.LIST_DEFINITIONS_SORTED,
        stubs.WATCH_DEFINITIONS,
        stubs.REGISTER_TOOL,
        stubs.UNREGISTER_TOOL,
        stubs.LOCK_REGISTRY,
    ],
    ids=lambda method: method.path,
)
def test_every_method_matches_the_proto(
    method: stubs.Unary[Message, Message] | stubs.ServerStream[Message, Message],
) -> None:
    _, package, name = method.path.split("/")
    service = package.removeprefix("llmworker.v1.")
    described = _SERVICES[service].services_by_name[service].methods_by_name[name]
    assert described.input_type.full_name == method.request.DESCRIPTOR.full_name
    assert described.output_type.full_name == method.response.DESCRIPTOR.full_name
    assert not described.client_streaming
    assert described.server_streaming is isinstance(method, stubs.ServerStream)


@pytest.mark.parametrize("token", BROKEN_TOKENS)
async def test_the_registry_client_refuses_a_token_with_a_line_break(token: str) -> None:
    # Refused when made: no channel is opened, no call goes out with the header.
    with pytest.raises(ValueError, match="caller token must be non-empty text on one line"):
        ToolRegistryClient("127.0.0.1:1", token)


@pytest.mark.parametrize("token", BROKEN_TOKENS)
async def test_the_remote_handles_refuse_a_token_with_a_line_break(token: str) -> None:
    async with serve() as served:
        for balanced in (False, True):
            with pytest.raises(ValueError, match="caller token must be non-empty text"):
                await RemoteToolServerHandle.connect(served.target, token=token, balanced=balanced)

        def blocking() -> None:
            with pytest.raises(ValueError, match="caller token must be non-empty text"):
                SyncRemoteToolServerHandle(served.target, token=token)

        await asyncio.to_thread(blocking)


async def test_the_async_handle_reads_its_definitions_as_a_local_handle() -> None:
    async with serve() as served, await RemoteToolServerHandle.connect(served.target) as handle:
        local = served.app.registry.handle
        assert len(handle) == len(local) > 0
        for meta in local.tool_definitions_sorted():
            assert meta.name in handle
        assert "nope" not in handle
        assert 42 not in handle
        for form in DefinitionFormat:
            assert handle.definitions_for(form) == local.definitions_for(form)
        anthropic = handle.definitions_for(DefinitionFormat.ANTHROPIC, cache_last=True)
        assert anthropic == local.definitions_for(DefinitionFormat.ANTHROPIC, cache_last=True)
        assert b"cache_control" in anthropic.json
        again = handle.definitions_for(DefinitionFormat.OPENAI_CHAT)
        assert again is handle.definitions_for(DefinitionFormat.OPENAI_CHAT)


async def test_the_sync_handle_reads_its_definitions_as_a_local_handle() -> None:
    async with serve() as served:
        local = served.app.registry.handle

        def blocking() -> None:
            with SyncRemoteToolServerHandle(served.target) as handle:
                assert len(handle) == len(local) > 0
                assert "echo" in handle
                assert "nope" not in handle
                assert handle.definitions_snapshot() == local.definitions_snapshot()
                for form in DefinitionFormat:
                    assert handle.definitions_for(form) == local.definitions_for(form)

        await asyncio.to_thread(blocking)


@contextlib.asynccontextmanager
async def empty_front(tmp_path: Path) -> AsyncGenerator[ServerApp]:
    """A server with no tools of its own whose registry takes providers' tools."""
    config = ServerConfig(
        port=0, log_level="WARNING", internal_socket=tmp_path / "internal.sock", token=TOKEN
    )
    app = ServerApp(config, Worker())
    await app.start()
    try:
        yield app
    finally:
        await app.stop(grace=0)


async def test_the_reading_methods_follow_the_watched_definitions(tmp_path: Path) -> None:
    async with empty_front(tmp_path) as front, serve(internal=False) as provider:
        assert front.internal_target is not None
        provided = provider.app.registry.handle.get_tool("echo")
        assert provided is not None
        target = f"127.0.0.1:{front.port}"
        async with await RemoteToolServerHandle.connect(target) as handle:
            assert len(handle) == 0
            assert "echo" not in handle
            empty = handle.definitions_for(DefinitionFormat.OPENAI_CHAT)
            assert empty.json == b"[]"
            async with ToolRegistryClient(front.internal_target, TOKEN) as registry:
                await registry.register_tool(provided[0], provider.target)
            for _ in range(500):  # WatchDefinitions brings the change: 10 s at most
                if "echo" in handle:
                    break
                await asyncio.sleep(0.02)
            assert len(handle) == 1
            listed = handle.definitions_for(DefinitionFormat.OPENAI_CHAT)
            assert listed == front.registry.handle.definitions_for(DefinitionFormat.OPENAI_CHAT)
            assert listed != empty
