"""``make bench-mcp-hop``: what one hop through llmworker costs a call of an imported MCP tool,
against calling the MCP server directly with the official SDK's client.

One MCP server, the SDK's ``MCPServer`` with an ``echo`` tool (``bench/mcp_sdk_server.py``)
over Streamable HTTP, and an llmworker server importing it (``--mcp-server sdk=URL``). Two
paths to the same tool, from this process:

- **direct**: ``mcp.Client`` sessions calling ``echo`` (what an agent would do without us);
- **through llmworker**: gRPC ``CallTool`` of ``sdk__echo`` on one channel, which llmworker
  forwards as ``tools/call`` on its own SDK session.

Each is measured with 1 caller (the latency a hop adds) and with 16 (throughput), rounds
alternating the paths; CPU per call is the MCP server's, plus llmworker's on the hop path.

    python -m bench.mcp_hop [--smoke] [--out bench/results/mcp-hop-DATE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import cast

import grpc.aio
from mcp import Client

from bench.mcp import (
    CALL_TIMEOUT_S,
    TEXT,
    free_port,
    grpc_target_of,
    load,
    measured,
    median_of,
    save_report,
    start,
    wait_http,
)
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc

PATHS = ("direct_1", "hop_1", "direct_16", "hop_16")


async def direct_round(url: str, pids: list[int], clients: int, seconds: float) -> dict[str, float]:
    async with AsyncExitStack() as stack:
        sessions = [
            await stack.enter_async_context(Client(url, mode="legacy", cache=None))
            for _ in range(clients)
        ]

        def caller(client: Client) -> Callable[[], Awaitable[None]]:
            async def echo() -> None:
                result = await client.call_tool("echo", {"text": TEXT}, CALL_TIMEOUT_S)
                if result.is_error:
                    raise RuntimeError(f"echo failed: {result}")

            return echo

        calls = [caller(client) for client in sessions]
        await asyncio.gather(*(load(call, 0.5) for call in calls))  # warm up
        return await measured(pids, seconds, calls)


async def hop_round(target: str, pids: list[int], clients: int, seconds: float) -> dict[str, float]:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        request = pb.CallToolRequest(name="sdk__echo", input_json=json.dumps({"text": TEXT}))

        async def echo() -> None:
            await stub.CallTool(request, timeout=CALL_TIMEOUT_S)

        await asyncio.gather(*(load(echo, 0.5) for _ in range(clients)))
        return await measured(pids, seconds, [echo] * clients)


async def measure(rounds: int, seconds: float, logs: Path) -> dict[str, object]:
    sdk_port = free_port()
    sdk = start([sys.executable, "-m", "bench.mcp_sdk_server", str(sdk_port)], logs / "sdk.log")
    url = f"http://127.0.0.1:{sdk_port}/mcp"
    ours = None
    try:
        await wait_http(url, sdk)
        ours = start(
            [sys.executable, "-m", "llmworker_server", "--no-internal", "--port", "0",
             "--mcp-server", f"sdk={url}", "--log-level", "WARNING"],
            logs / "llmworker.log",
        )  # fmt: skip
        target = await _grpc_target(logs / "llmworker.log")
        results: dict[str, list[dict[str, float]]] = {path: [] for path in PATHS}
        for _ in range(rounds):
            for clients in (1, 16):
                results[f"direct_{clients}"].append(
                    await direct_round(url, [sdk.pid], clients, seconds)
                )
                results[f"hop_{clients}"].append(
                    await hop_round(target, [sdk.pid, ours.pid], clients, seconds)
                )
    finally:
        for process in (ours, sdk):
            if process is not None:
                process.terminate()
                process.wait(timeout=30)
    medians = {name: median_of(runs) for name, runs in results.items()}
    return {
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "cores": len(os.sched_getaffinity(0)),
        "seconds_per_round": seconds,
        "rounds": rounds,
        "medians": medians,
        "added_p50_ms_1_caller": round(
            medians["hop_1"]["p50_ms"] - medians["direct_1"]["p50_ms"], 3
        ),
        "hop_over_direct_throughput_16": round(
            medians["hop_16"]["requests_per_s"] / medians["direct_16"]["requests_per_s"], 2
        ),
        "runs": results,
    }


async def _grpc_target(log: Path) -> str:
    """The gRPC address llmworker logs once it serves (60 s at most)."""
    for _ in range(600):
        text = await asyncio.to_thread(_text, log)
        if " tools on " in text:
            return grpc_target_of(text)
        await asyncio.sleep(0.1)
    raise TimeoutError(f"llmworker did not start:\n{_text(log)[-2000:]}")


def _text(log: Path) -> str:
    return log.read_text() if log.exists() else ""


def markdown(report: dict[str, object]) -> str:
    medians = cast("dict[str, dict[str, float]]", report["medians"])
    lines = [
        "| path | callers | requests/s | p50 ms | p99 ms | CPU µs / call (servers) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in PATHS:
        path, clients = name.split("_")
        shown = "SDK client → MCP server" if path == "direct" else "gRPC → llmworker → MCP server"
        row = medians[name]
        lines.append(
            f"| {shown} | {clients} | {row['requests_per_s']:.0f} | {row['p50_ms']:.2f} | "
            f"{row['p99_ms']:.2f} | {row['server_cpu_us_per_call']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a call of an imported MCP tool: the hop's cost")
    parser.add_argument("--smoke", action="store_true", help="tiny counts: proves the harness")
    parser.add_argument("--out", type=Path, help="default bench/results/mcp-hop-DATE.json")
    args = parser.parse_args(argv)
    rounds, seconds = (1, 0.5) if args.smoke else (5, 4.0)
    with tempfile.TemporaryDirectory(prefix="bench-mcp-hop-") as logs:
        report = asyncio.run(measure(rounds, seconds, Path(logs)))
    out = save_report(report, "mcp-hop", args.out)
    print(markdown(report))
    print(f"a hop adds {report['added_p50_ms_1_caller']} ms at p50 with one caller; with 16, "
          f"{report['hop_over_direct_throughput_16']}x the direct throughput")  # fmt: skip
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
