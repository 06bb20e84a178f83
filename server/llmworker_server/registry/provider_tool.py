"""A tool contributed by a provider: its calls go to the provider's ``RemoteTool``, which a
locked registry may re-attach to the provider's new address (the tool set stays fixed)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from llmworker import RemoteTool, ToolOutput

__all__ = ["ProviderTool"]


class ProviderTool:
    """Forwards ``execute`` and ``stream`` to ``remote``, which ``rebind`` replaces (calls
    in flight finish on the binding they started with)."""

    __slots__ = ("remote",)

    def __init__(self, remote: RemoteTool) -> None:
        self.remote = remote

    def rebind(self, remote: RemoteTool) -> None:
        self.remote = remote

    async def execute(self, input_json: str) -> str | ToolOutput:
        return await self.remote.execute(input_json)

    def stream(self, input_json: str) -> AsyncIterator[str | ToolOutput]:
        return self.remote.stream(input_json)

    def __repr__(self) -> str:
        return f"ProviderTool({self.remote!r})"
