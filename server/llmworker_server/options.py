"""The command line's flags: every option of ``llmworker-server``, grouped as ``--help``
shows them."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Final, TypeVar

from llmworker import __version__

__all__ = ["TOKEN_ENV", "build_parser"]

TOKEN_ENV: Final = "LLMWORKER_TOKEN"
ValueT = TypeVar("ValueT")


def _per_tool(
    convert: Callable[[str], ValueT], form: str, example: str
) -> Callable[[str], tuple[str, ValueT]]:
    """An argparse type for ``NAME=VALUE``, e.g. ``--tool-timeout search=5``."""

    def parse(text: str) -> tuple[str, ValueT]:
        name, separator, value = text.partition("=")
        try:
            if not separator or not name:
                raise ValueError
            return name, convert(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {form}, e.g. {example!r}") from None

    return parse


_tool_timeout = _per_tool(float, "NAME=SECONDS", "search=5")
_tool_limit = _per_tool(int, "NAME=BYTES", "upload=8388608")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llmworker-server",
        allow_abbrev=False,  # "--token x" must never be taken as "--token-file x"
        description="Serve llmworker tools over gRPC (llmworker.v1.ToolService), with health "
        "checking and server reflection, plus an internal ToolRegistry listener through which "
        "other processes contribute tools.",
        epilog=f"The registry token is read from ${TOKEN_ENV} or --token-file, never from the "
        "command line. Example: llmworker-server --demo --tools myapp.tools:MyApp",
    )
    parser.add_argument("--version", action="version", version=f"llmworker-server {__version__}")
    tools = parser.add_argument_group("tools")
    tools.add_argument(
        "--tools",
        dest="tool_specs",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="load tools from a @tool_registry class or instance, a ToolDefinition, or a list "
        "of them (repeatable; the current directory is importable)",
    )
    tools.add_argument(
        "--demo",
        action="store_true",
        help="serve the demo tools (echo, calculate, now, kv_set/kv_get/kv_delete/kv_list, "
        "validate_order, whoami, countdown)",
    )
    tools.add_argument(
        "--search-tool",
        action="store_true",
        help="add the built-in tool search_tools: a model finds the tools it may use by what "
        "they do (SearchTools as a tool)",
    )
    tools.add_argument(
        "--core-tools",
        action="append",
        default=[],
        metavar="GLOB",
        help="the tools a model sees up front: in the Anthropic formats every other tool gets "
        'defer_loading: true, found by a tool search (repeatable; e.g. "kv_*")',
    )

    listen = parser.add_argument_group("listening")
    listen.add_argument("--host", default="127.0.0.1", help="public address (default %(default)s)")
    listen.add_argument(
        "--port",
        type=int,
        default=50051,
        help="public port; 0 picks a free one (default %(default)s)",
    )
    listen.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="serve from N processes sharing the port (SO_REUSEPORT); needs "
        "--no-internal (default %(default)s)",
    )
    listen.add_argument("--reuse-port", action="store_true", help=argparse.SUPPRESS)
    listen.add_argument(
        "--max-message-bytes",
        type=int,
        default=4 * 1024 * 1024,
        help="largest request or response; the definitions listing must fit too "
        "(default %(default)s)",
    )
    listen.add_argument(
        "--max-concurrent-streams",
        type=int,
        default=1024,
        metavar="N",
        help="calls in progress on one client connection (HTTP/2 streams); a burst beyond it "
        "gets UNAVAILABLE from gRPC itself, so keep it at or above --max-concurrent-calls "
        "(default %(default)s)",
    )
    listen.add_argument(
        "--max-connection-idle",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="close a connection with no call for this long (default %(default)s)",
    )
    listen.add_argument(
        "--max-connection-age",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="ask clients to reconnect after this long, so that load spreads and abandoned "
        "streams end (default %(default)s)",
    )
    listen.add_argument(
        "--max-connection-age-grace",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="then close the connection after this long, whatever is left on it "
        "(default %(default)s)",
    )

    security = parser.add_argument_group("transport security")
    security.add_argument(
        "--tls-cert",
        type=Path,
        metavar="PEM",
        help="serve TLS with this certificate chain (with --tls-key); also on a TCP "
        "internal listener; re-read on SIGHUP",
    )
    security.add_argument("--tls-key", type=Path, metavar="PEM", help="the certificate's key")
    security.add_argument(
        "--tls-client-ca",
        type=Path,
        metavar="PEM",
        help="require client certificates signed by this CA (mutual TLS)",
    )
    security.add_argument(
        "--allow-insecure",
        action="store_true",
        help="allow plaintext on an address beyond loopback (e.g. behind a proxy that "
        "terminates TLS); logged as a warning",
    )
    security.add_argument(
        "--outgoing-tls-ca",
        type=Path,
        metavar="PEM",
        help="connect over TLS, trusting this CA, where this server is the client: to "
        "--register-with and to providers' targets",
    )
    security.add_argument(
        "--outgoing-tls-cert",
        type=Path,
        metavar="PEM",
        help="client certificate for those connections (with --outgoing-tls-key; mTLS)",
    )
    security.add_argument(
        "--outgoing-tls-key", type=Path, metavar="PEM", help="that client certificate's key"
    )

    security.add_argument(
        "--auth-tokens",
        type=Path,
        metavar="JSON",
        help='callers must send "authorization: Bearer <token>" with a token of this file, '
        "and may use only its tools (see the README); re-read on SIGHUP",
    )

    registry = parser.add_argument_group("internal registry")
    registry.add_argument(
        "--no-internal",
        dest="internal",
        action="store_false",
        help="no internal listener; the tool set locks once loaded",
    )
    registry.add_argument(
        "--internal-socket",
        type=Path,
        metavar="PATH",
        help="Unix socket of the internal listener (default: "
        "$XDG_RUNTIME_DIR or the temp dir, llmworker-<pid>.sock)",
    )
    registry.add_argument(
        "--internal-address",
        metavar="HOST:PORT",
        help="internal listener on TCP instead (needs a token)",
    )
    registry.add_argument(
        "--provider-tokens",
        type=Path,
        metavar="JSON",
        help="provider identities: each token may register only its tools, at its targets, "
        "and only it renews or removes them (see docs/security.md); without it the registry "
        "token is one identity allowed everything; re-read on SIGHUP",
    )
    registry.add_argument(
        "--token-file",
        type=Path,
        metavar="PATH",
        help=f"file holding the registry token (else ${TOKEN_ENV})",
    )
    registry.add_argument(
        "--lock",
        dest="lock_at_start",
        action="store_true",
        help="lock the registry at start: RegisterTool answers FAILED_PRECONDITION",
    )
    registry.add_argument(
        "--registration-window",
        type=float,
        metavar="SECONDS",
        help="lock the registry this long after start",
    )
    registry.add_argument(
        "--provider-lease",
        type=float,
        default=8.0,
        metavar="SECONDS",
        help="a provider is checked every SECONDS / 4 (gRPC health); one that "
        "fails every check this long has its tools removed from a mutable registry "
        "(default %(default)s)",
    )
    registry.add_argument(
        "--provider-check-timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="RegisterTool asks the provider for the tool (GetTool) and refuses it without "
        "an answer this soon; 0 accepts without asking (default %(default)s)",
    )
    registry.add_argument(
        "--register-with",
        metavar="TARGET",
        help="act as a provider: register this server's tools with the internal listener "
        "at TARGET (uses the token); several replicas: ipv4:A:P,B:P,... or dns:///NAME:PORT "
        "(every address it resolves to)",
    )
    registry.add_argument(
        "--register-resolve-interval",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how often a dns: --register-with name is resolved again, to register with "
        "replicas that appeared and leave those gone (default %(default)s)",
    )
    registry.add_argument(
        "--advertise",
        metavar="HOST:PORT",
        help="the address other servers reach this one at (default: --host:--port)",
    )

    calls = parser.add_argument_group("calls")
    calls.add_argument(
        "--call-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="timeout of every call; 0 for none (default %(default)s)",
    )
    calls.add_argument(
        "--tool-timeout",
        type=_tool_timeout,
        action="append",
        default=[],
        metavar="NAME=SECONDS",
        help="timeout of one tool (repeatable)",
    )
    calls.add_argument(
        "--max-input-bytes",
        type=int,
        default=1024 * 1024,
        metavar="BYTES",
        help="largest input_json of a call; larger ones get INVALID_ARGUMENT before any "
        "validation (default %(default)s)",
    )
    calls.add_argument(
        "--tool-max-input-bytes",
        type=_tool_limit,
        action="append",
        default=[],
        metavar="NAME=BYTES",
        help="the input limit of one tool (repeatable)",
    )
    calls.add_argument(
        "--redact-errors",
        action="store_true",
        help="answer unexpected exceptions in tools and hooks with a generic message and the "
        "call id; the server logs the details",
    )
    calls.add_argument(
        "--max-concurrent-calls",
        type=int,
        default=1024,
        metavar="N",
        help="calls in flight beyond which callers get RESOURCE_EXHAUSTED (default %(default)s)",
    )
    calls.add_argument(
        "--max-watchers",
        type=int,
        default=10_000,
        metavar="N",
        help="WatchDefinitions streams open at once; beyond, RESOURCE_EXHAUSTED (default "
        "%(default)s)",
    )
    calls.add_argument(
        "--max-batch-calls",
        type=int,
        default=128,
        metavar="N",
        help="most calls one CallTools request may carry (default %(default)s)",
    )
    calls.add_argument(
        "--paused-batch-ttl",
        "--pause-ttl",
        dest="pause_ttl",
        type=float,
        default=86_400.0,
        metavar="SECONDS",
        help="how long a paused batch waits for its decisions (default %(default)s, one day; "
        "at most 2592000, 30 days)",
    )
    calls.add_argument(
        "--max-paused-batches",
        type=int,
        default=1000,
        metavar="N",
        help="live paused batches the store holds at once (every process sharing it); "
        "beyond, CallTools answers RESOURCE_EXHAUSTED (default %(default)s)",
    )
    calls.add_argument(
        "--state",
        default=None,
        metavar="URL",
        help="where paused batches live: memory, sqlite:///PATH or postgresql://... "
        "(default: sqlite in --state-dir; or from --state-file or $LLMWORKER_STATE, which "
        "keep a password out of ps)",
    )
    calls.add_argument(
        "--state-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="read the --state URL from FILE (readable by this user only)",
    )
    calls.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the directory of the default SQLite store (default $LLMWORKER_STATE_DIR, "
        "else $XDG_STATE_HOME/llmworker, else ~/.local/state/llmworker)",
    )
    calls.add_argument(
        "--state-pool-size",
        type=int,
        default=10,
        metavar="N",
        help="PostgreSQL connections per process (default %(default)s)",
    )
    calls.add_argument(
        "--grace",
        dest="grace_seconds",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="on SIGTERM/SIGINT, how long calls in flight may finish; the process exits "
        "within --drain-delay + grace + 1 s whatever tools do (default %(default)s)",
    )
    calls.add_argument(
        "--drain-delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="on SIGTERM/SIGINT, report NOT_SERVING through health checks and keep serving "
        "this long before refusing calls, so that load balancers move away (default "
        "%(default)s)",
    )
    _add_operations(parser)
    _add_imports(parser)
    return parser


def _add_operations(parser: argparse.ArgumentParser) -> None:
    operations = parser.add_argument_group("operations")
    operations.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="INFO logs one line per call (default %(default)s)",
    )
    operations.add_argument(
        "--log-format",
        default="text",
        choices=["text", "json"],
        help="json: one object a line, keys time, level, logger, message (calls add tool, "
        "status, duration_ms and caller) (default %(default)s)",
    )
    operations.add_argument(
        "--mcp-address",
        metavar="HOST:PORT",
        help="serve the tools to MCP clients too: Streamable HTTP at /mcp there (revisions "
        "2025-11-25 and 2026-07-28; over TLS with --tls-cert; --auth-tokens and OAuth apply)",
    )
    operations.add_argument(
        "--mcp-state-key-file",
        metavar="FILE",
        type=Path,
        help="a private file of keys (one per line, 32+ characters; the first seals) for the "
        "requestState of MCP 2026-07-28 rounds: give replicas the same file, so any of them "
        "continues a call or an approval (default: a key of this process alone)",
    )
    operations.add_argument(
        "--mcp-authorization-server",
        metavar="URL",
        help="accept OAuth access tokens (JWTs) at /mcp from this authorization server, "
        "its issuer exactly as its tokens' iss; with --mcp-jwks and --mcp-oauth-scopes "
        "(see docs/mcp.md)",
    )
    operations.add_argument(
        "--mcp-jwks",
        metavar="FILE_OR_URL",
        help="the authorization server's public keys: a JWKS file or its https jwks_uri "
        "(read again, at most once a minute, when a token names an unknown key)",
    )
    operations.add_argument(
        "--mcp-oauth-scopes",
        metavar="FILE",
        type=Path,
        help='a JSON file mapping each OAuth scope to the tool globs it grants: {"scopes": '
        '{"tools:read": ["search_*"], "tools:all": ["*"]}}',
    )
    operations.add_argument(
        "--metrics-address",
        metavar="HOST:PORT",
        help="serve Prometheus metrics over HTTP at /metrics there (over TLS with "
        "--tls-cert); with --workers, the parent serves the sum of all processes",
    )
    operations.add_argument("--metrics-snapshots", type=Path, help=argparse.SUPPRESS)
    operations.add_argument(
        "--otel",
        action="store_true",
        help="trace every call with OpenTelemetry, exported by OTLP as the OTEL_* variables "
        "say (pip install 'llmworker[otel]')",
    )
    operations.add_argument(
        "--loop",
        default="auto",
        choices=["auto", "asyncio", "uvloop"],
        help="the event loop: auto is uvloop where it is installed (default %(default)s)",
    )


def _add_imports(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("MCP servers as providers (docs/gateway.md)")
    group.add_argument(
        "--mcp-server",
        dest="mcp_server",
        action="append",
        default=[],
        metavar="NAME=URL|NAME=stdio:COMMAND",
        help="import the tools of an MCP server as NAME__TOOL (Streamable HTTP at URL, or "
        "COMMAND ARGS launched and restarted as needed); repeatable; see docs/gateway.md",
    )
    group.add_argument(
        "--mcp-servers",
        metavar="FILE",
        type=Path,
        help='import the MCP servers of a JSON file {"mcpServers": {NAME: {"url" or '
        '"command", …}}} (with tokenFile, caFile, include, exclude, prefix per server)',
    )
    group.add_argument(
        "--mcp-tool-separator",
        default="__",
        metavar="SEP",
        help="what joins an imported server's name and its tool's name (default %(default)s)",
    )
    group.add_argument(
        "--require-approval",
        action="append",
        default=[],
        metavar="GLOB",
        help="an imported tool whose name matches needs a decision before it runs (a "
        "CallTools pause, an MCP approval question); repeatable",
    )
