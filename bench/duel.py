"""A/B the CPU cost per call of two servers that share one core under the same load.

Both servers run pinned to core 0 and two ghz processes (pinned to core 1) load them for the
same seconds at the same time, so whatever the machine does during a round happens to both:
the difference in CPU time per request is far steadier than comparing two separate runs (see
BENCHMARKS.md). Absolute numbers are higher than in ``make bench`` (two servers share a core);
differences are the point.

    python -m bench.duel floor server            # the floor against the demo server
    python -m bench.duel server \
        "python -m llmworker_server --demo --no-internal --port 0 --log-level WARNING"
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.run import GHZ, Process, process_cpu, wait_serving

_SERVER = "-m llmworker_server --demo --no-internal --port 0 --log-level INFO"
_NAMED = {
    "floor": [sys.executable, "-m", "bench.floor_server", "--port", "0"],
    "server": [sys.executable, *_SERVER.split()],
}
_CALL = json.dumps({"name": "echo", "input_json": json.dumps({"text": "x" * 50})})


def _pinned(core: int) -> None:
    os.sched_setaffinity(0, {core})


def _start(command: Sequence[str], log: Path) -> tuple[subprocess.Popen[str], int]:
    process = Process(command, log, preexec=lambda: _pinned(0))
    port = process.wait_port()
    wait_serving(port)
    return process.process, port


def _ghz(port: int, seconds: float, reports: list[dict[str, Any]] | None = None) -> None:
    command = [str(GHZ), "--insecure", "--call", "llmworker.v1.ToolService/CallTool",
               "-d", _CALL, "-z", f"{seconds}s", "-c", "32", "--connections", "2",
               "--timeout", "20s", "--format", "json", f"127.0.0.1:{port}"]  # fmt: skip
    completed = subprocess.run(
        command, capture_output=True, text=True, check=True, timeout=300,
        preexec_fn=lambda: _pinned(1),
    )  # fmt: skip
    if reports is not None:
        reports.append(json.loads(completed.stdout))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A/B two servers' CPU per call on one core.")
    parser.add_argument("a", help='"floor", "server", or a command that logs "tools on HOST:PORT"')
    parser.add_argument("b", help="the same, for the other side")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4.0, help="length of a round")
    args = parser.parse_args(argv)
    if not GHZ.exists() or (os.cpu_count() or 1) < 2:
        print(f"needs {GHZ} (make bench installs it) and two cores")
        return 1
    commands = [_NAMED.get(side) or shlex.split(side) for side in (args.a, args.b)]
    with tempfile.TemporaryDirectory(prefix="llmworker-duel-") as directory:
        started = [_start(command, Path(directory) / f"{index}.log")
                   for index, command in enumerate(commands)]  # fmt: skip
        try:
            for _, port in started:
                _ghz(port, 0.5)  # warm-up
            differences: list[float] = []
            for round_number in range(args.rounds):
                before = [process_cpu([process.pid]) for process, _ in started]
                reports: list[list[dict[str, Any]]] = [[], []]
                threads = [threading.Thread(target=_ghz, args=(port, args.seconds, report))
                           for (_, port), report in zip(started, reports, strict=True)]  # fmt: skip
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                per_call = [(process_cpu([process.pid]) - cpu) / report[0]["count"] * 1e6
                            for (process, _), cpu, report in zip(started, before, reports,
                                                                 strict=True)]  # fmt: skip
                differences.append(per_call[1] - per_call[0])
                print(f"round {round_number}: a {per_call[0]:.1f} µs, b {per_call[1]:.1f} µs "
                      f"per call, b - a {differences[-1]:+.1f} µs", flush=True)  # fmt: skip
        finally:
            for process, _ in started:
                process.terminate()
                process.wait(timeout=30)
    print(f"b - a: median {statistics.median(differences):+.1f} µs of CPU per call "
          f"(rounds {min(differences):+.1f} to {max(differences):+.1f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
