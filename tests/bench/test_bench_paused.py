"""A smoke run of the paused-batch store benchmark (``make bench-paused`` measures; this proves
it works: every store, every number there and positive)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.grpc_support import REPO

ENGINES = {"memory", "sqlite", "postgresql"}
HELD_ENGINES = {"sqlite", "postgresql"}
LATENCY = ("p50_ms", "p99_ms", "mean_ms")
PAGES = ("page_50_first", "page_50_deep", "page_500_first", "page_500_deep")


def _positive(section: dict[str, object], *keys: str) -> None:
    for key in keys:
        value = section[key]
        assert isinstance(value, int | float), (key, value)
        assert value > 0, (key, value)


def test_the_paused_batch_benchmark_measures_every_store(tmp_path: Path) -> None:
    out = tmp_path / "paused.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.paused", "--smoke", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads(out.read_text())
    assert report["smoke"] is True
    assert report["environment"]["postgresql"]
    assert set(report["round_trips"]) == ENGINES
    for engine, trips in report["round_trips"].items():
        sequential, concurrent = trips["sequential"], trips["concurrent"]
        assert sequential["rounds"] == report["sizes"]["rounds"], engine
        _positive(sequential, *LATENCY, "server_cpu_us_per_round_trip")
        _positive(concurrent, *LATENCY, "clients", "round_trips", "round_trips_per_s")
    assert set(report["held"]) == HELD_ENGINES
    for engine, held in report["held"].items():
        assert held["batches"] == report["sizes"]["held"], engine
        _positive(held, "store_bytes", "walk_all_by_500_s", "pauses_per_s_filling")
        _positive(held, "pauses_per_s_first_tenth", "pauses_per_s_last_tenth")
        _positive(held, "start_up_empty_median_s", "start_up_held_median_s")
        for page in PAGES:
            _positive(held[page], *LATENCY, "batches")
        assert held["page_50_deep"]["offset"] > 0
    for engine in ENGINES:
        assert f"| {engine} |" in completed.stdout  # the Markdown table
