"""The README's runnable examples run."""

from __future__ import annotations

import re

import pytest

from .grpc_support import REPO

BLOCKS = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
RUNNABLE = [block for block in BLOCKS if "async with" not in block.split("async def")[0]]


@pytest.mark.parametrize("block", RUNNABLE, ids=[block.split("\n")[0][:40] for block in RUNNABLE])
def test_readme_example_runs(block: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(block, "README.md", "exec"), {"__name__": "readme_example"})
    assert "Traceback" not in capsys.readouterr().err


def test_the_readme_has_runnable_examples() -> None:
    assert len(RUNNABLE) >= 2
