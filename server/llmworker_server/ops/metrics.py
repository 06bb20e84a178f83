"""Prometheus metrics: calls by tool and status, call durations, refusals by reason, and the
server's gauges.

Calls are counted in plain dicts when the call log flushes (a ``prometheus_client``
observation per call would cost about eight times as much), and turned into metric families
only when scraped. With ``--workers N`` every child writes its totals to a snapshot file once
a second and the parent serves the sum (see ``worker_metrics.py``).

Tool names label the metrics only for tools the server holds; a name a caller made up counts
under ``tool="_unknown"``, so no request can grow the label set.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from llmworker import __version__

__all__ = ["BUCKETS", "CallTotals", "Gauges", "ServerMetrics", "families"]

BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
"""Upper bounds (seconds) of the call duration buckets; one more counts the rest (+Inf)."""
UNKNOWN_TOOL: Final = "_unknown"
_MAX_TOOL_LABELS: Final = 10_000


@dataclass(slots=True)
class CallTotals:
    """Finished calls: a count per (tool, status, transport) and, per tool, a count per
    duration bucket (``len(BUCKETS) + 1`` of them, not cumulative) and the sum of durations;
    and refused requests, a count per reason."""

    calls: dict[tuple[str, str, str], int] = field(default_factory=dict[tuple[str, str, str], int])
    buckets: dict[str, list[int]] = field(default_factory=dict[str, list[int]])
    seconds: dict[str, float] = field(default_factory=dict[str, float])
    refusals: dict[str, int] = field(default_factory=dict[str, int])
    decisions: dict[str, int] = field(default_factory=dict[str, int])

    def add(self, other: CallTotals) -> None:
        for key, count in other.calls.items():
            self.calls[key] = self.calls.get(key, 0) + count
        for tool, counts in other.buckets.items():
            mine = self.buckets.setdefault(tool, [0] * len(counts))
            for index, count in enumerate(counts):
                mine[index] += count
        for tool, seconds in other.seconds.items():
            self.seconds[tool] = self.seconds.get(tool, 0.0) + seconds
        for reason, count in other.refusals.items():
            self.refusals[reason] = self.refusals.get(reason, 0) + count
        for kind, count in other.decisions.items():
            self.decisions[kind] = self.decisions.get(kind, 0) + count

    def copy(self) -> CallTotals:
        """A copy safe to read while the event loop goes on counting (from the HTTP thread)."""
        return CallTotals(
            self.calls.copy(),
            {tool: list(counts) for tool, counts in self.buckets.copy().items()},
            self.seconds.copy(),
            self.refusals.copy(),
            self.decisions.copy(),
        )


@dataclass(frozen=True, slots=True)
class Gauges:
    """The server's current numbers, each read when scraped."""

    in_flight: Callable[[], int]
    tools: Callable[[], int]
    providers_up: Callable[[], int]
    paused_batches: Callable[[], int]
    paused_batch_oldest_age_seconds: Callable[[], int]
    watchers: Callable[[], int]

    def read(self) -> dict[str, int]:
        return {
            "in_flight": self.in_flight(),
            "tools": self.tools(),
            "providers_up": self.providers_up(),
            "paused_batches": self.paused_batches(),
            "paused_batch_oldest_age_seconds": self.paused_batch_oldest_age_seconds(),
            "watchers": self.watchers(),
        }


class ServerMetrics(Collector):
    """This process's metrics: call totals, fed by the call log, the refusals (read from
    ``refusals`` when scraped) and the gauges."""

    def __init__(
        self,
        gauges: Gauges,
        is_tool: Callable[[str], bool],
        refusals: Callable[[], dict[str, int]] = dict[str, int],
        decisions: Callable[[], dict[str, int]] = dict[str, int],
    ) -> None:
        self.gauges = gauges
        self._is_tool = is_tool
        self._refusals = refusals
        self._decisions = decisions
        self._totals = CallTotals()

    def count(self, calls: Iterable[tuple[str, str, float, str]]) -> None:
        """Count finished calls, each ``(tool, status, seconds, transport)``."""
        totals = self._totals
        for tool, status, seconds, transport in calls:
            counts = totals.buckets.get(tool)
            if counts is None:
                tool = self._label(tool)
                counts = totals.buckets.setdefault(tool, [0] * (len(BUCKETS) + 1))
            key = (tool, status, transport)
            totals.calls[key] = totals.calls.get(key, 0) + 1
            counts[bisect.bisect_left(BUCKETS, seconds)] += 1
            totals.seconds[tool] = totals.seconds.get(tool, 0.0) + seconds

    def _label(self, tool: str) -> str:
        known = self._is_tool(tool) and len(self._totals.buckets) < _MAX_TOOL_LABELS
        return tool if known else UNKNOWN_TOOL

    def totals(self) -> CallTotals:
        totals = self._totals.copy()
        totals.refusals = self._refusals()
        totals.decisions = self._decisions()
        return totals

    def collect(self) -> Iterator[Metric]:
        yield from families(self.totals(), self.gauges.read())


def families(totals: CallTotals, gauges: dict[str, int]) -> Iterator[Metric]:
    """The metric families for these totals and gauge values."""
    info = GaugeMetricFamily("llmworker_build", "The llmworker release serving", labels=["version"])
    info.add_metric([__version__], 1)
    yield info
    calls = CounterMetricFamily(
        "llmworker_calls",
        "Finished tool calls by tool, gRPC status and transport (grpc, mcp)",
        labels=["tool", "code", "transport"],
    )
    for (tool, status, transport), count in sorted(totals.calls.items()):
        calls.add_metric([tool, status, transport], count)
    yield calls
    durations = HistogramMetricFamily(
        "llmworker_call_duration_seconds", "Tool call durations by tool", labels=["tool"]
    )
    bounds = [*(repr(bound) for bound in BUCKETS), "+Inf"]
    for tool, counts in sorted(totals.buckets.items()):
        cumulative: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip(bounds, counts, strict=True):
            running += count
            cumulative.append((bound, running))
        durations.add_metric([tool], cumulative, totals.seconds.get(tool, 0.0))
    yield durations
    refusals = CounterMetricFamily(
        "llmworker_refusals",
        "Requests refused before anything ran (see the audit log), by reason",
        labels=["reason"],
    )
    for reason, count in sorted(totals.refusals.items()):
        refusals.add_metric([reason], count)
    yield refusals
    decisions = CounterMetricFamily(
        "llmworker_batch_decisions",
        "Decisions on paused batches' calls (ResumeBatch), by kind: approve, deny, edit",
        labels=["decision"],
    )
    for kind, count in sorted(totals.decisions.items()):
        decisions.add_metric([kind], count)
    yield decisions
    for name, help_text in _GAUGES.items():
        yield GaugeMetricFamily(f"llmworker_{name}", help_text, value=gauges.get(name, 0))


_GAUGES: Final = {
    "in_flight": "Tool calls in flight",
    "tools": "Tools the registry holds",
    "providers_up": "Providers whose last health check passed",
    "paused_batches": "Paused batches waiting for approval (in the whole shared store)",
    "paused_batch_oldest_age_seconds": "How long the oldest paused batch has waited",
    "watchers": "Open WatchDefinitions streams",
}
