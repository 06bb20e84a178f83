"""An MCP server written with the official SDK's ``MCPServer``, for the import tests: a tool
with structured output, a slow one reporting progress, a failing one, one that adds a tool at
run time, an image, one that echoes the ``_meta`` it got, and one whose name is too long for
the registry.

    python -m tests.mcp_import.fixture_server stdio
    python -m tests.mcp_import.fixture_server http PORT

``FIXTURE_EVENTS=FILE`` appends a JSON line per event (start, a cancelled call);
``FIXTURE_TOKEN=TOKEN`` makes the HTTP server refuse requests without that bearer token, and
``FIXTURE_TLS_CERT`` / ``FIXTURE_TLS_KEY`` serve it over TLS.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel
from starlette.types import ASGIApp, Receive, Scope, Send

# a 1x1 red PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
)
LONG_NAME = "a_tool_with_a_very_long_name_that_goes_past_the_sixty_four_character_limit"

server = MCPServer("fixture", log_level="WARNING")


def event(kind: str, **fields: object) -> None:
    """Append an event line to ``$FIXTURE_EVENTS``, if set."""
    path = os.environ.get("FIXTURE_EVENTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"event": kind, "pid": os.getpid(), **fields}) + "\n")


class Weather(BaseModel):
    city: str
    celsius: float


@server.tool(
    title="Weather",
    description="Current weather in a city",
    annotations=types.ToolAnnotations(read_only_hint=True),
)
def weather(city: str) -> Weather:
    return Weather(city=city, celsius=21.5)


@server.tool(description="Count to steps, reporting progress each step")
async def slow(ctx: Context, steps: int = 3, delay: float = 0.2) -> str:
    try:
        for step in range(1, steps + 1):
            await asyncio.sleep(delay)
            await ctx.report_progress(step, steps, f"step {step}")
    except asyncio.CancelledError:
        event("cancelled", tool="slow")
        raise
    return f"done after {steps} steps"


@server.tool(description="Always fails, saying why")
def fail(reason: str) -> str:
    raise ToolError(reason)  # an anticipated failure: its text reaches the client


@server.tool(description="Add a tool named name at run time")
async def add_tool(ctx: Context, name: str) -> str:
    def added() -> str:
        return f"I am {name}"

    server.add_tool(added, name=name, description=f"A tool added at run time: {name}")
    if ctx.protocol_version == "2025-11-25":
        await ctx.session.send_tool_list_changed()
    else:  # 2026-07-28: to the subscriptions/listen streams
        await ctx.notify_tools_changed()
    return f"added {name}"


@server.tool(description="A red dot")
def image() -> list[types.ContentBlock]:
    data = base64.b64encode(PNG).decode("ascii")
    return [
        types.TextContent(type="text", text="a red dot"),
        types.ImageContent(type="image", data=data, mime_type="image/png"),
    ]


@server.tool(description="The _meta of the request, as JSON")
def echo_meta(ctx: Context) -> str:
    meta: Any = ctx.request_context.meta or {}
    return json.dumps(dict(meta))


@server.tool(name=LONG_NAME, description="A name over 64 characters")
def long_name() -> str:
    return "long"


class BearerCheck:
    """Refuses HTTP requests without ``Authorization: Bearer TOKEN``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app, self._expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != (
            self._expected
        ):
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await self._app(scope, receive, send)


def main() -> None:
    event("started")
    if sys.argv[1] == "stdio":
        server.run("stdio")
        return
    import uvicorn

    app: ASGIApp = server.streamable_http_app()
    token = os.environ.get("FIXTURE_TOKEN")
    if token:
        app = BearerCheck(app, token)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=int(sys.argv[2]),
        log_level="warning",
        ssl_certfile=os.environ.get("FIXTURE_TLS_CERT"),
        ssl_keyfile=os.environ.get("FIXTURE_TLS_KEY"),
    )


if __name__ == "__main__":
    main()
