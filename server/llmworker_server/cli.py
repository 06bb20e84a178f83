"""``llmworker-server``: the command line."""

from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path

import grpc

from llmworker import ClientTls, ToolRegistryError, __version__

from .config import ServerConfig
from .errors import ConfigError
from .event_loop import choose_loop
from .mcp_import.settings import McpServerSettings, load_servers_file, server_from_flag
from .ops.log_format import FIELDS, configure_logging
from .options import TOKEN_ENV, build_parser
from .process import serve_until_signal
from .rpc.tls import TlsFiles
from .rpc.token_file import exposed_secret_file
from .state.location import STATE_ENV
from .workers import follow_supervisor, run_workers

__all__ = ["main", "parse_args"]

_log = logging.getLogger("llmworker.server.lifecycle")


def _refuse_secrets_on_the_command_line(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> None:
    """``--token`` is refused without echoing its value: a command line is visible to every
    user of the machine (``ps``) and lands in shell history."""
    for argument in argv:
        if argument == "--":
            return
        if argument == "--token" or argument.startswith("--token="):
            parser.error(
                f"--token is not accepted: a command line is visible to other users; put the "
                f"token in ${TOKEN_ENV} or in a file named by --token-file"
            )


def parse_args(argv: Sequence[str] | None = None) -> ServerConfig:
    """The configuration the command line describes; exits with usage on bad input."""
    parser = build_parser()
    arguments = sys.argv[1:] if argv is None else list(argv)
    _refuse_secrets_on_the_command_line(parser, arguments)
    args, unknown = parser.parse_known_args(arguments)
    if unknown:  # named, never echoed: a stray value may be a secret
        flags = [word.split("=", 1)[0] for word in unknown if word.startswith("-")]
        parser.error(
            f"unrecognised arguments ({len(unknown)}): "
            + (", ".join(flags) if flags else "values that belong to no flag")
            + "; see --help"
        )
    token = os.environ.get(TOKEN_ENV) or None
    if args.token_file is not None:
        exposed = exposed_secret_file(args.token_file)
        if exposed is not None:
            parser.error(f"--token-file {exposed}")
        try:
            token = args.token_file.read_text().strip() or None
        except OSError as error:
            parser.error(f"--token-file: {error}")
    config = ServerConfig(
        state=_state_url(parser, args),
        state_dir=args.state_dir,
        state_pool_size=args.state_pool_size,
        tls=_listener_tls(parser, args),
        allow_insecure=args.allow_insecure,
        auth_tokens=args.auth_tokens,
        provider_tokens=args.provider_tokens,
        outgoing_tls=_outgoing_tls(parser, args),
        host=args.host,
        port=args.port,
        tool_specs=args.tool_specs,
        demo=args.demo,
        internal=args.internal,
        internal_socket=args.internal_socket,
        internal_address=args.internal_address,
        token=token,
        lock_at_start=args.lock_at_start,
        registration_window=args.registration_window,
        call_timeout=args.call_timeout or None,
        tool_timeouts=dict(args.tool_timeout),
        max_concurrent_calls=args.max_concurrent_calls,
        max_batch_calls=args.max_batch_calls,
        max_watchers=args.max_watchers,
        pause_ttl=args.pause_ttl,
        max_paused_batches=args.max_paused_batches,
        max_message_bytes=args.max_message_bytes,
        max_input_bytes=args.max_input_bytes,
        tool_max_input_bytes=dict(args.tool_max_input_bytes),
        redact_errors=args.redact_errors,
        drain_delay=args.drain_delay,
        max_concurrent_streams=args.max_concurrent_streams,
        max_connection_idle=args.max_connection_idle,
        max_connection_age=args.max_connection_age,
        max_connection_age_grace=args.max_connection_age_grace,
        grace_seconds=args.grace_seconds,
        log_level=args.log_level,
        log_format=args.log_format,
        metrics_address=args.metrics_address,
        mcp_address=args.mcp_address,
        mcp_state_key_file=args.mcp_state_key_file,
        mcp_authorization_server=args.mcp_authorization_server,
        mcp_jwks=args.mcp_jwks,
        mcp_oauth_scopes=args.mcp_oauth_scopes,
        mcp_servers=_mcp_servers(parser, args),
        mcp_tool_separator=args.mcp_tool_separator,
        require_approval=tuple(args.require_approval),
        search_tool=args.search_tool,
        core_tools=tuple(args.core_tools),
        metrics_snapshots=args.metrics_snapshots,
        otel=args.otel,
        loop=args.loop,
        provider_lease=args.provider_lease,
        provider_check_timeout=args.provider_check_timeout,
        register_with=args.register_with,
        register_resolve_interval=args.register_resolve_interval,
        advertise=args.advertise,
        workers=args.workers,
        reuse_port=args.reuse_port,
    )
    try:
        config.check()
    except ValueError as error:
        parser.error(str(error))
    return config


def _listener_tls(parser: argparse.ArgumentParser, args: argparse.Namespace) -> TlsFiles | None:
    if args.tls_cert is None and args.tls_key is None:
        if args.tls_client_ca is not None:
            parser.error("--tls-client-ca needs TLS: add --tls-cert and --tls-key")
        return None
    if args.tls_cert is None or args.tls_key is None:
        parser.error("TLS needs both --tls-cert and --tls-key")
    return TlsFiles(args.tls_cert, args.tls_key, args.tls_client_ca)


def _outgoing_tls(parser: argparse.ArgumentParser, args: argparse.Namespace) -> ClientTls | None:
    files = (args.outgoing_tls_ca, args.outgoing_tls_cert, args.outgoing_tls_key)
    if all(path is None for path in files):
        return None
    if args.outgoing_tls_ca is None:
        parser.error("--outgoing-tls-cert and --outgoing-tls-key need --outgoing-tls-ca")
    if (args.outgoing_tls_cert is None) != (args.outgoing_tls_key is None):
        parser.error("a client certificate needs both --outgoing-tls-cert and --outgoing-tls-key")
    try:
        return ClientTls.from_files(root_ca=files[0], cert=files[1], key=files[2])
    except OSError as error:
        parser.error(f"outgoing TLS: {error}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until SIGTERM/SIGINT; exit 0 after a graceful stop."""
    follow_supervisor()
    config = parse_args(argv)
    configure_logging(config.log_level, config.log_format)
    if config.workers > 1:
        _log_start(config, "the parent of the workers")
        return run_workers(sys.argv[1:] if argv is None else argv, config)
    try:
        loop = choose_loop(config.loop)
        if config.metrics_snapshots is None:  # a worker's parent has said it all
            _log_start(config, f"event loop {loop.name}")
        return serve_until_signal(config, loop)
    except (OSError, ValueError, ToolRegistryError) as error:
        _log.error("%s", error)
        return 1


def _log_start(config: ServerConfig, role: str) -> None:
    """The release, the platform and every setting that differs from its default (in JSON,
    every setting, as ``config``); never a secret."""
    described = config.described()
    defaults = ServerConfig().described()
    changed = " ".join(
        f"{name}={value}" for name, value in described.items() if value != defaults.get(name)
    )
    _log.info(
        "llmworker-server %s starting (Python %s, grpcio %s, %s); settings: %s",
        __version__,
        platform.python_version(),
        grpc.__version__,
        role,
        changed or "all defaults",
        extra={FIELDS: {"version": __version__, "config": described}},
    )


def _state_url(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The --state URL: the flag, else --state-file's content, else $LLMWORKER_STATE."""
    if args.state is not None and args.state_file is not None:
        parser.error("--state and --state-file both name the store; keep one")
    if args.state is not None:
        return str(args.state)
    if args.state_file is not None:
        path: Path = args.state_file
        exposed = exposed_secret_file(path)
        if exposed is not None:
            parser.error(f"--state-file {exposed}")
        try:
            return path.read_text().strip()
        except OSError as error:
            parser.error(f"--state-file: {error}")
    return os.environ.get(STATE_ENV, "")


def _mcp_servers(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> tuple[McpServerSettings, ...]:
    """The MCP servers to import from: each ``--mcp-server``, then ``--mcp-servers``'s."""
    try:
        servers = [server_from_flag(value) for value in args.mcp_server]
        if args.mcp_servers is not None:
            servers += load_servers_file(args.mcp_servers)
    except ConfigError as error:
        parser.error(str(error))
    return tuple(servers)
