"""Real MCP servers for the import tests: the SDK-written one of ``fixture_server.py`` over
Streamable HTTP or stdio, and ``@modelcontextprotocol/server-everything`` from npm."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from llmworker_server.mcp_import.settings import McpServerSettings
from tests.grpc_support import REPO

EVERYTHING = REPO / "tools/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def sdk_stdio(name: str, events: Path, **options: object) -> McpServerSettings:
    """The SDK server launched over stdio, its events written to ``events``."""
    return McpServerSettings(
        name,
        command=(sys.executable, "-m", "tests.mcp_import.fixture_server", "stdio"),
        env={"FIXTURE_EVENTS": str(events), "PYTHONPATH": str(REPO)},
        cwd=REPO,
        **options,  # type: ignore[arg-type]
    )


def read_events(path: Path) -> list[dict[str, object]]:
    """The events the SDK server wrote, oldest first."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class HttpMcpServer:
    """A server process serving Streamable HTTP at ``url`` on a fixed port, so it can be
    killed and started again at the same address."""

    def __init__(self, command: list[str], port: int, env: dict[str, str] | None = None) -> None:
        self.command = command
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self._env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None

    async def start(self) -> None:
        self.process = subprocess.Popen(  # noqa: ASYNC220 - it returns at once
            self.command,
            cwd=REPO,
            env=self._env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await wait_until(self._answers, 30.0, f"{self.command} to listen on {self.port}")

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"{self.command} exited with {self.process.returncode}")
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", self.port)) == 0

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    async def __aenter__(self) -> HttpMcpServer:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        self.kill()


def sdk_http(
    port: int, events: Path, token: str | None = None, tls: tuple[Path, Path] | None = None
) -> HttpMcpServer:
    """The SDK server over Streamable HTTP; ``tls``: its certificate and key files."""
    env = {"FIXTURE_EVENTS": str(events)}
    if token is not None:
        env["FIXTURE_TOKEN"] = token
    if tls is not None:
        env["FIXTURE_TLS_CERT"], env["FIXTURE_TLS_KEY"] = str(tls[0]), str(tls[1])
    command = [sys.executable, "-m", "tests.mcp_import.fixture_server", "http", str(port)]
    server = HttpMcpServer(command, port, env)
    if tls is not None:
        server.url = server.url.replace("http://", "https://")
    return server


def everything_http(port: int) -> HttpMcpServer:
    return HttpMcpServer(["node", str(EVERYTHING), "streamableHttp"], port, {"PORT": str(port)})


async def wait_until(check: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll ``check`` every 50 ms until it holds; AssertionError naming ``what`` after
    ``seconds``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"waited {seconds} s for {what}")
        await asyncio.sleep(0.05)
