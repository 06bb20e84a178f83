"""``make bench-mcp``: ``tools/call`` echo over MCP, against the MCP SDK's own server with the
same tool, and against llmworker's gRPC path, from one client, on one machine, in one run.

Three servers, each a child process: llmworker's demo server (``--mcp-address``), the SDK's
``MCPServer`` (FastMCP, ``bench/mcp_sdk_server.py``) with an identical ``echo``, and for the
gRPC path llmworker's ``CallTool`` on the same demo server. The client is this process: a
number of concurrent sessions (revision 2025-11-25: ``initialize``, then one POST per call
with the session id; answers read from the SSE frame) over httpx2, or one grpc.aio channel
with as many concurrent calls. Rounds alternate the targets, so a noisy moment hits each;
requests/s, latency, and the server process's CPU per call (from ``/proc``) are reported,
the median over rounds. Traffic stays on 127.0.0.1; every wait is bounded.

    python -m bench.mcp [--smoke] [--out bench/results/mcp-DATE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import cast

import grpc.aio
import httpx2

from bench.run import process_cpu
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc

REPO = Path(__file__).resolve().parent.parent
TEXT = "x" * 50  # the 64-byte echo of make bench
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
START_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 30.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start(command: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)


async def wait_http(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    async with httpx2.AsyncClient() as http:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"{url}: the server exited with {process.returncode}")
            try:
                await http.get(url, timeout=1)
                return
            except httpx2.TransportError:
                await asyncio.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {START_TIMEOUT_S:g} s")


def frame_of(body: str) -> dict[str, object]:
    """The JSON-RPC message of an answer: a JSON body, or the data of an SSE frame."""
    if body.lstrip().startswith("{"):
        message: dict[str, object] = json.loads(body)
        return message
    for line in body.splitlines():
        if line.startswith("data:") and line[5:].strip():
            message = json.loads(line[5:])
            return message
    raise ValueError(f"no JSON-RPC message in {body[:200]!r}")


class McpSession:
    """One 2025-11-25 session of raw JSON-RPC POSTs."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self._http, self._url, self._headers, self._ids = http, url, dict(ACCEPT), 0

    async def open(self) -> None:
        hello: dict[str, object] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }
        answer = await self._post("initialize", hello)
        self._headers["mcp-session-id"] = answer.headers["mcp-session-id"]
        self._headers["mcp-protocol-version"] = "2025-11-25"
        notice = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self._http.post(self._url, json=notice, headers=self._headers)

    async def echo(self) -> None:
        answer = await self._post("tools/call", {"name": "echo", "arguments": {"text": TEXT}})
        result = frame_of(answer.text).get("result")
        if not isinstance(result, dict) or cast("dict[str, object]", result).get("isError"):
            raise RuntimeError(f"echo failed: {answer.text[:300]}")

    async def _post(self, method: str, params: dict[str, object]) -> httpx2.Response:
        self._ids += 1
        message = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        answer = await self._http.post(
            self._url, json=message, headers=self._headers, timeout=CALL_TIMEOUT_S
        )
        answer.raise_for_status()
        return answer


async def load(call: Callable[[], Awaitable[None]], seconds: float) -> list[float]:
    """Latencies of back-to-back calls of ``call`` for ``seconds``."""
    latencies: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        started = time.perf_counter()
        await call()
        latencies.append(time.perf_counter() - started)
    return latencies


async def mcp_round(url: str, pid: int, clients: int, seconds: float) -> dict[str, float]:
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_connections=clients)) as http:
        sessions = [McpSession(http, url) for _ in range(clients)]
        await asyncio.gather(*(session.open() for session in sessions))
        await asyncio.gather(*(load(session.echo, 0.5) for session in sessions))  # warm up
        return await measured([pid], seconds, [session.echo for session in sessions])


async def grpc_round(target: str, pid: int, clients: int, seconds: float) -> dict[str, float]:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        request = pb.CallToolRequest(name="echo", input_json=json.dumps({"text": TEXT}))

        async def echo() -> None:
            await stub.CallTool(request, timeout=CALL_TIMEOUT_S)

        await asyncio.gather(*(load(echo, 0.5) for _ in range(clients)))
        return await measured([pid], seconds, [echo] * clients)


async def measured(
    pids: Sequence[int], seconds: float, calls: Sequence[Callable[[], Awaitable[None]]]
) -> dict[str, float]:
    """Requests/s, latency and the CPU of the processes ``pids`` per call, over ``seconds``."""
    cpu, started = process_cpu(list(pids)), time.perf_counter()
    rounds = await asyncio.gather(*(load(call, seconds) for call in calls))
    elapsed, cpu = time.perf_counter() - started, process_cpu(list(pids)) - cpu
    latencies = sorted(latency for latencies in rounds for latency in latencies)
    count = len(latencies)
    return {
        "calls": count,
        "requests_per_s": round(count / elapsed, 1),
        "p50_ms": round(latencies[count // 2] * 1000, 3),
        "p99_ms": round(latencies[min(count - 1, int(count * 0.99))] * 1000, 3),
        "server_cpu_us_per_call": round(cpu / count * 1e6, 1),
    }


async def measure(rounds: int, clients: int, seconds: float, logs: Path) -> dict[str, object]:
    ours_mcp, sdk_port = free_port(), free_port()
    ours = start(
        [sys.executable, "-m", "llmworker_server", "--demo", "--no-internal", "--port", "0",
         "--mcp-address", f"127.0.0.1:{ours_mcp}", "--log-level", "WARNING"],
        logs / "llmworker.log",
    )  # fmt: skip
    sdk = start([sys.executable, "-m", "bench.mcp_sdk_server", str(sdk_port)], logs / "sdk.log")
    try:
        ours_url, sdk_url = f"http://127.0.0.1:{ours_mcp}/mcp", f"http://127.0.0.1:{sdk_port}/mcp"
        await wait_http(ours_url, ours)
        await wait_http(sdk_url, sdk)
        grpc_target = grpc_target_of((logs / "llmworker.log").read_text())
        results: dict[str, list[dict[str, float]]] = {"llmworker_mcp": [], "sdk_mcp": [],
                                                      "llmworker_grpc": []}  # fmt: skip
        for _ in range(rounds):
            results["llmworker_mcp"].append(await mcp_round(ours_url, ours.pid, clients, seconds))
            results["sdk_mcp"].append(await mcp_round(sdk_url, sdk.pid, clients, seconds))
            grpc_result = await grpc_round(grpc_target, ours.pid, clients, seconds)
            results["llmworker_grpc"].append(grpc_result)
    finally:
        for process in (ours, sdk):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
    medians = {name: median_of(runs) for name, runs in results.items()}
    ours_rps = medians["llmworker_mcp"]["requests_per_s"]
    sdk_rps = medians["sdk_mcp"]["requests_per_s"]
    grpc_rps = medians["llmworker_grpc"]["requests_per_s"]
    return {
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "cores": len(os.sched_getaffinity(0)),
        "clients": clients,
        "seconds_per_round": seconds,
        "rounds": rounds,
        "medians": medians,
        "mcp_over_sdk_throughput": round(ours_rps / sdk_rps, 2),
        "mcp_over_grpc_throughput": round(ours_rps / grpc_rps, 2),
        "runs": results,
    }  # fmt: skip


def grpc_target_of(log: str) -> str:
    for line in log.splitlines():
        if " tools on " in line:
            return line.split(" tools on ", 1)[1].split(" ", 1)[0]
    raise RuntimeError(f"the llmworker server logged no gRPC address:\n{log[-2000:]}")


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.median(run[key] for run in runs), 3) for key in runs[0]}


def markdown(report: dict[str, object]) -> str:
    medians = cast("dict[str, dict[str, float]]", report["medians"])
    lines = [
        "| target | requests/s | p50 ms | p99 ms | server CPU µs / call |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, shown in (("llmworker_mcp", "llmworker, MCP"), ("sdk_mcp", "MCP SDK's MCPServer"),
                        ("llmworker_grpc", "llmworker, gRPC CallTool")):  # fmt: skip
        row = medians[name]
        lines.append(
            f"| {shown} | {row['requests_per_s']:.0f} | {row['p50_ms']:.2f} | "
            f"{row['p99_ms']:.2f} | {row['server_cpu_us_per_call']:.0f} |"
        )
    return "\n".join(lines)


def save_report(report: dict[str, object], stem: str, out: Path | None) -> Path:
    """Write ``report`` to ``out`` (default bench/results/STEM-DATE.json); its path."""
    out = out or REPO / "bench" / "results" / f"{stem}-{report['date']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="MCP echo: llmworker, the SDK's server, gRPC")
    parser.add_argument("--smoke", action="store_true", help="tiny counts: proves the harness")
    parser.add_argument(
        "--out", type=Path, help="results file (default bench/results/mcp-DATE.json)"
    )
    args = parser.parse_args(argv)
    rounds, clients, seconds = (1, 2, 0.5) if args.smoke else (5, 16, 4.0)
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as logs:
        report = asyncio.run(measure(rounds, clients, seconds, Path(logs)))
    out = save_report(report, "mcp", args.out)
    print(markdown(report))
    print(f"MCP/SDK throughput {report['mcp_over_sdk_throughput']}x; "
          f"MCP/gRPC {report['mcp_over_grpc_throughput']}x")  # fmt: skip
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
