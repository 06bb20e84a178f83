"""What the server is told to do: every setting the command line can set."""

from __future__ import annotations

import ipaddress
import os
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path

from llmworker import ClientTls

from .errors import ConfigError
from .mcp_import.settings import DEFAULT_SEPARATOR, McpServerSettings, check_separator
from .rpc.tls import TlsFiles
from .state.location import shown_url, state_problem

MAX_PAUSED_BATCH_TTL = 30 * 86_400.0
"""The longest --paused-batch-ttl: 30 days."""

__all__ = ["ServerConfig", "default_internal_socket", "is_loopback", "split_address"]


def default_internal_socket() -> Path:
    """A per-process socket path in the runtime directory (or the temp directory)."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"llmworker-{os.getpid()}.sock"


@dataclass(slots=True)
class ServerConfig:
    """Settings of one server process; defaults are safe for a local machine."""

    host: str = "127.0.0.1"
    port: int = 50051
    tool_specs: list[str] = field(default_factory=list[str])
    demo: bool = False
    internal: bool = True
    internal_socket: Path | None = None
    internal_address: str | None = None
    token: str | None = field(default=None, repr=False)
    lock_at_start: bool = False
    registration_window: float | None = None
    call_timeout: float | None = 30.0
    tool_timeouts: dict[str, float] = field(default_factory=dict[str, float])
    max_concurrent_calls: int = 1024
    max_batch_calls: int = 128
    max_watchers: int = 10_000
    pause_ttl: float = 86_400.0
    max_paused_batches: int = 1000
    state: str = field(default="", repr=False)
    """Where paused batches live (``state/location.py``); "" is the default SQLite file."""
    state_dir: Path | None = None
    state_pool_size: int = 10
    max_message_bytes: int = 4 * 1024 * 1024
    max_input_bytes: int = 1024 * 1024
    tool_max_input_bytes: dict[str, int] = field(default_factory=dict[str, int])
    redact_errors: bool = False
    drain_delay: float = 0.0
    max_concurrent_streams: int = 1024
    max_connection_idle: float = 300.0
    max_connection_age: float = 1800.0
    max_connection_age_grace: float = 30.0
    grace_seconds: float = 10.0
    log_level: str = "INFO"
    log_format: str = "text"
    metrics_address: str | None = None
    """Where to serve Prometheus metrics (HOST:PORT); None serves none."""
    mcp_address: str | None = None
    """Serve MCP (Streamable HTTP at /mcp) there too, on the same registry."""
    mcp_state_key_file: Path | None = None
    """The keys sealing MCP ``requestState`` (shared by replicas); None: one per process."""
    mcp_authorization_server: str | None = None
    """The issuer of the OAuth access tokens MCP clients may send (with the next two)."""
    mcp_jwks: str | None = None
    """The issuer's public keys: a JWKS file, or its https URL."""
    mcp_oauth_scopes: Path | None = None
    """The OAuth scopes and the tool globs each grants (``mcp_front/oauth.py``)."""
    mcp_servers: tuple[McpServerSettings, ...] = ()
    """The MCP servers whose tools are imported as provider tools (``mcp_import``)."""
    mcp_tool_separator: str = DEFAULT_SEPARATOR
    """Between an imported tool's server prefix and its own name."""
    require_approval: tuple[str, ...] = ()
    search_tool: bool = False
    """Register the built-in ``search_tools`` tool."""
    core_tools: tuple[str, ...] = ()
    """Globs of the tools the Anthropic formats do not defer (none given: nothing deferred)."""
    """Globs of imported tools' registry names that need a decision before they run."""
    metrics_snapshots: Path | None = None
    """A ``--workers`` child's: the directory its metrics go to, for the parent to serve."""
    otel: bool = False
    loop: str = "auto"
    provider_lease: float = 8.0
    """Seconds a provider may fail every check before its tools are removed."""
    provider_check_timeout: float = 5.0
    """Seconds a registering provider has to answer GetTool for the tool (0: not asked)."""
    register_with: str | None = None
    register_resolve_interval: float = 10.0
    """Seconds between resolutions of a ``dns:`` --register-with name (replicas come and go)."""
    advertise: str | None = None
    workers: int = 1
    reuse_port: bool = False
    tls: TlsFiles | None = None
    """TLS for the public listener and a TCP internal one (a Unix socket stays plaintext)."""
    allow_insecure: bool = False
    """Serve plaintext on an address beyond loopback (behind a TLS-terminating proxy, say)."""
    outgoing_tls: ClientTls | None = field(default=None, repr=False)
    """TLS for the connections this server opens: to --register-with and to providers."""
    auth_tokens: Path | None = None
    """The caller tokens file: without it every caller may list and call every tool."""
    provider_tokens: Path | None = None
    """The provider identities file: without it the registry token (or, on the private
    socket, none) is one identity allowed every tool and target (the simple mode)."""

    @property
    def public_address(self) -> str:
        return f"{self.host}:{self.port}"

    def described(self) -> dict[str, object]:
        """Every setting as JSON-ready values, without secrets: the token and the outgoing
        TLS key show only whether they are set, the --state URL without its password."""
        described: dict[str, object] = {}
        for setting in fields(self):
            value: object = getattr(self, setting.name)
            if setting.name == "token":
                value = "set" if value else None
            elif setting.name == "state" and isinstance(value, str):
                value = shown_url(value)
            elif isinstance(value, ClientTls):
                value = {
                    "root_ca": value.root_ca is not None,
                    "client_cert": bool(value.cert_chain),
                }
            elif isinstance(value, TlsFiles):
                client_ca = str(value.client_ca) if value.client_ca else None
                value = {"cert": str(value.cert), "key": str(value.key), "client_ca": client_ca}
            elif isinstance(value, Path):
                value = str(value)
            described[setting.name] = value
        return described

    def check(self) -> None:
        """Refuse unsafe or contradictory settings with what to change."""
        self._check_transport()
        if self.internal_address and not self.token and not self.provider_tokens:
            raise ConfigError(
                "--internal-address serves the registry over TCP; set a token "
                "(LLMWORKER_TOKEN or --token-file) or --provider-tokens so that only holders "
                "of one can register"
            )
        if self.provider_tokens and not self.internal:
            raise ConfigError(
                "--provider-tokens names who may register, and --no-internal serves no "
                "registry; drop one of them"
            )
        if self.max_concurrent_calls < 1:
            raise ConfigError("--max-concurrent-calls must be at least 1")
        for flag, value in [
            ("--max-message-bytes", self.max_message_bytes),
            ("--max-input-bytes", self.max_input_bytes),
            ("--max-concurrent-streams", self.max_concurrent_streams),
            ("--max-batch-calls", self.max_batch_calls),
            ("--max-watchers", self.max_watchers),
            ("--max-paused-batches", self.max_paused_batches),
            ("--state-pool-size", self.state_pool_size),
            *((f"--tool-max-input-bytes {name}", limit)
              for name, limit in self.tool_max_input_bytes.items()),
        ]:  # fmt: skip
            if value < 1:
                raise ConfigError(f"{flag} must be at least 1")
        timeouts = [("--call-timeout", self.call_timeout)] if self.call_timeout is not None else []
        timeouts += [
            (f"--tool-timeout {name}", value) for name, value in self.tool_timeouts.items()
        ]
        timeouts.append(("--paused-batch-ttl", self.pause_ttl))
        if self.pause_ttl > MAX_PAUSED_BATCH_TTL:
            raise ConfigError(
                f"--paused-batch-ttl {self.pause_ttl:g} is over the maximum "
                f"{MAX_PAUSED_BATCH_TTL:g} s (30 days); ask for a shorter approval window"
            )
        problem = state_problem(self.state) if self.state else None
        if problem is not None:
            raise ConfigError(problem)
        timeouts.append(("--provider-lease", self.provider_lease))
        timeouts.append(("--register-resolve-interval", self.register_resolve_interval))
        for flag, seconds in timeouts:
            if not 0 < seconds < float("inf"):  # also refuses NaN
                raise ConfigError(f"{flag} must be a positive number of seconds")
        for flag, seconds in [
            ("--grace", self.grace_seconds),
            ("--drain-delay", self.drain_delay),
            ("--max-connection-idle", self.max_connection_idle),
            ("--max-connection-age", self.max_connection_age),
            ("--max-connection-age-grace", self.max_connection_age_grace),
            ("--provider-check-timeout", self.provider_check_timeout),
        ]:
            if not seconds >= 0:  # also refuses NaN
                raise ConfigError(f"{flag} must be a number of seconds, 0 or more")
        if self.metrics_address is not None:
            split_address(self.metrics_address)
        if self.mcp_oauth() is not None and self.mcp_address is None:
            raise ConfigError(
                "--mcp-authorization-server, --mcp-jwks and --mcp-oauth-scopes check OAuth "
                "access tokens at the MCP endpoint: add --mcp-address HOST:PORT, or drop them"
            )
        if self.mcp_address is not None:
            split_address(self.mcp_address)
            if self.workers > 1:
                raise ConfigError(
                    "--mcp-address serves MCP sessions from one process: run it without "
                    "--workers (or with --workers 1), or run replicas behind a proxy"
                )
        self._check_imports()
        if self.workers < 1:
            raise ConfigError("--workers must be at least 1")
        if self.workers > 1 and self.port == 0:
            raise ConfigError("--workers N > 1 needs a fixed --port for the processes to share")
        if self.workers > 1 and self.internal:
            raise ConfigError(
                "--workers N > 1 serves a fixed tool set: add --no-internal (each worker "
                "process would have its own registry)"
            )

    def _check_imports(self) -> None:
        check_separator(self.mcp_tool_separator)
        names = [server.name for server in self.mcp_servers]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ConfigError(
                f"MCP server name(s) {repeated} given more than once (--mcp-server, "
                "--mcp-servers); each server needs its own name"
            )
        if self.require_approval and not self.mcp_servers:
            raise ConfigError(
                "--require-approval marks imported MCP tools: add --mcp-server or --mcp-servers"
            )
        if self.mcp_servers and self.workers > 1:
            raise ConfigError(
                "--mcp-server imports into one process's registry: run it without --workers"
            )

    def mcp_oauth(self) -> tuple[str, str, Path] | None:
        """The issuer, JWKS and scopes file of OAuth at the MCP endpoint, or None when none
        of the three flags is given; ``ConfigError`` names a missing one."""
        issuer, jwks, scopes = self.mcp_authorization_server, self.mcp_jwks, self.mcp_oauth_scopes
        if issuer and jwks and scopes:
            return issuer, jwks, scopes
        flags = {
            "--mcp-authorization-server": issuer,
            "--mcp-jwks": jwks,
            "--mcp-oauth-scopes": scopes,
        }
        given = [flag for flag, value in flags.items() if value]
        if not given:
            return None
        missing = " and ".join(flag for flag, value in flags.items() if not value)
        raise ConfigError(
            f"{' and '.join(given)} without {missing}: OAuth access tokens need the "
            f"authorization server's issuer, its JWKS and the scopes file together; add "
            f"{missing}, or drop {' and '.join(given)}"
        )

    def _check_transport(self) -> None:
        if self.tls is not None or self.allow_insecure:
            return
        if not is_loopback(self.host):
            raise ConfigError(
                f"--host {self.host} would serve plaintext beyond this machine: anyone on the "
                "network could read and forge calls; serve TLS with --tls-cert and --tls-key, "
                "or add --allow-insecure (e.g. behind a proxy that terminates TLS)"
            )
        if self.metrics_address and not is_loopback(split_address(self.metrics_address)[0]):
            raise ConfigError(
                f"--metrics-address {self.metrics_address} would serve metrics in plaintext "
                "beyond this machine; serve TLS with --tls-cert and --tls-key, or add "
                "--allow-insecure"
            )
        if self.mcp_address and not is_loopback(split_address(self.mcp_address)[0]):
            raise ConfigError(
                f"--mcp-address {self.mcp_address} would serve MCP in plaintext beyond this "
                "machine; serve TLS with --tls-cert and --tls-key, or add --allow-insecure"
            )
        internal_host = (self.internal_address or "").rpartition(":")[0]
        if self.internal_address and not is_loopback(internal_host):
            raise ConfigError(
                f"--internal-address {self.internal_address} would send the registry token in "
                "plaintext beyond this machine; serve TLS with --tls-cert and --tls-key, or "
                "add --allow-insecure"
            )


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is this
    machine only."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as host and port; ConfigError naming it."""
    host, colon, port = address.rpartition(":")
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(
            f"{address!r} is not HOST:PORT (e.g. 127.0.0.1:9464, or [::1]:9464 for IPv6)"
        )
    return host.strip("[]"), int(port)
