"""WatchDefinitions: the current definitions first, one message per registry change, per
format, bounded watchers, and UNAVAILABLE at shutdown."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import grpc
import grpc.aio
import pytest

from llmworker import (
    DefinitionFormat,
    RemoteToolServerHandle,
    ToolMeta,
    ToolRegistryClient,
    Worker,
)
from llmworker._wire.messages import format_number
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.app import ServerApp
from llmworker_server.config import ServerConfig
from tests.grpc_support import failure_of, serve
from tests.server.test_auth import AGENT, OPS, bearer, write_tokens

TOKEN = "watch-token-for-tests"


def config(tmp_path: Path, **settings: object) -> ServerConfig:
    made = ServerConfig(
        port=0,
        log_level="WARNING",
        internal_socket=tmp_path / "internal.sock",
        token=TOKEN,
        provider_check_timeout=0,  # registry mechanics with made-up providers (see test_providers)
    )
    for key, value in settings.items():
        setattr(made, key, value)
    return made


async def next_message(
    stream: grpc.aio.UnaryStreamCall[pb.WatchDefinitionsRequest, pb.ListDefinitionsSortedResponse],
) -> pb.ListDefinitionsSortedResponse:
    message = await asyncio.wait_for(stream.read(), 10)
    assert isinstance(message, pb.ListDefinitionsSortedResponse)
    return message


async def test_watchers_get_the_state_then_every_change(tmp_path: Path) -> None:
    app = ServerApp(config(tmp_path), Worker())
    await app.start()
    try:
        assert app.internal_target is not None
        async with (
            grpc.aio.insecure_channel(f"127.0.0.1:{app.port}") as channel,
            ToolRegistryClient(app.internal_target, TOKEN) as registry,
        ):
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            plain = stub.WatchDefinitions(pb.WatchDefinitionsRequest())
            first = await next_message(plain)
            assert list(first.definitions) == []
            assert first.fingerprint
            formatted = stub.WatchDefinitions(
                pb.WatchDefinitionsRequest(
                    format=format_number(DefinitionFormat.OPENAI_CHAT),
                    known_fingerprint="stale",
                )
            )
            assert json.loads((await next_message(formatted)).definitions_json) == []
            current = stub.WatchDefinitions(
                pb.WatchDefinitionsRequest(known_fingerprint=first.fingerprint)
            )
            assert (await next_message(current)).unchanged
            for name in ("alpha", "beta"):
                await registry.register_tool(ToolMeta(name), "127.0.0.1:1")
                changed = await next_message(plain)
                assert name in [definition.name for definition in changed.definitions]
                assert changed.fingerprint == app.registry.handle.definitions_fingerprint()
                entries = json.loads((await next_message(formatted)).definitions_json)
                assert name in [entry["function"]["name"] for entry in entries]
                assert not (await next_message(current)).unchanged
            for stream in (plain, formatted, current):
                stream.cancel()
    finally:
        await app.stop(grace=0)


async def test_watchers_are_bounded_and_end_unavailable_at_shutdown(tmp_path: Path) -> None:
    async with serve(max_watchers=2) as served:
        channel = grpc.aio.insecure_channel(served.target)
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        watches = [stub.WatchDefinitions(pb.WatchDefinitionsRequest()) for _ in range(2)]
        for watch in watches:
            await next_message(watch)
        extra = stub.WatchDefinitions(pb.WatchDefinitionsRequest())
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await next_message(extra)
        failure = failure_of(raised.value)
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "CONCURRENCY_LIMIT",
        )
        assert "--max-watchers" in failure.message
        stopping = asyncio.create_task(served.app.stop(grace=5))
        for watch in watches:
            with pytest.raises(grpc.aio.AioRpcError) as ended:
                await next_message(watch)
            assert failure_of(ended.value).reason == "SHUTTING_DOWN"
            assert ended.value.code() is grpc.StatusCode.UNAVAILABLE
        await asyncio.wait_for(stopping, 10)  # watchers never hold up the stop
        await channel.close()


async def test_an_unknown_format_ends_the_watch_with_a_reason(tmp_path: Path) -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        watch = stub.WatchDefinitions(pb.WatchDefinitionsRequest(format=99))  # type: ignore[arg-type]
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await next_message(watch)
        assert failure_of(raised.value).reason == "INVALID_REQUEST"


async def test_a_remote_handle_keeps_its_definitions_current_without_polling(
    tmp_path: Path,
) -> None:
    app = ServerApp(config(tmp_path), Worker())
    await app.start()
    try:
        assert app.internal_target is not None
        target = f"127.0.0.1:{app.port}"
        async with (
            await RemoteToolServerHandle.connect(target) as handle,
            ToolRegistryClient(app.internal_target, TOKEN) as registry,
        ):
            assert handle.get_tool("gamma") is None
            fingerprint = await registry.register_tool(ToolMeta("gamma"), "127.0.0.1:1")
            for _ in range(500):
                if handle.get_tool("gamma") is not None:
                    break
                await asyncio.sleep(0.01)
            assert handle.get_tool("gamma") is not None  # no refresh() was called
            assert handle.definitions_snapshot().fingerprint == fingerprint
        async with await RemoteToolServerHandle.connect(target, watch=False) as still:
            await registry_add(app, "delta")
            await asyncio.sleep(0.2)
            assert still.get_tool("delta") is None  # not watching: refresh() it is
            assert await still.refresh()
            assert still.get_tool("delta") is not None
    finally:
        await app.stop(grace=0)


async def registry_add(app: ServerApp, name: str) -> None:
    assert app.internal_target is not None
    async with ToolRegistryClient(app.internal_target, TOKEN) as registry:
        await registry.register_tool(ToolMeta(name), "127.0.0.1:1")


async def test_a_watch_that_fails_inside_the_server_ends_with_a_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with serve() as served:

        def broken(*arguments: object) -> object:
            raise RuntimeError("a defect in the listing")

        monkeypatch.setattr(served.app.tools.watch._listing, "listing_for", broken)  # pyright: ignore[reportPrivateUsage]
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await stub.WatchDefinitions(pb.WatchDefinitionsRequest()).read()
            failure = failure_of(raised.value)
            assert failure.code == grpc.StatusCode.INTERNAL
            assert failure.reason == "TOOL_INTERNAL"
            assert "WatchDefinitions failed inside the server (RuntimeError)" in failure.message
            # the server goes on serving
            reply = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text":"x"}'))
            assert reply.output == "x"


async def test_watches_whose_clients_left_end_quietly_at_shutdown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serve() as served:
        channels = [
            grpc.aio.insecure_channel(
                served.target, options=[("grpc.use_local_subchannel_pool", 1)]
            )
            for _ in range(10)
        ]
        watches = [
            tool_service_pb2_grpc.ToolServiceStub(channels[i % 10]).WatchDefinitions(
                pb.WatchDefinitionsRequest()
            )
            for i in range(200)
        ]
        await asyncio.gather(*(watch.read() for watch in watches))
        for watch in watches:
            watch.cancel()  # the clients leave; the server stops right after
        await served.app.stop(grace=0)
        for channel in channels:
            await channel.close()
    errors = [record for record in caplog.records if record.levelname == "ERROR"]
    assert errors == [], errors[0].getMessage() if errors else ""


async def test_a_token_revoked_by_a_reload_ends_its_watch_at_the_next_change(
    tmp_path: Path,
) -> None:
    tokens = write_tokens(
        tmp_path / "tokens.json",
        [{"token": AGENT, "tools": ["*"], "label": "agent"},
         {"token": OPS, "tools": ["*"], "label": "ops"}],
    )  # fmt: skip
    app = ServerApp(config(tmp_path, auth_tokens=tokens), Worker())
    await app.start()
    try:
        assert app.internal_target is not None
        async with (
            grpc.aio.insecure_channel(f"127.0.0.1:{app.port}") as channel,
            ToolRegistryClient(app.internal_target, TOKEN) as registry,
        ):
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            kept = stub.WatchDefinitions(pb.WatchDefinitionsRequest(), metadata=bearer(OPS))
            revoked = stub.WatchDefinitions(pb.WatchDefinitionsRequest(), metadata=bearer(AGENT))
            await next_message(kept)
            await next_message(revoked)
            write_tokens(tokens, [{"token": OPS, "tools": ["*"], "label": "ops"}])
            app.reload()
            await registry.register_tool(ToolMeta("alpha"), "127.0.0.1:1")
            assert "alpha" in [d.name for d in (await next_message(kept)).definitions]
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await next_message(revoked)
            assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
            kept.cancel()
    finally:
        await app.stop(grace=0)
