"""Tool and ToolDefinition: the execution seam and the factory that registers it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeAlias, final, runtime_checkable

from .attachments import Attachment
from .json_values import JsonObject
from .tool_meta import ToolMeta

__all__ = ["Tool", "ToolDefinition", "ToolFactory", "ToolOutput", "declared_meta"]


@final
@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A result with more than its text: what a tool with an output schema returns, or one
    with attachments. ``text`` is what the model reads; ``structured`` is a JSON object
    matching the tool's ``ToolMeta.output_schema``; ``attachments`` are images, audio and
    resources beside the text."""

    text: str
    structured: JsonObject | None = None
    attachments: tuple[Attachment, ...] = ()


@runtime_checkable
class Tool(Protocol):
    """Execution logic only: metadata lives in ToolMeta.

    One instance serves every call for the registry's lifetime, so it may keep state; calls
    run concurrently on one event loop, so state changes must not straddle an ``await``
    unguarded. Raise ``ToolError`` for failures the model should see.
    """

    async def execute(self, input_json: str) -> str | ToolOutput:
        """Run the tool on the model's raw JSON arguments and return the result text (or a
        ``ToolOutput`` with a structured value too). ``current_call()`` tells which call."""
        ...


ToolDefinition: TypeAlias = Callable[[], tuple[ToolMeta, Tool]]
"""A factory called exactly once, at registration, creating the meta and its instance."""


@final
class ToolFactory:
    """A ToolDefinition whose meta is known before the instance is made.

    >>> definition = ToolFactory(ToolMeta("echo"), lambda: EchoTool())  # doctest: +SKIP

    Registration checks declared metas before running any factory, so a batch refused for a
    duplicate name creates no instance. Decorator-built definitions are ToolFactories.
    """

    __slots__ = ("_make_tool", "meta")

    def __init__(self, meta: ToolMeta, make_tool: Callable[[], Tool]) -> None:
        self.meta: ToolMeta = meta
        self._make_tool = make_tool

    def __call__(self) -> tuple[ToolMeta, Tool]:
        return self.meta, self._make_tool()

    def __repr__(self) -> str:
        return f"ToolFactory({self.meta.name!r})"


def declared_meta(definition: ToolDefinition) -> ToolMeta | None:
    """The meta a definition declares without being called, if it is a ToolFactory."""
    return definition.meta if isinstance(definition, ToolFactory) else None
