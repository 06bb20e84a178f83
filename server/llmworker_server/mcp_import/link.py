"""One MCP server kept connected, its tools kept in the registry.

The link connects with the official SDK's ``Client`` (Streamable HTTP, or a command it
launches over stdio), lists the server's tools and registers them as provider tools. It then
lists them again at once on ``notifications/tools/list_changed`` (on 2026-07-28 sessions it
subscribes with ``subscriptions/listen``) and every ``check_every`` seconds in any case: that
listing is also how it knows the server still answers. A server that fails a listing or drops
the session is reconnected (a command relaunched) with backoff from 0.5 s to 30 s. Once it
has been gone for ``lease`` seconds its tools leave a mutable registry; a locked registry
keeps them, and their calls answer PROVIDER_UNAVAILABLE until it is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Final, cast

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client import Transport
from mcp.client.session import IncomingMessage
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from llmworker import ToolMeta, ToolRegistryError, __version__
from llmworker._wire import printable, shorten

from ..errors import RegistryFullError, RegistryLockedError
from ..registry.registry import Registry
from ..rpc.token_file import Globs
from .definitions import imported_meta
from .imported_tool import ImportedTool, OutgoingSpan, unavailable
from .naming import registry_name, unmapped_name
from .settings import McpServerSettings
from .stderr_log import StderrLog

__all__ = ["McpServerLink"]

_log = logging.getLogger("llmworker.server.mcp_import")
_FIRST_BACKOFF: Final = 0.5
_MAX_BACKOFF: Final = 30.0
_MAX_PAGES: Final = 100
_MAX_TOOLS: Final = 10_000
_CONNECT_SECONDS: Final = 10.0


class McpServerLink:
    """Keeps the MCP server ``settings`` names connected and its tools registered."""

    def __init__(
        self,
        settings: McpServerSettings,
        registry: Registry,
        *,
        separator: str,
        approval: Globs | None,
        check_every: float,
        lease: float,
        span: OutgoingSpan | None = None,
    ) -> None:
        self.settings = settings
        self._registry = registry
        self._separator = separator
        self._approval = approval
        self._check_every = check_every
        self._lease = lease
        self._span = span
        self._client: Client | None = None
        self._down_because = "not connected yet"
        self._registered: dict[str, ToolMeta] = {}  # registry name -> its definition
        self._warned: set[str] = set()
        self._wake = asyncio.Event()
        self._tried = asyncio.Event()
        self._expiry: asyncio.TimerHandle | None = None
        self._answered = 0.0  # time.monotonic() of its last full listing
        self._task: asyncio.Task[None] | None = None
        self._stderr = StderrLog(settings.name) if settings.command else None

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def tools(self) -> dict[str, ToolMeta]:
        """The tools it registered, by registry name."""
        return dict(self._registered)

    @property
    def connected(self) -> bool:
        return self._client is not None

    def client(self) -> Client:
        if self._client is None:
            raise unavailable(self.name, self._down_because)
        return self._client

    def suspect(self) -> None:
        self._wake.set()

    def start(self) -> None:
        if self._stderr is not None:
            self._stderr.start()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def first_attempt(self, seconds: float) -> None:
        """Wait until the first connection has been tried (at most ``seconds``)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._tried.wait()

    async def stop(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._stderr is not None:
            await self._stderr.stop()

    async def _run(self) -> None:
        backoff = _FIRST_BACKOFF
        while True:
            began = time.monotonic()
            try:
                await self._session()
            except asyncio.CancelledError:
                raise
            except BaseException as error:  # groups too: the link never dies
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # a stop, wrapped in a group by the SDK's task group
                self._went_down(_cause(error))
            self._tried.set()
            if time.monotonic() - began > _MAX_BACKOFF:
                backoff = _FIRST_BACKOFF  # it ran a good while: a fresh outage
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF)

    async def _session(self) -> None:
        async with AsyncExitStack() as stack:
            async with asyncio.timeout(_CONNECT_SECONDS):  # a server that never answers
                client = await stack.enter_async_context(
                    Client(
                        await self._transport(stack),
                        message_handler=self._on_message,
                        cache=None,  # every listing must reach the server: the health check
                        client_info=types.Implementation(name="llmworker", version=__version__),
                    )
                )
                await self._sync(client)
            self._came_up(client)
            self._tried.set()
            listening = self._listen(client)
            try:
                while True:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self._check_every):
                            await self._wake.wait()
                    self._wake.clear()
                    async with asyncio.timeout(self._check_every * 2):
                        await self._sync(client)
            finally:
                self._client = None
                if listening is not None:
                    listening.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await listening

    async def _transport(self, stack: AsyncExitStack) -> Transport:
        settings = self.settings
        if settings.url is None:
            assert self._stderr is not None
            return stdio_client(
                StdioServerParameters(
                    command=settings.command[0],
                    args=list(settings.command[1:]),
                    env=dict(settings.env) or None,
                    cwd=settings.cwd,
                ),
                errlog=self._stderr.writer,
            )
        headers: dict[str, str] = {}
        if settings.token_file is not None:
            token = settings.token_file.read_text(encoding="utf-8").strip()
            headers["Authorization"] = f"Bearer {token}"
        verify: ssl.SSLContext | bool = True
        if settings.ca_file is not None:
            verify = ssl.create_default_context(cafile=str(settings.ca_file))
        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=headers, verify=verify, timeout=httpx2.Timeout(30.0, read=300.0)
            )
        )
        return streamable_http_client(settings.url, http_client=http)

    def _listen(self, client: Client) -> asyncio.Task[None] | None:
        """On a 2026-07-28 session, a task that wakes the link on each list change."""
        if client.protocol_version < "2026":
            return None  # earlier revisions send list changes to the message handler

        async def listen() -> None:
            try:
                async with client.listen(tools_list_changed=True) as changes:
                    async for _ in changes:
                        self._wake.set()
            except Exception as error:  # the periodic listing still runs
                _log.info("MCP server %s: not listening for list changes (%s)", self.name, error)

        return asyncio.get_running_loop().create_task(listen())

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._wake.set()
        elif isinstance(message, Exception):
            self._wake.set()  # a transport error: the next listing tells whether it is fatal

    async def _sync(self, client: Client) -> None:
        """List the server's tools and make the registry hold what it offers."""
        offered = await self._offered(client)
        self._answered = time.monotonic()
        if self._registry.is_locked:
            self._report_locked(offered)
            return
        for name in set(self._registered) - set(offered):
            self._unregister(name)
            del self._registered[name]
            _log.info("MCP server %s: tool %s left", self.name, name)
        for name, (meta, remote) in offered.items():
            try:
                changed = self._registry.register_remote(
                    meta,
                    self._maker(remote),
                    self.settings.provider,
                    self.settings.provider,
                )
            except (
                ToolRegistryError.DuplicateName,
                RegistryFullError,
                RegistryLockedError,
            ) as error:
                self._warn_once(f"MCP server {self.name}: tool {name} not registered: {error}")
                self._registered.pop(name, None)  # the name may be another provider's now
                continue
            self._registered[name] = meta
            if changed:
                _log.info("MCP server %s: registered tool %s", self.name, name)

    def _maker(self, remote: str) -> Callable[[], ImportedTool]:
        return lambda: ImportedTool(self, remote, self._span)

    async def _offered(self, client: Client) -> dict[str, tuple[ToolMeta, str]]:
        """The tools to register: registry name -> (definition, the server's name)."""
        include, exclude = Globs(self.settings.include), Globs(self.settings.exclude)
        offered: dict[str, tuple[ToolMeta, str]] = {}
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                if not include.allows(tool.name) or exclude.allows(tool.name):
                    continue
                if len(offered) >= _MAX_TOOLS:
                    self._warn_once(
                        f"MCP server {self.name}: over {_MAX_TOOLS} tools; the rest are left out"
                    )
                    return offered
                name = registry_name(self.settings.tool_prefix, self._separator, tool.name)
                if name != unmapped_name(self.settings.tool_prefix, self._separator, tool.name):
                    self._warn_once(
                        f"MCP server {self.name}: tool {printable(tool.name, 200)!r} is "
                        f"registered as {name} (registry names are 1-64 of A-Z a-z 0-9 _ -)",
                        level=logging.INFO,
                    )
                approval = self._approval is not None and self._approval.allows(name)
                try:
                    offered[name] = (imported_meta(tool, name, approval), tool.name)
                except ValueError as error:
                    self._warn_once(f"MCP server {self.name}: tool {name} left out: {error}")
            cursor = page.next_cursor
            if cursor is None:
                break
        return offered

    def _report_locked(self, offered: dict[str, tuple[ToolMeta, str]]) -> None:
        for name, (meta, _) in offered.items():
            if self._registered.get(name) != meta:
                self._warn_once(
                    f"MCP server {self.name}: tool {name} is new or changed, but the registry "
                    "is locked; it is not taken (start the server again to take it)"
                )

    def _came_up(self, client: Client) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        self._client = client
        _log.info(
            "MCP server %s connected (%s, revision %s): %d tools",
            self.name,
            self.settings.describe(),
            client.protocol_version,
            len(self._registered),
        )

    def _went_down(self, why: str) -> None:
        self._client = None
        self._down_because = why
        if self._expiry is None:  # a lease from its last answer, as a gRPC provider's
            left = max(0.0, self._answered + self._lease - time.monotonic())
            self._expiry = asyncio.get_running_loop().call_later(left, self._expire)
            _log.warning(
                "MCP server %s (%s) is not answering: %s; %s",
                self.name,
                self.settings.describe(),
                why,
                f"its tools leave {self._lease:.3g} s after its last answer unless it is back"
                if self._registered and not self._registry.is_locked
                else "retrying with backoff",
            )

    def _expire(self) -> None:
        if self._registry.is_locked:
            if self._registered:
                _log.warning(
                    "MCP server %s is still gone; the registry is locked, so its tools stay "
                    "listed and answer PROVIDER_UNAVAILABLE until it is back",
                    self.name,
                )
            return
        names = sorted(self._registered)
        for name in names:
            self._unregister(name)
        self._registered.clear()
        if names:
            _log.warning(
                "MCP server %s gone for %.3g s: removed its tools %s",
                self.name,
                self._lease,
                ", ".join(names),
            )

    def _unregister(self, name: str) -> None:
        """Remove ``name`` from the registry if it is still this server's tool."""
        if self._registry.provider_of(name) == self.settings.provider:
            with contextlib.suppress(KeyError, RegistryLockedError):
                self._registry.unregister(name)

    def _warn_once(self, message: str, *, level: int = logging.WARNING) -> None:
        if message not in self._warned and len(self._warned) < 1000:
            self._warned.add(message)
            _log.log(level, "%s", message)


def _cause(error: BaseException) -> str:
    """The first leaf of an exception group, or the error itself, in one line."""
    while isinstance(error, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", error)
        error = group.exceptions[0]
    text = str(error) or type(error).__name__
    return shorten(f"{type(error).__name__}: {text}" if str(error) else text, 300)
