"""Scaling figures: what one server spends per tool, per registration, per watcher and per
provider, measured here so that docs/SCALING.md can extrapolate to many replicas, tools and
providers.

    python -m bench.scaling [--quick] [--out bench/results/scaling-DATE.json]

- **wire**: RegisterTool request bytes and ListDefinitionsSorted bytes per definition, for a
  small tool and a larger schema (and per provider format).
- **recompute** (the library, in this process): after one registration at a random place,
  the fingerprint, the sorted snapshot, the plain listing and provider formats rebuilt.
- **provider_map** (the server's Registry, in this process): ``providers()``, which
  RegisterTool builds on every call, at 1k, 10k and 100k tools.
- **registration** (a server process, the internal Unix socket): server and client CPU per
  new tool in name order and in random order, per renewal (an identical definition again,
  one at a time and 16 in flight) and per new tool while one watcher is connected, at each
  registry size; a trivial RPC as the floor; RSS at each size.
- **memory_local**: RSS of servers started with many local tools.
- **watchers**: K WatchDefinitions streams, one registration: how long until all have it,
  the bytes each got and the server's CPU for the change; and how many of K opened at once
  the server refused. **pending_backlog**: the same burst on a bare grpc.aio server.
- **health**: K fake providers (one process, one port each), checked every lease / 4: the
  server's CPU per check, how long a round of checks takes, and whether leases held.

Servers are ``python -m llmworker_server`` processes on 127.0.0.1 and Unix sockets; their CPU
is read from /proc (10 ms ticks: each figure spans at least ~0.1 s of CPU and is a median of
repeats). ``python -m bench.scaling provider K`` is the fake provider process. About 4
minutes on 2 cores; ``--quick`` takes seconds and proves the harness only.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from importlib import metadata
from pathlib import Path

import grpc
import grpc.aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from llmworker import (
    DefinitionFormat,
    Mutable,
    ToolFactory,
    ToolMeta,
    ToolRegistryClient,
    Worker,
)
from llmworker._formats.definition_formats import format_definitions
from llmworker._wire.messages import definition_message, definitions_response
from llmworker.v1 import tool_registry_pb2 as registry_pb
from llmworker.v1 import tool_service_pb2 as pb
from llmworker_server.registry.provider_identity import SHARED_TOKEN_LABEL
from llmworker_server.registry.registry import Registry

__all__ = ["large_meta", "small_meta"]

REPO = Path(__file__).resolve().parent.parent
Json = dict[str, object]
_WatchCall = grpc.aio.UnaryStreamCall[pb.WatchDefinitionsRequest, bytes]
_WatchMethod = grpc.aio.UnaryStreamMultiCallable[pb.WatchDefinitionsRequest, bytes]
_TICK = os.sysconf("SC_CLK_TCK")
_WATCH = "/llmworker.v1.ToolService/WatchDefinitions"
_LIST = "/llmworker.v1.ToolService/ListDefinitionsSorted"
_FORMATS = (
    DefinitionFormat.OPENAI_CHAT,
    DefinitionFormat.ANTHROPIC,
    DefinitionFormat.OPENAI_CHAT_STRICT,
)
SMALL_SCHEMA: Json = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}  # what bench/stress.py registers
LARGE_SCHEMA: Json = {
    "type": "object",
    "properties": {
        **{
            f"field_{index:02d}": {
                "type": "string",
                "description": f"Field {index}: what the model should write here, in a sentence.",
                "maxLength": 200,
            }
            for index in range(12)
        },
        "mode": {"type": "string", "enum": ["fast", "thorough", "exhaustive"], "default": "fast"},
        "filters": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
                "required": ["key", "value"],
            },
        },
    },
    "required": ["field_00", "field_01"],
}


def small_meta(name: str) -> ToolMeta:
    """A typical small tool: one string argument, a one-line description."""
    return ToolMeta(name, f"Tool {name}: transforms a text.", SMALL_SCHEMA)


def large_meta(name: str) -> ToolMeta:
    """A larger tool: 14 documented properties, an enum, an array of objects (~2 KB)."""
    description = f"Tool {name}: searches the records with the given fields. " * 5
    return ToolMeta(name, description.strip(), LARGE_SCHEMA)


class _Noop:
    async def execute(self, input_json: str) -> str:
        return ""


def _factories(make: Callable[[str], ToolMeta], count: int) -> list[ToolFactory]:
    return [ToolFactory(make(f"tool_{index:06d}"), _Noop) for index in range(count)]


def __getattr__(name: str) -> list[ToolFactory]:
    """``small_N`` / ``large_N``: N local tools, a server tool spec (``--tools``)."""
    kind, _, count = name.partition("_")
    if kind not in ("small", "large") or not count.isdigit():
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}; use small_N")
    return _factories(small_meta if kind == "small" else large_meta, int(count))


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _median(values: Iterable[float], digits: int = 1) -> float:
    return round(statistics.median(values), digits)


# -- wire sizes and recomputation: the library in this process -------------------------


def wire_sizes() -> Json:
    """Bytes per definition on the wire: RegisterTool requests, listings, formats."""
    sizes: Json = {}
    for kind, make in (("small", small_meta), ("large", large_meta)):
        meta = make("tool_000001")
        request = registry_pb.RegisterToolRequest(
            definition=definition_message(meta), provider_target="10.0.0.1:50061"
        )
        many = tuple(make(f"tool_{index:06d}") for index in range(1000))
        worker = Worker()
        worker.register_tools(ToolFactory(item, _Noop) for item in many)
        listing = definitions_response(worker.tool_server_handle().definitions_snapshot())
        sizes[kind] = {
            "register_request_bytes": request.ByteSize(),
            "listing_bytes_per_tool": round(len(listing) / len(many), 1),
            **{
                f"{form.value}_json_bytes_per_tool": round(
                    len(format_definitions(many, form).json) / len(many), 1
                )
                for form in _FORMATS
            },
        }
    return sizes


def recompute(sizes: Sequence[int], repeats: int, large_up_to: int) -> list[Json]:
    """Per registry size: what one registration at a random place makes the library redo
    when the listing is next read (median ms of ``repeats``)."""
    rows: list[Json] = []
    for kind, make in (("small", small_meta), ("large", large_meta)):
        for size in sizes:
            if kind == "large" and size > large_up_to:
                continue
            worker = Worker()
            worker.register_tools(_factories(make, size))
            handle = worker.tool_server_handle()
            handle.definitions_snapshot()
            shuffled = random.Random(size)
            timings: dict[str, list[float]] = {}
            for repeat in range(repeats):
                new = ToolFactory(make(f"tool_{shuffled.randrange(size):06d}_{repeat}"), _Noop)
                for label, step in _change_steps(worker, new):
                    started = time.perf_counter()
                    step()
                    timings.setdefault(label, []).append(time.perf_counter() - started)
                worker.unregister_tool(new.meta.name)
            medians = {label: _ms(statistics.median(values)) for label, values in timings.items()}
            per_tool = medians["plain_listing_ms"] * 1000 / size
            rows.append({"kind": kind, "tools": size, "repeats": repeats, **medians,
                         "plain_listing_us_per_tool": round(per_tool, 2)})  # fmt: skip
            del worker, handle
    return rows


def _change_steps(
    worker: Worker[Mutable], new: ToolFactory
) -> list[tuple[str, Callable[[], object]]]:
    """One registration, then each thing a reader of the listing makes the library redo."""
    handle = worker.tool_server_handle()
    return [
        ("register_ms", lambda: worker.register_tool(new)),
        ("fingerprint_ms", handle.definitions_fingerprint),
        ("snapshot_ms", handle.definitions_snapshot),
        ("plain_listing_ms", lambda: definitions_response(handle.definitions_snapshot())),
        *(
            (f"{form.value}_ms", lambda form=form: handle.definitions_for(form))
            for form in _FORMATS
        ),
    ]


def provider_map(sizes: Sequence[int], repeats: int, group: int = 10) -> list[Json]:
    """The server's Registry in this process: ``providers()`` (the provider -> tools map
    RegisterTool builds to tell a new provider) and a renewal, at each size; ``group``
    tools per provider."""
    rows: list[Json] = []
    for size in sizes:
        registry = Registry(Worker(), 1 << 40)
        metas = [small_meta(f"tool_{index:06d}") for index in range(size)]
        for index, meta in enumerate(metas):
            registry.register_remote(
                meta, _Noop, f"provider-{index // group}.internal:50061", SHARED_TOKEN_LABEL
            )
        timings: dict[str, list[float]] = {"providers_ms": [], "renewal_ms": []}
        for repeat in range(repeats):
            index = random.Random(repeat).randrange(size)
            started = time.perf_counter()
            registry.providers()
            middle = time.perf_counter()
            registry.register_remote(
                metas[index],
                _Noop,
                f"provider-{index // group}.internal:50061",
                SHARED_TOKEN_LABEL,
            )
            timings["providers_ms"].append(middle - started)
            timings["renewal_ms"].append(time.perf_counter() - middle)
        medians = {label: _ms(statistics.median(values)) for label, values in timings.items()}
        rows.append({"tools": size, "tools_per_provider": group, **medians})
    return rows


# -- server processes ---------------------------------------------------------------------


class ServerProcess:
    """``python -m llmworker_server --port 0 ARGS`` logging to a file; its CPU and RSS."""

    def __init__(self, arguments: Sequence[str], workdir: Path, name: str) -> None:
        self.log = workdir / f"{name}.log"
        self.socket = workdir / f"{name}.sock"
        command = [sys.executable, "-m", "llmworker_server", "--port", "0", "--log-level",
                   "WARNING", "--internal-socket", str(self.socket), *arguments]  # fmt: skip
        with self.log.open("w") as output:
            self.process = subprocess.Popen(command, cwd=REPO, stdout=output, stderr=output)
        self.port = self._wait_port()
        self.target = f"127.0.0.1:{self.port}"
        self.internal = f"unix:{self.socket}"

    def _wait_port(self, timeout: float = 120) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            for line in self.log.read_text().splitlines():
                if " tools on 127.0.0.1:" in line:
                    return int(line.split("127.0.0.1:", 1)[1].split()[0])
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"the server did not start:\n{self.log.read_text()[-2000:]}")

    def cpu(self) -> float:
        return _cpu_seconds(self.process.pid)

    def rss_mb(self) -> float:
        return _rss_mb(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of process ``pid`` and all its threads, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _raw(data: bytes) -> bytes:
    return data


async def _listing_bytes(target: str) -> int:
    async with grpc.aio.insecure_channel(target, options=_big_messages()) as channel:
        listed = channel.unary_unary(_LIST, pb.ListDefinitionsSortedRequest.SerializeToString, _raw)
        return len(await listed(pb.ListDefinitionsSortedRequest(), timeout=60))


def _big_messages() -> list[tuple[str, int]]:
    return [("grpc.max_receive_message_length", 256 << 20)]


async def _register_all(
    client: ToolRegistryClient, metas: Sequence[ToolMeta], provider: str, concurrency: int
) -> None:
    queue = list(reversed(metas))

    async def drain() -> None:
        while queue:
            await client.register_tool(queue.pop(), provider)

    await asyncio.gather(*(drain() for _ in range(concurrency)))


async def _cpu_per_call(
    server: ServerProcess, calls: Sequence[Callable[[], Awaitable[object]]], settle: float = 0.05
) -> float:
    """Server CPU µs per call, the calls made one after another."""
    return (await _cpu_both(server, calls, settle))[0]


async def _cpu_both(
    server: ServerProcess, calls: Sequence[Callable[[], Awaitable[object]]], settle: float = 0.05
) -> tuple[float, float]:
    """Server and client (this process) CPU µs per call, the calls made one after another."""
    before, client = server.cpu(), time.process_time()
    for call in calls:
        await call()
    client = time.process_time() - client
    await asyncio.sleep(settle)  # work the server does after answering (a watcher's send)
    return (server.cpu() - before) / len(calls) * 1e6, client / len(calls) * 1e6


# -- registration and memory per contributed tool ----------------------------------------


async def registration(sizes: Sequence[int], count: int, repeats: int, workdir: Path) -> Json:
    """Fill a server with contributed tools (their provider: the server itself, so every
    lease holds) and measure RegisterTool at each size."""
    flags = ["--provider-check-timeout", "0", "--max-message-bytes", str(64 << 20)]
    server = ServerProcess(flags, workdir, "registration")
    rows: list[Json] = []
    memory: list[Json] = [{"tools": 0, "rss_mb": round(server.rss_mb(), 1)}]
    try:
        async with ToolRegistryClient(server.internal, timeout=120) as client:
            have = 0
            for size in sizes:
                started, cpu = time.perf_counter(), server.cpu()
                fill = [small_meta(f"tool_{index:06d}") for index in range(have, size)]
                await _register_all(client, fill, server.target, 16)
                fill_s, fill_cpu = time.perf_counter() - started, server.cpu() - cpu
                have = size
                listing = await _listing_bytes(server.target)
                rss = round(server.rss_mb(), 1)
                memory.append({"tools": size, "rss_mb": rss, "listing_bytes": listing})
                fill_us = round(fill_cpu / len(fill) * 1e6)
                filled = {"tools": len(fill), "seconds": round(fill_s, 2), "server_cpu_us": fill_us}
                row: Json = {"tools": size, "fill_concurrently": filled}
                row.update(await _registration_kinds(server, client, size, count, repeats))
                rows.append(row)
                print(f"  registration at {size} tools: {row}", flush=True)
    finally:
        server.stop()
    return {"rows": rows, "memory": memory, "calls_per_measure": count, "repeats": repeats}


async def _registration_kinds(
    server: ServerProcess, client: ToolRegistryClient, size: int, count: int, repeats: int
) -> Json:
    provider = server.target
    picks = random.Random(size)
    results: dict[str, list[float]] = {}

    def register(meta: ToolMeta) -> Callable[[], Awaitable[object]]:
        return lambda: client.register_tool(meta, provider)

    async with grpc.aio.insecure_channel(server.target) as channel:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            health_pb2.HealthCheckRequest.SerializeToString,
            health_pb2.HealthCheckResponse.FromString,
        )
        for _ in range(repeats):  # the floor: a trivial RPC, one after another
            floor = await _cpu_per_call(
                server, [lambda: check(health_pb2.HealthCheckRequest())] * count
            )
            results.setdefault("health_check_rpc_server_cpu_us", []).append(floor)
    for repeat in range(repeats):
        kinds: dict[str, list[ToolMeta]] = {
            "new_name_order": [small_meta(f"zz_{repeat}_{index:05d}") for index in range(count)],
            "new_random_order": [
                small_meta(f"tool_{picks.randrange(size):06d}_{repeat}_{index}")
                for index in range(count)
            ],
            "new_large_name_order": [
                large_meta(f"zz_large_{repeat}_{index:05d}") for index in range(count)
            ],
            "renewal": [small_meta(f"tool_{picks.randrange(size):06d}") for _ in range(count)],
        }
        for kind, metas in kinds.items():
            wall = time.perf_counter()
            cpu, client_cpu = await _cpu_both(server, [register(meta) for meta in metas])
            wall = (time.perf_counter() - wall) / len(metas)
            results.setdefault(f"{kind}_client_cpu_us", []).append(client_cpu)
            results.setdefault(f"{kind}_server_cpu_us", []).append(cpu)
            results.setdefault(f"{kind}_wall_us", []).append(wall * 1e6)
            if kind != "renewal":
                for meta in metas:
                    await client.unregister_tool(meta.name, provider)
        # Renewals as many providers send them: 16 in flight.
        renewals = [small_meta(f"tool_{picks.randrange(size):06d}") for _ in range(2 * count)]
        cpu, wall = server.cpu(), time.perf_counter()
        await _register_all(client, renewals, provider, 16)
        wall, cpu = time.perf_counter() - wall, server.cpu() - cpu
        results.setdefault("renewal_16_in_flight_server_cpu_us", []).append(
            cpu / len(renewals) * 1e6
        )
        results.setdefault("renewal_16_in_flight_per_s", []).append(len(renewals) / wall)
        # One watcher connected: each change makes the server rebuild and send the listing.
        watched = [small_meta(f"zz_watched_{repeat}_{index:03d}") for index in range(10)]
        async with grpc.aio.insecure_channel(server.target, options=_big_messages()) as channel:
            watch = channel.unary_stream(_WATCH, pb.WatchDefinitionsRequest.SerializeToString, _raw)
            call = watch(pb.WatchDefinitionsRequest())
            await call.read()
            reader = asyncio.ensure_future(_read_all(call.read))
            cpu = await _cpu_per_call(server, [register(meta) for meta in watched], 0.3)
            results.setdefault("new_with_one_watcher_server_cpu_us", []).append(cpu)
            call.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        for meta in watched:
            await client.unregister_tool(meta.name, provider)
    return {label: _median(values) for label, values in results.items()}


async def _read_all(read: Callable[[], Awaitable[object]]) -> int:
    """Read a watch until it ends; the bytes it got."""
    received = 0
    while isinstance(message := await read(), bytes):
        received += len(message)
    return received


async def local_memory(specs: Sequence[str], workdir: Path) -> list[Json]:
    """RSS of a server started with each ``--tools`` spec (``none``: no tools)."""
    rows: list[Json] = []
    for spec in specs:
        tools = [] if spec == "none" else ["--tools", spec]
        flags = ["--no-internal", "--max-message-bytes", str(64 << 20), *tools]
        server = ServerProcess(flags, workdir, "memory")
        try:
            await asyncio.sleep(0.5)
            listing = await _listing_bytes(server.target)
            rows.append({"tools": spec, "rss_mb": round(server.rss_mb(), 1),
                         "listing_bytes": listing})  # fmt: skip
            print(f"  memory: {rows[-1]}", flush=True)
        finally:
            server.stop()
    return rows


# -- watcher fan-out ------------------------------------------------------------------------


async def watchers(configs: Sequence[tuple[int, int]], repeats: int, workdir: Path) -> list[Json]:
    """For each (tools, watchers): one registration, and when every watcher had it."""
    rows: list[Json] = []
    for tools, count in configs:
        flags = ["--tools", f"bench.scaling:small_{tools}", "--provider-check-timeout", "0",
                 "--max-concurrent-streams", str(count + 100), "--max-message-bytes",
                 str(64 << 20)]  # fmt: skip
        server = ServerProcess(flags, workdir, "watchers")
        try:
            rows.append(await _fanout(server, tools, count, repeats))
            print(f"  watchers: {rows[-1]}", flush=True)
        finally:
            server.stop()
    return rows


async def _fanout(server: ServerProcess, tools: int, count: int, repeats: int) -> Json:
    # Several connections, as watchers in many processes would have (a local subchannel
    # pool per channel keeps grpc from sharing one connection).
    connections = 8
    options = [*_big_messages(), ("grpc.use_local_subchannel_pool", 1)]
    channels = [
        grpc.aio.insecure_channel(server.target, options=options) for _ in range(connections)
    ]
    alls: list[float] = []
    medians: list[float] = []
    cpus: list[float] = []
    sizes: list[int] = []
    try:
        methods: list[_WatchMethod] = [
            channel.unary_stream(_WATCH, pb.WatchDefinitionsRequest.SerializeToString, _raw)
            for channel in channels
        ]
        burst, refused = await _open_watches(methods, count, count)  # a reconnect storm
        for call in burst:
            call.cancel()
        await asyncio.sleep(0.5)
        calls, refused_in_steps = await _open_watches(methods, count, 250)
        assert not refused_in_steps, f"{refused_in_steps} watches refused, 250 at a time"
        async with ToolRegistryClient(server.internal) as client:
            for repeat in range(repeats):
                waiting = [asyncio.ensure_future(_next(call.read)) for call in calls]
                await asyncio.sleep(0.3)
                cpu, started = server.cpu(), time.perf_counter()
                await client.register_tool(small_meta(f"zz_{repeat}"), server.target)
                arrivals = await asyncio.wait_for(asyncio.gather(*waiting), 120)
                await asyncio.sleep(0.1)
                cpus.append(server.cpu() - cpu)
                delays = sorted(arrival - started for arrival, _ in arrivals)
                alls.append(delays[-1])
                medians.append(statistics.median(delays))
                sizes.append(arrivals[0][1])
        for call in calls:
            call.cancel()
    finally:
        for channel in channels:
            await channel.close()
    sent = sizes[0] * count
    return {
        "tools": tools, "watchers": count, "connections": connections, "changes": repeats,
        "opened_at_once_refused": refused,
        "bytes_per_watcher_per_change": sizes[0],
        "all_received_ms": _median(map(_ms, alls)),
        "median_received_ms": _median(map(_ms, medians)),
        "server_cpu_ms_per_change": _median(map(_ms, cpus)),
        "server_cpu_us_per_watcher": _median(cpu / count * 1e6 for cpu in cpus),
        "server_cpu_ms_per_mb_sent": _median(cpu * 1e3 / (sent / 1e6) for cpu in cpus),
    }  # fmt: skip


async def _open_watches(
    methods: Sequence[_WatchMethod],
    count: int,
    step: int,
) -> tuple[list[_WatchCall], int]:
    """``count`` watches opened ``step`` at a time, each past its first message; and how
    many the server refused (grpc-core cancels calls beyond its pending-request backlog)."""
    opened: list[_WatchCall] = []
    refused = 0
    while len(opened) + refused < count:
        size = min(step, count - len(opened) - refused)
        calls = [
            methods[index % len(methods)](pb.WatchDefinitionsRequest()) for index in range(size)
        ]
        firsts = await asyncio.wait_for(
            asyncio.gather(*(call.read() for call in calls), return_exceptions=True), 120
        )
        for call, first in zip(calls, firsts, strict=True):
            if isinstance(first, bytes):
                opened.append(call)
            elif (
                isinstance(first, grpc.aio.AioRpcError)
                and first.code() is grpc.StatusCode.CANCELLED
            ):
                refused += 1
            else:
                raise RuntimeError(f"a watch failed: {first!r}")
    return opened, refused


async def _next(read: Callable[[], Awaitable[object]]) -> tuple[float, int]:
    """When a watch's next message arrived, and its size."""
    message = await read()
    assert isinstance(message, bytes), "the watch ended"
    return time.perf_counter(), len(message)


async def pending_backlog(count: int) -> list[Json]:
    """``count`` streams opened at once on a bare grpc.aio server (in this process), with
    grpc-core's pending-request backlog at its defaults and raised: how many it cancels."""
    rows: list[Json] = []
    for options in ([], [("grpc.server.max_pending_requests", 10 * count),
                         ("grpc.server.max_pending_requests_hard_limit", 20 * count)]):  # fmt: skip
        server = grpc.aio.server(options=[*options, ("grpc.max_concurrent_streams", 2 * count)])
        handler = grpc.unary_stream_rpc_method_handler(_one_then_wait, _raw, _raw)
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("bench.Backlog", {"Open": handler}),)
        )
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        local = [("grpc.use_local_subchannel_pool", 1)]
        channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=local) for _ in range(8)]
        try:
            methods = [
                channel.unary_stream("/bench.Backlog/Open", _raw, _raw) for channel in channels
            ]
            calls = [methods[index % 8](b"") for index in range(count)]
            firsts = await asyncio.gather(*(call.read() for call in calls), return_exceptions=True)
            refused = sum(not isinstance(first, bytes) for first in firsts)
            for call in calls:
                call.cancel()
        finally:
            for channel in channels:
                await channel.close()
            await server.stop(0)
        rows.append({"server_options": dict(options) or "defaults", "opened_at_once": count,
                     "refused": refused})  # fmt: skip
    return rows


async def _one_then_wait(request: bytes, context: object) -> AsyncIterator[bytes]:
    yield b"x" * 100
    await asyncio.sleep(60)


# -- provider health checks ----------------------------------------------------------------


async def health_checks(
    providers: Sequence[int], lease: float, window: float, workdir: Path
) -> list[Json]:
    """K fake providers registered, one tool each: the server's CPU per health check."""
    rows: list[Json] = []
    for count in providers:
        fake = _start_fake_providers(count)
        server = ServerProcess(
            ["--provider-check-timeout", "0", "--provider-lease", str(lease)], workdir, "health"
        )
        try:
            assert fake.stdout is not None
            ports: list[int] = json.loads(fake.stdout.readline())
            await asyncio.sleep(1.0)
            idle = await _cpu_over(server, window)
            rss = server.rss_mb()
            async with ToolRegistryClient(server.internal) as client:
                metas = [small_meta(f"tool_{index:06d}") for index in range(count)]
                for meta, port in zip(metas, ports, strict=True):
                    await client.register_tool(meta, f"127.0.0.1:{port}")
            await asyncio.sleep(lease)  # every channel connected
            checks_before = _fake_checks(fake)
            fake_cpu = _cpu_seconds(fake.pid)
            busy = await _cpu_over(server, window)
            checks = _fake_checks(fake) - checks_before
            fake_cpu = _cpu_seconds(fake.pid) - fake_cpu
            still = await _listing_count(server.target)
            rows.append({
                "providers": count, "lease_s": lease, "check_interval_s": lease / 4,
                "window_s": window, "checks_answered": checks,
                "checks_per_s": round(checks / window),
                "round_s": round(count * window / checks - lease / 4, 3),  # beyond the sleep
                "server_cpu_idle_per_s": round(idle / window, 4),
                "server_cpu_per_s": round(busy / window, 4),
                "server_cpu_us_per_check": round((busy - idle) / checks * 1e6, 1),
                "provider_cpu_us_per_check": round(fake_cpu / checks * 1e6, 1),
                "rss_mb_per_provider": round((server.rss_mb() - rss) / count, 3),
                "tools_still_listed": still,
            })  # fmt: skip
            print(f"  health: {rows[-1]}", flush=True)
        finally:
            server.stop()
            fake.terminate()
            fake.wait(30)
    return rows


async def _cpu_over(server: ServerProcess, seconds: float) -> float:
    before = server.cpu()
    await asyncio.sleep(seconds)
    return server.cpu() - before


def _start_fake_providers(count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.scaling", "provider", str(count)],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def _fake_checks(fake: subprocess.Popen[str]) -> int:
    assert fake.stdin is not None
    assert fake.stdout is not None
    fake.stdin.write("count\n")
    fake.stdin.flush()
    return int(fake.stdout.readline())


async def _listing_count(target: str) -> int:
    async with grpc.aio.insecure_channel(target, options=_big_messages()) as channel:
        listed = channel.unary_unary(
            _LIST,
            pb.ListDefinitionsSortedRequest.SerializeToString,
            pb.ListDefinitionsSortedResponse.FromString,
        )
        return len((await listed(pb.ListDefinitionsSortedRequest(), timeout=60)).definitions)


class _CountingHealth(health.aio.HealthServicer):
    """The stock health service, counting the checks it answers."""

    def __init__(self) -> None:
        super().__init__()
        self.checks = 0

    async def Check(
        self,
        request: health_pb2.HealthCheckRequest,
        context: grpc.aio.ServicerContext[
            health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse
        ],
    ) -> health_pb2.HealthCheckResponse:
        self.checks += 1
        return await super().Check(request, context)


async def _fake_providers(count: int) -> None:
    """``count`` ports on 127.0.0.1 answering health checks; prints the ports (a JSON
    line), then the number of checks answered for each ``count`` line on standard input."""
    health = _CountingHealth()
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    ports = [server.add_insecure_port("127.0.0.1:0") for _ in range(count)]
    await server.start()
    print(json.dumps(ports), flush=True)
    while await asyncio.to_thread(sys.stdin.readline) == "count\n":
        print(health.checks, flush=True)
    await server.stop(0)


# -- the run ----------------------------------------------------------------------------------


def _machine() -> Json:
    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "grpcio": grpc.__version__,
        "protobuf": metadata.version("protobuf"),
        "uvloop": metadata.version("uvloop"),
        "server_loop": "uvloop (the default)",
        "shared": "2 cores shared with other work; the client runs beside the server",
    }


async def _measure(quick: bool, workdir: Path) -> Json:
    report: Json = {}
    print("wire sizes", flush=True)
    report["wire"] = wire_sizes()
    print("recompute", flush=True)
    sizes = (1000, 5000) if quick else (1000, 10_000, 50_000)
    report["recompute"] = recompute(sizes, 3 if quick else 5, large_up_to=10_000)
    report["provider_map"] = provider_map(
        (1000, 10_000) if quick else (1000, 10_000, 100_000), 3 if quick else 5
    )
    print("registration", flush=True)
    report["registration"] = await registration(
        (200, 1000) if quick else (1000, 10_000), 50 if quick else 400, 1 if quick else 3, workdir
    )
    print("memory", flush=True)
    specs = ["none", "bench.scaling:small_1000"] if quick else [
        "none", "bench.scaling:small_10000", "bench.scaling:small_30000",
        "bench.scaling:large_10000", "bench.many_tools:tools_3000",
    ]  # fmt: skip
    report["memory_local"] = await local_memory(specs, workdir)
    print("watchers", flush=True)
    configs = [(1000, 100)] if quick else [(1000, 200), (1000, 1000), (1000, 2000), (10_000, 200)]
    report["watchers"] = await watchers(configs, 1 if quick else 3, workdir)
    report["pending_backlog"] = await pending_backlog(200 if quick else 2000)
    print("health checks", flush=True)
    report["health"] = await health_checks(
        (20,) if quick else (200, 1000, 2000), 2.0, 2.0 if quick else 6.0, workdir
    )
    return report


def main() -> None:
    if sys.argv[1:2] == ["provider"]:
        import uvloop  # the loop the server runs on: the fake provider as cheap as it gets

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(_fake_providers(int(sys.argv[2])))
        return
    parser = argparse.ArgumentParser(description="Scaling figures for docs/SCALING.md.")
    parser.add_argument("--quick", action="store_true", help="small counts: proves it runs")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    quick: bool = args.quick
    date = datetime.date.today().isoformat()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as workdir:
        measured = asyncio.run(_measure(quick, Path(workdir)))
    report: Json = {"date": date, "quick": quick, "machine": _machine(),
                    "seconds": round(time.monotonic() - started), **measured}  # fmt: skip
    out: Path = args.out or REPO / "bench/results" / f"scaling-{date}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {out} ({report['seconds']} s)")


if __name__ == "__main__":
    main()
