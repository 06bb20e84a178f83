"""Benchmark fixtures: a @tool_registry class with N decorator-built tools.

``bench.many_tools:tools_1000`` (any count after ``tools_``) is a server tool spec.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated

from llmworker import ToolFactory, description, tool, tool_definitions, tool_registry

__all__ = ["build_class"]


def _method(index: int) -> Callable[[object, str, int], Coroutine[object, object, str]]:
    async def method(
        self: object,
        text: Annotated[str, description("text to transform")],
        repeat: Annotated[int, description("how many times")] = 1,
    ) -> str:
        return text * repeat

    method.__name__ = f"tool_{index:05d}"
    method.__qualname__ = f"ManyTools.tool_{index:05d}"
    method.__doc__ = f"Benchmark tool number {index}: repeats a text."
    return method


def build_class(count: int) -> type[object]:
    """A @tool_registry class with ``count`` tools, decorated as user code would be."""
    namespace: dict[str, object] = {"__module__": __name__, "__qualname__": "ManyTools"}
    for index in range(count):
        function = _method(index)
        namespace[function.__name__] = tool(function)
    return tool_registry(type("ManyTools", (), namespace))


def __getattr__(name: str) -> list[ToolFactory]:
    """``tools_N``: the definitions of N benchmark tools, built on access."""
    count = name.removeprefix("tools_")
    if count == name or not count.isdigit():
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}; use tools_N")
    return tool_definitions(build_class(int(count))())
