"""Every Python example of README.md and of the pages under docs/ runs: a self-contained block
as it is, a block written against a running server (it defines ``async def main(target)``)
against a demo server, and one written against MCP (``async def main(mcp_url)``) against a
demo server's MCP front. Code in other languages is shown, not run."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import cast

import pytest

from llmworker import Worker, tool_definitions
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import REPO, serve

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<language>\S*)\s*$")
# The languages a page may show; only python is run. A fence without one would hide code.
LANGUAGES = frozenset(
    {"python", "go", "ts", "sh", "json", "toml", "text", "xml", "java", "rust", "yaml"}
)


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it starts and what it holds, without the fence's indent."""

    page: str
    line: int  # the block's first line of code, counted from 1
    language: str
    code: str

    @property
    def against_a_server(self) -> bool:
        return "async def main(target" in self.code

    @property
    def against_mcp(self) -> bool:
        return "async def main(mcp_url" in self.code

    @property
    def id(self) -> str:
        first = self.code.split("\n", 1)[0]
        return f"{self.page}:{self.line}:{first[:40]}"

    def compiled(self) -> CodeType:
        # Blank lines in front make a traceback name the page's own line numbers.
        return compile("\n" * (self.line - 1) + self.code, self.page, "exec")


def blocks_of(page: Path) -> Iterator[Block]:
    name = page.relative_to(REPO).as_posix()
    lines = page.read_text().split("\n")
    number = 0
    while number < len(lines):
        opening = FENCE.match(lines[number])
        number += 1
        if opening is None:
            continue
        indent, start, code = opening["indent"], number, list[str]()
        while number < len(lines) and lines[number].strip() != "```":
            code.append(lines[number].removeprefix(indent))
            number += 1
        number += 1  # the closing fence
        yield Block(name, start + 1, opening["language"], "\n".join(code) + "\n")


BLOCKS = [block for page in PAGES for block in blocks_of(page)]
PYTHON = [block for block in BLOCKS if block.language == "python"]
RUNNABLE = [block for block in PYTHON if not block.against_a_server and not block.against_mcp]
AGAINST_A_SERVER = [block for block in PYTHON if block.against_a_server]
AGAINST_MCP = [block for block in PYTHON if block.against_mcp]


@pytest.mark.parametrize("block", RUNNABLE, ids=[block.id for block in RUNNABLE])
def test_example_runs(block: Block, capsys: pytest.CaptureFixture[str]) -> None:
    exec(block.compiled(), {"__name__": "docs_example"})
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("block", AGAINST_A_SERVER, ids=[block.id for block in AGAINST_A_SERVER])
async def test_example_against_a_server_runs(
    block: Block, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("builtins.input", lambda prompt="": "y")  # a person who approves
    namespace: dict[str, object] = {"__name__": "docs_example"}
    exec(block.compiled(), namespace)
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=worker, internal=False) as served:
        main = cast("Callable[[str], Awaitable[None]]", namespace["main"])
        await main(served.target)
    printed = capsys.readouterr()
    assert "Traceback" not in printed.err
    assert printed.out


@pytest.mark.parametrize("block", AGAINST_MCP, ids=[block.id for block in AGAINST_MCP])
async def test_example_against_the_mcp_front_runs(
    block: Block, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace: dict[str, object] = {"__name__": "docs_example"}
    exec(block.compiled(), namespace)
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=worker, internal=False, mcp_address="127.0.0.1:0") as served:
        main = cast("Callable[[str], Awaitable[None]]", namespace["main"])
        await main(f"http://127.0.0.1:{served.app.mcp_port}/mcp")
    printed = capsys.readouterr()
    assert "Traceback" not in printed.err
    assert printed.out


def test_every_python_example_is_run() -> None:
    """Both kinds have examples, the README one of each, and no Python hides in a block that is
    not marked ``python`` or behind a ``__main__`` guard that running it would skip."""
    assert len(RUNNABLE) + len(AGAINST_A_SERVER) + len(AGAINST_MCP) == len(PYTHON)
    assert len(RUNNABLE) >= 2
    assert len(AGAINST_A_SERVER) >= 2
    readme = [block for block in PYTHON if block.page == "README.md"]
    assert {block.against_a_server for block in readme} == {False, True}
    for block in RUNNABLE:
        assert '__name__ == "__main__"' not in block.code, f"{block.id}: main() would not run"


def test_every_code_block_names_a_known_language() -> None:
    unknown = [
        f"{block.id} ({block.language or 'no language'})"
        for block in BLOCKS
        if block.language not in LANGUAGES
    ]
    assert not unknown, f"mark each block with one of {sorted(LANGUAGES)}: {unknown}"


def test_every_page_is_read() -> None:
    assert {page.name for page in PAGES} >= {"README.md", "index.md", "design.md"}
