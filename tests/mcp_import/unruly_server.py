"""An MCP server that misbehaves, on the SDK's low-level ``Server`` over stdio, for the import
tests: definitions over the registry's limits, a name MCP allows and the registry does not,
one name twice, results that cannot be used, a handler that crashes, and a tool that kills
the process in the middle of a call.

    python -m tests.mcp_import.unruly_server
"""

from __future__ import annotations

import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
TOOLS = [
    types.Tool(name="ok", description="Answers ok", input_schema=OBJECT),
    types.Tool(name="huge_description", description="x" * 20_000, input_schema=OBJECT),
    types.Tool(
        name="huge_schema",
        description="A schema of 200 kB",
        input_schema={
            "type": "object",
            "properties": {
                f"p{i}": {"type": "string", "description": "y" * 200} for i in range(1000)
            },
        },
    ),
    types.Tool(name="twice", description="The first of two", input_schema=OBJECT),
    types.Tool(name="twice", description="The second of two", input_schema=OBJECT),
    types.Tool(name="files/read.v2", description="A name with / and .", input_schema=OBJECT),
    types.Tool(name="bad_image", description="An image that is not base64", input_schema=OBJECT),
    types.Tool(name="huge_result", description="5 MB of text", input_schema=OBJECT),
    types.Tool(name="crash", description="A handler that raises", input_schema=OBJECT),
    types.Tool(name="exit", description="Kills the server mid-call", input_schema=OBJECT),
]


async def list_tools(
    _: ServerRequestContext[Any], __: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(
    _: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    match params.name:
        case "bad_image":
            image = types.ImageContent(type="image", data="not base64!", mime_type="image/png")
            return types.CallToolResult(content=[image])
        case "huge_result":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="z" * 5_000_000)]
            )
        case "crash":
            raise RuntimeError("the handler crashed")
        case "exit":
            os._exit(3)
        case _:
            return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])


async def main() -> None:
    server = Server("unruly", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
