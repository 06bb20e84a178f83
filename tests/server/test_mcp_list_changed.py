"""Registry changes pushed to 2025-11-25 sessions as ``notifications/tools/list_changed``
(``mcp_front.list_changed``): heard by the official SDK client on its session's stream,
declared in the ``initialize`` result, bounded in the sessions kept, and never held up by a
client that does not read."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from starlette.requests import Request

from llmworker import ToolDefinition, tool_definitions
from llmworker_server.mcp_front.list_changed import SessionNotices
from tests.server.test_mcp_front import LateTools, mcp_server, text_of


class Heard:
    """A client's message handler, keeping the list-changed notifications it hears."""

    def __init__(self) -> None:
        self.changes: asyncio.Queue[types.ToolListChangedNotification] = asyncio.Queue()

    async def __call__(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.changes.put_nowait(message)


@asynccontextmanager
async def legacy_client(url: str, heard: Heard) -> AsyncGenerator[Client]:
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(
            streamable_http_client(url, http_client=http), mode="legacy", message_handler=heard
        ) as client,
    ):
        yield client


async def test_every_session_hears_of_tools_registered_later(tmp_path: Path) -> None:
    mutable = {"internal_socket": tmp_path / "registry.sock", "token": "registry-token"}
    first, second = Heard(), Heard()
    async with (
        mcp_server(**mutable) as (served, _tools, url),
        legacy_client(url, first) as one,
        legacy_client(url, second) as other,
    ):
        capabilities = one.server_capabilities.tools
        assert capabilities is not None
        assert capabilities.list_changed is True
        assert "late" not in [tool.name for tool in (await one.list_tools()).tools]
        await other.list_tools()
        late: list[ToolDefinition] = [*tool_definitions(LateTools())]
        served.app.registry.register(late)
        await asyncio.wait_for(first.changes.get(), 10)
        await asyncio.wait_for(second.changes.get(), 10)
        assert "late" in [tool.name for tool in (await one.list_tools()).tools]
        assert text_of(await one.call_tool("late", {})) == "late"


class FakeSession:
    """Stands in for the SDK's per-request session: counts what it is told, or never
    finishes telling (a client that does not read)."""

    def __init__(self, stuck: bool = False) -> None:
        self.told = 0
        self._stuck = stuck

    async def send_tool_list_changed(self) -> None:
        if self._stuck:
            await asyncio.sleep(60)
        self.told += 1


async def seen(notices: SessionNotices, session_id: str, session: FakeSession) -> None:
    """``session``'s request passing through ``notices`` as server middleware."""
    scope = {"type": "http", "headers": [(b"mcp-session-id", session_id.encode())]}
    ctx: ServerRequestContext[Any, Any] = ServerRequestContext(
        session=cast(ServerSession, session),
        lifespan_context={},
        protocol_version="2025-11-25",
        method="tools/list",
        request=Request(scope),
    )

    async def handler(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        return None

    await notices(ctx, handler)


async def test_the_latest_sessions_are_told_and_a_stuck_one_holds_nobody_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("llmworker_server.mcp_front.list_changed._SEND_SECONDS", 0.2)
    notices = SessionNotices(limit=2)
    oldest, stuck, latest = FakeSession(), FakeSession(stuck=True), FakeSession()
    await seen(notices, "a", oldest)
    await seen(notices, "b", stuck)
    await seen(notices, "c", latest)  # the limit pushes "a" out
    loop = asyncio.get_running_loop()
    started = loop.time()
    notices.tools_changed()  # returns at once: a round tells the sessions in the background
    assert loop.time() - started < 0.05
    await asyncio.sleep(0.05)
    assert (oldest.told, latest.told) == (0, 1)  # the round still waits on the stuck one
    for _ in range(5):
        notices.tools_changed()  # changes during a round make one more round, not five
    for _ in range(300):
        if latest.told == 2:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.5)  # the stuck session's 0.2 s pass again
    assert (oldest.told, latest.told, stuck.told) == (0, 2, 0)
    await notices.close()
