"""``--mcp-address``: the registry served to MCP clients over Streamable HTTP at ``/mcp``,
in the gRPC server's process and event loop. Registry changes reach 2026-07-28 clients on
their ``subscriptions/listen`` streams, and 2025-11-25 sessions as
``notifications/tools/list_changed`` (``list_changed.py``).

The official SDK's low-level ``Server`` and ``StreamableHTTPSessionManager`` speak the
protocol: revision 2025-11-25 with ``initialize`` and ``Mcp-Session-Id`` sessions (bounded
in number and idle time), and 2026-07-28, stateless, routed by its ``MCP-Protocol-Version``
header, on the same endpoint. Host and Origin are checked against the address served
(DNS-rebinding protection). Before the SDK sees a request, a server with ``--auth-tokens``
or OAuth (``--mcp-authorization-server``) answers one without a token it accepts 401 with
``WWW-Authenticate``, and leaves the caller in the ASGI scope for the calls; with OAuth it
serves the RFC 9728 metadata at ``/.well-known/oauth-protected-resource`` (and ``…/mcp``).
uvicorn serves the ASGI app on a socket bound here, so the port is known before the first
request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import socket
import ssl
import warnings
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

import uvicorn
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning
from starlette.types import Receive, Scope, Send

from llmworker import __version__
from llmworker._wire import ErrorStatus

from ..config import ServerConfig, is_loopback, split_address
from ..errors import ConfigError
from ..registry.registry import Registry
from ..rpc.auth import Caller, CallerCheck
from ..rpc.token_file import exposed_secret_file
from .calls import Context, HttpCaller, McpCalls
from .list_changed import ListChangedServer, SessionNotices
from .oauth import OAuthCallers, load_oauth_settings

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

__all__ = ["MAX_SESSIONS", "McpFront", "state_keys"]

_log = logging.getLogger("llmworker.server.mcp")
logging.getLogger("mcp").setLevel(logging.WARNING)  # its INFO lines show session ids

PATH: Final = "/mcp"
METADATA_PATH: Final = "/.well-known/oauth-protected-resource"
_JWT_SHAPE: Final = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
MAX_SESSIONS: Final = 1_000
_SESSION_IDLE_SECONDS: Final = 600.0
_MAX_LISTENERS: Final = 1_000


class McpFront:
    """One MCP listener over ``calls``, checking bearer tokens with ``auth`` and OAuth
    access tokens as ``config`` says."""

    def __init__(
        self,
        config: ServerConfig,
        calls: McpCalls,
        auth: CallerCheck | None,
        registry: Registry,
        tracer: Tracer | None = None,
    ) -> None:
        self._config = config
        self._auth = auth
        oauth = config.mcp_oauth()
        self._oauth_settings = None if oauth is None else load_oauth_settings(*oauth)
        self._oauth: OAuthCallers | None = None
        self._metadata_url = ""
        self._metadata_paths: frozenset[str] = frozenset()
        self._changes = InMemorySubscriptionBus()
        self._sessions = SessionNotices(MAX_SESSIONS)
        self._publishing: set[asyncio.Task[None]] = set()
        with warnings.catch_warnings():
            # logging/setLevel is deprecated by 2026-07-28, and served for 2025-11-25
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            self._server = ListChangedServer(  # pyright: ignore[reportDeprecated] - see above
                "llmworker",
                version=__version__,
                on_list_tools=calls.list_tools,
                on_call_tool=calls.call_tool,
                on_set_logging_level=calls.set_logging_level,
                on_subscriptions_listen=ListenHandler(
                    self._changes, max_subscriptions=_MAX_LISTENERS
                ),
            )
        security = RequestStateSecurity(
            keys=state_keys(config.mcp_state_key_file),
            ttl=config.pause_ttl,
            bind_principal=_principal,
        )
        # The SDK's default middleware makes spans with the global tracer provider, which this
        # server never sets: with --otel, ours (the gRPC spans' provider) take its place.
        self._server.middleware.clear()
        if tracer is not None:
            from .tracing import McpSpans  # OpenTelemetry is imported with --otel only

            self._server.middleware.append(McpSpans(tracer))
        self._server.middleware.append(RequestStateBoundary(security, default_audience="llmworker"))
        self._server.middleware.append(self._sessions)
        registry.on_change(self._tools_changed)
        self._manager: StreamableHTTPSessionManager | None = None
        self._uvicorn: uvicorn.Server | None = None
        self._serving: asyncio.Task[None] | None = None
        self._running: asyncio.Task[None] | None = None
        self._sessions_ready = asyncio.Event()
        self._sessions_done = asyncio.Event()
        self.port = 0

    async def start(self, address: str) -> int:
        """Listen on ``address`` (HOST:PORT, port 0 for any) and return the port."""
        host, port = split_address(address)
        listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        if self._oauth_settings is not None:
            try:
                await self._start_oauth(host)
            except BaseException:
                listener.close()
                raise
        self._manager = StreamableHTTPSessionManager(
            self._server,
            security_settings=_origin_checks(host, self.port, self._config.tls is not None),
            max_request_body_size=self._config.max_message_bytes,
            session_idle_timeout=_SESSION_IDLE_SECONDS,
            max_sessions=MAX_SESSIONS,
        )
        self._running = asyncio.ensure_future(self._run_sessions(self._manager))
        await asyncio.wait(
            [self._running, asyncio.ensure_future(self._sessions_ready.wait())],
            return_when=asyncio.FIRST_COMPLETED,
        )
        if self._running.done():
            self._running.result()  # raises what stopped it
        tls = self._config.tls
        settings = uvicorn.Config(
            self._app,
            lifespan="off",
            interface="asgi3",
            proxy_headers=False,
            log_level="warning",
            loop="none",
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=2,  # open SSE streams do not hold up a stop
            ssl_certfile=None if tls is None else str(tls.cert),
            ssl_keyfile=None if tls is None else str(tls.key),
            ssl_ca_certs=None if tls is None or tls.client_ca is None else str(tls.client_ca),
            # mutual TLS as on gRPC: with --tls-client-ca a client without a certificate
            # that CA signed cannot connect at all
            ssl_cert_reqs=ssl.CERT_REQUIRED if tls is not None and tls.client_ca else ssl.CERT_NONE,
        )
        self._uvicorn = _QuietServer(settings)
        self._serving = asyncio.ensure_future(self._uvicorn.serve(sockets=[listener]))
        while not self._uvicorn.started:
            if self._serving.done():
                self._serving.result()  # raises what stopped it
                raise RuntimeError("the MCP listener stopped while starting")
            await asyncio.sleep(0.01)
        return self.port

    async def stop(self) -> None:
        """Stop taking requests, end the sessions, close the listener."""
        if self._uvicorn is not None and self._serving is not None:
            self._uvicorn.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await self._serving
        await self._sessions.close()
        if self._running is not None:
            self._sessions_done.set()
            with contextlib.suppress(asyncio.CancelledError):
                await self._running

    async def _start_oauth(self, host: str) -> None:
        """Read the JWKS (``ConfigError`` when it cannot be used) and place the metadata:
        RFC 9728 puts it at the well-known path followed by the resource's path, on the
        resource's origin (the URL served unless the scopes file names another)."""
        assert self._oauth_settings is not None
        scheme = "https" if self._config.tls is not None else "http"
        shown = f"[{host}]" if ":" in host else host
        oauth = OAuthCallers(self._oauth_settings, f"{scheme}://{shown}:{self.port}{PATH}")
        await oauth.start()
        resource = urlsplit(oauth.audience)
        path = resource.path.rstrip("/")
        self._metadata_url = f"{resource.scheme}://{resource.netloc}{METADATA_PATH}{path}"
        self._metadata_paths = frozenset({METADATA_PATH, METADATA_PATH + path})
        self._oauth = oauth
        _log.info(
            "MCP takes OAuth access tokens of %s for %s (metadata at %s)",
            self._oauth_settings.authorization_server,
            oauth.audience,
            self._metadata_url,
        )

    async def _run_sessions(self, manager: StreamableHTTPSessionManager) -> None:
        """Hold the session manager's task group open, in one task from start to stop
        (anyio ends a task group only in the task that began it)."""
        async with manager.run():
            self._sessions_ready.set()
            await self._sessions_done.wait()

    def _tools_changed(self) -> None:
        """Tell every ``subscriptions/listen`` stream that asked for it (2026-07-28) and
        every session (2025-11-25)."""
        task = asyncio.ensure_future(self._changes.publish(ToolsListChanged()))
        self._publishing.add(task)
        task.add_done_callback(self._publishing.discard)
        self._sessions.tools_changed()

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] in self._metadata_paths:
            await self._metadata(scope, send)
            return
        if scope["path"] != PATH:
            await _reply(send, 404, {"error": f"no such path: MCP is served at {PATH}"})
            return
        if self._auth is not None or self._oauth is not None:
            headers = {
                key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]
            }
            caller = self._caller(headers)
            if isinstance(caller, ErrorStatus):
                await _unauthorized(send, caller, self._challenge(caller, headers))
                return
            # a session belongs to the caller that opened it: another token, even a valid
            # one, finds no such session (the SDK compares this user on every request)
            owner = AccessToken(token="", client_id=caller.label, scopes=[])
            scope = {**scope, "user": AuthenticatedUser(owner), HttpCaller.KEY: caller}
        assert self._manager is not None
        await self._manager.handle_request(scope, receive, send)

    def _caller(self, headers: dict[str, str]) -> Caller | ErrorStatus:
        """Who sends a request: with ``--auth-tokens`` alone, its bearer token's caller; with
        OAuth, the access token's, except that a bearer token not shaped like a JWT goes to
        ``--auth-tokens`` when both are on."""
        authorization = headers.get("authorization")
        if self._oauth is None or (self._auth is not None and _opaque(authorization)):
            assert self._auth is not None
            return self._auth.caller(HttpCaller(headers))
        return self._oauth.caller(authorization)

    def _challenge(self, refusal: ErrorStatus, headers: dict[str, str]) -> str:
        """The ``WWW-Authenticate`` value refusing a request: with OAuth, where its metadata
        is (RFC 9728) and why the token was refused or which scopes to ask for."""
        if self._oauth is not None:
            return self._oauth.challenge(refusal, self._metadata_url)
        if "authorization" in headers:
            return 'Bearer realm="llmworker", error="invalid_token"'
        return 'Bearer realm="llmworker"'

    async def _metadata(self, scope: Scope, send: Send) -> None:
        """The Protected Resource Metadata document (RFC 9728), to GET."""
        assert self._oauth is not None
        if scope["method"] not in ("GET", "HEAD"):
            await _reply(send, 405, {"error": "the resource metadata is read with GET"})
            return
        body = json.dumps(self._oauth.metadata()).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"cache-control", b"max-age=300"),
                ],
            }
        )
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body}
        )


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers: SIGTERM stays the server's (drain, grace), which
    stops this listener in its turn."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        yield


def state_keys(path: Path | None) -> list[bytes]:
    """The keys that seal and open 2026-07-28 ``requestState``: one per line of the private
    ``--mcp-state-key-file`` (the first seals; replicas share the file), or a key of this
    process alone."""
    if path is None:
        return [os.urandom(32)]
    exposed = exposed_secret_file(path)
    if exposed is not None:
        raise ConfigError(f"--mcp-state-key-file {exposed}")
    try:
        keys = [line.strip() for line in path.read_bytes().splitlines() if line.strip()]
    except OSError as error:
        raise ConfigError(
            f"--mcp-state-key-file {path}: cannot read it ({error.strerror}); give a private "
            "file of keys, one per line"
        ) from None
    if not keys or any(len(key) < 32 for key in keys):
        raise ConfigError(
            f"--mcp-state-key-file {path}: each line must be a key of at least 32 characters "
            "(make one with: openssl rand -hex 32); the first line seals, every line opens"
        )
    return keys


def _principal(ctx: Context) -> str | None:
    """Who a ``requestState`` is bound to: the label of the caller's token (another caller
    cannot continue the call), or nobody without ``--auth-tokens``."""
    request = ctx.request
    user = None if request is None else request.scope.get("user")
    return user.access_token.client_id if isinstance(user, AuthenticatedUser) else None


def _origin_checks(host: str, port: int, tls: bool) -> TransportSecuritySettings:
    """Host and Origin values a browser page on another site cannot make this server
    accept: the address served, and its loopback names when it is loopback."""
    names = {host}
    if is_loopback(host):
        names |= {"127.0.0.1", "localhost", "::1"}
    shown = [f"[{name}]" if ":" in name else name for name in sorted(names)]
    scheme = "https" if tls else "http"
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:{port}" for name in shown] + shown,
        allowed_origins=[f"{scheme}://{name}:{port}" for name in shown],
    )


def _opaque(authorization: str | None) -> bool:
    """Whether ``authorization`` is a bearer token not shaped like a JWT (three
    dot-separated base64url parts): one for ``--auth-tokens``, when OAuth is on too."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    return scheme.lower() == "bearer" and bool(token) and not _JWT_SHAPE.fullmatch(token)


async def _unauthorized(send: Send, refusal: ErrorStatus, challenge: str) -> None:
    body = json.dumps({"error": refusal.message, "reason": refusal.reason}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", challenge.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _reply(send: Send, status: int, body: dict[str, str]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})
