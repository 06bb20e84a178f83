"""The tools the official MCP conformance suite's server scenarios call, as llmworker tools
(``make mcp-conformance`` serves them with ``--tools tests.conformance.fixture_tools:Fixture``)."""

from __future__ import annotations

import asyncio
import base64

from llmworker import (
    Audio,
    EmbeddedResource,
    Image,
    ToolContext,
    ToolError,
    ToolOutput,
    tool,
    tool_registry,
)

# a 1x1 red PNG and a 1-sample WAV, as the scenarios suggest
RED_PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
SILENCE = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQIAAACAgA==")


@tool_registry
class Fixture:
    @tool
    async def test_simple_text(self) -> str:
        """Returns a simple text response."""
        return "This is a simple text response for testing."

    @tool
    async def test_image_content(self) -> ToolOutput:
        """Returns a PNG image."""
        return ToolOutput("", attachments=(Image(RED_PIXEL, "image/png"),))

    @tool
    async def test_audio_content(self) -> ToolOutput:
        """Returns a WAV sound."""
        return ToolOutput("", attachments=(Audio(SILENCE, "audio/wav"),))

    @tool
    async def test_embedded_resource(self) -> ToolOutput:
        """Returns an embedded text resource."""
        resource = EmbeddedResource(
            "test://embedded-resource",
            text="This is an embedded resource content.",
            mime_type="text/plain",
        )
        return ToolOutput("", attachments=(resource,))

    @tool
    async def test_multiple_content_types(self) -> ToolOutput:
        """Returns text, an image and an embedded JSON resource."""
        resource = EmbeddedResource(
            "test://mixed-content-resource",
            text='{"test":"data","value":123}',
            mime_type="application/json",
        )
        return ToolOutput(
            "Multiple content types test:",
            attachments=(Image(RED_PIXEL, "image/png"), resource),
        )

    @tool
    async def test_error_handling(self) -> str:
        """Always fails."""
        raise ToolError.ExecutionFailed("This tool intentionally returns an error for testing")

    @tool
    async def test_tool_with_progress(self, context: ToolContext) -> str:
        """Reports progress 0, 50 and 100 of 100."""
        for step in (0, 50, 100):
            context.report_progress(step, 100)
            if step < 100:
                await asyncio.sleep(0.06)
        return "Progress reported: 0, 50, 100 of 100"
