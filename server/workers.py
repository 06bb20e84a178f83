"""``--workers N``: N server processes sharing one port through SO_REUSEPORT.

The kernel spreads connections across the processes; each runs its own event loop and a
copy of the (locked) tool set. The parent only starts, forwards signals to, and waits for
its children.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from collections.abc import Sequence
from types import FrameType

__all__ = ["run_workers"]

_log = logging.getLogger("llmworker.server.lifecycle")


def _without_workers_flag(argv: Sequence[str]) -> list[str]:
    arguments: list[str] = []
    skip = False
    for argument in argv:
        if skip:
            skip = False
        elif argument == "--workers":
            skip = True
        elif not argument.startswith("--workers="):
            arguments.append(argument)
    return arguments


def run_workers(argv: Sequence[str], count: int) -> int:
    """Run ``count`` children with ``argv`` (minus ``--workers``); 0 if all exit 0."""
    child_argv = [sys.executable, "-m", "server", *_without_workers_flag(argv), "--reuse-port"]
    children = [subprocess.Popen(child_argv) for _ in range(count)]
    _log.info("started %d worker processes: %s", count, [child.pid for child in children])

    def forward(signum: int, frame: FrameType | None) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    codes = [child.wait() for child in children]
    return max(codes, key=abs)
