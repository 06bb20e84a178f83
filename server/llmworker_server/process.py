"""The server as a process: signals, a hard deadline, tool threads that never hold up exit,
and tasks that try to exit it.

- SIGHUP reads the TLS certificates again (a problem keeps the ones in use, logged).
- SIGTERM/SIGINT start a graceful stop (``ServerApp.stop`` with ``--drain-delay`` and
  ``--grace``); a second signal exits at once. Whatever tools do, the process is gone
  ``drain delay + grace + 1 s`` after the first signal: a watchdog thread ends it if the
  event loop is stuck.
- Sync tools run on daemon threads (``DaemonThreadExecutor``), so a tool blocked past the
  grace does not keep a stopped server alive.
- ``SystemExit`` or ``KeyboardInterrupt`` raised by a task outside any call (a tool's own
  background task, say) would stop the event loop: it is logged and the loop goes on.
  Only a signal stops the server.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Final

from .app import ServerApp
from .config import ServerConfig
from .daemon_executor import DaemonThreadExecutor
from .event_loop import EventLoopChoice

__all__ = ["serve_until_signal"]

_log = logging.getLogger("llmworker.server.lifecycle")
_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)
_DEADLINE_MARGIN: Final = 0.9


def serve_until_signal(config: ServerConfig, event_loop: EventLoopChoice) -> int:
    """Serve ``config`` on a new ``event_loop`` until a signal; 0 after a graceful stop."""
    loop = event_loop.new_event_loop()
    try:
        loop.set_default_executor(DaemonThreadExecutor())
        app = ServerApp(config)
        main = loop.create_task(_serve(app, loop))
        while True:
            try:
                loop.run_until_complete(main)
                break
            except (SystemExit, KeyboardInterrupt) as error:
                if main.done():
                    raise
                _log.error(
                    "a task outside any call raised %s; the server keeps serving (only "
                    "SIGTERM/SIGINT stop it)",
                    type(error).__name__,
                )
        return main.result()
    finally:
        _close(loop)


async def _serve(app: ServerApp, loop: asyncio.AbstractEventLoop) -> int:
    stopping = asyncio.Event()
    signalled = False
    config = app.config
    deadline = config.drain_delay + config.grace_seconds + _DEADLINE_MARGIN
    watchdog = _Watchdog(deadline)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal signalled
        if signalled:
            _exit_now(f"second {signal.Signals(signum).name}: exiting at once\n", 1)
        signalled = True
        watchdog.start_counting()
        loop.call_soon_threadsafe(stopping.set)

    def on_hangup(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(app.reload)

    previous = {signum: signal.signal(signum, on_signal) for signum in _SIGNALS}
    previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_hangup)
    try:
        try:
            await app.start()
        except BaseException:
            await app.stop(grace=0)  # listeners already up close cleanly, without noise
            raise
        await stopping.wait()
        _log.info(
            "signal received: finishing calls in flight (grace %.1f s, drain delay %.1f s)",
            config.grace_seconds,
            config.drain_delay,
        )
        await app.stop(drain_delay=config.drain_delay)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


class _Watchdog:
    """Ends the process ``seconds`` after ``start_counting``, from a thread started up front:
    a signal handler may only write to a pipe (starting a thread takes locks the interrupted
    main thread may hold)."""

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._read, self._write = os.pipe()
        threading.Thread(target=self._run, name="llmworker-stop-deadline", daemon=True).start()

    def start_counting(self) -> None:
        os.write(self._write, b"!")

    def _run(self) -> None:
        os.read(self._read, 1)
        time.sleep(self._seconds)
        _exit_now("the stop overran its grace: exiting at once\n", 1)


def _exit_now(message: str, code: int) -> None:
    """End the process without waiting for anything (a signal handler or watchdog thread:
    no logging locks are taken)."""
    try:
        os.write(sys.stderr.fileno(), f"llmworker-server: {message}".encode())
    finally:
        os._exit(code)


def _close(loop: asyncio.AbstractEventLoop) -> None:
    for task in asyncio.all_tasks(loop):
        task.cancel()
    loop.run_until_complete(asyncio.sleep(0))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
