"""Tools the server tests load (also by ``--tools tests.server_tools:ServerTestTools``)."""

from __future__ import annotations

import asyncio

from llmworker import ToolError, tool, tool_registry


@tool_registry
class ServerTestTools:
    """Tools whose behaviour the tests steer: sleep, fail, count."""

    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0
        self.finished = 0
        self.count = 0

    @tool
    async def echo(self, text: str) -> str:
        """Return the text unchanged."""
        return text

    @tool
    async def sleep(self, seconds: float) -> str:
        """Sleep, recording starts, cancellations and completions."""
        self.started += 1
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        self.finished += 1
        return f"slept {seconds}"

    @tool
    async def fail(self, kind: str) -> str:
        """Fail the way ``kind`` says."""
        if kind == "invalid":
            raise ToolError.InvalidArgument("kind 'invalid' is never valid")
        if kind == "internal":
            raise ToolError.Internal("the database handle is closed")
        raise RuntimeError(f"failed on purpose: {kind}")

    @tool
    async def counter(self) -> int:
        """Count calls: state shared by every caller."""
        self.count += 1
        return self.count
