"""Replicas behind client-side balancing, from Go and Node.js, over three server processes, one
killed and one drained mid-run: Go with gRPC's own, given the service configs of
``llmworker._client.balancing``; Node.js with the TypeScript SDK's (``@llmworker/sdk``), which
does the same (round robin, grpc.health.v1 health checks, the same retry policy). And a Go
provider keeping its tools registered with several replicas as they come and go.

The binaries come from ``make interop`` (part of ``make test``); a missing one is a failure
that says how to build it, never a skip.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import urllib.request
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypedDict, cast

import grpc.aio
import pytest
from prometheus_client.parser import text_string_to_metric_families

from llmworker._client.balancing import RETRYING_SERVICE_CONFIG, SERVICE_CONFIG
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from tests.grpc_support import REPO, ServerProcess, wait_for_lines

GO_DIR = REPO / "tests/interop/go"
GO_BINARY = GO_DIR / "bin/interop"
NODE_BALANCE = REPO / "tests/interop/node/balance.mjs"
NODE_MODULES = REPO / "tests/interop/node/node_modules/@llmworker/sdk/dist/index.js"
REPLICA = ["--demo", "--no-internal", "--port", "0", "--drain-delay", "0.5",
           "--metrics-address", "127.0.0.1:0"]  # fmt: skip
SECONDS = 4.0
CONCURRENCY = 8
TOKEN = "balancing-test-token"
RENEW = "300ms"


class Tally(TypedDict):
    """One tool's calls, as the balance clients print them."""

    retrying: bool
    calls: int
    ok: int
    failed: dict[str, int]


def require(path: Path) -> None:
    if not path.exists():
        pytest.fail(f"{path.relative_to(REPO)} is missing: run 'make interop' (make test does)")


# The RPCs the Go SDK's WithRetries retries: those that run at most the one tool they name.
GO_RETRIED = {
    "GetTool", "CallTool", "CallToolStream", "ListDefinitionsSorted", "WatchDefinitions",
    "SearchTools", "ListPausedBatches",
}  # fmt: skip


def test_the_go_sdk_balances_as_the_python_service_config_says() -> None:
    text = (REPO / "sdk/go/llmworker/balancing.go").read_text()
    configs = dict(re.findall(r"^\t(\w+Config) += `(.+)`$", text, re.M))
    assert configs["balancedConfig"] == SERVICE_CONFIG
    retrying, python = json.loads(configs["retryingConfig"]), json.loads(RETRYING_SERVICE_CONFIG)
    (method_config,) = retrying.pop("methodConfig")
    (python_method_config,) = python.pop("methodConfig")
    assert retrying == python  # round robin and the health check
    assert method_config["retryPolicy"] == python_method_config["retryPolicy"]
    # Python's retrying channel carries only CallTool of safe tools; the Go client, which
    # may call anything, retries only the RPCs that run no batch.
    services = {name["service"] for name in method_config["name"]}
    assert services == {"llmworker.v1.ToolService"}
    assert {name["method"] for name in method_config["name"]} == GO_RETRIED
    assert json.loads(configs["retryConfig"]) == {"methodConfig": [method_config]}


# What the TypeScript SDK balances with: the health service it watches and its retry policy.
SDK_POLICY = """import { HEALTH_SERVICE, RETRY_POLICY } from "@llmworker/sdk";
const healthCheckConfig = { serviceName: HEALTH_SERVICE };
console.log(JSON.stringify({ healthCheckConfig, retryPolicy: RETRY_POLICY }));
"""


async def test_the_node_sdk_balances_as_the_python_service_config_says() -> None:
    require(NODE_MODULES)
    # run from tests/interop/node, where @llmworker/sdk resolves as balance.mjs imports it
    process = await asyncio.create_subprocess_exec(
        "node",
        "--input-type=module",
        "-e",
        SDK_POLICY,
        cwd=NODE_BALANCE.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, output.decode()
    sdk = json.loads(output)
    config = json.loads(RETRYING_SERVICE_CONFIG)
    assert sdk["healthCheckConfig"] == config["healthCheckConfig"]
    assert sdk["retryPolicy"] == config["methodConfig"][0]["retryPolicy"]


def metrics_url(replica: ServerProcess) -> str:
    """Where a started replica serves its metrics (it logs it before it serves tools)."""
    for line in replica.lines:
        if found := re.search(r" metrics on (http://\S+/metrics)", line):
            return found[1]
    raise AssertionError(f"no metrics address logged:\n{replica.output}")


def _scrape_whoami(url: str) -> float:
    with urllib.request.urlopen(url, timeout=5) as reply:
        text = reply.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "llmworker_calls_total" and sample.labels == {
                "tool": "whoami",
                "code": "OK",
                "transport": "grpc",
            }:
                return sample.value
    return 0.0


async def whoami_served(url: str, at_least: float = 0.0) -> float:
    """``llmworker_calls_total{tool="whoami",code="OK"}`` of a replica, once it is at least
    ``at_least`` (about 10 s at most)."""
    value = 0.0
    for _ in range(100):
        value = await asyncio.to_thread(_scrape_whoami, url)
        if value >= at_least:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError(f"{url}: whoami calls {value}, expected at least {at_least}")


def balance_command(language: str, target: str) -> list[str]:
    flags = ["--target", target, "--seconds", str(SECONDS), "--concurrency", str(CONCURRENCY)]
    if language == "go":
        return [str(GO_BINARY), "balance", *flags]
    return ["node", str(NODE_BALANCE), *flags]


def _logged_at(line: str) -> datetime:
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")


def calls_while_draining(replica: ServerProcess, after: float = 0.2) -> int:
    """The calls a replica ended more than ``after`` seconds after it received SIGTERM, while
    it drained (its call log writes a call's end time, a moment later)."""
    (signal,) = [line for line in replica.lines if "signal received" in line]
    since = _logged_at(signal) + timedelta(seconds=after)
    calls = [line for line in replica.lines if " llmworker.server.calls " in line]
    return sum(1 for line in calls if _logged_at(line) > since)


@pytest.mark.parametrize("language", ["go", "node"])
async def test_balanced_calls_survive_a_killed_and_a_drained_replica(language: str) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    replicas = [ServerProcess(REPLICA) for _ in range(3)]
    killed, drained, _ = replicas  # and the survivor
    client: asyncio.subprocess.Process | None = None
    communicating: asyncio.Future[tuple[bytes, bytes]] | None = None
    try:
        ports = [await replica.port() for replica in replicas]
        urls = [metrics_url(replica) for replica in replicas]
        target = "ipv4:" + ",".join(f"127.0.0.1:{port}" for port in ports)
        client = await asyncio.create_subprocess_exec(
            *balance_command(language, target),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=REPO,
        )
        communicating = asyncio.ensure_future(client.communicate())
        # Round robin: every replica serves whoami before any goes.
        served = [await whoami_served(url, at_least=1) for url in urls]
        await asyncio.sleep(0.5)
        served[0] = await whoami_served(urls[0])
        killed.process.kill()
        await asyncio.sleep(1.0)
        served[1] = await whoami_served(urls[1])
        served[2] = await whoami_served(urls[2])
        drained.terminate()
        stdout, stderr = await asyncio.wait_for(communicating, timeout=SECONDS + 30)
        assert client.returncode == 0, (stdout + stderr).decode()
        alone = await whoami_served(urls[2])
        assert await asyncio.to_thread(drained.stop) == 0, drained.output
    finally:
        if client is not None and client.returncode is None:
            client.kill()
        if communicating is not None and not communicating.cancelled():
            await asyncio.wait_for(communicating, timeout=10)
        for replica in replicas:
            await asyncio.to_thread(replica.stop, 10)
    tallies = cast("dict[str, Tally]", json.loads(stdout.decode().splitlines()[-1]))
    draining = calls_while_draining(drained)
    print(
        f"{language}: {json.dumps(tallies)}; whoami served before the kill/drain {served}, "
        f"by the survivor at the end {alone}; calls the draining replica served 0.2 s or more "
        f"after its SIGTERM: {draining}"
    )
    whoami, echo = tallies["whoami"], tallies["echo"]
    assert whoami["retrying"], "whoami is read-only and idempotent: retried"
    assert not echo["retrying"], "echo is not annotated: never retried"
    assert whoami["failed"] == {}, f"a retried idempotent call failed: {tallies}"
    assert whoami["ok"] > 0
    for tally in (whoami, echo):  # echo's calls may fail: every one is counted
        assert tally["ok"] + sum(tally["failed"].values()) == tally["calls"], tallies
    assert all(count >= 1 for count in served), served
    assert alone > served[2], "the survivor takes the calls once the others are gone"
    # Client-side health checking (gRPC's in Go, the SDK's in Node): NOT_SERVING moves calls
    # away at once, so only calls already sent end on the draining replica.
    assert draining <= CONCURRENCY, f"{draining} calls reached a replica reporting NOT_SERVING"


def provider(registries: Sequence[Path], *extra: str) -> ServerProcess:
    """The Go provider, registering with the replicas' internal sockets and renewing."""
    targets = ",".join(f"unix://{socket}" for socket in registries)
    flags = ["-registry", targets, "-token", TOKEN, "-renew", RENEW, *extra]
    return ServerProcess(["provider", *flags], command=[str(GO_BINARY)])


def registry_replica(socket: Path) -> ServerProcess:
    arguments = ["--demo", "--port", "0", "--internal-socket", str(socket),
                 "--provider-lease", "60"]  # fmt: skip
    return ServerProcess(arguments, env={"LLMWORKER_TOKEN": TOKEN})


async def reversed_by(port: int, text: str) -> str:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        request = pb.CallToolRequest(name="go_reverse", input_json=json.dumps({"text": text}))
        return (await stub.CallTool(request, timeout=10)).output


async def eventually_reversed(port: int, seconds: float = 10.0) -> None:
    """Until the replica on ``port`` serves go_reverse (``seconds`` at most)."""
    for _ in range(int(seconds / 0.1)):
        try:
            if await reversed_by(port, "abc") == "cba":
                return
        except grpc.aio.AioRpcError as error:
            if error.code() is not grpc.StatusCode.NOT_FOUND:
                raise
        await asyncio.sleep(0.1)
    raise AssertionError(f"the replica on {port} never served go_reverse")


async def test_a_go_provider_keeps_its_tools_with_every_replica(tmp_path: Path) -> None:
    require(GO_BINARY)
    sockets = [tmp_path / "a.sock", tmp_path / "b.sock"]
    first = registry_replica(sockets[0])
    processes = [first]
    try:
        first_port = await first.port()
        go = provider(sockets)
        processes.append(go)
        # b is not up: no READY, and its trouble logged once however many renewals fail.
        await wait_for_lines(go, re.escape(str(sockets[1])))
        await asyncio.sleep(1.0)
        assert not [line for line in go.lines if line.startswith("READY")], go.output
        assert len([line for line in go.lines if str(sockets[1]) in line]) == 1, go.output
        second = registry_replica(sockets[1])
        processes.append(second)
        second_port = await second.port()
        (ready,) = await wait_for_lines(go, r"^READY \d+$")
        provider_port = ready.split()[1]
        assert await reversed_by(first_port, "héllo") == "olléh"
        assert await reversed_by(second_port, "héllo") == "olléh"

        # A restarted replica (same socket) gets the tools back at the next renewal.
        assert await asyncio.to_thread(second.stop) == 0, second.output
        second = registry_replica(sockets[1])
        processes.append(second)
        await eventually_reversed(await second.port())

        # A provider restarted on its port renews its own registrations (no ALREADY_EXISTS,
        # although the lease keeps the old run's tools for a minute).
        go.process.kill()
        await asyncio.to_thread(go.stop)
        again = provider(sockets, "-port", provider_port)
        processes.append(again)
        await wait_for_lines(again, rf"^READY {provider_port}$")
        assert "ALREADY_EXISTS" not in again.output, again.output
        assert await reversed_by(first_port, "xy") == "yx"
        assert await reversed_by(await second.port(), "xy") == "yx"
    finally:
        for process in processes:
            await asyncio.to_thread(process.stop, 10)
