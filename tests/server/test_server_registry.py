"""The internal ToolRegistry: token, typestate, providers in other processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncGenerator
from pathlib import Path

import grpc
import grpc.aio
import pytest

from llmworker import (
    RemoteServiceError,
    RemoteToolServerHandle,
    ToolMeta,
    ToolRegistryClient,
    ToolRegistryError,
    Worker,
)
from llmworker._wire.messages import definition_message
from llmworker.v1 import tool_pb2, tool_registry_pb2, tool_registry_pb2_grpc, tool_service_pb2_grpc
from llmworker.v1 import tool_service_pb2 as pb
from llmworker_server.app import ServerApp
from llmworker_server.config import ServerConfig
from tests.grpc_support import RpcFailure, ServerProcess, failure_of, serve

TOKEN = "s3cret-token-for-tests"
SHOUT = ToolMeta(
    "shout",
    "Upper-case the text",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)


def socket_config(tmp_path: Path, **settings: object) -> ServerConfig:
    config = ServerConfig(
        port=0,
        log_level="WARNING",
        internal_socket=tmp_path / "internal.sock",
        token=TOKEN,
        provider_check_timeout=0,  # registry mechanics with made-up providers (see test_providers)
    )
    for key, value in settings.items():
        setattr(config, key, value)
    return config


async def register_failure(
    target: str, meta: ToolMeta, provider: str, token: str | None
) -> RpcFailure:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = tool_registry_pb2_grpc.ToolRegistryStub(channel)
        metadata = (("authorization", f"Bearer {token}"),) if token is not None else ()
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.RegisterTool(
                tool_registry_pb2.RegisterToolRequest(
                    definition=definition_message(meta), provider_target=provider
                ),
                metadata=metadata,
            )
        return failure_of(caught.value)


async def register_raw_failure(
    target: str, definition: tool_pb2.ToolDefinition, provider: str
) -> RpcFailure:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = tool_registry_pb2_grpc.ToolRegistryStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.RegisterTool(
                tool_registry_pb2.RegisterToolRequest(
                    definition=definition, provider_target=provider
                ),
                metadata=(("authorization", f"Bearer {TOKEN}"),),
            )
        return failure_of(caught.value)


@pytest.mark.parametrize("token", [None, "wrong", TOKEN + "x", ""])
async def test_register_tool_needs_the_token(tmp_path: Path, token: str | None) -> None:
    async with serve(socket_config(tmp_path)) as served:
        assert served.app.internal_target is not None
        failure = await register_failure(served.app.internal_target, SHOUT, "127.0.0.1:1", token)
        assert failure.code is grpc.StatusCode.UNAUTHENTICATED
        assert failure.reason == "UNAUTHENTICATED"
        assert "needs the server's token" in failure.message
        assert "shout" not in served.app.registry.handle


async def test_the_internal_socket_is_private_and_absent_from_the_public_port(
    tmp_path: Path,
) -> None:
    async with serve(socket_config(tmp_path)) as served:
        mode = os.stat(tmp_path / "internal.sock").st_mode
        assert stat.S_ISSOCK(mode)
        assert stat.S_IMODE(mode) == 0o600
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = tool_registry_pb2_grpc.ToolRegistryStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.LockRegistry(
                    tool_registry_pb2.LockRegistryRequest(),
                    metadata=(("authorization", f"Bearer {TOKEN}"),),
                )
            assert caught.value.code() is grpc.StatusCode.UNIMPLEMENTED
    assert not (tmp_path / "internal.sock").exists()


@contextlib.asynccontextmanager
async def empty_front(tmp_path: Path, **settings: object) -> AsyncGenerator[ServerApp, None]:
    """A server with no tools of its own, registry open, internal socket with the token."""
    app = ServerApp(socket_config(tmp_path, **settings), Worker())
    await app.start()
    try:
        yield app
    finally:
        await app.stop(grace=0)


async def call(target: str, name: str, input_json: str) -> str:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        reply = await stub.CallTool(pb.CallToolRequest(name=name, input_json=input_json))
        return reply.output


async def call_failure(target: str, name: str, input_json: str) -> RpcFailure:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(target, name, input_json)
    return failure_of(caught.value)


async def test_a_provider_serves_its_tools_through_the_front_server(tmp_path: Path) -> None:
    async with empty_front(tmp_path) as front, serve(internal=False) as provider:
        assert front.internal_target is not None
        provided = provider.app.registry.handle.get_tool("counter")
        assert provided is not None
        async with ToolRegistryClient(front.internal_target, TOKEN) as registry:
            fingerprint = await registry.register_tool(provided[0], provider.target)
        assert fingerprint == front.registry.handle.definitions_snapshot().fingerprint
        front_target = f"127.0.0.1:{front.port}"
        assert await call(front_target, "counter", "{}") == "1"
        assert await call(front_target, "counter", "{}") == "2"
        assert provider.tools.count == 2
        async with await RemoteToolServerHandle.connect(front_target) as handle:
            assert [meta.name for meta in handle.tool_definitions_sorted()] == ["counter"]
            assert handle.tool_definitions_sorted()[0] == provided[0]


async def test_a_provider_that_is_gone_gives_unavailable(tmp_path: Path) -> None:
    async with empty_front(tmp_path) as front:
        assert front.internal_target is not None
        async with serve(internal=False) as provider:
            provided = provider.app.registry.handle.get_tool("echo")
            assert provided is not None
            async with ToolRegistryClient(front.internal_target, TOKEN) as registry:
                await registry.register_tool(provided[0], provider.target)
            front_target = f"127.0.0.1:{front.port}"
            assert await call(front_target, "echo", '{"text": "up"}') == "up"
        failure = await call_failure(front_target, "echo", '{"text": "down"}')
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.UNAVAILABLE,
            "PROVIDER_UNAVAILABLE",
        )
        assert failure.metadata["tool"] == "echo"
        async with await RemoteToolServerHandle.connect(front_target) as handle:
            assert len(handle.tool_definitions_sorted()) == 1  # the front still serves


async def test_a_provider_that_hangs_times_out_and_is_cancelled(tmp_path: Path) -> None:
    async with (
        empty_front(tmp_path, tool_timeouts={"sleep": 0.3}) as front,
        serve(internal=False) as provider,
    ):
        assert front.internal_target is not None
        provided = provider.app.registry.handle.get_tool("sleep")
        assert provided is not None
        async with ToolRegistryClient(front.internal_target, TOKEN) as registry:
            await registry.register_tool(provided[0], provider.target)
        failure = await call_failure(f"127.0.0.1:{front.port}", "sleep", '{"seconds": 60}')
        assert (failure.code, failure.reason) == (grpc.StatusCode.DEADLINE_EXCEEDED, "TOOL_TIMEOUT")
        for _ in range(100):
            if provider.tools.cancelled:
                break
            await asyncio.sleep(0.02)
        assert provider.tools.cancelled == 1


async def test_a_provider_process_registers_with_the_front_server(tmp_path: Path) -> None:
    async with empty_front(tmp_path) as front:
        assert front.internal_target is not None
        process = ServerProcess(
            ["--tools", "tests.provider_tools:ProviderTools", "--port", "0", "--no-internal",
             "--register-with", front.internal_target],
            env={"LLMWORKER_TOKEN": TOKEN},
        )  # fmt: skip
        try:
            await process.port()
            for _ in range(200):
                if "shout" in front.registry.handle:
                    break
                await asyncio.sleep(0.05)
            front_target = f"127.0.0.1:{front.port}"
            assert await call(front_target, "shout", '{"text": "hi"}') == "HI!"
            failure = await call_failure(front_target, "shout", '{"txt": "hi"}')
            assert failure.reason == "TOOL_INVALID_ARGUMENT"
            assert failure.message.endswith("txt: unknown field; remove it")
        finally:
            process.process.kill()
            process.stop()
        failure = await call_failure(f"127.0.0.1:{front.port}", "shout", '{"text": "hi"}')
        assert failure.reason == "PROVIDER_UNAVAILABLE"


async def test_registration_typestate_duplicates_bad_schemas_and_lock(tmp_path: Path) -> None:
    async with serve(socket_config(tmp_path)) as front, serve(internal=False) as provider:
        target = front.app.internal_target
        assert target is not None
        async with ToolRegistryClient(target, TOKEN) as registry:
            await registry.register_tool(ToolMeta("echo_remote"), provider.target)
            with pytest.raises(ToolRegistryError.DuplicateName, match="'echo'"):
                await registry.register_tool(ToolMeta("echo"), provider.target)

            bad_schema = definition_message(ToolMeta("bad_schema"))
            bad_schema.input_schema_json = '{"type": "string"}'
            bad_name = definition_message(ToolMeta("ok"))
            bad_name.name = "no spaces allowed"
            not_json = definition_message(ToolMeta("not_json"))
            not_json.input_schema_json = "{oops"
            for definition, message in [
                (bad_schema, "top-level type must be 'object'"),
                (bad_name, "tool name 'no spaces allowed' is invalid"),
                (not_json, "input_schema_json of tool 'not_json' is not JSON"),
            ]:
                failure = await register_raw_failure(target, definition, provider.target)
                assert (failure.code, failure.reason) == (
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "INVALID_REQUEST",
                )
                assert message in failure.message

            assert not front.app.registry.is_locked
            await registry.lock()
            assert front.app.registry.is_locked
            assert front.app.registry.worker.is_locked
            with pytest.raises(RemoteServiceError) as locked:
                await registry.register_tool(ToolMeta("late"), provider.target)
            assert locked.value.code is grpc.StatusCode.FAILED_PRECONDITION
            assert locked.value.reason == "REGISTRY_LOCKED"
            assert "the registry is locked" in locked.value.message
        assert "late" not in front.app.registry.handle
