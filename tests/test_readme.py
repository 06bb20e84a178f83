"""The README's Python examples run: the self-contained ones as they are, and those written
against a running server (an ``async def main(target)``) against a demo server."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import cast

import pytest

from llmworker import Worker, tool_definitions
from llmworker_server.demo_tools import DemoTools

from .grpc_support import REPO, serve

BLOCKS = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
RUNNABLE = [block for block in BLOCKS if "async def main(target" not in block]
AGAINST_A_SERVER = [block for block in BLOCKS if "async def main(target" in block]


@pytest.mark.parametrize("block", RUNNABLE, ids=[block.split("\n")[0][:40] for block in RUNNABLE])
def test_readme_example_runs(block: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(block, "README.md", "exec"), {"__name__": "readme_example"})
    assert "Traceback" not in capsys.readouterr().err


def test_the_readme_has_runnable_examples() -> None:
    assert len(RUNNABLE) >= 2


@pytest.mark.parametrize(
    "block", AGAINST_A_SERVER, ids=[f"server-{index}" for index in range(len(AGAINST_A_SERVER))]
)
async def test_readme_examples_against_a_server_run(
    block: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("builtins.input", lambda prompt="": "y")  # a person who approves
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(block, "README.md", "exec"), namespace)
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=worker, internal=False) as served:
        main = cast("Callable[[str], Awaitable[None]]", namespace["main"])
        await main(served.target)
    printed = capsys.readouterr()
    assert "Traceback" not in printed.err
    assert printed.out


def test_every_python_example_is_run() -> None:
    assert len(RUNNABLE) + len(AGAINST_A_SERVER) == len(BLOCKS)
    assert len(AGAINST_A_SERVER) >= 2
