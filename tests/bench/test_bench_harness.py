"""A smoke run of the ghz harness (``make bench`` measures; this proves it works)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.grpc_support import REPO

GHZ = REPO / ".tools/go/bin/ghz"


def test_the_ghz_harness_runs_every_scenario_against_floor_and_server(tmp_path: Path) -> None:
    if not GHZ.exists():
        pytest.fail("ghz is missing: run 'make test' (it installs ghz with go install)")
    out = tmp_path / "smoke.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.run", "--smoke", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads(out.read_text())
    scenarios = {(result["scenario"], result["workers"]) for result in report["results"]}
    assert scenarios == {
        ("echo_64b", 1), ("echo_64b_asyncio_floor", 1), ("echo_64b_all_asyncio", 1),
        ("echo_64b_no_metrics", 1), ("echo_64b_otel", 1),
        ("echo_64b_with_proto", 1), ("echo_16kib", 1), ("validate_order", 1),
        ("list_1000_tools", 1), ("list_1000_tools_openai_strict", 1),
        ("mixed_1pct_invalid", 1), ("call_tools_8_echo", 1), ("provider_openai_8_echo", 1),
        ("stream_100_chunks", 1),
        ("echo_64b", 2),
    }  # fmt: skip
    for result in report["results"]:
        assert result["floor"]["rps"] > 0
        assert result["server"]["rps"] > 0
        assert result["ratio"] > 0
        assert result["notes"] == []
    traced = next(r for r in report["results"] if r["scenario"] == "echo_64b_otel")
    assert traced["spans_exported"] > 0  # the server's spans reached the OTLP receiver
    mixed = next(r for r in report["results"] if r["scenario"] == "mixed_1pct_invalid")
    assert mixed["server"]["status_codes"]["InvalidArgument"] == mixed["server"]["count"] // 100
    assert set(report["metrics"]) == {
        "register_1000_decorated_tools_s",
        "rss_with_100_tools_mb",
        "cold_start_to_serving_s",
        "unary_echo_calls_per_s",
        "call_tools_8_echo_calls_per_s",
        "call_tools_8_echo_vs_unary_calls",
        "provider_openai_8_echo_calls_per_s",
        "provider_openai_8_echo_vs_unary_calls",
        "stream_100_chunks_server_cpu_us_per_chunk",
        "watchers_50_all_received_change_s",
        "watchers_50_median_change_s",
    }
    assert "echo_64b" in completed.stdout


def test_the_duel_compares_two_servers_cpu_per_call() -> None:
    if not GHZ.exists():
        pytest.fail("ghz is missing: run 'make test' (it installs ghz with go install)")
    completed = subprocess.run(
        [sys.executable, "-m", "bench.duel", "floor", "server", "--rounds=1", "--seconds=0.5"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "round 0: a " in completed.stdout
    assert "b - a: median " in completed.stdout


def test_the_stress_script_runs_and_loses_no_call(tmp_path: Path) -> None:
    if not GHZ.exists():
        pytest.fail("ghz is missing: run 'make test' (it installs ghz with go install)")
    out = tmp_path / "stress.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.stress", "--quick", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads(out.read_text())
    assert report["shutdown"]["lost_calls"] == 0, report["shutdown"]
    assert report["shutdown"]["exit_code"] == 0
    assert report["blocked_tool"]["exit_seconds"] < 2.5
    assert {row["answered"][0] for row in report["bad_requests"]} == {
        "INVALID_ARGUMENT",
        "NOT_FOUND",
    }


def test_the_scaling_measurements_run(tmp_path: Path) -> None:
    out = tmp_path / "scaling.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.scaling", "--quick", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads(out.read_text())
    assert {"wire", "recompute", "registration", "watchers", "health"} <= set(report)
    renewals = [row["renewal_server_cpu_us"] for row in report["registration"]["rows"]]
    assert all(cost > 0 for cost in renewals)
