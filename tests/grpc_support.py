"""Running servers in tests: in-process on port 0, or as a child process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
import grpc.aio
from google.rpc import error_details_pb2, status_pb2  # pyright: ignore[reportMissingTypeStubs]

from llmworker import Mutable, Worker, tool_definitions
from llmworker_server.app import ServerApp
from llmworker_server.config import ServerConfig
from tests.server_tools import ServerTestTools

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Served:
    app: ServerApp
    tools: ServerTestTools
    target: str


@contextlib.asynccontextmanager
async def serve(
    config: ServerConfig | None = None,
    *,
    worker: Worker[Mutable] | None = None,
    **overrides: object,
) -> AsyncGenerator[Served, None]:
    """An in-process server with the test tools (or ``worker``'s) on an ephemeral port."""
    config = config or ServerConfig(port=0, log_level="WARNING")
    for key, value in overrides.items():
        setattr(config, key, value)
    tools = ServerTestTools()
    if worker is None:
        worker = Worker()
        worker.register_tools(tool_definitions(tools))
    app = ServerApp(config, worker)
    await app.start()
    try:
        yield Served(app, tools, f"127.0.0.1:{app.port}")
    finally:
        await app.stop(grace=0)


@dataclass
class RpcFailure:
    code: grpc.StatusCode
    message: str
    reason: str
    domain: str
    metadata: dict[str, str]


def failure_of(error: grpc.aio.AioRpcError) -> RpcFailure:
    """The status and ErrorInfo of a failed call, as any client would read them."""
    reason, domain, metadata = "", "", {}
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    reason, domain, metadata = info.reason, info.domain, dict(info.metadata)
    return RpcFailure(error.code(), error.details() or "", reason, domain, metadata)


class ServerProcess:
    """``python -m llmworker_server ARGS`` run from the repository root (or ``command ARGS``
    from ``cwd``), its output collected."""

    def __init__(
        self,
        arguments: Sequence[str],
        env: dict[str, str] | None = None,
        *,
        command: Sequence[str] = (sys.executable, "-m", "llmworker_server"),
        cwd: Path = REPO,
    ) -> None:
        self.process = subprocess.Popen(
            [*command, *arguments],
            cwd=cwd,
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._terminated = False
        self._port: int | None = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            if self._port is None and " tools on " in line:
                address = line.split(" tools on ", 1)[1].split(" ", 1)[0]
                self._port = int(address.rsplit(":", 1)[1])
                self._ready.set()
        self._ready.set()

    async def port(self) -> int:
        """The public port, once the server says it serves (30 s at most)."""
        await asyncio.to_thread(self._ready.wait, 30.0)
        if self._port is None:
            self.process.kill()
            raise AssertionError("server did not start:\n" + "".join(self.lines))
        return self._port

    def terminate(self) -> None:
        """Send SIGTERM once: the server stops gracefully."""
        if not self._terminated:
            self._terminated = True
            self.process.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM the server (unless already sent) and wait for it; returns the exit code."""
        self.terminate()
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self._reader.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return code

    @property
    def output(self) -> str:
        return "".join(self.lines)


async def wait_for_lines(process: ServerProcess, pattern: str, count: int = 1) -> list[str]:
    """The output lines matching the regular expression ``pattern``, once there are ``count``
    of them (10 s at most)."""
    for _ in range(200):
        found = [line for line in process.lines if re.search(pattern, line)]
        if len(found) >= count:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {count} lines matching {pattern!r}:\n{process.output}")


async def wait_for_line(process: ServerProcess, text: str) -> None:
    """Until a line of the output holds ``text`` (10 s at most)."""
    await wait_for_lines(process, re.escape(text))
