"""``llmworker-mcp-stdio``: MCP over stdio, for desktop clients that launch a local command,
forwarding every request to a remote llmworker over gRPC.

    llmworker-mcp-stdio --connect tools.internal:50051 --token-file ~/.llmworker-token

The client starts it as its MCP server; it lists the remote registry's tools (kept current
by ``WatchDefinitions``) and runs each call as a ``CallToolStream`` there, the progress
passed on as ``notifications/progress``. Logs go to stderr: stdout carries the protocol.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from llmworker import (
    ClientTls,
    Progress,
    RemoteToolServerHandle,
    ToolError,
    ToolOutput,
    ToolServerError,
    __version__,
    canonical_json,
)
from llmworker._wire import Reason, status_of

from ..config import is_loopback
from .tools import mcp_tool, refusal_result, tool_result

__all__ = ["StdioBridge", "main", "options"]

_log = logging.getLogger("llmworker.mcp_stdio")
_INVALID_PARAMS: Final = -32602
Context = ServerRequestContext[Any, Any]


class StdioBridge:
    """``tools/list`` and ``tools/call`` answered by the remote server ``handle`` holds."""

    def __init__(self, handle: RemoteToolServerHandle) -> None:
        self._handle = handle

    async def list_tools(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[mcp_tool(meta) for meta in self._handle.tool_definitions_sorted()]
        )

    async def call_tool(
        self, ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = params.name
        arguments = canonical_json(params.arguments or {}).decode()
        events = self._handle.stream_tool(name, arguments)
        try:
            async for event in events:
                if isinstance(event, Progress):
                    await ctx.session.report_progress(
                        event.progress, event.total, event.message or None
                    )
                elif isinstance(event, ToolOutput):
                    structured = event.structured
                    as_json = "" if structured is None else canonical_json(structured).decode()
                    return tool_result(event.text, as_json, event.attachments)
        except (ToolError, ToolServerError) as error:
            status = status_of(error, name)
            if status.reason == Reason.TOOL_NOT_FOUND:
                message = f"{status.message}; list the tools with tools/list"
                raise MCPError(_INVALID_PARAMS, message) from None
            return refusal_result(status)
        finally:
            await events.aclose()
        raise MCPError(-32603, f"the remote call to '{name}' ended without a result")


def options() -> argparse.ArgumentParser:
    """The command line of ``llmworker-mcp-stdio``."""
    parser = argparse.ArgumentParser(
        prog="llmworker-mcp-stdio",
        description="MCP over stdio, forwarded to a remote llmworker over gRPC",
    )
    parser.add_argument("--connect", required=True, metavar="TARGET", help="HOST:PORT")
    parser.add_argument(
        "--token-file", type=Path, help="a file holding the bearer token (mode 0600)"
    )
    parser.add_argument("--tls", action="store_true", help="TLS, trusting the system's CAs")
    parser.add_argument("--tls-ca", type=Path, help="TLS, trusting this CA (PEM)")
    parser.add_argument(
        "--allow-insecure",
        action="store_true",
        help="plaintext to a target beyond this machine (behind a TLS proxy, say)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: serve MCP on stdin/stdout until the client closes them."""
    args = options().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    try:
        token = _token(args.token_file) if args.token_file else None
        tls = ClientTls.from_files(root_ca=args.tls_ca) if args.tls_ca else None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        print(f"llmworker-mcp-stdio: {error}", file=sys.stderr)
        return 2
    if tls is None and args.tls:
        tls = ClientTls()
    host = args.connect.rpartition(":")[0].strip("[]")
    if tls is None and not args.allow_insecure and not is_loopback(host):
        print(
            f"llmworker-mcp-stdio: --connect {args.connect} is beyond this machine, and the "
            "calls (and the token) would go in plaintext; add --tls (or --tls-ca CA.pem), or "
            "--allow-insecure behind a proxy that terminates TLS",
            file=sys.stderr,
        )
        return 2
    try:
        asyncio.run(_serve(args.connect, token, tls))
    except (ToolServerError, ValueError) as error:
        print(f"llmworker-mcp-stdio: cannot reach {args.connect}: {error}", file=sys.stderr)
        return 1
    return 0


def _token(path: Path) -> str:
    """The token the file holds; ``ValueError`` when others may read the file or it is empty."""
    if path.stat().st_mode & 0o077:
        raise ValueError(f"{path} may be read by others: chmod 600 {path}")
    token = path.read_text(encoding="utf-8").strip()
    if not token:
        raise ValueError(f"{path} is empty: write the bearer token into it")
    return token


async def _serve(target: str, token: str | None, tls: ClientTls | None) -> None:
    async with await RemoteToolServerHandle.connect(target, tls=tls, token=token) as handle:
        bridge = StdioBridge(handle)
        server = Server(
            "llmworker",
            version=__version__,
            on_list_tools=bridge.list_tools,
            on_call_tool=bridge.call_tool,
        )
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
