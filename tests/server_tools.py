"""Tools the server tests load (also by ``--tools tests.server_tools:ServerTestTools``)."""

from __future__ import annotations

import asyncio
import sys
import time

from llmworker import ToolError, tool, tool_registry


class RogueError(BaseException):
    """A BaseException subclass that is no Exception."""


class Unprintable(BaseException):
    """An exception whose message cannot be rendered."""

    def __str__(self) -> str:
        raise RuntimeError("no message for you")


async def _raise_generator_exit() -> None:
    raise GeneratorExit("from a task the tool awaited")


def crash(kind: str) -> None:
    """Raise what ``kind`` names: the ways a tool can try to end the process."""
    if kind == "exit":
        sys.exit(3)
    if kind == "keyboard":
        raise KeyboardInterrupt
    if kind == "generator":
        raise GeneratorExit
    if kind == "base":
        raise RogueError("rogue")
    if kind == "cancelled":
        raise asyncio.CancelledError
    if kind == "unprintable":
        raise Unprintable
    if kind == "subtask_generator":
        raise ValueError("an async kind: see CrashTestTools.crash")
    if kind == "error_object":
        raise ToolError.ExecutionFailed(KeyError("k"))  # type: ignore[arg-type]
    if kind == "key":
        raise KeyError("missing_key")
    raise ValueError(f"unknown crash kind {kind!r}")


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


@tool_registry
class CrashTestTools:
    """Tools that misbehave: raise what no tool should, block, return NaN."""

    @tool
    async def crash(self, kind: str) -> str:
        """Raise what ``kind`` names from async code."""
        if kind == "subtask_generator":  # delivered by the event loop, not raised in this frame
            await asyncio.get_running_loop().create_task(_raise_generator_exit())
        crash(kind)
        return "survived"

    @tool
    def crash_sync(self, kind: str) -> str:
        """Raise what ``kind`` names from a worker thread."""
        crash(kind)
        return "survived"

    @tool
    def block(self, seconds: float) -> str:
        """Block a worker thread (a sync tool that ignores cancellation)."""
        time.sleep(seconds)
        return f"blocked {seconds}"

    @tool
    async def ratio(self, numerator: float, denominator: float) -> dict[str, float]:
        """Divide, returning inf or NaN where floats do."""
        if denominator == 0:
            value = float("nan") if numerator == 0 else float("inf") * numerator
        else:
            value = numerator / denominator
        return {"value": value}

    @tool
    async def take(self, items: list[int], weights: dict[str, float] | None = None) -> int:
        """Count the items: a tool whose input can hold very many invalid values."""
        return len(items)

    @tool
    async def exit_later(self) -> str:
        """Leave behind a task that raises SystemExit outside any call."""

        async def leave() -> None:
            await asyncio.sleep(0.05)
            sys.exit(5)

        self.left_behind = asyncio.get_running_loop().create_task(leave())
        return "left"

    @tool
    async def emit(self, kind: str, size: int = 0) -> str:
        """Return (or fail with) text no response can carry as it is."""
        if kind == "surrogate":
            return "a\ud800b"
        if kind == "surrogate_error":
            raise ToolError.ExecutionFailed("bad \udcff byte")
        if kind == "unprintable_error":
            raise ValueError("\x00" * size)
        return "x" * size
