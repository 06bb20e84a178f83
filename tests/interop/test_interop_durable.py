"""Paused batches in a store two server processes share, from grpc-go and the TypeScript SDK:
a batch one process paused is listed (ListPausedBatches, paged), resumed and decided by its
batch_id on the other, and its resume token is single use across both.

The servers are real child processes with the demo tools and the same --state (one SQLite
file); the binaries come from ``make interop`` (part of ``make test``); a missing one is a
failure that says how to build it, never a skip.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from tests.grpc_support import REPO, ServerProcess
from tests.interop.test_interop import GO_BINARY, NODE_MODULES, require, run

NODE_DURABLE = REPO / "tests/interop/node/durable.mjs"
CHECKS = [
    "OK durable paused on A",
    "OK durable listed on B",
    "OK durable resumed on B",
    "OK durable second resume refused",
    "OK durable decided by batch id",
]


def shared_server(store: Path) -> ServerProcess:
    """``python -m llmworker_server`` with the demo tools, keeping paused batches in the SQLite
    file ``store`` (absolute: sqlite:///ABSOLUTE/PATH)."""
    state = f"sqlite://{store}"
    return ServerProcess(["--demo", "--no-internal", "--port", "0", "--state", state])


def logs(servers: list[ServerProcess]) -> str:
    """What the servers wrote, for a failure's message."""
    return "".join(
        f"\n--- server {name}:\n{server.output}" for name, server in zip("AB", servers, strict=True)
    )


@pytest.mark.parametrize("language", ["go", "node"])
async def test_a_batch_paused_on_one_server_is_listed_resumed_and_decided_on_another(
    language: str, tmp_path: Path
) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    store = tmp_path / "shared.db"
    servers = [shared_server(store), shared_server(store)]
    with contextlib.ExitStack() as stack:
        for server in servers:
            stack.callback(server.stop)
        port_a, port_b = [await server.port() for server in servers]
        target_a, target_b = f"127.0.0.1:{port_a}", f"127.0.0.1:{port_b}"
        if language == "go":
            command = [str(GO_BINARY), "durable", "-a", target_a, "-b", target_b]
        else:
            command = ["node", str(NODE_DURABLE), target_a, target_b]
        code, output = await run(*command)
        assert code == 0, output + logs(servers)
        checks = [line for line in output.splitlines() if line.startswith("OK ")]
        assert checks == CHECKS, output + logs(servers)
    # Both stopped gracefully (SIGTERM) once the checks ran.
    assert [server.process.returncode for server in servers] == [0, 0], logs(servers)
