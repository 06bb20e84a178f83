"""The thread pool sync tools run in: daemon threads that never hold up the process's exit.

``asyncio.to_thread`` runs on the loop's default executor, whose threads Python joins at
exit: a sync tool blocked for minutes would keep a stopped server alive for minutes after
its grace. These threads are daemons, and ``shutdown`` never waits: whatever a tool thread
still does when the server has stopped is abandoned with the process.
"""

from __future__ import annotations

import concurrent.futures
import os
import queue
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["DaemonThreadExecutor"]

P = ParamSpec("P")
T = TypeVar("T")
_Work = tuple["concurrent.futures.Future[object]", Callable[[], object]]


class DaemonThreadExecutor(concurrent.futures.ThreadPoolExecutor):
    """A thread pool of daemon threads (a ThreadPoolExecutor, as asyncio requires, that
    uses none of its parent's threads)."""

    def __init__(self, max_workers: int | None = None) -> None:
        super().__init__(max_workers=1)
        self._limit = max_workers or min(32, (os.cpu_count() or 1) + 4)
        self._work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._idle = threading.Semaphore(0)
        self._closed = False
        self._guard = threading.Lock()

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._guard:
            if self._closed:
                raise RuntimeError("cannot run a tool thread: the server is shutting down")
            self._work.put((future, lambda: fn(*args, **kwargs)))  # type: ignore[arg-type]
            if not self._idle.acquire(blocking=False) and len(self._workers) < self._limit:
                worker = threading.Thread(
                    target=self._run, name=f"llmworker-tool-{len(self._workers)}", daemon=True
                )
                self._workers.append(worker)
                worker.start()
        return future

    def _run(self) -> None:
        while (item := self._work.get()) is not None:
            future, call = item
            if future.set_running_or_notify_cancel():
                try:
                    result = call()
                except GeneratorExit:
                    # Delivered to the awaiting task, a GeneratorExit would close its whole
                    # chain of coroutines: it travels as an ordinary exception instead.
                    future.set_exception(RuntimeError("a tool thread raised GeneratorExit"))
                except BaseException as error:  # the future carries it to the caller
                    future.set_exception(error)
                else:
                    future.set_result(result)
            del item, future, call
            self._idle.release()
        self._work.put(None)  # let the next worker see the end too

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Take no more work and let idle threads end; never waits for busy ones."""
        with self._guard:
            self._closed = True
            while cancel_futures:
                try:
                    item = self._work.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
            self._work.put(None)
        super().shutdown(wait=False, cancel_futures=cancel_futures)
