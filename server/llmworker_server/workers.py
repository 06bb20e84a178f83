"""``--workers N``: N server processes sharing one port through SO_REUSEPORT.

The kernel spreads connections across the processes; each runs its own event loop and a
copy of the (locked) tool set. The parent only starts its children, forwards SIGTERM,
SIGINT and SIGHUP to them, and waits for them.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import signal
import subprocess
import sys
from collections.abc import Sequence
from types import FrameType

__all__ = ["run_workers"]

_log = logging.getLogger("llmworker.server.lifecycle")
_PR_SET_PDEATHSIG = 1


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


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when the parent dies (Linux), since the child no
    longer shares the parent's process group."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def run_workers(argv: Sequence[str], count: int) -> int:
    """Run ``count`` children with ``argv`` (minus ``--workers``); 0 if all exit 0."""
    child_argv = [
        sys.executable,
        "-P",
        "-m",
        "llmworker_server",
        *_without_workers_flag(argv),
        "--reuse-port",
    ]
    # Each child in a process group of its own: a terminal's Ctrl-C (sent to the whole group)
    # reaches the parent only, which forwards it once; a second signal would mean "exit now".
    children = [
        subprocess.Popen(child_argv, process_group=0, preexec_fn=_die_with_parent)
        for _ in range(count)
    ]
    _log.info("started %d worker processes: %s", count, [child.pid for child in children])

    def forward(signum: int, frame: FrameType | None) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGHUP, forward)  # each child reloads its certificates
    codes = [child.wait() for child in children]
    return max(codes, key=abs)
