"""The MCP SDK's own server with the demo's echo tool, for ``bench.mcp`` to compare against:
``MCPServer`` (FastMCP) over Streamable HTTP, as its documentation runs it.

    python -m bench.mcp_sdk_server PORT
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Send ``text`` back."""
    return text


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
