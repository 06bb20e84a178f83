"""Tools a provider process contributes to another server in the tests."""

from __future__ import annotations

import asyncio

from llmworker import tool, tool_registry


@tool_registry
class ProviderTools:
    @tool
    async def shout(self, text: str) -> str:
        """Upper-case the text (served by the provider process)."""
        return text.upper() + "!"

    @tool
    async def nap(self, seconds: float) -> str:
        """Sleep; a provider that hangs."""
        await asyncio.sleep(seconds)
        return "rested"
