"""Replicas: a provider registered with every replica a target names (and following them as
they come and go), clients balancing across replicas and retrying only what is safe to run
twice, and a paused batch resumed through another replica told where it lives."""

from __future__ import annotations

import asyncio
import contextlib
import urllib.request
from collections.abc import AsyncGenerator, Callable, Sequence
from pathlib import Path

import grpc
import grpc.aio
import pytest

from llmworker import (
    Mutable,
    RemoteToolServerHandle,
    ToolAnnotations,
    ToolMeta,
    ToolRegistryClient,
    ToolServerError,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server import ServerApp, ServerConfig
from llmworker_server.demo_tools import DemoTools
from llmworker_server.registry import replicas as replica_registrations
from llmworker_server.registry.replicas import registry_addresses
from tests.grpc_support import failure_of

_TOKEN = "replicas-test-token"


@tool_registry
class _Replica:
    """Tools that say which replica ran them."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.bumps = 0

    @tool(read_only=True, idempotent=True)
    async def where(self) -> int:
        """The replica's index."""
        return self.index

    @tool
    async def bump(self) -> int:
        """Count a call (not idempotent)."""
        self.bumps += 1
        return self.bumps


@contextlib.asynccontextmanager
async def _replicas(
    count: int, make_worker: Callable[[int], Worker[Mutable]] | None = None, **settings: object
) -> AsyncGenerator[list[ServerApp], None]:
    """``count`` servers, each with an internal registry on TCP (with the token)."""
    apps: list[ServerApp] = []
    try:
        for index in range(count):
            config = ServerConfig(
                port=0, log_level="WARNING", internal_address="127.0.0.1:0", token=_TOKEN,
                provider_lease=1.0, provider_check_timeout=0,
            )  # fmt: skip
            for key, value in settings.items():
                setattr(config, key, value)
            app = ServerApp(config, make_worker(index) if make_worker else Worker())
            await app.start()
            apps.append(app)
        yield apps
    finally:
        for app in apps:
            await app.stop(grace=0)


def _replica_worker(index: int) -> Worker[Mutable]:
    worker = Worker()
    worker.register_tools(tool_definitions(_Replica(index)))
    return worker


async def _eventually(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("never happened")


async def _fingerprint(app: ServerApp) -> str:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        return (await stub.ListDefinitionsSorted(pb.ListDefinitionsSortedRequest())).fingerprint


def _ipv4(apps: Sequence[ServerApp]) -> str:
    return "ipv4:" + ",".join(str(app.internal_target) for app in apps)


async def test_addresses_a_target_names() -> None:
    assert await registry_addresses("ipv4:127.0.0.1:7002,127.0.0.1:7001") == [
        "ipv4:127.0.0.1:7001",
        "ipv4:127.0.0.1:7002",
    ]
    assert await registry_addresses("ipv6:[::1]:7001") == ["ipv6:[::1]:7001"]
    assert await registry_addresses("dns:///127.0.0.1:7001") == ["ipv4:127.0.0.1:7001"]
    assert "ipv4:127.0.0.1:7001" in await registry_addresses("dns:///localhost:7001")
    assert await registry_addresses("registry.internal:7001") == ["registry.internal:7001"]
    assert await registry_addresses("unix:///run/llmworker.sock") == ["unix:///run/llmworker.sock"]
    with pytest.raises(ValueError, match="needs HOST:PORT"):
        await registry_addresses("dns:///no-port")
    for listed in ("ipv4:10.0.0.1:7000, ", "ipv4:10.0.0.1", "ipv4:10.0.0.1:7000,:7001"):
        with pytest.raises(ValueError, match="is not HOST:PORT"):
            await registry_addresses(listed)


async def test_a_name_not_in_dns_yet_is_followed_rather_than_fatal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = ServerApp(
        ServerConfig(port=0, log_level="WARNING", internal=False, token=_TOKEN, demo=True,
                     register_with="dns:///no-such-replica.invalid:7000",
                     register_resolve_interval=0.1),
    )  # fmt: skip
    await provider.start()  # serves its own tools meanwhile
    try:
        await asyncio.sleep(0.3)
    finally:
        await provider.stop(grace=0)
    assert "cannot resolve dns:///no-such-replica.invalid:7000" in caplog.text


async def test_a_provider_registers_with_every_replica_and_leaves_them_all() -> None:
    async with _replicas(3) as apps:
        provider = ServerApp(
            ServerConfig(port=0, log_level="WARNING", internal=False, token=_TOKEN, demo=True,
                         provider_lease=1.0, register_with=_ipv4(apps)),
        )  # fmt: skip
        await provider.start()
        try:
            count = len(provider.registry.handle)
            await _eventually(lambda: all(len(app.registry.handle) == count for app in apps))
            fingerprints = {await _fingerprint(app) for app in apps}
            assert len(fingerprints) == 1  # every replica lists the same definitions
            assert fingerprints != {await _fingerprint_of_empty()}
        finally:
            await provider.stop(grace=0)
        assert all("echo" not in app.registry.handle for app in apps)


async def _fingerprint_of_empty() -> str:
    return Worker().tool_server_handle().definitions_fingerprint()


async def test_a_replica_that_comes_back_gets_the_tools_again() -> None:
    async with _replicas(2) as apps:
        provider = ServerApp(
            ServerConfig(port=0, log_level="WARNING", internal=False, token=_TOKEN, demo=True,
                         provider_lease=1.0, register_with=_ipv4(apps)),
        )  # fmt: skip
        await provider.start()
        try:
            await _eventually(lambda: all("echo" in app.registry.handle for app in apps))
            address = str(apps[1].internal_target)
            await apps[1].stop(grace=0)
            back = ServerApp(
                ServerConfig(port=0, log_level="WARNING", internal_address=address, token=_TOKEN,
                             provider_lease=1.0, provider_check_timeout=0),
                Worker(),
            )  # fmt: skip
            await back.start()
            try:
                # the next renewal, one tool after another
                await _eventually(lambda: len(back.registry.handle) == len(apps[0].registry.handle))
                assert await _fingerprint(back) == await _fingerprint(apps[0])
            finally:
                await back.stop(grace=0)
        finally:
            await provider.stop(grace=0)


async def test_a_dns_name_is_followed_as_replicas_appear_and_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with _replicas(2) as apps:
        named = [[f"ipv4:{apps[0].internal_target}"]]

        async def resolve(target: str) -> list[str]:
            return named[0]

        monkeypatch.setattr(replica_registrations, "registry_addresses", resolve)
        provider = ServerApp(
            ServerConfig(port=0, log_level="WARNING", internal=False, token=_TOKEN, demo=True,
                         provider_lease=1.0, register_with="dns:///registry.test:7000",
                         register_resolve_interval=0.1),
        )  # fmt: skip
        await provider.start()
        try:
            await _eventually(lambda: "echo" in apps[0].registry.handle)
            assert "echo" not in apps[1].registry.handle
            named[0] = [f"ipv4:{app.internal_target}" for app in apps]  # a replica appeared
            await _eventually(lambda: "echo" in apps[1].registry.handle)
            named[0] = [f"ipv4:{apps[1].internal_target}"]  # the first one's address is gone
            await _eventually(lambda: "echo" not in apps[0].registry.handle)
            assert "echo" in apps[1].registry.handle
        finally:
            await provider.stop(grace=0)


def _targets(apps: Sequence[ServerApp]) -> str:
    return "ipv4:" + ",".join(f"127.0.0.1:{app.port}" for app in apps)


async def test_a_balanced_client_spreads_calls_over_the_replicas() -> None:
    async with (
        _replicas(3, _replica_worker) as apps,
        await RemoteToolServerHandle.connect(_targets(apps), balanced=True, watch=False) as handle,
    ):
        answers = {await handle.call_tool("where", "{}") for _ in range(30)}
        assert answers == {"0", "1", "2"}
        await apps[1].stop(grace=0)  # a replica goes away: idempotent calls do not fail
        answers = {await handle.call_tool("where", "{}") for _ in range(30)}
        assert answers <= {"0", "2"}


async def test_only_tools_annotated_idempotent_or_read_only_are_retried() -> None:
    async with _replicas(1, metrics_address="127.0.0.1:0") as (front,):
        async with ToolRegistryClient(str(front.internal_target), _TOKEN) as registry:
            hints = ToolAnnotations(idempotent=True)
            await registry.register_tool(ToolMeta("safe", annotations=hints), "127.0.0.1:9")
            await registry.register_tool(ToolMeta("unsafe"), "127.0.0.1:9")  # nobody listens
        async with await RemoteToolServerHandle.connect(
            _targets([front]), balanced=True, watch=False
        ) as handle:
            for name in ("safe", "unsafe"):
                with pytest.raises(ToolServerError):
                    await handle.call_tool(name, "{}")
        url = f"http://127.0.0.1:{front.metrics_port}/metrics"
        await asyncio.sleep(0.5)  # the call log's flush counts them
        text = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
    attempts = {
        name: _sample(
            text.decode(),
            f'llmworker_calls_total{{code="UNAVAILABLE",tool="{name}",transport="grpc"}}',
        )
        for name in ("safe", "unsafe")
    }
    assert attempts == {"safe": 5, "unsafe": 1}  # gRPC's retry policy: 5 attempts at most


def _sample(text: str, line_start: str) -> float:
    for line in text.splitlines():
        if line.startswith(line_start):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {line_start} in\n{text}")


def _demo_worker(index: int) -> Worker[Mutable]:
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    return worker


async def test_a_batch_paused_in_memory_resumed_on_another_replica_is_told_where_it_is() -> None:
    async with _replicas(2, _demo_worker, state="memory") as (first, second):
        delete = pb.CallToolRequest(name="kv_delete", input_json='{"key": "k"}', call_id="c1")
        async with (
            grpc.aio.insecure_channel(f"127.0.0.1:{first.port}") as one,
            grpc.aio.insecure_channel(f"127.0.0.1:{second.port}") as other,
        ):
            paused = await tool_service_pb2_grpc.ToolServiceStub(one).CallTools(
                pb.CallToolsRequest(calls=[delete])
            )
            token = paused.paused.resume_token
            approve = pb.ResumeBatchRequest(
                resume_token=token, decisions=[pb.CallDecision(call_id="c1", approve=pb.Approval())]
            )
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await tool_service_pb2_grpc.ToolServiceStub(other).ResumeBatch(approve)
            failure = failure_of(raised.value)
            assert failure.code == grpc.StatusCode.FAILED_PRECONDITION
            assert failure.reason == "BATCH_PAUSED_ELSEWHERE"
            assert failure.metadata["replica"] == token.split(".")[0]
            assert "send ResumeBatch to that replica" in failure.message
            done = await tool_service_pb2_grpc.ToolServiceStub(one).ResumeBatch(approve)
        assert done.HasField("completed")  # the batch was still held where it paused
        assert len(done.completed.results) == 1


async def test_replicas_on_one_store_resume_each_others_batches(tmp_path: Path) -> None:
    state = f"sqlite:///{tmp_path}/shared.db"
    async with _replicas(2, _demo_worker, state=state) as (first, second):
        delete = pb.CallToolRequest(name="kv_delete", input_json='{"key": "k"}', call_id="c1")
        async with (
            grpc.aio.insecure_channel(f"127.0.0.1:{first.port}") as one,
            grpc.aio.insecure_channel(f"127.0.0.1:{second.port}") as other,
        ):
            paused = await tool_service_pb2_grpc.ToolServiceStub(one).CallTools(
                pb.CallToolsRequest(calls=[delete])
            )
            approve = pb.ResumeBatchRequest(
                resume_token=paused.paused.resume_token,
                decisions=[pb.CallDecision(call_id="c1", approve=pb.Approval())],
            )
            done = await tool_service_pb2_grpc.ToolServiceStub(other).ResumeBatch(approve)
            assert done.HasField("completed")
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await tool_service_pb2_grpc.ToolServiceStub(one).ResumeBatch(approve)
            assert failure_of(raised.value).reason == "RESUME_TOKEN_UNKNOWN"


@pytest.mark.parametrize("stopped", [0, 1])
async def test_a_watch_moves_to_another_replica_and_goes_on_from_its_fingerprint(
    stopped: int,
) -> None:
    async with (
        _replicas(2, _demo_worker) as apps,
        await RemoteToolServerHandle.connect(_targets(apps), balanced=True) as handle,
    ):
        await apps[stopped].stop(grace=0)  # one of the two held the watch
        alive = apps[1 - stopped]
        async with ToolRegistryClient(str(alive.internal_target), _TOKEN) as registry:
            await registry.register_tool(ToolMeta("extra"), "127.0.0.1:9")
        await _eventually(lambda: handle.get_tool("extra") is not None)
        assert handle.definitions_fingerprint() == await _fingerprint(alive)
