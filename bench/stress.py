"""``make stress``: the figures of a server that nothing can crash, stall or make lose calls.

    python -m bench.stress [--quick] [--out bench/results/stress-DATE.json]

- **shutdown**: ghz (c=32, 2 connections) sends 20,000 echo calls; SIGTERM after 5,000 have
  been answered. Lost calls are the ones ghz saw CANCELLED (accepted, never answered);
  UNAVAILABLE ones were refused after the listener closed and may be retried elsewhere.
- **blocked tool**: a sync tool sleeping 6 s is in flight at SIGTERM with ``--grace 1``:
  how long the process takes to exit.
- **bad requests**: one invalid request of each kind at once per round, under a probe that
  calls echo every 5 ms: the slowest probe call and the server's peak RSS growth.
- **registration**: 10,000 RegisterTool calls over the internal socket, in name order and
  in random order.

Traffic goes to 127.0.0.1 and a Unix socket only; every step is bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

from llmworker import ToolMeta, ToolRegistryClient
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc

REPO = Path(__file__).resolve().parent.parent
GHZ = REPO / ".tools/go/bin/ghz"
_TOOLS = [
    "--tools",
    "tests.server_tools:ServerTestTools",
    "--tools",
    "tests.server_tools:CrashTestTools",
]
_PORT = re.compile(r" tools on [^ ]+:(\d+) ")


class Server:
    """``python -m llmworker_server ARGS``, its standard error read in a thread."""

    def __init__(self, arguments: list[str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "llmworker_server", "--port", "0", *arguments],
            cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        self.ok_lines = 0
        self.port = 0
        self._ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(30) or not self.port:
            self.process.kill()
            raise RuntimeError("the server did not start")

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if " status=OK " in line:
                self.ok_lines += 1
            elif not self.port and (match := _PORT.search(line)):
                self.port = int(match[1])
                self._ready.set()
        self._ready.set()

    def terminate(self) -> float:
        self.process.send_signal(signal.SIGTERM)
        return time.monotonic()

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def shutdown_under_load(calls: int, signal_after: int) -> dict[str, Any]:
    server = Server(["--demo", "--no-internal", "--log-level", "INFO"])
    with tempfile.TemporaryDirectory() as workdir:
        report = Path(workdir) / "ghz.json"
        ghz = subprocess.Popen(
            [str(GHZ), "--insecure", "--call", "llmworker.v1.ToolService/CallTool",
             "-d", '{"name": "echo", "input_json": "{\\"text\\": \\"stress\\"}"}',
             "-n", str(calls), "-c", "32", "--connections", "2", "--timeout", "20s",
             "--format", "json", "--output", str(report), f"127.0.0.1:{server.port}"],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while server.ok_lines < signal_after and time.monotonic() < deadline:
            time.sleep(0.01)
        answered_at_signal = server.ok_lines
        signalled = server.terminate()
        code = server.wait()
        exit_s = time.monotonic() - signalled
        ghz.wait(180)
        parsed: dict[str, Any] = json.loads(report.read_text())
    codes: dict[str, int] = parsed.get("statusCodeDistribution") or {}
    errors: dict[str, int] = parsed.get("errorDistribution") or {}
    return {
        "calls": calls,
        "answered_before_sigterm": answered_at_signal,
        "status_codes": codes,
        "lost_calls": codes.get("Canceled", 0),
        "errors": dict(sorted(errors.items(), key=lambda item: -item[1])[:5]),
        "exit_code": code,
        "exit_seconds": round(exit_s, 2),
    }


async def blocked_tool_exit(grace: float) -> dict[str, Any]:
    server = Server([*_TOOLS, "--no-internal", "--grace", str(grace), "--log-level", "WARNING"])
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        call = asyncio.ensure_future(
            stub.CallTool(pb.CallToolRequest(name="block", input_json='{"seconds": 6}'))
        )
        await asyncio.sleep(0.3)
        signalled = server.terminate()
        code = await asyncio.to_thread(server.wait)
        exit_s = time.monotonic() - signalled
        outcome = (await asyncio.gather(call, return_exceptions=True))[0]
    status = outcome.code().name if isinstance(outcome, grpc.aio.AioRpcError) else "OK"
    return {"grace": grace, "exit_seconds": round(exit_s, 2), "exit_code": code, "call": status}


def _bad_bodies(scale: float) -> dict[str, str]:
    items, fields, values = int(250_000 * scale), int(90_000 * scale), int(80_000 * scale)
    return {
        f"{items} invalid list items": '{"items": [' + ",".join(['"x"'] * items) + "]}",
        f"{fields} unknown fields": "{"
        + ",".join(f'"k{i}":0' for i in range(fields))
        + ', "items": []}',
        f"{values} invalid map values": '{"items": [], "weights": {'
        + ",".join(f'"k{i}":"w"' for i in range(values))
        + "}}",
        "10,000-character tool name": "",
    }


async def _probe(
    stub: tool_service_pb2_grpc.ToolServiceStub, echo: pb.CallToolRequest, done: asyncio.Event
) -> float:
    """The slowest ``echo`` call until ``done``, one every 5 ms."""
    worst = 0.0
    while not done.is_set():
        started = time.perf_counter()
        await stub.CallTool(echo)
        worst = max(worst, time.perf_counter() - started)
        await asyncio.sleep(0.005)
    return worst


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def bad_requests(scale: float, rounds: int) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for kind, body in _bad_bodies(scale).items():
        server = Server([*_TOOLS, "--no-internal", "--log-level", "WARNING"])
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                stub = tool_service_pb2_grpc.ToolServiceStub(channel)
                echo = pb.CallToolRequest(name="echo", input_json='{"text": "p"}')
                await stub.CallTool(echo)
                before = _peak_rss_mb(server.process.pid)
                name = "n" * 10_000 if not body else "take"
                done = asyncio.Event()
                probing = asyncio.ensure_future(_probe(stub, echo, done))
                await asyncio.sleep(0.05)
                codes: set[str] = set()
                for _ in range(rounds):
                    try:
                        await stub.CallTool(pb.CallToolRequest(name=name, input_json=body or "{}"))
                    except grpc.aio.AioRpcError as error:
                        codes.add(error.code().name)
                done.set()
                worst = await probing
                grown = _peak_rss_mb(server.process.pid) - before
        finally:
            server.terminate()
            server.wait()
        results.append({
            "request": kind,
            "bytes": len(body),
            "answered": sorted(codes),
            "worst_probe_ms": round(worst * 1000, 1),
            "peak_rss_growth_mb": round(grown, 1),
        })  # fmt: skip
    return results


async def registrations(count: int) -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    results: list[dict[str, Any]] = []
    for order in ("name order", "random order"):
        with tempfile.TemporaryDirectory() as workdir:
            socket = Path(workdir) / "internal.sock"
            # The registry's own cost: the made-up provider is not asked for each tool.
            server = Server(["--internal-socket", str(socket), "--log-level", "WARNING",
                             "--provider-check-timeout", "0"])  # fmt: skip
            indices = list(range(count))
            if order == "random order":
                random.Random(7).shuffle(indices)
            try:
                async with ToolRegistryClient(f"unix:{socket}") as registry:
                    started = time.perf_counter()
                    for index in indices:
                        meta = ToolMeta(f"tool_{index:05d}", f"Tool number {index}.", schema)
                        await registry.register_tool(meta, "127.0.0.1:1")
                    elapsed = time.perf_counter() - started
            finally:
                server.terminate()
                server.wait()
        results.append({"order": order, "tools": count, "seconds": round(elapsed, 2)})
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description="The figures of a server nothing can crash.")
    parser.add_argument("--quick", action="store_true", help="small counts: proves it runs")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not GHZ.exists():
        sys.exit("ghz is missing: run 'make bench' or 'make test' first (go install)")
    quick: bool = args.quick
    date = datetime.date.today().isoformat()
    shutdown = shutdown_under_load(2_000 if quick else 20_000, 500 if quick else 5_000)
    blocked = asyncio.run(blocked_tool_exit(1.0))
    bad = asyncio.run(bad_requests(0.05 if quick else 1.0, 1 if quick else 3))
    registered = asyncio.run(registrations(300 if quick else 10_000))
    report = {
        "date": date,
        "quick": quick,
        "shutdown": shutdown,
        "blocked_tool": blocked,
        "bad_requests": bad,
        "registration": registered,
    }
    out: Path = args.out or REPO / "bench/results" / f"stress-{date}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"shutdown: {shutdown['lost_calls']} lost of {shutdown['calls']} "
        f"(codes {shutdown['status_codes']}), exit {shutdown['exit_code']} "
        f"after {shutdown['exit_seconds']} s"
    )
    print(
        f"blocked 6 s tool, --grace 1: exit after {blocked['exit_seconds']} s ({blocked['call']})"
    )
    for row in bad:
        print(
            f"bad request {row['request']} ({row['bytes']} B): worst probe "
            f"{row['worst_probe_ms']} ms, peak RSS +{row['peak_rss_growth_mb']} MB,",
            row["answered"],
        )
    for row in registered:
        print(f"registration: {row['tools']} tools in {row['order']}: {row['seconds']} s")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
