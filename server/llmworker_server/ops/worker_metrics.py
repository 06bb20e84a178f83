"""Metrics across ``--workers`` processes: one endpoint, served by the parent, whose numbers
are the sum of every child's.

Each child writes its call totals and gauges to ``<directory>/<pid>.json`` once a second and
when it stops (written aside, then renamed, so a reader never sees half a file). The parent
adds them up when scraped: counts and durations over every child that ever ran (a replaced
child's totals are kept, so counters never go back), the in-flight, paused and watcher gauges
over the live ones, and the tool and provider gauges as the largest a child reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .metrics import CallTotals, ServerMetrics, families

__all__ = ["SnapshotWriter", "WorkerMetrics"]

_log = logging.getLogger("llmworker.server.lifecycle")
_INTERVAL_SECONDS: Final = 1.0
_SUMMED: Final = ("in_flight", "paused_batches", "watchers")


def _encode(totals: CallTotals, gauges: dict[str, int]) -> str:
    return json.dumps(
        {
            "calls": [[*key, count] for key, count in totals.calls.items()],
            "buckets": totals.buckets,
            "seconds": totals.seconds,
            "refusals": totals.refusals,
            "decisions": totals.decisions,
            "gauges": gauges,
        }
    )


def _decode(text: str) -> tuple[CallTotals, dict[str, int]]:
    data = json.loads(text)
    calls = {
        (str(tool), str(status), str(transport)): int(count)
        for tool, status, transport, count in data["calls"]
    }
    buckets = {str(tool): [int(n) for n in counts] for tool, counts in data["buckets"].items()}
    seconds = {str(tool): float(total) for tool, total in data["seconds"].items()}
    refusals = {str(reason): int(count) for reason, count in data.get("refusals", {}).items()}
    decisions = {str(kind): int(count) for kind, count in data.get("decisions", {}).items()}
    gauges = {str(name): int(value) for name, value in data["gauges"].items()}
    return CallTotals(calls, buckets, seconds, refusals, decisions), gauges


class SnapshotWriter:
    """A child's side: its metrics written to ``directory`` once a second and at ``stop``."""

    def __init__(self, directory: Path, metrics: ServerMetrics) -> None:
        self._path = directory / f"{os.getpid()}.json"
        self._metrics = metrics
        self._task: asyncio.Task[None] | None = None
        self._failing = False

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(_INTERVAL_SECONDS)
            await self.write()

    async def write(self) -> None:
        """Write the totals now: read on the loop, encoded and written on a thread (with many
        tools the file is megabytes). A failure is logged once and the next write tries again."""
        totals, gauges = self._metrics.totals(), self._metrics.gauges.read()
        try:
            await asyncio.to_thread(self._write, totals, gauges)
        except OSError as error:
            if not self._failing:
                _log.warning("cannot write the metrics for the --workers parent: %s", error)
            self._failing = True
        else:
            self._failing = False

    def _write(self, totals: CallTotals, gauges: dict[str, int]) -> None:
        aside = self._path.with_suffix(".tmp")
        aside.write_text(_encode(totals, gauges))
        aside.replace(self._path)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.write()


class WorkerMetrics(Collector):
    """The parent's side: the children's snapshots added up, and its own worker counts."""

    def __init__(self, directory: Path, workers: int, *, shared_store: bool = True) -> None:
        self.directory = directory
        self._workers = workers
        # Each child counts a shared store's batches whole: the largest, not the sum.
        self._summed = [name for name in _SUMMED if not (shared_store and "paused" in name)]
        self._exited = CallTotals()
        self._restarts = 0
        self._lock = threading.Lock()  # scrapes run on the HTTP server's threads

    def retire(self, pid: int, *, replaced: bool) -> None:
        """Child ``pid`` ended: keep its totals, drop its gauges (and count a restart)."""
        path = self.directory / f"{pid}.json"
        with self._lock:
            with contextlib.suppress(FileNotFoundError, ValueError, KeyError, TypeError):
                totals, _ = _decode(path.read_text())
                self._exited.add(totals)
            path.unlink(missing_ok=True)
            self._restarts += replaced

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            totals = self._exited.copy()
            gauges: dict[str, int] = {}
            live = 0
            for path in self.directory.glob("*.json"):
                with contextlib.suppress(FileNotFoundError, ValueError, KeyError, TypeError):
                    child_totals, child_gauges = _decode(path.read_text())
                    totals.add(child_totals)
                    live += 1
                    for name, value in child_gauges.items():
                        combined = gauges.get(name, 0)
                        summed = name in self._summed
                        gauges[name] = combined + value if summed else max(combined, value)
            restarts = self._restarts
        yield from families(totals, gauges)
        yield GaugeMetricFamily(
            "llmworker_workers", "Worker processes reporting metrics", value=live
        )
        yield GaugeMetricFamily(
            "llmworker_workers_wanted", "Worker processes asked for (--workers)",
            value=self._workers,
        )  # fmt: skip
        yield CounterMetricFamily(
            "llmworker_worker_restarts", "Worker processes replaced after dying", value=restarts
        )
