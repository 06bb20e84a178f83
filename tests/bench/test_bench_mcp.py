"""``python -m bench.mcp --smoke`` runs all three targets (llmworker over MCP, the SDK's own
MCP server, llmworker over gRPC) and writes a report with a number for each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.grpc_support import REPO


def test_the_mcp_bench_measures_every_target(tmp_path: Path) -> None:
    out = tmp_path / "mcp.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.mcp", "--smoke", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text())
    for target in ("llmworker_mcp", "sdk_mcp", "llmworker_grpc"):
        median = report["medians"][target]
        assert median["calls"] > 0
        assert median["requests_per_s"] > 0
    assert report["mcp_over_sdk_throughput"] > 0
