"""Definition watchers at scale: N WatchDefinitions streams on a server process, one
registration, and how long until every watcher has the change.

    python -m bench.watchers [--watchers 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc.aio

from llmworker import ToolMeta, ToolRegistryClient
from llmworker.v1 import tool_service_pb2 as pb

__all__ = ["watch_fanout"]

_TOKEN = "bench-watchers-token"


async def _fanout(watchers: int, target: str, internal: str) -> dict[str, float]:
    # One connection: the server runs with --max-concurrent-streams above ``watchers``.
    # (grpc.aio channels to one target in one process ended up on one connection here, even
    # with a local subchannel pool, so more channels would not spread the streams.)
    async with grpc.aio.insecure_channel(target) as channel:
        method = channel.unary_stream(
            "/llmworker.v1.ToolService/WatchDefinitions",
            request_serializer=pb.WatchDefinitionsRequest.SerializeToString,
            response_deserializer=pb.ListDefinitionsSortedResponse.FromString,
        )
        calls = [method(pb.WatchDefinitionsRequest()) for _ in range(watchers)]
        firsts = await asyncio.wait_for(asyncio.gather(*(call.read() for call in calls)), 120)
        before = {
            first.fingerprint
            for first in firsts
            if isinstance(first, pb.ListDefinitionsSortedResponse)
        }
        assert len(before) == 1, "every watcher starts from the same definitions"

        async def changed(index: int) -> float:
            message = await calls[index].read()
            assert isinstance(message, pb.ListDefinitionsSortedResponse)
            assert message.fingerprint not in before
            return time.perf_counter()

        waiting = [asyncio.ensure_future(changed(index)) for index in range(watchers)]
        await asyncio.sleep(0.2)  # every watcher is waiting
        async with ToolRegistryClient(internal, _TOKEN) as registry:
            started = time.perf_counter()
            await registry.register_tool(ToolMeta("watched"), "127.0.0.1:1")
        arrivals = await asyncio.wait_for(asyncio.gather(*waiting), 60)
        delays = sorted(arrival - started for arrival in arrivals)
        for call in calls:
            call.cancel()
        return {
            f"watchers_{watchers}_all_received_change_s": round(delays[-1], 3),
            f"watchers_{watchers}_median_change_s": round(statistics.median(delays), 3),
        }


def watch_fanout(watchers: int, workdir: Path) -> dict[str, float]:
    """Start a demo server, open ``watchers`` watches, register one tool, and report when
    the last and the median watcher had the change (seconds after the registration began)."""
    socket = workdir / "watchers.sock"
    log = workdir / "watchers.log"
    command = [sys.executable, "-m", "llmworker_server", "--demo", "--port", "0",
               "--log-level", "INFO", "--internal-socket", str(socket),
               "--provider-check-timeout", "0",  # made-up
               "--max-concurrent-streams", str(watchers + 100)]  # fmt: skip
    environment = {**os.environ, "LLMWORKER_TOKEN": _TOKEN}
    with log.open("w") as output:
        process = subprocess.Popen(command, env=environment, stdout=output, stderr=output)
    try:
        port = _port(log)
        return asyncio.run(_fanout(watchers, f"127.0.0.1:{port}", f"unix:{socket}"))
    finally:
        process.terminate()
        process.wait(timeout=30)


def _port(log: Path, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if " tools on 127.0.0.1:" in line:
                return int(line.split("127.0.0.1:", 1)[1].split()[0])
        time.sleep(0.01)
    raise RuntimeError(f"server did not start:\n{log.read_text()[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--watchers", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        print(json.dumps(watch_fanout(args.watchers, Path(workdir)), indent=2))


if __name__ == "__main__":
    main()
