"""Providers that come and go: UnregisterTool, re-registration, providers killed and
restarted as real processes (Python and Go), a locked registry, and provider mode's renewal,
retries and clean refusals."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from llmworker import (
    RemoteServiceError,
    ToolMeta,
    ToolRegistryClient,
    ToolServerError,
    Worker,
)
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.app import ServerApp
from llmworker_server.config import ServerConfig
from tests.grpc_support import REPO, ServerProcess, failure_of, serve

TOKEN = "providers-test-token"
GO_BINARY = REPO / "tests/interop/go/bin/interop"
LEASE = 1.0  # seconds: checks every 0.25 s, so a gone provider is removed within ~1.25 s


@contextlib.asynccontextmanager
async def front(tmp_path: Path, **settings: object) -> AsyncGenerator[ServerApp, None]:
    """A server with no tools of its own, an open registry on a socket, a short lease."""
    config = ServerConfig(
        port=0,
        log_level="WARNING",
        internal_socket=tmp_path / "internal.sock",
        token=TOKEN,
        provider_lease=LEASE,
    )
    for key, value in settings.items():
        setattr(config, key, value)
    app = ServerApp(config, Worker())
    await app.start()
    try:
        yield app
    finally:
        await app.stop(grace=0)


async def eventually(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the condition did not hold in time")


async def provider_status(target: str, provider: str) -> int:
    """What the server's health service says of ``provider`` (-1: nothing yet)."""
    async with grpc.aio.insecure_channel(target) as channel:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        request = health_pb2.HealthCheckRequest(service=f"llmworker.provider/{provider}")
        try:
            return (await check(request, timeout=5)).status
        except grpc.aio.AioRpcError as error:
            if error.code() is not grpc.StatusCode.NOT_FOUND:
                raise
            return -1  # not reported yet


async def eventually_async(
    value: Callable[[], Awaitable[object]], expected: object, seconds: float = 10.0
) -> None:
    for _ in range(int(seconds / 0.05)):
        if await value() == expected:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never {expected!r}: last {await value()!r}")


def provider_process(internal: str, *extra: str) -> ServerProcess:
    return ServerProcess(
        ["--tools", "tests.provider_tools:ProviderTools", "--port", "0", "--no-internal",
         "--register-with", internal, "--provider-lease", str(LEASE), *extra],
        env={"LLMWORKER_TOKEN": TOKEN},
    )  # fmt: skip


async def call(target: str, name: str, input_json: str) -> str:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        reply = await stub.CallTool(pb.CallToolRequest(name=name, input_json=input_json))
        return reply.output


async def test_unregister_removes_a_contributed_tool_and_refuses_the_others(
    tmp_path: Path,
) -> None:
    async with front(tmp_path) as app, serve(internal=False) as provider:
        internal = app.internal_target
        assert internal is not None
        echo = provider.app.registry.handle.get_tool("echo")
        assert echo is not None
        app.registry.register(
            [lambda: (ToolMeta("local_only"), echo[1])]  # a tool of the front itself
        )
        async with ToolRegistryClient(internal, TOKEN) as registry:
            await registry.register_tool(echo[0], provider.target)
            assert "echo" in app.registry.handle
            with pytest.raises(RemoteServiceError) as caught:
                await registry.unregister_tool("echo", "127.0.0.1:1")  # not its provider
            assert caught.value.reason == "INVALID_REQUEST"
            with pytest.raises(RemoteServiceError) as caught:
                await registry.unregister_tool("local_only")
            assert caught.value.reason == "INVALID_REQUEST"
            assert "served by this server itself" in caught.value.message
            with pytest.raises(ToolServerError.ToolNotFound):
                await registry.unregister_tool("ghost")

            fingerprint = await registry.unregister_tool("echo", provider.target)
            assert "echo" not in app.registry.handle
            assert fingerprint == app.registry.handle.definitions_fingerprint()
            await registry.register_tool(echo[0], provider.target)  # it may come back
            await registry.lock()
            with pytest.raises(RemoteServiceError) as caught:
                await registry.unregister_tool("echo")
            assert caught.value.reason == "REGISTRY_LOCKED"
            assert "echo" in app.registry.handle


async def test_a_re_registration_replaces_and_a_renewal_changes_nothing(tmp_path: Path) -> None:
    # No registration check: the provider serves one definition and registers another
    # (with the check, that is refused: tests/server/test_provider_identities.py).
    async with front(tmp_path, provider_check_timeout=0) as app, serve(internal=False) as provider:
        internal = app.internal_target
        assert internal is not None
        echo = provider.app.registry.handle.get_tool("echo")
        assert echo is not None
        changes: list[str] = []
        app.registry.on_change(lambda: changes.append("changed"))
        async with ToolRegistryClient(internal, TOKEN) as registry:
            first = await registry.register_tool(echo[0], provider.target)
            assert await registry.register_tool(echo[0], provider.target) == first
            assert changes == ["changed"], "an identical renewal is no change"
            edited = echo[0].with_description("Echo, edited")
            assert await registry.register_tool(edited, provider.target) != first
            found = app.registry.handle.get_tool("echo")
            assert found is not None
            assert found[0].description == "Echo, edited"
            with pytest.raises(Exception, match="'echo'"):
                await registry.register_tool(echo[0], "127.0.0.1:1")  # another provider


async def test_a_killed_provider_leaves_and_watchers_see_it(tmp_path: Path) -> None:
    async with front(tmp_path) as app:
        internal = app.internal_target
        assert internal is not None
        process = provider_process(internal)
        try:
            await process.port()
            await eventually(lambda: "shout" in app.registry.handle)
            target = f"127.0.0.1:{app.port}"
            assert await call(target, "shout", '{"text": "hi"}') == "HI!"
            provider = app.registry.provider_of("shout")
            assert provider is not None
            serving = health_pb2.HealthCheckResponse.SERVING
            await eventually_async(lambda: provider_status(target, provider), serving)
            async with grpc.aio.insecure_channel(target) as channel:
                stub = tool_service_pb2_grpc.ToolServiceStub(channel)
                watch = stub.WatchDefinitions(pb.WatchDefinitionsRequest())
                first = await watch.read()
                assert isinstance(first, pb.ListDefinitionsSortedResponse)
                assert "shout" in [d.name for d in first.definitions]
                process.process.kill()  # SIGKILL: no goodbye
                after = await asyncio.wait_for(watch.read(), timeout=10)
                assert isinstance(after, pb.ListDefinitionsSortedResponse)
                assert [d.name for d in after.definitions] == []
                watch.cancel()
            unknown = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
            await eventually_async(lambda: provider_status(target, provider), unknown)
        finally:
            process.process.kill()
            process.stop()


async def test_a_restarted_provider_registers_again_once_its_old_run_is_gone(
    tmp_path: Path,
) -> None:
    async with front(tmp_path, provider_lease=3.0) as app:
        internal = app.internal_target
        assert internal is not None
        first = provider_process(internal)
        second: ServerProcess | None = None
        try:
            await first.port()
            await eventually(lambda: "shout" in app.registry.handle)
            old_provider = app.registry.provider_of("shout")
            first.process.kill()
            second = provider_process(internal)  # a new port: the name is still taken
            await second.port()
            await eventually(lambda: "registered at" in second.output, 10)
            assert "by another provider" in second.output
            await eventually(
                lambda: app.registry.provider_of("shout") not in (None, old_provider), 15
            )
            assert await call(f"127.0.0.1:{app.port}", "shout", '{"text": "back"}') == "BACK!"
            assert second.process.poll() is None, second.output
            assert "Traceback" not in second.output
        finally:
            first.process.kill()
            first.stop()
            if second is not None:
                assert await asyncio.to_thread(second.stop) == 0


async def test_a_provider_that_stops_gracefully_unregisters_at_once(tmp_path: Path) -> None:
    async with front(tmp_path, provider_lease=60.0) as app:  # the lease would take a minute
        internal = app.internal_target
        assert internal is not None
        process = provider_process(internal)
        await process.port()
        await eventually(lambda: "shout" in app.registry.handle)
        assert await asyncio.to_thread(process.stop) == 0, process.output  # the front answers
        assert "shout" not in app.registry.handle
        assert "unregistered 2 tools" in process.output


async def test_a_locked_registry_keeps_a_gone_providers_tools_unavailable(
    tmp_path: Path,
) -> None:
    async with front(tmp_path) as app:
        internal = app.internal_target
        assert internal is not None
        process = provider_process(internal)
        try:
            await process.port()
            await eventually(lambda: "shout" in app.registry.handle)
            async with ToolRegistryClient(internal, TOKEN) as registry:
                await registry.lock()
            process.process.kill()
            await asyncio.sleep(LEASE * 2)
            assert "shout" in app.registry.handle, "the tool set of a locked registry is fixed"
            async with grpc.aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
                stub = tool_service_pb2_grpc.ToolServiceStub(channel)
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.CallTool(pb.CallToolRequest(name="shout", input_json="{}"))
                assert failure_of(caught.value).reason == "PROVIDER_UNAVAILABLE"
        finally:
            process.process.kill()
            process.stop()


async def test_provider_mode_refused_for_good_exits_with_a_message(tmp_path: Path) -> None:
    async with front(tmp_path, lock_at_start=True) as app:
        internal = app.internal_target
        assert internal is not None
        process = provider_process(internal)
        code = await asyncio.to_thread(process.process.wait, 30)
        process.stop()
        assert code == 1, process.output
        assert "refused the tools (REGISTRY_LOCKED)" in process.output
        assert "Traceback" not in process.output
        assert "Event loop is closed" not in process.output


async def test_a_killed_go_provider_without_health_checks_leaves(tmp_path: Path) -> None:
    if not GO_BINARY.exists():
        pytest.fail("tests/interop/go/bin/interop is missing: run 'make interop' (make test does)")
    async with front(tmp_path) as app:
        internal = app.internal_target
        assert internal is not None
        provider = await asyncio.create_subprocess_exec(
            str(GO_BINARY), "provider", "-registry", internal, "-token", TOKEN, "-no-health",
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            assert provider.stdout is not None
            ready = await asyncio.wait_for(provider.stdout.readline(), timeout=30)
            assert ready.startswith(b"READY "), ready
            await asyncio.sleep(LEASE * 2)  # checked through GetTool: it stays
            assert "go_reverse" in app.registry.handle
            provider.kill()
            await eventually(lambda: "go_reverse" not in app.registry.handle)
        finally:
            with contextlib.suppress(ProcessLookupError):
                provider.kill()
            await provider.wait()


@contextlib.asynccontextmanager
async def healthy_but_mute(seconds: float) -> AsyncGenerator[str, None]:
    """A provider whose health answers SERVING but whose GetTool takes ``seconds``."""
    server = grpc.aio.server()
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)

    async def get_tool(request: pb.GetToolRequest, context: object) -> pb.GetToolResponse:
        await asyncio.sleep(seconds)
        return pb.GetToolResponse()

    handler = grpc.unary_unary_rpc_method_handler(
        get_tool,
        request_deserializer=pb.GetToolRequest.FromString,
        response_serializer=pb.GetToolResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("llmworker.v1.ToolService", {"GetTool": handler}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(0)


async def test_registration_asks_the_provider_for_the_tool_first(tmp_path: Path) -> None:
    async with (
        front(tmp_path, provider_check_timeout=0.5) as app,
        serve(internal=False) as provider,
        healthy_but_mute(5.0) as mute,
    ):
        internal = app.internal_target
        assert internal is not None
        async with ToolRegistryClient(internal, TOKEN) as registry:
            with pytest.raises(RemoteServiceError) as caught:
                await registry.register_tool(ToolMeta("not_served"), provider.target)
            assert caught.value.reason == "INVALID_REQUEST"
            assert "does not serve tool 'not_served'" in caught.value.message
            for target, said in [
                ("127.0.0.1:1", "did not answer GetTool('shout') within 0.5 s (UNAVAILABLE)"),
                (mute, "within 0.5 s (DEADLINE_EXCEEDED)"),
            ]:
                with pytest.raises(RemoteServiceError) as caught:
                    await registry.register_tool(ToolMeta("shout"), target)
                assert caught.value.reason == "PROVIDER_UNAVAILABLE"
                assert said in caught.value.message
            echo = provider.app.registry.handle.get_tool("echo")
            assert echo is not None
            await registry.register_tool(echo[0], provider.target)  # it serves this one
        assert len(app.registry.handle) == 1
        channels = app._registry_service._channels  # pyright: ignore[reportPrivateUsage]
        await eventually(lambda: set(channels) == {provider.target})


async def test_a_locked_registry_takes_a_provider_back_with_identical_definitions(
    tmp_path: Path,
) -> None:
    async with front(tmp_path) as app:
        internal = app.internal_target
        assert internal is not None
        first = provider_process(internal)
        second: ServerProcess | None = None
        try:
            await first.port()
            await eventually(lambda: "shout" in app.registry.handle)
            async with ToolRegistryClient(internal, TOKEN) as registry:
                await registry.lock()
                shout = app.registry.handle.get_tool("shout")
                assert shout is not None
                edited = shout[0].with_description("another definition")
                with pytest.raises(RemoteServiceError) as caught:
                    await registry.register_tool(edited, "127.0.0.1:1")
                assert caught.value.reason == "REGISTRY_LOCKED"
            first.process.kill()
            old_provider = app.registry.provider_of("shout")
            second = provider_process(internal)  # a new port, the same definitions
            await second.port()
            await eventually(lambda: app.registry.provider_of("shout") != old_provider)
            assert await call(f"127.0.0.1:{app.port}", "shout", '{"text": "back"}') == "BACK!"
        finally:
            first.process.kill()
            first.stop()
            if second is not None:
                await asyncio.to_thread(second.stop)


async def test_provider_mode_registers_again_with_a_restarted_server(tmp_path: Path) -> None:
    async with front(tmp_path) as app:
        internal = app.internal_target
        assert internal is not None
        process = provider_process(internal)
        try:
            await process.port()
            await eventually(lambda: "shout" in app.registry.handle)
            await app.stop(grace=0)
            async with front(tmp_path) as restarted:  # the same socket, an empty registry
                await eventually(lambda: "shout" in restarted.registry.handle)
                target = f"127.0.0.1:{restarted.port}"
                assert await call(target, "shout", '{"text": "again"}') == "AGAIN!"
        finally:
            await asyncio.to_thread(process.stop)
        assert "Traceback" not in process.output
