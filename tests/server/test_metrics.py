"""Prometheus metrics on ``--metrics-address``: calls by tool and code, durations, gauges, a
label set no caller can grow, TLS, and one endpoint summing ``--workers`` processes."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import ssl
import urllib.error
import urllib.request
import uuid

import grpc
import grpc.aio
import pytest
from mcp import Client
from prometheus_client.parser import text_string_to_metric_families

from llmworker import __version__
from llmworker.v1 import tool_service_pb2, tool_service_pb2_grpc
from llmworker_server.cli import parse_args
from llmworker_server.config import ServerConfig
from llmworker_server.rpc.audit import AUDIT
from tests.grpc_support import ServerProcess, serve, wait_for_lines
from tests.server.test_auth import demo_worker
from tests.tls_support import Pki

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _scrape(url: str, context: ssl.SSLContext | None = None) -> Samples:
    with urllib.request.urlopen(url, timeout=10, context=context) as reply:
        text = reply.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def metric_value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def scrape_until(url: str, name: str, value: float, **labels: str) -> Samples:
    """Scrape until ``name{labels}`` reaches ``value`` (calls are counted within 0.2 s, or a
    second with --workers); 10 s at most."""
    samples: Samples = {}
    for _ in range(100):
        samples = await asyncio.to_thread(_scrape, url)
        if metric_value(samples, name, **labels) >= value:
            return samples
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name}{labels} never reached {value}: {samples}")


async def test_calls_are_counted_by_tool_and_code_with_durations() -> None:
    async with serve(metrics_address="127.0.0.1:0") as served:
        url = f"http://127.0.0.1:{served.app.metrics_port}/metrics"
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            for _ in range(3):
                await stub.CallTool(
                    tool_service_pb2.CallToolRequest(name="echo", input_json='{"text": "x"}')
                )
            with pytest.raises(grpc.aio.AioRpcError):
                await stub.CallTool(tool_service_pb2.CallToolRequest(name="echo", input_json="[]"))
        samples = await scrape_until(
            url, "llmworker_calls_total", 1, tool="echo", code="INVALID_ARGUMENT", transport="grpc"
        )
    assert (
        metric_value(samples, "llmworker_calls_total", tool="echo", code="OK", transport="grpc")
        == 3
    )
    assert metric_value(samples, "llmworker_call_duration_seconds_count", tool="echo") == 4
    assert (
        metric_value(samples, "llmworker_call_duration_seconds_bucket", tool="echo", le="+Inf") == 4
    )
    assert metric_value(samples, "llmworker_call_duration_seconds_sum", tool="echo") > 0
    assert metric_value(samples, "llmworker_tools") == len(served.app.registry.handle)
    assert metric_value(samples, "llmworker_build", version=__version__) == 1


async def test_made_up_tool_names_cannot_grow_the_label_set() -> None:
    async with serve(metrics_address="127.0.0.1:0") as served:
        url = f"http://127.0.0.1:{served.app.metrics_port}/metrics"
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            for _ in range(50):
                with pytest.raises(grpc.aio.AioRpcError):
                    await stub.CallTool(
                        tool_service_pb2.CallToolRequest(name=f"no_{uuid.uuid4().hex}")
                    )
        samples = await scrape_until(
            url, "llmworker_calls_total", 50, tool="_unknown", code="NOT_FOUND", transport="grpc"
        )
    tools = {dict(labels).get("tool") for name, labels in samples if name.startswith("llmworker_c")}
    assert tools == {"_unknown"}


async def test_gauges_show_calls_in_flight_and_watchers() -> None:
    async with serve(metrics_address="127.0.0.1:0") as served:
        url = f"http://127.0.0.1:{served.app.metrics_port}/metrics"
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            sleeping = asyncio.ensure_future(
                stub.CallTool(
                    tool_service_pb2.CallToolRequest(name="sleep", input_json='{"seconds": 5}')
                )
            )
            watch = stub.WatchDefinitions(tool_service_pb2.WatchDefinitionsRequest())
            await watch.read()  # the watch is open once its first message came
            samples = await scrape_until(url, "llmworker_in_flight", 1)
            assert metric_value(samples, "llmworker_watchers") == 1
            sleeping.cancel()
            watch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await sleeping


async def test_metrics_are_served_over_tls_with_the_listener_certificate(pki: Pki) -> None:
    async with serve(metrics_address="127.0.0.1:0", tls=pki.server_files()) as served:
        context = ssl.create_default_context(cafile=str(pki.ca.cert))
        url = f"https://127.0.0.1:{served.app.metrics_port}/metrics"
        samples = await asyncio.to_thread(_scrape, url, context)
        assert metric_value(samples, "llmworker_tools") > 0
        with pytest.raises(urllib.error.URLError):
            await asyncio.to_thread(_scrape, url)  # a client that does not trust the CA


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("0.0.0.0:9464", "--allow-insecure"),
        ("9464", "is not HOST:PORT"),
        ("127.0.0.1:port", "is not HOST:PORT"),
        ("127.0.0.1:70000", "is not HOST:PORT"),
    ],
)
def test_a_bad_metrics_address_is_refused_with_what_to_change(
    address: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--metrics-address", address])
    assert message in capsys.readouterr().err


def test_metrics_beyond_loopback_are_allowed_when_asked() -> None:
    ServerConfig(metrics_address="0.0.0.0:9464", allow_insecure=True).check()


async def test_with_workers_one_endpoint_sums_every_process_and_survives_a_restart() -> None:
    port, metrics_port = 50181, 50182
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    server = ServerProcess(
        ["--demo", "--no-internal", "--port", str(port), "--workers", "2",
         "--metrics-address", f"127.0.0.1:{metrics_port}"],
    )  # fmt: skip
    try:
        await wait_for_lines(server, r" tools on ", count=2)
        await _calls_on_new_connections(port, 40)
        samples = await scrape_until(
            url, "llmworker_calls_total", 40, tool="echo", code="OK", transport="grpc"
        )
        assert metric_value(samples, "llmworker_workers") == 2
        (started,) = await wait_for_lines(server, r"started 2 worker processes")
        victim = int(re.findall(r"\d+", started.split("processes:", 1)[1])[0])
        os.kill(victim, signal.SIGKILL)
        await wait_for_lines(server, r" tools on ", count=3)
        samples = await scrape_until(url, "llmworker_worker_restarts_total", 1)
        # the dead child's calls still count: counters never go back
        assert (
            metric_value(samples, "llmworker_calls_total", tool="echo", code="OK", transport="grpc")
            >= 40
        )
        await _calls_on_new_connections(port, 10)
        samples = await scrape_until(
            url, "llmworker_calls_total", 50, tool="echo", code="OK", transport="grpc"
        )
        assert metric_value(samples, "llmworker_workers") == 2
    finally:
        code = await asyncio.to_thread(server.stop)
    assert code == 0, server.output


async def _calls_on_new_connections(port: int, count: int) -> None:
    """``count`` echo calls, each on a connection of its own (spread over the workers)."""
    for _ in range(count):
        options = [("grpc.use_local_subchannel_pool", 1)]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            await stub.CallTool(
                tool_service_pb2.CallToolRequest(name="echo", input_json='{"text": "x"}'),
                timeout=10,
            )


async def test_paused_batches_their_age_and_decisions_are_measured() -> None:
    before = AUDIT.decision_counts()
    async with serve(worker=demo_worker(), metrics_address="127.0.0.1:0") as served:
        url = f"http://127.0.0.1:{served.app.metrics_port}/metrics"
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            delete = tool_service_pb2.CallToolRequest(
                call_id="d", name="kv_delete", input_json='{"key": "k"}'
            )
            tokens = [
                (
                    await stub.CallTools(tool_service_pb2.CallToolsRequest(calls=[delete]))
                ).paused.resume_token
                for _ in range(2)
            ]
            samples = await scrape_until(url, "llmworker_paused_batches", 2)
            await asyncio.sleep(1.1)
            samples = await scrape_until(url, "llmworker_paused_batch_oldest_age_seconds", 1)
            for token, decision in zip(
                tokens,
                [
                    tool_service_pb2.CallDecision(call_id="d", approve=tool_service_pb2.Approval()),
                    tool_service_pb2.CallDecision(call_id="d", deny=tool_service_pb2.Denial()),
                ],
                strict=True,
            ):
                request = tool_service_pb2.ResumeBatchRequest(
                    resume_token=token, decisions=[decision]
                )
                await stub.ResumeBatch(request, timeout=10)
        approved = before.get("approve", 0) + 1
        samples = await scrape_until(
            url, "llmworker_batch_decisions_total", approved, decision="approve"
        )
    assert metric_value(samples, "llmworker_batch_decisions_total", decision="deny") == (
        before.get("deny", 0) + 1
    )
    assert metric_value(samples, "llmworker_paused_batches") == 0


async def test_mcp_calls_are_counted_under_their_transport() -> None:
    async with serve(metrics_address="127.0.0.1:0", mcp_address="127.0.0.1:0") as served:
        url = f"http://127.0.0.1:{served.app.metrics_port}/metrics"
        async with Client(f"http://127.0.0.1:{served.app.mcp_port}/mcp") as client:
            for _ in range(2):
                await client.call_tool("echo", {"text": "hi"})
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            request = tool_service_pb2.CallToolRequest(name="echo", input_json='{"text": "x"}')
            await stub.CallTool(request)
        samples = await scrape_until(
            url, "llmworker_calls_total", 2, tool="echo", code="OK", transport="mcp"
        )
        samples = await scrape_until(
            url, "llmworker_calls_total", 1, tool="echo", code="OK", transport="grpc"
        )
        assert (
            metric_value(samples, "llmworker_calls_total", tool="echo", code="OK", transport="mcp")
            == 2
        )
