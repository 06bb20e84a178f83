"""``python -m bench.mcp_hop --smoke`` measures both paths to an imported MCP tool (the SDK's
client straight to the server, and gRPC through llmworker), with 1 and 16 callers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.grpc_support import REPO


def test_the_hop_bench_measures_both_paths(tmp_path: Path) -> None:
    out = tmp_path / "hop.json"
    finished = subprocess.run(
        [sys.executable, "-m", "bench.mcp_hop", "--smoke", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    report = json.loads(out.read_text())
    for path in ("direct_1", "hop_1", "direct_16", "hop_16"):
        assert report["medians"][path]["calls"] > 0, path
        assert report["medians"][path]["server_cpu_us_per_call"] > 0, path
    assert report["hop_over_direct_throughput_16"] > 0
