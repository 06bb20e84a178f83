"""A short run of ``make scale-test`` (bench/scale.py): three replicas behind nginx and behind
client-side balancing, one killed, one drained and the Go provider killed, each restarted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.scale import GO_PROVIDER, go_provider_problem
from bench.scale_nginx import GHZ, nginx_config
from bench.scale_nginx import TEMPLATE as NGINX_TEMPLATE
from tests.grpc_support import REPO


def test_the_nginx_template_fills_in_every_replica_and_the_listener() -> None:
    config = nginx_config(NGINX_TEMPLATE.read_text(), "unix:/run/x.sock", ["h:1", "h:2", "h:3"])
    live = [line.strip() for line in config.splitlines() if not line.lstrip().startswith("#")]
    servers = [line.split()[1] for line in live if line.startswith("server ") and ":" in line]
    assert servers == ["h:1", "h:2", "h:3"]
    (listen,) = [line for line in live if line.startswith("listen ")]
    assert listen.startswith("listen unix:/run/x.sock http2;")
    assert not [line for line in live if "${" in line]
    # Retries of calls nginx never sent only (gRPC bodies are never resent anyway).
    assert [line.split("#")[0].strip() for line in live if "grpc_next_upstream " in line] == [
        "grpc_next_upstream error timeout;"
    ]


def test_replicas_behind_nginx_and_client_side_balancing_survive_kills_and_drains(
    tmp_path: Path,
) -> None:
    if not GHZ.exists():
        pytest.fail("ghz is missing: run 'make test' (it installs ghz with go install)")
    if problem := go_provider_problem(GO_PROVIDER):
        pytest.fail(problem)
    out = tmp_path / "scale.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.scale", "--seconds", "8", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr[-3000:]
    report: dict[str, Any] = json.loads(out.read_text())
    assert all(check["ok"] for check in report["checks"]), report["checks"]
    assert [event["target"] for event in report["events"]] == ["A", "B", "go"]
    assert report["executions"]["ran_twice_or_more"] == 0
    assert report["executions"]["record_tokens_run"] > 0
    prints = report["fingerprints"]
    assert prints["equal_with_go_tools"]
    assert len(set(prints["by_replica"].values())) == 1
    assert all(
        {"go_reverse", "go_whoami", "lookup", "record"} <= set(tools)
        for tools in prints["tools"].values()
    )
    client = report["client_side"]["calls"]
    assert set(client["lookup"]) == {"OK"}, client["lookup"]
    for tool in ("lookup", "record"):
        assert report["nginx"]["ghz"][tool]["status"].get("OK", 0) > 0
    for row in report["nginx"]["failures"] + report["client_side"]["failures"]:
        assert row["cause"] != "unexplained", row
        assert row["explanation"]
    assert "equal fingerprints" in completed.stdout
