"""``make scale-test``: three replicas behind nginx and behind client-side balancing, while one
is killed, one drained and the Go provider killed, each restarted.

    python -m bench.scale [--seconds 20] [--out bench/results/scale-DATE.json] [--keep]

Replicas A, B and C serve ``bench.scale_tools``: ``lookup`` (read-only, idempotent) and
``record`` (neither; it writes down every token it ran). The Go interop provider registers
``go_reverse`` and ``go_whoami`` with all three (``--renew``); nginx, configured from
``deploy/nginx/nginx.conf.template``, is in front on a Unix socket. For ``--seconds``, two ghz
processes call through nginx (c=16 each: lookup, and record with unique tokens, which are also
the calls' x-request-id) and a Python client balances on its side (``RemoteToolServerHandle.
connect(balanced=True)``: lookup then record from a few tasks, go_reverse every 20 ms). At 1/4
of the run A gets SIGKILL and is restarted on its ports, at 1/2 B gets SIGTERM (NOT_SERVING for
--drain-delay, then GOAWAY and --grace) and is restarted, at 3/4 the Go provider gets SIGKILL
and is restarted on its port.

Checked (exit 1 otherwise, after writing the results): no lookup failed through client-side
balancing; no record token ran twice, across every replica and restart; every answered record
ran; every failure, on either path, falls in the window of an event that explains it; the
replicas end with equal fingerprints that include the Go tools. nginx is installed from the
Debian packages when missing (as root, with apt-get). Loopback and Unix sockets only; every
process and wait is bounded (a 20 s run takes ~30 s); all that was started is stopped in
``finally``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2

from bench.scale_nginx import (
    CALL_TIMEOUT_S,
    GHZ,
    GHZ_CONCURRENCY,
    TEMPLATE,
    Failure,
    NginxView,
    ensure_nginx,
    ghz,
    ghz_outcomes,
    nginx_config,
    read_nginx,
)
from bench.scale_tools import EXECUTIONS_GLOB, SCALE_DIR_VARIABLE
from llmworker import RemoteServiceError, RemoteToolServerHandle, ToolServerError
from llmworker.v1 import tool_service_pb2 as pb

REPO: Final = Path(__file__).resolve().parent.parent
GO_PROVIDER: Final = REPO / "tests/interop/go/bin/interop"
CLIENT_TASKS: Final = 4  # Python tasks calling lookup then record, besides go_reverse's
START_TIMEOUT_S: Final = 30.0
CONVERGE_TIMEOUT_S: Final = 15.0
TOOLS: Final = ("lookup", "record", "go_reverse")
GO_TOOLS: Final = frozenset({"go_reverse", "go_whoami"})
_SERVING: Final = re.compile(r"tools on 127\.0\.0\.1:(\d+) \(internal: 127\.0\.0\.1:(\d+)")
_READY: Final = re.compile(r"^READY (\d+)$", re.MULTILINE)
_SERVING_STATUS: Final = health_pb2.HealthCheckResponse.SERVING


class Child:
    """A child process writing stdout and stderr to a log file, one per start (NAME.N.log)."""

    def __init__(self, name: str, workdir: Path, env: Mapping[str, str] | None = None) -> None:
        self.name, self.workdir, self.env = name, workdir, dict(env or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.pids: list[int] = []

    @property
    def log(self) -> Path:
        return self.workdir / f"{self.name}.{len(self.pids)}.log"

    def start(self, command: Sequence[str]) -> None:
        self.pids.append(0)
        with self.log.open("wb") as output:
            self.process = subprocess.Popen(
                command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=output,
                stderr=subprocess.STDOUT, env={**os.environ, **self.env},
            )  # fmt: skip
        self.pids[-1] = self.process.pid

    def running(self) -> subprocess.Popen[bytes]:
        assert self.process is not None, f"{self.name} was never started"
        return self.process

    async def line(self, pattern: re.Pattern[str], limit_s: float) -> re.Match[str]:
        """The first match of ``pattern`` in this start's log (RuntimeError after limit_s)."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            if match := pattern.search(self.log.read_text(errors="replace")):
                return match
            if self.running().poll() is not None:
                break
            await asyncio.sleep(0.02)
        tail = self.log.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{self.name}: no {pattern.pattern!r} within {limit_s} s:\n{tail}")

    async def exited(self, limit_s: float) -> int:
        deadline = time.monotonic() + limit_s
        while (code := self.running().poll()) is None:
            if time.monotonic() > deadline:
                self.running().kill()
                raise RuntimeError(f"{self.name} did not exit within {limit_s} s")
            await asyncio.sleep(0.01)
        return code

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s (for ``finally``)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


class Replica(Child):
    """``llmworker-server`` with the scale tools; a restart keeps the ports it first got."""

    port = 0
    internal_port = 0

    async def serve(self) -> None:
        self.start([sys.executable, "-m", "llmworker_server", "--tools",
                    "bench.scale_tools:ScaleTools", "--port", str(self.port), "--internal-address",
                    f"127.0.0.1:{self.internal_port}", "--provider-lease", "1",
                    "--drain-delay", "0.5", "--grace", "5"])  # fmt: skip
        match = await self.line(_SERVING, START_TIMEOUT_S)
        self.port, self.internal_port = int(match[1]), int(match[2])
        await wait_serving(self.address, START_TIMEOUT_S)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


async def wait_serving(target: str, limit_s: float) -> None:
    """Until ``target``'s health says SERVING for the tool service."""
    deadline = time.monotonic() + limit_s
    request = health_pb2.HealthCheckRequest(service="llmworker.v1.ToolService")
    async with grpc.aio.insecure_channel(target) as channel:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        while time.monotonic() < deadline:
            try:
                if (await check(request, timeout=1)).status == _SERVING_STATUS:
                    return
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.02)
    raise RuntimeError(f"{target} is not SERVING after {limit_s} s")


@dataclass
class Event:
    target: str
    what: str
    at_s: float = 0.0
    back_s: float = 0.0  # serving (the provider: READY) again


async def disrupt(
    replicas: Sequence[Replica], go: Child, go_command: Sequence[str], started: float,
    seconds: float,
) -> list[Event]:  # fmt: skip
    """At 1/4 of the run SIGKILL A and restart it, at 1/2 SIGTERM B (it drains) and restart
    it, at 3/4 SIGKILL the Go provider and restart it (each on time, whatever the others)."""

    async def at(fraction: float, event: Event) -> Event:
        await asyncio.sleep(max(0.0, started + seconds * fraction - time.monotonic()))
        event.at_s = round(time.monotonic() - started, 2)
        if event.target == "go":
            go.running().kill()
            await go.exited(10)
            go.start(go_command)
            await go.line(_READY, START_TIMEOUT_S)
        else:
            replica = next(replica for replica in replicas if replica.name == event.target)
            (replica.running().kill if event.target == "A" else replica.running().terminate)()
            await replica.exited(10)
            await replica.serve()
        event.back_s = round(time.monotonic() - started, 2)
        return event

    async with asyncio.TaskGroup() as group:
        events = [
            group.create_task(at(0.25, Event("A", "SIGKILL, restarted on its ports"))),
            group.create_task(
                at(0.5, Event("B", "SIGTERM (drain 0.5 s, grace 5 s), restarted on its ports"))
            ),
            group.create_task(at(0.75, Event("go", "SIGKILL, restarted on its port"))),
        ]
    return [event.result() for event in events]


# What explains a failure: an event, for the tools it can affect, within a window around it.
WHY: Final[dict[str, str]] = {
    "A killed": "in flight on replica A when it got SIGKILL: the call had been sent, and "
    "nothing retries a sent call unless running it twice is safe (nginx never resends a gRPC "
    "call; the balanced client retries idempotent tools only); the tool may have run (the "
    "record tokens say whether it did); INTERNAL: A died while nginx relayed its answer",
    "B drained": "sent to replica B on a connection it was closing after the drain (GOAWAY, "
    "a refused stream): it did not run, but nginx does not resend a sent call",
    "B drained, accepted calls cut": "nginx, which does not see NOT_SERVING, kept sending B "
    "calls through the drain; when B closed, gRPC cancelled the calls its transport had "
    "accepted but not yet handed to Python (CANCELLED), or B closed a connection while nginx "
    "relayed an answer (INTERNAL: nginx resets the stream); seen only with the CPUs "
    "overloaded by other jobs; the record tokens say which of these ran",
    "back without the Go tools": "a restarted replica starts with an empty registry: "
    "go_reverse was NOT_FOUND there until the Go provider's next renewal (every 500 ms)",
    "Go provider killed": "the Go provider was down: replicas answered UNAVAILABLE / "
    "PROVIDER_UNAVAILABLE, or NOT_FOUND once its lease (1 s) ran out, until it registered again",
    "unexplained": "no event explains it: read the logs (--keep)",
}
_AT, _BACK = "at", "back"
_GONE: Final = frozenset({"UNAVAILABLE"})  # the transport's (no ErrorInfo), or nginx's
# The events (by target), a window from..to (offsets from their at_s or back_s), the tools and
# statuses they explain; the first window that holds a failure explains it.
_WINDOWS: Final = {
    "Go provider killed": (("go",), (_AT, 0.0), (_BACK, 3.0), {"go_reverse"},
                           {"UNAVAILABLE/PROVIDER_UNAVAILABLE", "ToolNotFound"}),
    "back without the Go tools": (("A", "B"), (_BACK, -0.5), (_BACK, 1.5), {"go_reverse"},
                                  {"ToolNotFound"}),
    "A killed": (("A",), (_AT, -0.05), (_AT, 1.0), set(TOOLS), {*_GONE, "INTERNAL"}),
    "B drained": (("B",), (_AT, 0.0), (_BACK, 0.0), set(TOOLS), _GONE),
    "B drained, accepted calls cut": (("B",), (_AT, 0.0), (_BACK, 0.0), set(TOOLS),
                                      {"CANCELLED", "INTERNAL"}),
}  # fmt: skip


def cause(failure: Failure, events: Sequence[Event]) -> str:
    """The event whose window holds ``failure``."""
    for name, (targets, start, end, tools, statuses) in _WINDOWS.items():
        if failure.tool not in tools or failure.status not in statuses:
            continue
        for event in (event for event in events if event.target in targets):
            low, high = (offset + getattr(event, f"{base}_s") for base, offset in (start, end))
            if low <= failure.at_s <= high:
                return name
    return "unexplained"


@dataclass
class ClientCalls:
    outcomes: dict[str, Counter[str]] = field(default_factory=lambda: {t: Counter() for t in TOOLS})
    failures: list[Failure] = field(default_factory=list[Failure])
    messages: dict[str, str] = field(default_factory=dict[str, str])  # one per status
    ok_tokens: list[str] = field(default_factory=list[str])


def status_of(error: ToolServerError) -> str:
    if isinstance(error, RemoteServiceError):
        # A failure without an ErrorInfo (the transport's) comes back with the reason
        # PROVIDER_UNAVAILABLE: tell it apart from a replica's own.
        return f"{error.code.name}/{error.reason}" if error.metadata else error.code.name
    return type(error).__name__


async def client_load(target: str, started: float, until: float) -> ClientCalls:
    """Client-side balancing over every replica until ``until``."""
    calls = ClientCalls()
    handle = await RemoteToolServerHandle.connect(
        target, balanced=True, watch=False, call_timeout=CALL_TIMEOUT_S
    )

    async def call(tool: str, arguments: dict[str, str], request: str = "") -> bool:
        try:
            await handle.call_tool(tool, json.dumps(arguments))
            outcome = "OK"
        except ToolServerError as error:
            outcome = status_of(error)
            calls.failures.append(Failure(tool, outcome, time.monotonic() - started, request))
            calls.messages.setdefault(outcome, str(error)[:300])
        calls.outcomes[tool][outcome] += 1
        return outcome == "OK"

    async def lookup_and_record(task: int) -> None:
        number = 0
        while time.monotonic() < until:
            number += 1
            token = f"py-{task}-{number}"
            await call("lookup", {"key": token})
            if await call("record", {"token": token}, token):
                calls.ok_tokens.append(token)

    async def reverse() -> None:
        while time.monotonic() < until:
            await call("go_reverse", {"text": "scale"})
            await asyncio.sleep(0.02)

    try:
        await asyncio.gather(*(lookup_and_record(task) for task in range(CLIENT_TASKS)), reverse())
    finally:
        await handle.close()
    return calls


async def fingerprints(replicas: Sequence[Replica], limit_s: float) -> dict[str, Any]:
    """ListDefinitionsSorted on each replica, until all agree and list the Go tools."""
    started = time.monotonic()
    while True:
        seen: dict[str, pb.ListDefinitionsSortedResponse] = {}
        for replica in replicas:
            async with grpc.aio.insecure_channel(replica.address) as channel:
                listing = channel.unary_unary(
                    "/llmworker.v1.ToolService/ListDefinitionsSorted",
                    request_serializer=pb.ListDefinitionsSortedRequest.SerializeToString,
                    response_deserializer=pb.ListDefinitionsSortedResponse.FromString,
                )
                seen[replica.name] = await listing(pb.ListDefinitionsSortedRequest(), timeout=5)
        tools = {name: [d.name for d in reply.definitions] for name, reply in seen.items()}
        equal = len({reply.fingerprint for reply in seen.values()}) == 1 and all(
            set(names) >= GO_TOOLS for names in tools.values()
        )
        if equal or time.monotonic() - started > limit_s:
            return {
                "equal_with_go_tools": equal,
                "waited_s": round(time.monotonic() - started, 2),
                "by_replica": {name: reply.fingerprint for name, reply in seen.items()},
                "tools": tools,
            }
        await asyncio.sleep(0.1)


def executions(directory: Path, pids: Mapping[int, str]) -> tuple[Counter[str], dict[str, int]]:
    """Every token ``record`` ran, with how often, and how many each process ran."""
    ran: Counter[str] = Counter()
    by_process: dict[str, int] = {}
    for path in sorted(directory.glob(EXECUTIONS_GLOB)):
        tokens = path.read_text().split()
        ran.update(tokens)
        pid = int(path.stem.removeprefix("executions-"))
        by_process[f"{pids.get(pid, '?')} (pid {pid})"] = len(tokens)
    return ran, by_process


@dataclass
class Observed:
    seconds: float
    events: list[Event]
    ghz: dict[str, dict[str, Any]]
    nginx: NginxView
    client: ClientCalls
    ran: Counter[str]
    by_process: dict[str, int]
    fingerprints: dict[str, Any]


async def run(seconds: float, workdir: Path, nginx: str, go_binary: Path) -> Observed:
    token = secrets.token_hex(16)
    scale_dir, prefix = workdir / "executions", workdir / "nginx"
    socket = prefix / "grpc.sock"
    for directory in (scale_dir, prefix / "logs", prefix / "temp"):
        directory.mkdir(parents=True)
    env = {"LLMWORKER_TOKEN": token, SCALE_DIR_VARIABLE: str(scale_dir)}
    replicas = [Replica(name, workdir, env) for name in "ABC"]
    go, proxy = Child("go-provider", workdir), Child("nginx", workdir)
    loads = {tool: Child(f"ghz-{tool}", workdir) for tool in ("lookup", "record")}
    reports = {tool: workdir / f"{tool}.ghz.json" for tool in loads}
    try:
        await asyncio.gather(*(replica.serve() for replica in replicas))
        registries = ",".join(f"127.0.0.1:{replica.internal_port}" for replica in replicas)
        go_command = [str(go_binary), "provider", "--registry", registries, "--token", token,
                      "--renew", "500ms", "--port", "0"]  # fmt: skip
        go.start(go_command)
        go_command[-1] = (await go.line(_READY, START_TIMEOUT_S))[1]  # restarts keep the port
        conf = prefix / "nginx.conf"
        conf.write_text(nginx_config(TEMPLATE.read_text(), f"unix:{socket}",
                                     [replica.address for replica in replicas]))  # fmt: skip
        proxy.start([nginx, "-p", str(prefix), "-c", str(conf), "-g", "daemon off;"])
        await wait_serving(f"unix:{socket}", START_TIMEOUT_S)
        await fingerprints(replicas, START_TIMEOUT_S)  # the Go tools everywhere first

        started, started_wall = time.monotonic(), time.time()
        for tool, argument in (("lookup", "key"), ("record", "token")):
            loads[tool].start(ghz(tool, argument, socket, seconds, reports[tool]))
        target = "ipv4:" + ",".join(replica.address for replica in replicas)
        async with asyncio.TaskGroup() as group:  # a failure cancels the other
            loading = group.create_task(client_load(target, started, started + seconds))
            disrupting = group.create_task(disrupt(replicas, go, go_command, started, seconds))
        client, events = loading.result(), disrupting.result()
        for load in loads.values():
            if code := await load.exited(seconds + 30):
                raise RuntimeError(f"{load.name} exited {code}: {load.log.read_text()[-1500:]}")
        converged = await fingerprints(replicas, CONVERGE_TIMEOUT_S)
    finally:
        for child in (*loads.values(), proxy, go, *replicas):
            child.stop()
    pids = {pid: f"{r.name}.{n}" for r in replicas for n, pid in enumerate(r.pids, 1)}
    return Observed(
        seconds, events, {tool: ghz_outcomes(path) for tool, path in reports.items()},
        read_nginx(prefix, started_wall, {r.address: r.name for r in replicas}), client,
        *executions(scale_dir, pids), converged,
    )  # fmt: skip


def explained(failures: Sequence[Failure], events: Sequence[Event]) -> list[dict[str, Any]]:
    """Failures counted by tool, status and cause, each with its explanation."""
    rows = Counter((f.tool, f.status, cause(f, events)) for f in failures)
    return [{"tool": tool, "status": status, "cause": why, "count": count, "explanation": WHY[why]}
            for (tool, status, why), count in sorted(rows.items())]  # fmt: skip


def report(seen: Observed) -> dict[str, Any]:
    """The results: figures, failures explained, and the checks."""
    nginx, client, ran = seen.nginx, seen.client, seen.ran
    nginx_rows = explained(nginx.failures, seen.events)
    client_rows = explained(client.failures, seen.events)
    ghz_failed = sum(n for r in seen.ghz.values() for s, n in r["status"].items() if s != "OK")
    duplicates = {token: count for token, count in ran.items() if count > 1}
    not_run = [t for t in (*client.ok_tokens, *nginx.answered_records) if t not in ran]
    lookup_failed = client.outcomes["lookup"].total() - client.outcomes["lookup"]["OK"]
    rows = nginx_rows + client_rows
    unexplained = sum(row["count"] for row in rows if row["cause"] == "unexplained")
    answered = [r["status"].get("OK", 0) for r in seen.ghz.values()]
    answered += [client.outcomes[tool]["OK"] for tool in TOOLS]
    checks: list[tuple[str, bool, object]] = [
        ("lookup calls failed through client-side balancing = 0", lookup_failed == 0,
         lookup_failed),
        ("record tokens run twice = 0", not duplicates, len(duplicates)),
        ("answered record calls that did not run = 0", not not_run, len(not_run)),
        ("every failure falls in the window of an event that explains it", unexplained == 0,
         unexplained),
        ("failures ghz saw = failures nginx logged", ghz_failed == len(nginx.failures),
         [ghz_failed, len(nginx.failures)]),
        ("equal fingerprints, with the Go tools, on every replica",
         seen.fingerprints["equal_with_go_tools"], seen.fingerprints["by_replica"]),
        ("every tool answered on both paths", min(answered) > 0, answered),
        ("every disruption came during the load", all(e.at_s < seen.seconds for e in seen.events),
         [e.at_s for e in seen.events]),
    ]  # fmt: skip
    return {
        "events": [vars(event) for event in seen.events],
        "nginx": {
            "ghz": seen.ghz,
            "calls_by_replica": dict(sorted(nginx.by_replica.items())),
            "retried_on_another_replica": nginx.retried,
            "failures": nginx_rows,
            "failures_by_replica": dict(Counter(f.replica for f in nginx.failures)),
            "record_failed_but_ran": sum(1 for f in nginx.failures if f.request in ran),
            "error_log": nginx.error_log,
        },
        "client_side": {
            "calls": {tool: dict(outcomes) for tool, outcomes in client.outcomes.items()},
            "failures": client_rows,
            "messages": client.messages,
            "record_failed_but_ran": sum(1 for f in client.failures if f.request in ran),
        },
        "executions": {
            "record_tokens_run": len(ran),
            "ran_twice_or_more": len(duplicates),
            "duplicates": dict(list(duplicates.items())[:20]),
            "by_process": seen.by_process,
        },
        "fingerprints": seen.fingerprints,
        "checks": [{"check": name, "ok": ok, "value": value} for name, ok, value in checks],
    }


def environment(nginx: str, seconds: float) -> dict[str, Any]:
    cpus = [line for line in Path("/proc/cpuinfo").read_text().splitlines() if "model name" in line]
    version = subprocess.run([nginx, "-v"], capture_output=True, text=True, timeout=10).stderr
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "seconds": seconds,
        "cpu": cpus[0].split(":", 1)[1].strip() if cpus else "",
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "grpcio": grpc.__version__,
        "nginx": version.strip().removeprefix("nginx version: "),
        "load": f"through nginx: ghz lookup and ghz record, -c {GHZ_CONCURRENCY} --connections 2 "
        f"each; client-side balancing: {CLIENT_TASKS} tasks calling lookup then record, one "
        "calling go_reverse every 20 ms",
    }


def summary(results: dict[str, Any]) -> None:
    for event in results["events"]:
        print(f"{event['at_s']:6.2f} s  {event['target']}: {event['what']}, "
              f"back at {event['back_s']} s")  # fmt: skip
    nginx, client = results["nginx"], results["client_side"]
    for tool, outcome in nginx["ghz"].items():
        print(f"nginx        {tool:<10} {outcome['calls']:>6} calls {outcome['status']}")
    for tool, outcomes in client["calls"].items():
        print(f"client-side  {tool:<10} {sum(outcomes.values()):>6} calls {outcomes}")
    for path, rows in (("nginx", nginx["failures"]), ("client-side", client["failures"])):
        for row in rows:
            print(f"{path:<12} {row['count']:>5} {row['tool']} {row['status']}: {row['cause']}")
    print(f"nginx retried {nginx['retried_on_another_replica']} calls on another replica; "
          f"failed record calls that ran: {nginx['record_failed_but_ran']} (nginx), "
          f"{client['record_failed_but_ran']} (client-side)")  # fmt: skip
    print(f"record tokens run: {results['executions']['record_tokens_run']}")
    for check in results["checks"]:
        print(f"{'ok  ' if check['ok'] else 'FAIL'} {check['check']}: {check['value']}")


def go_provider_problem(binary: Path) -> str | None:
    """Why ``binary`` cannot be this run's provider (None: it can)."""
    if not binary.exists():
        return f"{binary} is missing: run 'make interop'"
    usage = subprocess.run([str(binary), "provider", "-h"], capture_output=True, text=True,
                           timeout=30)  # fmt: skip
    if "-renew" not in usage.stdout + usage.stderr:
        return f"{binary} has no 'provider -renew': rebuild it with 'make interop'"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="replicas behind nginx, killed and restarted")
    parser.add_argument("--seconds", type=float, default=20.0, help="the load (default 20)")
    parser.add_argument("--out", type=Path, help="default: bench/results/scale-DATE.json")
    parser.add_argument("--go-provider", type=Path, default=GO_PROVIDER,
                        help="the Go interop program (default: from 'make interop')")  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the logs and say where")
    args = parser.parse_args(argv)
    seconds: float = args.seconds
    if not 4 <= seconds <= 60:
        parser.error("--seconds must be within 4-60: the run is bounded")
    for problem in (None if GHZ.exists() else f"{GHZ} is missing: run 'make bench'",
                    go_provider_problem(args.go_provider)):  # fmt: skip
        if problem:
            print(problem, file=sys.stderr)
            return 2
    nginx = ensure_nginx()
    workdir = Path(tempfile.mkdtemp(prefix="llmworker-scale-"))
    try:
        seen = asyncio.run(run(seconds, workdir, nginx, args.go_provider))
    finally:
        if args.keep:
            print(f"logs: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    results: dict[str, Any] = {"environment": environment(nginx, seconds), **report(seen)}
    out: Path = args.out or REPO / "bench/results" / f"scale-{datetime.date.today()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    summary(results)
    print(f"results: {out}")
    return 0 if all(check["ok"] for check in results["checks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
