"""Registry changes told to 2025-11-25 sessions as ``notifications/tools/list_changed``, on
each session's standalone (GET) stream; 2026-07-28 clients hear of them on their
``subscriptions/listen`` streams instead (``front.py``).

The SDK keeps its sessions to itself, so ``SessionNotices``, a server middleware, notes the
session of every request that names one: the most recently active ``MAX_SESSIONS`` are
kept (a session that ended stays until pushed out, and telling it is a no-op). Changes are
coalesced: one round tells every session at a time, each within 5 s, and changes that come
meanwhile make one more round. The registry never waits for a client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from typing import Any, Final

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request

__all__ = ["ListChangedServer", "SessionNotices"]

_log = logging.getLogger("llmworker.server.mcp")
_SEND_SECONDS: Final = 5.0


class ListChangedServer(Server[Any]):
    """The SDK's low-level server, declaring ``tools.listChanged`` to 2025-11-25 clients
    (the session manager builds their ``initialize`` result from these options)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class SessionNotices:
    """The 2025-11-25 sessions seen lately (at most ``limit``), told of every registry
    change by ``tools_changed``."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._sessions: OrderedDict[str, ServerSession] = OrderedDict()
        self._again = False
        self._round: asyncio.Task[None] | None = None

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Server middleware: note the session a request comes in."""
        request = ctx.request
        if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS and isinstance(request, Request):
            session_id = request.headers.get("mcp-session-id")
            if session_id:
                self._sessions[session_id] = ctx.session
                self._sessions.move_to_end(session_id)
                if len(self._sessions) > self._limit:
                    self._sessions.popitem(last=False)
        return await call_next(ctx)

    def tools_changed(self) -> None:
        """Tell every session, in the background (a round already under way is followed
        by one more)."""
        if not self._sessions:
            return
        self._again = True
        if self._round is None or self._round.done():
            self._round = asyncio.ensure_future(self._tell())

    async def close(self) -> None:
        """Stop telling (the sessions are ending)."""
        self._sessions.clear()
        if self._round is not None:
            self._round.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._round

    async def _tell(self) -> None:
        while self._again:
            self._again = False
            await asyncio.gather(*(_tell(session) for session in list(self._sessions.values())))


async def _tell(session: ServerSession) -> None:
    try:
        await asyncio.wait_for(session.send_tool_list_changed(), _SEND_SECONDS)
    except Exception as error:  # a client gone or not reading (TimeoutError): not ours to fix
        _log.debug("tools/list_changed not delivered: %r", error)
