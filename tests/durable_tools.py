"""Tools whose runs leave marks in a file, so tests can count how often a resumed batch ran
(``--tools tests.durable_tools:MarkingTools`` in a server child process)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from llmworker import tool, tool_registry


def _append(path: str, line: str) -> None:
    with Path(path).open("a") as marks:
        marks.write(line + "\n")


@tool_registry
class MarkingTools:
    @tool(requires_approval=True)
    async def mark(self, path: str, note: str) -> str:
        """Append the note to the file at path (needs approval)."""
        _append(path, note)
        return f"marked {note}"

    @tool(requires_approval=True)
    async def mark_slowly(self, path: str, note: str, seconds: float) -> str:
        """Append 'started NOTE', wait, then append 'done NOTE' (needs approval)."""
        _append(path, f"started {note}")
        await asyncio.sleep(seconds)
        _append(path, f"done {note}")
        return f"marked {note}"
