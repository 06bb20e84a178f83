"""The tools of ``make scale-test`` (``bench/scale.py``): one safe to run twice, one not.

``record`` appends its token to ``$LLMWORKER_SCALE_DIR/executions-<pid>.log`` before it
answers, so that the harness can read, across every replica and every restart, which tokens
ran and whether any ran twice. Not product code.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Annotated, Final

from pydantic import Field

from llmworker import ToolError, description, tool, tool_registry

__all__ = ["EXECUTIONS_GLOB", "SCALE_DIR_VARIABLE", "ScaleTools", "executions_file"]

SCALE_DIR_VARIABLE: Final = "LLMWORKER_SCALE_DIR"
EXECUTIONS_GLOB: Final = "executions-*.log"
_Token = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")]


def executions_file(directory: Path, pid: int) -> Path:
    """Where the process ``pid`` writes the tokens ``record`` ran."""
    return directory / f"executions-{pid}.log"


@tool_registry
class ScaleTools:
    """``lookup`` (read-only, idempotent) and ``record`` (neither: every run counts)."""

    def __init__(self) -> None:
        self._fd: int | None = None

    @tool(read_only=True, idempotent=True)
    async def lookup(self, key: Annotated[str, description("any text")]) -> str:
        """A value that depends on the key only (the same on every replica)."""
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    @tool(read_only=False, idempotent=False)
    async def record(self, token: Annotated[_Token, description("unique per call")]) -> str:
        """Record that the call with this token ran (once per run: not idempotent)."""
        # One write(2) of one line to an O_APPEND descriptor: whole even under SIGKILL.
        os.write(self._executions(), f"{token}\n".encode())
        return "recorded"

    def _executions(self) -> int:
        if self._fd is None:
            directory = os.environ.get(SCALE_DIR_VARIABLE)
            if not directory:
                raise ToolError.Internal(
                    f"${SCALE_DIR_VARIABLE} is not set: run the server from bench/scale.py, "
                    "or set it to a directory for the executions file"
                )
            path = executions_file(Path(directory), os.getpid())
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return self._fd
