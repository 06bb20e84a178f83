"""Small hand-written tools shared by the tests."""

from __future__ import annotations

import asyncio
import json

from llmworker import Tool, ToolDefinition, ToolFactory, ToolMeta, ToolOutput

__all__ = [
    "CounterTool",
    "EchoTool",
    "FailingTool",
    "SleepTool",
    "counting_definition",
    "definition_of",
    "text_of",
]


def text_of(result: str | ToolOutput) -> str:
    """The text of what ``Tool.execute`` returned."""
    return result if isinstance(result, str) else result.text


class EchoTool:
    """Returns its input text unchanged."""

    async def execute(self, input_json: str) -> str:
        return input_json


class CounterTool:
    """Counts its calls; the count is the tool's session state."""

    def __init__(self) -> None:
        self.count = 0

    async def execute(self, input_json: str) -> str:
        self.count += 1
        return str(self.count)


class SleepTool:
    """Sleeps for ``{"seconds": s}`` and records cancellations."""

    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0

    async def execute(self, input_json: str) -> str:
        self.started += 1
        try:
            await asyncio.sleep(float(json.loads(input_json)["seconds"]))
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return "slept"


class FailingTool:
    """Always raises the error it was given."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def execute(self, input_json: str) -> str:
        raise self.error


def definition_of(name: str, tool: Tool, description: str = "") -> ToolDefinition:
    """A plain-callable definition returning ``tool`` under ``name``."""

    def make() -> tuple[ToolMeta, Tool]:
        return ToolMeta(name, description), tool

    return make


def counting_definition(name: str, calls: list[str]) -> ToolFactory:
    """A ToolFactory whose factory appends ``name`` to ``calls`` each time it runs."""

    def make() -> Tool:
        calls.append(name)
        return EchoTool()

    return ToolFactory(ToolMeta(name), make)
