"""``make bench-paused``: paused batches in each ``--state`` store, measured from a client.

Against real server processes (the demo tools; ``kv_delete`` requires approval):

- a pause + resume round trip (``CallTools`` answers ``paused``, ``ResumeBatch`` approves and
  the call runs), sequential on one connection, then with concurrent clients, for
  ``memory``, SQLite (a file in a temporary directory) and PostgreSQL (a throw-away cluster
  from ``tests/pg_support.py``: Unix socket, ``fsync=off``, ``synchronous_commit=off``);
- 10,000 paused batches held in SQLite and PostgreSQL: the store's size,
  ``ListPausedBatches`` latency for pages of 50 and 500 (the first page and a deep one,
  reached through page tokens), and the server's start-up time with them held against an
  empty store (median of three restarts).

Traffic goes to 127.0.0.1 only; every RPC, phase and process wait is bounded by a timeout,
and servers and PostgreSQL are stopped whatever happens.

    python -m bench.paused [--smoke] [--out bench/results/paused-DATE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import platform
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import IO

import grpc
import grpc.aio
import psycopg

from bench.run import process_cpu
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from tests.pg_support import create_database, start_postgres

REPO = Path(__file__).resolve().parent.parent
ENGINES = ("memory", "sqlite", "postgresql")
HELD_ENGINES = ("sqlite", "postgresql")
PAGE_SIZES = (50, 500)
CLIENTS = 8
MAX_PAUSED = 20_000
RPC_TIMEOUT_S = 30.0
PHASE_TIMEOUT_S = 1_800.0
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
# One call of the demo tool that requires approval; "absent" once approved (no such key).
CALL = pb.CallToolRequest(call_id="c0", name="kv_delete", input_json='{"key": "bench"}')
APPROVE = pb.CallDecision(call_id="c0", approve=pb.Approval())


@dataclass(frozen=True)
class Sizes:
    """How much each measurement does."""

    rounds: int  # sequential round trips measured
    warmup: int  # round trips before measuring
    concurrent_rounds: int  # round trips per client with CLIENTS clients
    held: int  # paused batches held for the listing and start-up measurements
    list_repeats: int  # requests per ListPausedBatches latency
    restarts: int  # server starts per start-up median


FULL = Sizes(rounds=500, warmup=50, concurrent_rounds=125, held=10_000, list_repeats=200,
             restarts=3)  # fmt: skip
SMOKE = Sizes(rounds=20, warmup=5, concurrent_rounds=5, held=200, list_repeats=10, restarts=1)


class Server:
    """``python -m llmworker_server --demo`` on port 0 with ``--state url``; its output read
    by a thread, which notes when the "serving ... tools on HOST:PORT" line came."""

    def __init__(self, state: str, log: Path) -> None:
        command = [
            sys.executable, "-m", "llmworker_server", "--demo", "--no-internal", "--port", "0",
            "--state", state, "--max-paused-batches", str(MAX_PAUSED), "--log-level", "WARNING",
        ]  # fmt: skip
        self.log = log
        self.lines: list[str] = []
        self.port = 0
        self.held: int | None = None  # from "paused batches in ... (N held)"
        self.started = time.perf_counter()
        self.serving_s = 0.0  # from Popen until the serving line
        self._ready = threading.Event()
        self.process = subprocess.Popen(
            command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        output: IO[str] | None = self.process.stdout
        assert output is not None
        with self.log.open("a") as log:
            for line in output:
                log.write(line)
                self.lines.append(line)
                if " held)" in line and "paused batches in " in line:
                    self.held = int(line.rsplit("(", 1)[1].split()[0])
                if not self.port and " tools on 127.0.0.1:" in line:
                    self.serving_s = time.perf_counter() - self.started
                    self.port = int(line.split("127.0.0.1:", 1)[1].split()[0])
                    self._ready.set()
        self._ready.set()

    def wait(self) -> str:
        """The server's target once it serves (at most START_TIMEOUT_S)."""
        self._ready.wait(START_TIMEOUT_S)
        if not self.port:
            raise RuntimeError("server did not start:\n" + "".join(self.lines)[-3000:])
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after STOP_TIMEOUT_S."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=STOP_TIMEOUT_S)
        self._reader.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()


@contextlib.contextmanager
def running(state: str, log: Path) -> Generator[Server]:
    """A serving server for the block; stopped after it, even on failure."""
    server = Server(state, log)
    try:
        server.wait()
        yield server
    finally:
        server.stop()


def stub_for(channel: grpc.aio.Channel) -> tool_service_pb2_grpc.ToolServiceStub:
    return tool_service_pb2_grpc.ToolServiceStub(channel)


def channel_to(target: str) -> grpc.aio.Channel:
    # A local subchannel pool: each client channel gets a connection of its own.
    return grpc.aio.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])


async def pause(stub: tool_service_pb2_grpc.ToolServiceStub) -> pb.PausedBatch:
    answer = await stub.CallTools(pb.CallToolsRequest(calls=[CALL]), timeout=RPC_TIMEOUT_S)
    if answer.WhichOneof("outcome") != "paused":
        raise RuntimeError(f"CallTools did not pause: {answer}")
    return answer.paused


async def round_trip(stub: tool_service_pb2_grpc.ToolServiceStub) -> float:
    """Pause, then approve and run: the seconds both RPCs took."""
    started = time.perf_counter()
    paused = await pause(stub)
    request = pb.ResumeBatchRequest(resume_token=paused.resume_token, decisions=[APPROVE])
    answer = await stub.ResumeBatch(request, timeout=RPC_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    results = answer.completed.results
    if answer.WhichOneof("outcome") != "completed" or [r.output for r in results] != ["absent"]:
        raise RuntimeError(f"ResumeBatch did not run the call: {answer}")
    return elapsed


def latency(samples: Sequence[float]) -> dict[str, float]:
    """p50, p99 and mean of ``samples`` (seconds) in milliseconds."""
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {
        "p50_ms": round(statistics.median(ordered) * 1e3, 3),
        "p99_ms": round(p99 * 1e3, 3),
        "mean_ms": round(statistics.fmean(ordered) * 1e3, 3),
    }


async def sequential(target: str, sizes: Sizes, pid: int) -> dict[str, float]:
    async with channel_to(target) as channel:
        stub = stub_for(channel)
        for _ in range(sizes.warmup):
            await round_trip(stub)
        cpu = process_cpu([pid])
        samples = [await round_trip(stub) for _ in range(sizes.rounds)]
        cpu = process_cpu([pid]) - cpu
    return {"rounds": sizes.rounds, **latency(samples),
            "server_cpu_us_per_round_trip": round(cpu / sizes.rounds * 1e6, 1)}  # fmt: skip


async def concurrent(target: str, sizes: Sizes) -> dict[str, float]:
    channels = [channel_to(target) for _ in range(CLIENTS)]
    try:
        stubs = [stub_for(channel) for channel in channels]
        await asyncio.gather(*(round_trip(stub) for stub in stubs for _ in range(2)))  # warm

        async def client(stub: tool_service_pb2_grpc.ToolServiceStub) -> list[float]:
            return [await round_trip(stub) for _ in range(sizes.concurrent_rounds)]

        started = time.perf_counter()
        per_client = await asyncio.gather(*(client(stub) for stub in stubs))
        wall = time.perf_counter() - started
    finally:
        for channel in channels:
            await channel.close()
    samples = [sample for samples in per_client for sample in samples]
    return {"clients": CLIENTS, "round_trips": len(samples),
            "round_trips_per_s": round(len(samples) / wall, 1), **latency(samples)}  # fmt: skip


async def hold(target: str, count: int) -> dict[str, float]:
    """Pause ``count`` batches with CLIENTS clients and leave them held, a tenth at a time:
    pauses per second overall, in the first tenth and in the last (the store nearly full)."""
    channels = [channel_to(target) for _ in range(CLIENTS)]
    try:
        stubs = [stub_for(channel) for channel in channels]

        async def client(stub: tool_service_pb2_grpc.ToolServiceStub, share: int) -> None:
            for _ in range(share):
                await pause(stub)

        rates: list[float] = []
        filling = time.perf_counter()
        tenths = [count // 10 + (index < count % 10) for index in range(10)]
        for tenth in tenths:
            shares = [tenth // CLIENTS + (index < tenth % CLIENTS) for index in range(CLIENTS)]
            started = time.perf_counter()
            await asyncio.gather(
                *(client(stub, share) for stub, share in zip(stubs, shares, strict=True))
            )
            rates.append(tenth / (time.perf_counter() - started))
        filling = time.perf_counter() - filling
    finally:
        for channel in channels:
            await channel.close()
    return {
        "pauses_per_s_filling": round(count / filling, 1),
        "pauses_per_s_first_tenth": round(rates[0], 1),
        "pauses_per_s_last_tenth": round(rates[-1], 1),
    }


async def list_page(
    stub: tool_service_pb2_grpc.ToolServiceStub, size: int, token: str
) -> pb.ListPausedBatchesResponse:
    request = pb.ListPausedBatchesRequest(page_size=size, page_token=token)
    return await stub.ListPausedBatches(request, timeout=RPC_TIMEOUT_S)


async def token_at(stub: tool_service_pb2_grpc.ToolServiceStub, offset: int) -> str:
    """The page token after the first ``offset`` batches (a multiple of 50), by walking."""
    token = ""
    for _ in range(offset // 50):
        page = await list_page(stub, 50, token)
        if not page.next_page_token:
            raise RuntimeError(f"the listing ended before batch {offset}")
        token = page.next_page_token
    return token


async def listing(target: str, sizes: Sizes) -> dict[str, object]:
    """ListPausedBatches latency per page size, first and deep page; a full walk by 500s."""
    results: dict[str, object] = {}
    async with channel_to(target) as channel:
        stub = stub_for(channel)
        started, token, seen = time.perf_counter(), "", 0
        while True:
            page = await list_page(stub, 500, token)
            seen += len(page.batches)
            token = page.next_page_token
            if not token:
                break
        results["walk_all_by_500_s"] = round(time.perf_counter() - started, 3)
        if seen != sizes.held:
            raise RuntimeError(f"ListPausedBatches shows {seen} batches, {sizes.held} held")
        for size in PAGE_SIZES:
            offset = max(sizes.held - size, sizes.held // 2) // 50 * 50
            positions = {"first": ("", 0), "deep": (await token_at(stub, offset), offset)}
            for where, (position, start) in positions.items():
                expected = min(size, sizes.held - start)
                for _ in range(max(3, sizes.list_repeats // 10)):  # warm-up
                    await list_page(stub, size, position)
                samples: list[float] = []
                for _ in range(sizes.list_repeats):
                    began = time.perf_counter()
                    page = await list_page(stub, size, position)
                    samples.append(time.perf_counter() - began)
                    if len(page.batches) != expected:
                        raise RuntimeError(f"a page of {len(page.batches)}, not {expected}")
                results[f"page_{size}_{where}"] = {"offset": start, "batches": expected,
                                                   **latency(samples)}  # fmt: skip
    return results


def store_size(engine: str, state: str, sqlite_path: Path | None) -> dict[str, int]:
    """The store's bytes: SQLite's files, PostgreSQL's table with its indexes and TOAST."""
    if engine == "sqlite":
        assert sqlite_path is not None
        files = {suffix or ".db": sqlite_path.with_name(sqlite_path.name + suffix)
                 for suffix in ("", "-wal", "-shm")}  # fmt: skip
        sizes = {name: path.stat().st_size if path.exists() else 0 for name, path in files.items()}
        return {"store_bytes": sizes[".db"] + sizes["-wal"], "db_bytes": sizes[".db"],
                "wal_bytes": sizes["-wal"], "shm_bytes": sizes["-shm"]}  # fmt: skip
    with psycopg.connect(state, connect_timeout=10) as connection:
        row = connection.execute(
            "SELECT pg_total_relation_size('paused_batches'), "
            "pg_relation_size('paused_batches'), pg_indexes_size('paused_batches')"
        ).fetchone()
    assert row is not None
    return {"store_bytes": int(row[0]), "table_bytes": int(row[1]), "index_bytes": int(row[2])}


def start_ups(state: str, log: Path, restarts: int, expected_held: int) -> list[float]:
    """Seconds from process start to the serving line, ``restarts`` times."""
    times: list[float] = []
    for _ in range(restarts):
        with running(state, log) as server:
            if server.held is not None and server.held != expected_held:
                raise RuntimeError(f"the server found {server.held} held, not {expected_held}")
            times.append(round(server.serving_s, 3))
    return times


def run_engine(engine: str, state: str, sizes: Sizes, workdir: Path) -> dict[str, object]:
    """The round trips on ``state``, a fresh store."""
    log = workdir / f"{engine}-round-trips.log"
    with running(state, log) as server:
        target = server.wait()
        seq = asyncio.run(asyncio.wait_for(sequential(target, sizes, server.process.pid),
                                           PHASE_TIMEOUT_S))  # fmt: skip
        conc = asyncio.run(asyncio.wait_for(concurrent(target, sizes), PHASE_TIMEOUT_S))
    print(f"{engine}: sequential {seq}, {CLIENTS} clients {conc}", flush=True)
    return {"sequential": seq, "concurrent": conc}


def run_held(
    engine: str, state: str, sqlite_path: Path | None, sizes: Sizes, workdir: Path
) -> dict[str, object]:
    """``sizes.held`` batches held on ``state``, a fresh store: size, listing, start-up."""
    log = workdir / f"{engine}-held.log"
    empty = start_ups(state, log, sizes.restarts + 1, 0)[1:]  # the first creates the schema
    with running(state, log) as server:
        target = server.wait()
        filling = asyncio.run(asyncio.wait_for(hold(target, sizes.held), PHASE_TIMEOUT_S))
        size = store_size(engine, state, sqlite_path)
        listed = asyncio.run(asyncio.wait_for(listing(target, sizes), PHASE_TIMEOUT_S))
    held = start_ups(state, log, sizes.restarts, sizes.held)
    result: dict[str, object] = {
        "batches": sizes.held, **filling, **size, **listed,
        "start_up_empty_s": empty, "start_up_empty_median_s": statistics.median(empty),
        "start_up_held_s": held, "start_up_held_median_s": statistics.median(held),
    }  # fmt: skip
    print(f"{engine}: {sizes.held} held {result}", flush=True)
    return result


def environment(postgres_version: str) -> dict[str, object]:
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line), "")
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "grpcio": grpc.__version__,
        "psycopg": psycopg.__version__,
        "sqlite": sqlite3.sqlite_version,
        "postgresql": postgres_version,
        "server": "llmworker-server --demo --no-internal --log-level WARNING "
        f"--max-paused-batches {MAX_PAUSED} --state URL (uvloop)",
        "client": "grpc.aio on asyncio in one process; kv_delete (requires_approval)",
        "sqlite_settings": "WAL, synchronous=NORMAL (the server's), file in a temporary dir",
        "postgresql_settings": "tests/pg_support.py cluster: Unix socket, fsync=off, "
        "synchronous_commit=off, full_page_writes=off",
    }


def postgres_version(url: str) -> str:
    with psycopg.connect(url, connect_timeout=10) as connection:
        row = connection.execute("SHOW server_version").fetchone()
    return "" if row is None else str(row[0])


def measure(sizes: Sizes, workdir: Path) -> dict[str, object]:
    round_trips: dict[str, object] = {}
    held: dict[str, object] = {}
    with start_postgres(workdir / "postgres") as cluster:
        version = postgres_version(cluster)
        for engine in ENGINES:
            for phase in ("round-trips", "held"):
                if phase == "held" and engine not in HELD_ENGINES:
                    continue
                sqlite_path: Path | None = None
                if engine == "memory":
                    state = "memory"
                elif engine == "sqlite":
                    sqlite_path = workdir / f"{phase}.db"
                    state = f"sqlite://{sqlite_path}"
                else:
                    state = create_database(cluster, f"bench_{phase.replace('-', '_')}")
                if phase == "round-trips":
                    round_trips[engine] = run_engine(engine, state, sizes, workdir)
                else:
                    held[engine] = run_held(engine, state, sqlite_path, sizes, workdir)
    return {"environment": environment(version), "round_trips": round_trips, "held": held}


def _number(report: dict[str, object], *keys: str) -> float:
    value: object = report
    for key in keys:
        assert isinstance(value, dict)
        value = value[key]  # pyright: ignore[reportUnknownVariableType]
    assert isinstance(value, int | float)
    return float(value)


def markdown(report: dict[str, object]) -> str:
    trips, held = report["round_trips"], report["held"]
    assert isinstance(trips, dict)
    assert isinstance(held, dict)
    lines = [
        "| store | pause + resume p50 ms | p99 ms | mean ms | server CPU µs / round trip "
        f"| {CLIENTS} clients: round trips/s | p50 ms | p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for engine in ENGINES:
        if engine not in trips:
            continue

        def trip(*keys: str, engine: str = engine) -> float:
            return _number(report, "round_trips", engine, *keys)

        lines.append(
            f"| {engine} | {trip('sequential', 'p50_ms'):.2f} | {trip('sequential', 'p99_ms'):.2f}"
            f" | {trip('sequential', 'mean_ms'):.2f}"
            f" | {trip('sequential', 'server_cpu_us_per_round_trip'):.0f}"
            f" | {trip('concurrent', 'round_trips_per_s'):.0f}"
            f" | {trip('concurrent', 'p50_ms'):.2f} | {trip('concurrent', 'p99_ms'):.2f} |"
        )
    lines += [
        "",
        "| store | batches held | store size | List 50 first p50 / p99 ms | 50 deep | "
        "List 500 first | 500 deep | walk all by 500 s | start-up empty / held s "
        f"| filling, {CLIENTS} clients: pauses/s first / last tenth |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for engine in HELD_ENGINES:
        if engine not in held:
            continue

        def held_at(*keys: str, engine: str = engine) -> float:
            return _number(report, "held", engine, *keys)

        def page(name: str) -> str:
            return f"{held_at(name, 'p50_ms'):.2f} / {held_at(name, 'p99_ms'):.2f}"

        size_mb = held_at("store_bytes") / 1e6
        lines.append(
            f"| {engine} | {held_at('batches'):,.0f} | {size_mb:.1f} MB"
            f" | {page('page_50_first')} | {page('page_50_deep')}"
            f" | {page('page_500_first')} | {page('page_500_deep')}"
            f" | {held_at('walk_all_by_500_s'):.2f}"
            f" | {held_at('start_up_empty_median_s'):.2f}"
            f" / {held_at('start_up_held_median_s'):.2f}"
            f" | {held_at('pauses_per_s_first_tenth'):.0f}"
            f" / {held_at('pauses_per_s_last_tenth'):.0f} |"
        )
    return "\n".join(lines)


def _stop_on_sigterm(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # the finally blocks stop servers and PostgreSQL


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="paused batches in each --state store")
    parser.add_argument("--smoke", action="store_true", help="tiny counts: proves the harness")
    parser.add_argument("--out", type=Path,
                        help="results file (default bench/results/paused-DATE.json)")  # fmt: skip
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    sizes = SMOKE if args.smoke else FULL
    out: Path = args.out or REPO / "bench/results" / f"paused-{datetime.date.today()}.json"
    with tempfile.TemporaryDirectory(prefix="llmworker-bench-paused-") as directory:
        report = measure(sizes, Path(directory))
    report = {"environment": report["environment"], "smoke": args.smoke,
              "sizes": asdict(sizes), **{k: v for k, v in report.items()
                                           if k != "environment"}}  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(markdown(report))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
