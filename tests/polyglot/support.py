"""What the Java and Rust tests share: a demo server, running a built client against it, and
reading its "OK <check>" lines."""

from __future__ import annotations

import asyncio
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from llmworker import Mutable, Worker, tool_definitions
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import REPO

TOKEN = "polyglot-token-0123456789abcdef"


def require_built(path: Path) -> None:
    """A client that was not built fails the test, saying how to build it."""
    if not path.exists():
        pytest.fail(f"{path.relative_to(REPO)} is missing: run 'make polyglot' (make test does)")


def demo_worker() -> Worker[Mutable]:
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    return worker


def caller_tokens(directory: Path) -> Path:
    """An --auth-tokens file letting TOKEN call every tool."""
    tokens = directory / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [{"token": TOKEN, "tools": ["*"]}]}))
    tokens.chmod(0o600)
    return tokens


async def run(*command: str) -> str:
    """Run a client to its end (two minutes at most); its output, once it exited 0."""
    process = await asyncio.create_subprocess_exec(
        *command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPO
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), timeout=120)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    text = output.decode()
    assert process.returncode == 0, text
    return text


def assert_checks(output: str, checks: list[str]) -> None:
    """Every check printed its OK line, and none failed."""
    assert "FAIL" not in output, output
    for check in checks:
        assert f"\nOK {check}" in f"\n{output}", f"no 'OK {check}' in:\n{output}"


@dataclass(frozen=True)
class PolyglotClient:
    """A client of tests/polyglot: the file make polyglot builds, the command that runs it,
    and the checks every run of it prints."""

    built: Path
    command: tuple[str, ...]
    checks: tuple[str, ...]

    async def run(self, *arguments: str) -> str:
        require_built(self.built)
        return await run(*self.command, *arguments)


JAR = REPO / "tests/polyglot/java/target/llmworker-polyglot.jar"
JAVA = PolyglotClient(
    JAR,
    ("java", "-jar", str(JAR)),
    (
        "google.rpc.Status from proto-google-common-protos",
        "list sorted definitions",
        "call echo",
        "unknown tool: ErrorInfo from StatusProto.fromThrowable",
        "deadline: DEADLINE_EXCEEDED, and the tool cancelled",
        "batch: a result and a per-call google.rpc.Status",
        "service config: round_robin, health checks, retries",
    ),
)
RUST_BINARY = REPO / "tests/polyglot/rust/target/debug/llmworker-polyglot"
RUST = PolyglotClient(
    RUST_BINARY,
    (str(RUST_BINARY),),
    (
        "list sorted definitions",
        "call echo",
        "unknown tool: ErrorInfo from StatusExt",
        "batch: a result and a per-call tonic_types::pb::Status",
    ),
)
