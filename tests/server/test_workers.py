"""``--workers N`` supervision: a dead child is replaced and logged, calls go on under load,
and a child that keeps failing at start makes the parent give up with a non-zero exit."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from typing import Any

import grpc
import grpc.aio
import pytest

from llmworker.v1 import tool_service_pb2, tool_service_pb2_grpc
from llmworker_server import workers
from tests.grpc_support import REPO, ServerProcess, wait_for_lines

_PORT = 50179
_ECHO = tool_service_pb2.CallToolRequest(name="echo", input_json='{"text":"hi"}')


class _Load:
    """Echo calls on several connections until stopped, counting successes and failures."""

    def __init__(self, connections: int) -> None:
        self.succeeded = 0
        self.failed = 0
        self._stopping = False
        self._tasks = [asyncio.create_task(self._run()) for _ in range(connections)]

    async def _run(self) -> None:
        # A new channel per loop task: SO_REUSEPORT spreads connections over the children.
        options = [("grpc.use_local_subchannel_pool", 1)]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{_PORT}", options=options) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            while not self._stopping:
                try:
                    await stub.CallTool(_ECHO, timeout=5)
                    self.succeeded += 1
                except grpc.aio.AioRpcError:
                    self.failed += 1
                    await asyncio.sleep(0.01)

    async def stop(self) -> None:
        self._stopping = True
        await asyncio.gather(*self._tasks)


async def test_a_killed_worker_is_replaced_while_the_others_keep_serving() -> None:
    server = ServerProcess(
        ["--demo", "--no-internal", "--port", str(_PORT), "--workers", "2"],
        env={"PYTHONUNBUFFERED": "1"},
    )
    try:
        await wait_for_lines(server, r" tools on ", count=2)
        (started,) = await wait_for_lines(server, r"started 2 worker processes")
        victim = int(re.findall(r"\d+", started.split("processes:", 1)[1])[0])
        load = _Load(connections=8)
        await asyncio.sleep(0.5)
        before_kill = load.succeeded
        os.kill(victim, signal.SIGKILL)
        replacing = rf"worker \d \(pid {victim}\) killed by SIGKILL; starting a new one in"
        await wait_for_lines(server, replacing)
        await wait_for_lines(server, r"worker \d restarted as pid \d+")
        await wait_for_lines(server, r" tools on ", count=3)  # the replacement serves
        after_restart = load.succeeded
        await asyncio.sleep(0.5)
        await load.stop()
    finally:
        code = await asyncio.to_thread(server.stop)
    assert before_kill > 0, server.output
    assert load.succeeded > after_restart, "calls stopped after the restart"
    assert code == 0, server.output


def test_a_worker_that_keeps_failing_at_start_makes_the_parent_give_up() -> None:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "llmworker_server", "--workers", "2", "--no-internal",
         "--tools", "no_such_module_for_the_test:Tools", "--port", str(_PORT + 1)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "cannot import 'no_such_module_for_the_test'" in result.stderr
    assert "giving up" in result.stderr
    assert "exited with status 1" in result.stderr
    assert time.monotonic() - started < 60


async def test_workers_stop_cleanly_on_sigterm_even_before_they_serve() -> None:
    server = ServerProcess(
        ["--demo", "--no-internal", "--port", str(_PORT + 2), "--workers", "2"],
    )
    try:
        await wait_for_lines(server, r"started 2 worker processes")
    finally:
        code = await asyncio.to_thread(server.stop)
    assert code == 0, server.output


def test_a_stop_signal_during_a_restart_reaches_the_new_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SIGTERM arriving while the replacement is being started (inside Popen) still stops it."""
    real_popen = subprocess.Popen
    started: list[int] = []

    def popen(argv: list[str], **options: Any) -> subprocess.Popen[Any]:
        first = not started
        command = [sys.executable, "-c", "pass" if first else "import time; time.sleep(20)"]
        child = real_popen(command, **options)
        started.append(child.pid)
        if not first:
            os.kill(os.getpid(), signal.SIGTERM)  # lands before the supervisor sees the child
        return child

    monkeypatch.setattr(subprocess, "Popen", popen)
    began = time.monotonic()
    assert workers._Supervisor(["unused"], 1, None).run() == 0  # pyright: ignore[reportPrivateUsage]
    assert time.monotonic() - began < 10, "the replacement never got the SIGTERM"
    assert len(started) == 2
