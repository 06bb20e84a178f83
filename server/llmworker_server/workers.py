"""``--workers N``: N server processes sharing one port through SO_REUSEPORT, supervised.

The kernel spreads connections across the processes; each runs its own event loop and a
copy of the (locked) tool set. The parent starts its children, replaces one that dies (after a
backoff, logging how it ended), forwards SIGTERM, SIGINT and SIGHUP to them, and gives up with
exit status 1 when a child keeps dying right after it starts (a bad ``--tools``, say).

Children run ``python -P -m llmworker_server``: ``-P`` keeps the working directory off
``sys.path``, so no ``llmworker_server.py`` there can stand in for the server.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from .config import ServerConfig
from .ops.metrics_http import MetricsListener
from .ops.worker_metrics import WorkerMetrics

__all__ = ["SUPERVISOR_ENV", "follow_supervisor", "run_workers"]

_log = logging.getLogger("llmworker.server.lifecycle")
_PR_SET_PDEATHSIG = 1
SUPERVISOR_ENV = "LLMWORKER_SUPERVISOR_PID"
"""Set for the children: the supervising parent's pid (``follow_supervisor``)."""
_POLL_SECONDS = 0.05
_FIRST_BACKOFF_SECONDS = 0.5
_MAX_BACKOFF_SECONDS = 30.0
_STARTUP_SECONDS = 10.0
"""A child that dies sooner than this after starting counts as failing at start."""
_MAX_STARTUP_FAILURES = 4
"""Consecutive failures at start of one worker slot before the parent gives up."""


def _without(flags: tuple[str, ...], argv: Sequence[str]) -> list[str]:
    """``argv`` without ``flags`` (each taking a value, as ``--flag V`` or ``--flag=V``)."""
    arguments: list[str] = []
    skip = False
    for argument in argv:
        if skip:
            skip = False
        elif argument in flags:
            skip = True
        elif not argument.startswith(tuple(f"{flag}=" for flag in flags)):
            arguments.append(argument)
    return arguments


def follow_supervisor() -> None:
    """In a child, first thing: get SIGTERM when the supervising parent dies (Linux), since the
    child does not share its process group; exit at once if it is already gone. (Done after
    exec rather than in ``preexec_fn``, which is unsafe once the parent has threads.)"""
    parent = os.environ.pop(SUPERVISOR_ENV, None)
    if parent is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != int(parent):
        sys.exit("the supervising parent is gone")


def _how_it_ended(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exited with status {code}"


@dataclass(slots=True)
class _Slot:
    """One worker position: its current process, or when to start the next one."""

    number: int
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restart_at: float = 0.0
    startup_failures: int = 0


class _Supervisor:
    def __init__(self, child_argv: list[str], count: int, metrics: WorkerMetrics | None) -> None:
        self._argv = child_argv
        self._metrics = metrics
        self._slots = [_Slot(number) for number in range(1, count + 1)]
        self._stop_signal: int | None = None
        self._gave_up = False

    def run(self) -> int:
        # Handlers first: a signal while the children start must reach every one of them.
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._on_signal)
        for slot in self._slots:
            if self._stopping:
                break
            self._start(slot)
        _log.info(
            "started %d worker processes: %s",
            len(self._slots),
            [slot.process.pid for slot in self._slots if slot.process],
        )
        codes: dict[int, int] = {}
        while any(slot.process is not None for slot in self._slots) or not self._stopping:
            time.sleep(_POLL_SECONDS)
            now = time.monotonic()
            for slot in self._slots:
                self._watch(slot, now, codes)
        return self._exit_status(codes)

    @property
    def _stopping(self) -> bool:
        return self._stop_signal is not None or self._gave_up

    def _start(self, slot: _Slot) -> subprocess.Popen[bytes]:
        # Each child in a process group of its own: a terminal's Ctrl-C (sent to the whole
        # group) reaches the parent only, which forwards it once; a second one means "now".
        environment = {**os.environ, SUPERVISOR_ENV: str(os.getpid())}
        slot.process = subprocess.Popen(self._argv, process_group=0, env=environment)
        slot.started_at = time.monotonic()
        if self._stop_signal is not None:  # it came while Popen ran: this child missed it
            slot.process.send_signal(self._stop_signal)
        return slot.process

    def _watch(self, slot: _Slot, now: float, codes: dict[int, int]) -> None:
        if slot.process is None:
            if not self._stopping and now >= slot.restart_at:
                process = self._start(slot)
                _log.info("worker %d restarted as pid %d", slot.number, process.pid)
            return
        code = slot.process.poll()
        if code is None:
            return
        pid, slot.process = slot.process.pid, None
        if self._metrics is not None:
            self._metrics.retire(pid, replaced=not self._stopping)
        if self._stopping:
            codes[slot.number] = code
            return
        self._replace_later(slot, pid, code, now)

    def _replace_later(self, slot: _Slot, pid: int, code: int, now: float) -> None:
        if now - slot.started_at < _STARTUP_SECONDS:
            slot.startup_failures += 1
        else:
            slot.startup_failures = 0
        if slot.startup_failures >= _MAX_STARTUP_FAILURES:
            _log.error(
                "worker %d (pid %d) %s %d times in a row within %.0f s of starting: giving up; "
                "its output above says why (run without --workers to see it alone)",
                slot.number,
                pid,
                _how_it_ended(code),
                slot.startup_failures,
                _STARTUP_SECONDS,
            )
            self._gave_up = True
            self._forward(signal.SIGTERM)
            return
        delay = min(
            _FIRST_BACKOFF_SECONDS * 2 ** max(slot.startup_failures - 1, 0),
            _MAX_BACKOFF_SECONDS,
        )
        slot.restart_at = now + delay
        _log.warning(
            "worker %d (pid %d) %s; starting a new one in %.1f s",
            slot.number,
            pid,
            _how_it_ended(code),
            delay,
        )

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if signum in (signal.SIGTERM, signal.SIGINT):
            self._stop_signal = signum
        self._forward(signum)

    def _forward(self, signum: int) -> None:
        for slot in self._slots:
            if slot.process is not None and slot.process.poll() is None:
                slot.process.send_signal(signum)

    def _exit_status(self, codes: dict[int, int]) -> int:
        if self._gave_up:
            return 1
        # A child that had not yet set up its handlers dies of the forwarded signal itself:
        # that is the stop that was asked for, not a failure.
        forwarded = -self._stop_signal if self._stop_signal else None
        failures = [code for code in codes.values() if code not in (0, forwarded)]
        return max(failures, key=abs) if failures else 0


def run_workers(argv: Sequence[str], config: ServerConfig) -> int:
    """Run and supervise ``config.workers`` children with ``argv`` (minus ``--workers``)
    until SIGTERM/SIGINT, serving their metrics; 0 if they all stopped cleanly."""
    child_argv = [
        sys.executable,
        "-P",
        "-m",
        "llmworker_server",
        *_without(("--workers", "--metrics-address"), argv),
        "--reuse-port",
    ]
    if config.metrics_address is None:
        return _Supervisor(child_argv, config.workers, None).run()
    with tempfile.TemporaryDirectory(prefix="llmworker-metrics-") as directory:
        metrics = WorkerMetrics(
            Path(directory), config.workers, shared_store=config.state != "memory"
        )
        try:
            listener = MetricsListener(config.metrics_address, metrics, config.tls)
        except OSError as error:
            _log.error("--metrics-address %s: %s", config.metrics_address, error)
            return 1
        try:
            child_argv += ["--metrics-snapshots", directory]
            return _Supervisor(child_argv, config.workers, metrics).run()
        finally:
            listener.close()
