"""``make bench``: ghz against the server and against the floor, scenario by scenario.

Every scenario runs the same ghz command against a bare servicer (``bench/floor_server.py``)
and against ``llmworker-server``, both up at once, in back-to-back rounds, and reports
requests/s, p50, p99, server CPU per request and the median of the per-round ratios to the
floor. Traffic goes to 127.0.0.1 only; every run is bounded by a request count and a timeout.

    python -m bench.run [--smoke] [--rounds N] [--out bench/results/DATE.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from bench.otlp_sink import OtlpSink
from bench.watchers import watch_fanout

REPO = Path(__file__).resolve().parent.parent
GHZ = REPO / ".tools/go/bin/ghz"
WORKERS_PORT = int(os.environ.get("BENCH_WORKERS_PORT", "50151"))
GHZ_TIMEOUT_S = 300


@dataclass
class Scenario:
    name: str
    method: str
    messages: Sequence[Mapping[str, object]]
    count: int
    tools: str = "demo"  # "demo" or a number of benchmark tools
    expected_errors: int = 0
    with_proto: bool = False
    round_factor: int = 1  # more rounds for a steadier median: the performance bar's scenario
    calls_per_request: int = 1  # CallTools batches: tool calls per RPC
    # The server runs as deployed (uvloop, metrics on); the floor on uvloop too, unless a
    # scenario compares with something else.
    server_flags: tuple[str, ...] = ()
    floor_loop: str = "uvloop"
    traced: bool = False  # --otel, exporting to an OTLP receiver in this process
    metrics: bool = True


@dataclass
class Measurement:
    rps: float
    p50_ms: float
    p99_ms: float
    count: int
    status_codes: dict[str, int]
    ghz_cpu_s: float
    server_cpu_us_per_request: float
    wall_s: float


@dataclass
class Result:
    """One scenario: the median run of the floor and of the server, and the median of the
    per-round ratios (each round runs both, back to back)."""

    scenario: str
    workers: int
    floor: Measurement
    server: Measurement
    ratio: float
    round_ratios: list[float]
    notes: list[str] = field(default_factory=list[str])  # what went wrong: make bench fails
    spans_exported: int | None = None  # a traced scenario's, as the OTLP receiver counted


class Process:
    """A server child process writing straight to a log file (as under an operator's
    supervisor: no reader in this process competes for the cores)."""

    def __init__(
        self,
        command: Sequence[str],
        log: Path,
        preexec: Callable[[], None] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.log = log
        with log.open("w") as output:
            self.process = subprocess.Popen(
                command, cwd=REPO, stdout=output, stderr=subprocess.STDOUT, text=True,
                preexec_fn=preexec, env={**os.environ, **(env or {})},
            )  # fmt: skip

    def wait_port(self, timeout: float = 120) -> int:
        """The port from the server's "serving ... on 127.0.0.1:PORT" line."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.log.read_text().splitlines():
                if " tools on 127.0.0.1:" in line:
                    return int(line.split("127.0.0.1:", 1)[1].split()[0])
            if self.process.poll() is not None:
                break
            time.sleep(0.01)
        raise RuntimeError(f"server did not start:\n{self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def wait_serving(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        while time.monotonic() < deadline:
            try:
                if check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.01)
    raise RuntimeError(f"127.0.0.1:{port} is not SERVING after {timeout} s")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pids: Sequence[int]) -> float:
    """CPU seconds (user + system) the processes ``pids`` and their children used so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += sum(int(value) for value in fields[11:15]) / ticks
    return total


def server_pids(processes: Sequence[Process]) -> list[int]:
    """The server processes and, for --workers N, their worker children."""
    pids: list[int] = []
    for process in processes:
        pids.append(process.process.pid)
        children = Path(f"/proc/{process.process.pid}/task/{process.process.pid}/children")
        pids.extend(int(pid) for pid in children.read_text().split())
    return pids


def ghz(
    port: int, scenario: Scenario, count: int, workdir: Path, pids: Sequence[int] = ()
) -> Measurement:
    data = workdir / f"{scenario.name}.json"
    messages = scenario.messages
    data.write_text(json.dumps(list(messages) if len(messages) > 1 else messages[0]))
    report = workdir / f"{scenario.name}.report.json"
    command = [
        str(GHZ), "--insecure", "--call", f"llmworker.v1.ToolService/{scenario.method}",
        "--data-file", str(data), "-n", str(count), "-c", "32", "--connections", "2",
        "--timeout", "20s", "--format", "json", "--output", str(report),
    ]  # fmt: skip
    if scenario.with_proto:
        command += ["--proto", "proto/llmworker/v1/tool_service.proto", "--import-paths", "proto"]
    command.append(f"127.0.0.1:{port}")
    cpu_before, started = children_cpu(), time.perf_counter()
    server_before = process_cpu(pids)
    subprocess.run(command, cwd=REPO, check=True, timeout=GHZ_TIMEOUT_S, capture_output=True)
    wall, cpu = time.perf_counter() - started, children_cpu() - cpu_before
    server_cpu = process_cpu(pids) - server_before
    parsed: dict[str, Any] = json.loads(report.read_text())
    distribution: list[dict[str, float]] = parsed["latencyDistribution"] or []
    latencies = {int(item["percentage"]): item["latency"] / 1e6 for item in distribution}
    return Measurement(
        rps=round(parsed["rps"], 1),
        p50_ms=round(latencies.get(50, 0.0), 3),
        p99_ms=round(latencies.get(99, 0.0), 3),
        count=parsed["count"],
        status_codes=parsed.get("statusCodeDistribution") or {},
        ghz_cpu_s=round(cpu, 2),
        server_cpu_us_per_request=round(server_cpu / parsed["count"] * 1e6, 1),
        wall_s=round(wall, 2),
    )


def server_command(
    tools: str, workers: int, port: int, flags: Sequence[str] = ("--metrics-address", "127.0.0.1:0")
) -> list[str]:
    """The server as ``make bench`` runs it: call log at INFO, by default metrics on too."""
    command = [sys.executable, "-m", "llmworker_server", "--no-internal", "--port", str(port),
               "--log-level", "INFO", "--workers", str(workers), *flags]  # fmt: skip
    if tools == "demo":
        return [*command, "--demo"]
    return [*command, "--tools", f"bench.many_tools:tools_{tools}"]


def floor_command(tools: str, workers: int, port: int, loop: str = "uvloop") -> list[str]:
    command = [sys.executable, "-m", "bench.floor_server", "--port", str(port), "--loop", loop]
    if tools != "demo":
        command += ["--tools", tools]
    return command + (["--reuse-port"] if workers > 1 else [])


def start(
    command: Sequence[str], workers: int, log: Path, env: Mapping[str, str] | None = None
) -> list[Process]:
    """Start ``workers`` floor processes, or one server process; wait for SERVING."""
    processes = [
        Process(command, log.with_suffix(f".{index}.log"), env=env) for index in range(workers)
    ]
    try:
        ports = {process.wait_port() for process in processes}
        wait_serving(ports.pop())
    except BaseException:
        for process in processes:
            process.stop()
        raise
    return processes


def measure(scenario: Scenario, workers: int, rounds: int, workdir: Path) -> Result:
    """Floor and server both up and warmed; then ``rounds`` rounds of the same ghz command
    on each, back to back, the first in alternate order: a drifting machine favours neither."""
    port = {"floor": 0, "server": 0} if workers == 1 else {
        "floor": WORKERS_PORT, "server": WORKERS_PORT + 1}  # fmt: skip
    log = workdir / f"{scenario.name}-{workers}"
    floors = start(floor_command(scenario.tools, workers, port["floor"], scenario.floor_loop),
                   workers, log.with_name(log.name + "-floor"))  # fmt: skip
    sink = OtlpSink() if scenario.traced else None
    try:
        flags = [*scenario.server_flags, *(["--otel"] if sink else [])]
        if scenario.metrics:
            flags += ["--metrics-address", "127.0.0.1:0"]
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint} if sink else None
        servers = start(server_command(scenario.tools, workers, port["server"], flags), 1,
                        log.with_name(log.name + "-server"), env)  # fmt: skip
        try:
            targets = {"floor": (floors, floors[0].wait_port()),
                       "server": (servers, servers[0].wait_port())}  # fmt: skip
            for _, target_port in targets.values():
                ghz(target_port, scenario, max(50, scenario.count // 10), workdir)  # warm-up
            runs: dict[str, list[Measurement]] = {"floor": [], "server": []}
            for round_number in range(rounds):
                order = ("floor", "server") if round_number % 2 == 0 else ("server", "floor")
                for kind in order:
                    processes, target_port = targets[kind]
                    pids = server_pids(processes)
                    runs[kind].append(ghz(target_port, scenario, scenario.count, workdir, pids))
        finally:
            for process in servers:
                process.stop()
    finally:
        for process in floors:
            process.stop()
        if sink is not None:
            sink.stop()
    ratios = [round(s.rps / f.rps, 3) for f, s in zip(runs["floor"], runs["server"], strict=True)]
    result = Result(scenario.name, workers, median_run(runs["floor"]), median_run(runs["server"]),
                    statistics.median(ratios), ratios)  # fmt: skip
    codes: dict[str, int] = {}
    for run in runs["server"]:
        for code, count in run.status_codes.items():
            codes[code] = codes.get(code, 0) + count
    errors = sum(n for code, n in codes.items() if code != "OK")
    expected = scenario.expected_errors * scenario.count // 100 * rounds
    if errors != expected:
        result.notes.append(f"expected {expected} errors in {rounds} rounds, got {codes}")
    if sink is not None:
        result.spans_exported = sink.spans
    return result


def median_run(runs: Sequence[Measurement]) -> Measurement:
    """The run with the median requests/s."""
    return sorted(runs, key=lambda run: run.rps)[len(runs) // 2]


def echo(text: str) -> dict[str, object]:
    return {"name": "echo", "input_json": json.dumps({"text": text})}


BATCH_CALLS = 8
STREAM_CHUNKS = 100


def echo_batch(text: str) -> dict[str, object]:
    calls = [{**echo(text), "call_id": f"c{index}"} for index in range(BATCH_CALLS)]
    return {"calls": calls}


def openai_chat_batch(text: str) -> dict[str, object]:
    """An assistant message of OpenAI Chat calling echo ``BATCH_CALLS`` times."""
    calls = [
        {"id": f"call_{index}", "type": "function",
         "function": {"name": "echo", "arguments": json.dumps({"text": text})}}
        for index in range(BATCH_CALLS)
    ]  # fmt: skip
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    return {"format": "DEFINITION_FORMAT_OPENAI_CHAT", "model_output_json": json.dumps(message)}


def scenarios(smoke: bool) -> list[Scenario]:
    scale = 0.01 if smoke else 1.0
    order = {
        "customer": "ACME",
        "ship_to": {"street": "1 Main St", "city": "Springfield", "postcode": "12345"},
        "lines": [{"sku": f"SKU-{i}", "quantity": i + 1, "unit_price": 9.5} for i in range(5)],
    }
    invalid = {"name": "echo", "input_json": "[]"}
    return [
        Scenario("echo_64b", "CallTool", [echo("x" * 50)], int(12_000 * scale) + 100,
                 round_factor=2),
        Scenario("echo_64b_asyncio_floor", "CallTool", [echo("x" * 50)],
                 int(12_000 * scale) + 100, floor_loop="asyncio"),
        Scenario("echo_64b_all_asyncio", "CallTool", [echo("x" * 50)],
                 int(12_000 * scale) + 100, server_flags=("--loop", "asyncio"),
                 floor_loop="asyncio"),
        Scenario("echo_64b_no_metrics", "CallTool", [echo("x" * 50)],
                 int(12_000 * scale) + 100, metrics=False),
        Scenario("echo_64b_otel", "CallTool", [echo("x" * 50)], int(12_000 * scale) + 100,
                 traced=True),
        Scenario("echo_64b_with_proto", "CallTool", [echo("x" * 50)], int(5_000 * scale) + 100,
                 with_proto=True),
        Scenario("echo_16kib", "CallTool", [echo("x" * 16_370)], int(10_000 * scale) + 100),
        Scenario("validate_order", "CallTool",
                 [{"name": "validate_order", "input_json": json.dumps({"order": order})}],
                 int(12_000 * scale) + 100),
        Scenario("list_1000_tools", "ListDefinitionsSorted", [{}], int(2_000 * scale) + 100,
                 tools="1000" if not smoke else "100"),
        Scenario("list_1000_tools_openai_strict", "ListDefinitionsSorted",
                 [{"format": "DEFINITION_FORMAT_OPENAI_CHAT_STRICT"}], int(2_000 * scale) + 100,
                 tools="1000" if not smoke else "100"),
        Scenario("mixed_1pct_invalid", "CallTool", [echo("y" * 50)] * 99 + [invalid],
                 int(120 * scale) * 100 + 100, expected_errors=1),
        Scenario(f"call_tools_{BATCH_CALLS}_echo", "CallTools", [echo_batch("x" * 50)],
                 int(3_000 * scale) + 100, calls_per_request=BATCH_CALLS),
        Scenario(f"stream_{STREAM_CHUNKS}_chunks", "CallToolStream",
                 [{"name": "countdown",
                   "input_json": json.dumps({"n": STREAM_CHUNKS, "delay": 0})}],
                 int(1_000 * scale) + 50),
        Scenario(f"provider_openai_{BATCH_CALLS}_echo", "RunProviderToolCalls",
                 [openai_chat_batch("x" * 50)], int(3_000 * scale) + 100,
                 calls_per_request=BATCH_CALLS),
    ]  # fmt: skip


def batch_metrics(results: Sequence[Result], all_scenarios: Sequence[Scenario]) -> dict[str, float]:
    """Tool calls per second through batches against the same echo as unary calls, and the
    server CPU per chunk of a streamed call."""
    per_request = {scenario.name: scenario.calls_per_request for scenario in all_scenarios}
    unary = next(r for r in results if r.scenario == "echo_64b" and r.workers == 1)
    metrics: dict[str, float] = {"unary_echo_calls_per_s": unary.server.rps}
    for result in results:
        calls = per_request.get(result.scenario, 1)
        if calls > 1 and result.workers == 1:
            rate = result.server.rps * calls
            metrics[f"{result.scenario}_calls_per_s"] = round(rate, 1)
            metrics[f"{result.scenario}_vs_unary_calls"] = round(rate / unary.server.rps, 2)
        if result.scenario == f"stream_{STREAM_CHUNKS}_chunks" and result.workers == 1:
            per_chunk = result.server.server_cpu_us_per_request / STREAM_CHUNKS
            metrics[f"{result.scenario}_server_cpu_us_per_chunk"] = round(per_chunk, 1)
    return metrics


def startup_metrics(smoke: bool, workdir: Path) -> dict[str, float]:
    """Registration time, RSS with many tools, cold start to SERVING."""
    from bench.many_tools import build_class
    from llmworker import Worker, tool_definitions

    started = time.perf_counter()
    worker = Worker()
    worker.register_tools(tool_definitions(build_class(1000)()))
    register_s = time.perf_counter() - started

    many = "100" if smoke else "10000"
    process = Process(server_command(many, 1, 0), workdir / "rss.log")
    try:
        port = process.wait_port(timeout=300)
        wait_serving(port)
        rss_kb = int(next(line.split()[1] for line in Path(f"/proc/{process.process.pid}/status")
                          .read_text().splitlines() if line.startswith("VmRSS")))  # fmt: skip
    finally:
        process.stop()

    started = time.perf_counter()
    process = Process(server_command("demo", 1, 0), workdir / "cold.log")
    try:
        wait_serving(process.wait_port())
        cold_start_s = time.perf_counter() - started
    finally:
        process.stop()
    return {
        "register_1000_decorated_tools_s": round(register_s, 3),
        f"rss_with_{many}_tools_mb": round(rss_kb / 1024, 1),
        "cold_start_to_serving_s": round(cold_start_s, 3),
    }


def environment(rounds: int) -> dict[str, object]:
    import grpc as grpc_module

    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line), "")
    ghz_version = subprocess.run([str(GHZ), "--version"], capture_output=True, text=True).stdout
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "grpcio": grpc_module.__version__,
        "ghz": ghz_version.strip() or "v0.120.0",
        "ghz_settings": "-c 32 --connections 2, warm-up run of 10% first",
        "rounds": rounds,
    }


def print_table(results: list[Result], metrics: dict[str, float]) -> None:
    print(f"{'scenario':<22}{'workers':>8}{'floor rps':>11}{'server rps':>12}{'ratio':>7}"
          f"{'rounds: range':>16}{'p50 ms':>8}{'p99 ms':>8}{'cpu us/req':>16}{'ghz cpu':>9}"
          "  notes")  # fmt: skip
    for r in results:
        ghz_cpu = r.server.ghz_cpu_s / r.server.wall_s if r.server.wall_s else 0
        spans = "" if r.spans_exported is None else f"{r.spans_exported} spans exported"
        print(f"{r.scenario:<22}{r.workers:>8}{r.floor.rps:>11.0f}{r.server.rps:>12.0f}"
              f"{r.ratio:>7.3f}{len(r.round_ratios):>6}: {min(r.round_ratios):.2f}-"
              f"{max(r.round_ratios):<5.2f}"
              f"{r.server.p50_ms:>8.2f}{r.server.p99_ms:>8.2f}"
              f"{r.floor.server_cpu_us_per_request:>8.0f}/{r.server.server_cpu_us_per_request:<7.0f}"
              f"{ghz_cpu:>8.0%}"
              f"  {'; '.join(r.notes)}"
              f"{spans}")  # fmt: skip
    for name, value in metrics.items():
        print(f"{name}: {value}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ghz benchmarks of llmworker-server")
    parser.add_argument("--smoke", action="store_true", help="tiny counts: proves the harness")
    parser.add_argument("--out", type=Path, help="results file (default bench/results/DATE.json)")
    parser.add_argument(
        "--rounds",
        type=int,
        help="floor/server rounds per scenario, twice that for echo_64b "
        "(default 5; 1 with --smoke); the ratio is the median of the rounds' ratios",
    )
    parser.add_argument("--workers", type=int, nargs="*", default=[2],
                        help="worker counts to compare with the floor on echo_64b")  # fmt: skip
    args = parser.parse_args(argv)
    if not GHZ.exists():
        print(f"{GHZ} is missing: run 'make bench' (it installs ghz with go install)")
        return 1
    rounds = args.rounds or (1 if args.smoke else 5)
    out = args.out or REPO / "bench/results" / f"{datetime.date.today().isoformat()}.json"
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="llmworker-bench-") as directory:
        workdir = Path(directory)
        all_scenarios = scenarios(args.smoke)
        for scenario in all_scenarios:
            results.append(measure(scenario, 1, rounds * scenario.round_factor, workdir))
        for workers in args.workers:
            results.append(measure(all_scenarios[0], workers, rounds, workdir))
        metrics = startup_metrics(args.smoke, workdir) | batch_metrics(results, all_scenarios)
        metrics |= watch_fanout(50 if args.smoke else 1000, workdir)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"environment": environment(rounds), "smoke": args.smoke,
                               "results": [asdict(r) for r in results], "metrics": metrics},
                              indent=2) + "\n")  # fmt: skip
    print_table(results, metrics)
    print(f"results: {out}")
    return 1 if any(r.notes for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
