"""The server process: listeners, health, reflection, locking, shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import grpc.aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from llmworker import Mutable, ToolDefinition, Worker, tool_definitions

from .calls.limits import CallLimits
from .calls.search_tool import search_tool_definition
from .calls.service import ToolService
from .config import ServerConfig, default_internal_socket, is_loopback, split_address
from .demo_tools import DemoTools
from .errors import ConfigError
from .loading import load_definitions
from .ops.call_log import CallLog
from .ops.metrics import Gauges, ServerMetrics
from .ops.metrics_http import MetricsListener
from .ops.worker_metrics import SnapshotWriter
from .registry.provider_identity import ProviderCheck
from .registry.providers import ProviderMonitor
from .registry.registry import Registry
from .registry.replicas import ReplicaRegistrations
from .registry.service import RegistryService
from .rpc.audit import AUDIT
from .rpc.auth import CallerCheck
from .rpc.drain import DrainGate
from .rpc.health import ServerHealth
from .rpc.reflection import enable_reflection
from .rpc.tls import ListenerTls
from .state.location import open_store
from .state.store import PausedStore, SavedBatches, StateUnavailable

if TYPE_CHECKING:  # OpenTelemetry is imported with --otel only, the MCP SDK with --mcp-address
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.trace import TracerProvider

    from .mcp_front.front import McpFront
    from .mcp_import.imports import McpImports
    from .ops.tracing import Tracing

__all__ = ["ServerApp"]

_log = logging.getLogger("llmworker.server.lifecycle")
_QUIET_SECONDS = 0.05
_STORE_REFRESH_SECONDS = 5.0
_MAX_HOLD_SECONDS = 2.0
_TOOL_SERVICE = "llmworker.v1.ToolService"
_REGISTRY_SERVICE = "llmworker.v1.ToolRegistry"


class ServerApp:
    """One llmworker server: the public ToolService and, unless disabled, the internal
    ToolRegistry listener.

    >>> app = ServerApp(ServerConfig(port=0, demo=True))
    >>> await app.start(); print(app.port); await app.stop()  # doctest: +SKIP
    """

    def __init__(
        self,
        config: ServerConfig,
        worker: Worker[Mutable] | None = None,
        *,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        """``tracer_provider`` makes the spans of ``config.otel`` (default: one configured by
        the ``OTEL_*`` variables, shut down with the server)."""
        config.check()
        self.config = config
        self._worker = worker or Worker()
        self.registry = Registry(self._worker, config.max_message_bytes)
        limits = CallLimits(
            config.call_timeout,
            config.tool_timeouts,
            config.max_concurrent_calls,
            config.max_input_bytes,
            config.tool_max_input_bytes,
            config.max_message_bytes - 16,
            config.max_batch_calls,
            config.max_watchers,
        )
        self.metrics = self._new_metrics()
        self._call_log = self._new_call_log()
        self._gate = DrainGate()
        self._auth = CallerCheck(config.auth_tokens) if config.auth_tokens else None
        self.tools = ToolService(
            self.registry,
            limits,
            self._call_log,
            redact_errors=config.redact_errors,
            gate=self._gate,
            paused=self._new_store(),
            auth=self._auth,
            core_tools=config.core_tools,
        )
        self._own_tracer_provider: SdkTracerProvider | None = None
        self._tracing = self._new_tracing(tracer_provider) if config.otel else None
        self._provider_check = ProviderCheck(shared_token=config.token, path=config.provider_tokens)
        self._registry_service = RegistryService(
            self.registry,
            self._provider_check,
            config.call_timeout,
            self._gate,
            config.outgoing_tls,
            config.provider_check_timeout,
            interceptors=self._tracing.client_interceptors() if self._tracing else (),
        )
        self._tls = ListenerTls(config.tls) if config.tls is not None else None
        self._registration: ReplicaRegistrations | None = None
        self._stopped = False
        self._health = ServerHealth()
        self.imports = self._new_imports() if config.mcp_servers else None
        self._providers = ProviderMonitor(
            self.registry,
            self._registry_service,
            config.provider_lease,
            self._health,
            elsewhere=self.imports.owns if self.imports else None,
        )
        self._metrics_listener: MetricsListener | None = None
        self._snapshots: SnapshotWriter | None = None
        self._public: grpc.aio.Server | None = None
        self._internal: grpc.aio.Server | None = None
        self._lock_timer: asyncio.TimerHandle | None = None
        self._refresher: asyncio.Future[None] | None = None
        self._mcp: McpFront | None = None
        self.port = 0
        self.mcp_port = 0
        self.internal_target: str | None = None

    async def start(self) -> None:
        """Load the tools, open the paused-batch store, listen, and report SERVING."""
        self.registry.register(self._definitions())
        await self._open_store()
        self._public = self._new_server(reuse_port=self.config.reuse_port)
        self.tools.add_to(self._public, self._tracing)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._public)
        enable_reflection(self._public, [_TOOL_SERVICE, health.SERVICE_NAME])
        self.port = _bind(self._public, self.config.public_address, self._credentials())
        if self.config.internal:
            self._internal = self._new_server(reuse_port=False)
            self._registry_service.add_to(self._internal)
            self.internal_target = self._bind_internal(self._internal)
        await self._public.start()
        if self._internal:
            await self._internal.start()
            self._providers.start()
        if self.imports is not None:
            await self.imports.start()  # before a lock: their tools are part of the set
        self._schedule_lock()
        self._start_metrics()
        await self._start_mcp()
        await self._health.set("", health_pb2.HealthCheckResponse.SERVING)
        await self._health.set(_TOOL_SERVICE, health_pb2.HealthCheckResponse.SERVING)
        _log.info(
            "serving %d tools on %s:%d (internal: %s, registry %s%s, %s, %s)",
            len(self.registry.handle),
            self.config.host,
            self.port,
            self.internal_target or "off",
            "locked" if self.registry.is_locked else "mutable",
            ", provider identities" if self.config.provider_tokens else "",
            self._transport(),
            "callers checked" if self._auth else "any caller",
        )
        if self._tls is None and not is_loopback(self.config.host):
            _log.warning(
                "serving plaintext on %s:%d (--allow-insecure): anyone who can reach it can "
                "read and forge calls; keep it behind a proxy that terminates TLS",
                self.config.host,
                self.port,
            )
        if self.config.register_with:
            await self._register_with(self.config.register_with)

    async def stop(self, grace: float | None = None, *, drain_delay: float = 0.0) -> None:
        """Stop without losing a call the server accepted.

        Health turns NOT_SERVING; after ``drain_delay`` seconds (for load balancers to move
        away) calls that arrive are held until none has arrived for 50 ms, so gRPC's queue
        of accepted calls is empty when the listeners close; then the held calls and those
        in flight get ``grace`` seconds to finish (with no grace, held calls are answered
        UNAVAILABLE / SHUTTING_DOWN, which clients may retry). Streams that never reached a
        handler are cut once the handlers are done, so they cannot hold up the stop. A second
        call does nothing.
        """
        if self._stopped:
            return  # a second stop (a signal, then a finally) has nothing left to do
        self._stopped = True
        grace = self.config.grace_seconds if grace is None else grace
        if self._lock_timer:
            self._lock_timer.cancel()
        if self._registration is not None:
            await self._registration.stop()  # the other server stops sending calls here
        await self._health.enter_graceful_shutdown()
        self.tools.watch.close()  # watchers reconnect elsewhere at once
        if drain_delay > 0:
            await asyncio.sleep(drain_delay)
        holding = time.monotonic()
        self._gate.close()
        await self._gate.wait_quiet(_QUIET_SECONDS, cap=min(_MAX_HOLD_SECONDS, grace / 2))
        grace = max(0.0, grace - (time.monotonic() - holding))  # the hold counts against it
        servers = [server for server in (self._public, self._internal) if server]
        stopping = [asyncio.ensure_future(server.stop(grace)) for server in servers]
        await asyncio.sleep(0.005)  # the stops have begun: listeners closed, GOAWAY sent
        self._gate.release(run=grace > 0)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.tools.wait_idle(), grace)
        await asyncio.gather(*(server.stop(0) for server in servers))
        await asyncio.gather(*stopping)
        if self._mcp is not None:
            await self._mcp.stop()
        await self._providers.stop()
        if self.imports is not None:
            await self.imports.stop()
        await self._close_store()
        await self._registry_service.close()
        if self._call_log is not None:
            self._call_log.close()
        await self._stop_metrics()
        if self._own_tracer_provider is not None:
            await asyncio.to_thread(self._own_tracer_provider.shutdown)  # exports what is left
        self._remove_socket()
        _log.info("stopped")

    async def _start_mcp(self) -> None:
        address = self.config.mcp_address
        if address is None:
            return
        try:
            from .mcp_front.approval_rounds import ApprovalRounds
            from .mcp_front.calls import McpCalls
            from .mcp_front.front import MAX_SESSIONS, McpFront
        except ImportError as error:
            raise ConfigError(
                f"--mcp-address needs the MCP SDK ({error}): pip install 'llmworker[mcp]'"
            ) from error
        approvals = ApprovalRounds(lambda: self.registry.worker, self.tools.paused_batches)
        calls = McpCalls(
            self.registry,
            self.tools.admission,
            self.tools.responses,
            self._auth,
            approvals,
            MAX_SESSIONS,
        )
        tracer = None if self._tracing is None else self._tracing.tracer
        self._mcp = McpFront(self.config, calls, self._auth, self.registry, tracer)
        self.mcp_port = await self._mcp.start(address)
        host = split_address(address)[0]
        scheme = "https" if self._tls is not None else "http"
        shown = f"[{host}]" if ":" in host else host
        _log.info("serving MCP on %s://%s:%d/mcp", scheme, shown, self.mcp_port)

    def _new_imports(self) -> McpImports:
        try:
            from .mcp_import.imports import McpImports
        except ImportError as error:
            raise ConfigError(
                f"--mcp-server needs the MCP SDK ({error}): pip install 'llmworker[mcp]'"
            ) from error
        config = self.config
        return McpImports(
            config.mcp_servers,
            self.registry,
            separator=config.mcp_tool_separator,
            require_approval=config.require_approval,
            lease=config.provider_lease,
            span=None if self._tracing is None else self._tracing.mcp_client_span,
        )

    def _new_tracing(self, provider: TracerProvider | None) -> Tracing:
        try:
            from .ops.tracing import Tracing, provider_from_environment
        except ImportError as error:
            raise ConfigError(
                f"--otel needs OpenTelemetry ({error}): pip install 'llmworker[otel]'"
            ) from error
        if provider is None:
            provider = self._own_tracer_provider = provider_from_environment()
        return Tracing(provider, self.tools.next_call_id)

    def _new_store(self) -> PausedStore:
        config = self.config
        saved = SavedBatches(
            lambda paused: self.registry.worker.save_paused(paused),
            lambda text: self.registry.worker.load_paused(text),
        )
        return open_store(
            config.state,
            config.state_dir,
            config.pause_ttl,
            config.max_paused_batches,
            saved,
            config.state_pool_size,
        )

    async def _open_store(self) -> None:
        """Open the store (creating or upgrading its schema), after refusing pre-hooks a
        shared store could not check on resume; then sweep and count it every few seconds."""
        store = self.tools.paused_batches
        unnamed = self.registry.worker.unnamed_pre_hooks()
        if store.shared and unnamed:
            raise ConfigError(
                f"the pre-tool-call hooks {', '.join(unnamed)} have no stable name, and "
                f"paused batches go to {store.describe()}, where another process (or this "
                "one after a restart) resumes them only with the same hooks: define each "
                "hook as a named function or class, or use --state memory"
            )
        try:
            await store.open()
        except StateUnavailable as error:
            raise ConfigError(str(error)) from error
        self._refresher = asyncio.ensure_future(self._refresh_store(store))
        _log.info("paused batches in %s (%d held)", store.describe(), store.count)

    async def _refresh_store(self, store: PausedStore) -> None:
        while True:
            await asyncio.sleep(_STORE_REFRESH_SECONDS)
            try:
                await store.refresh()
            except StateUnavailable as error:
                _log.warning("could not count paused batches: %s", error)
            except Exception:  # a defect: log it, and keep sweeping at the next tick
                _log.exception("sweeping the paused-batch store failed")

    def _oldest_paused_age(self) -> int:
        oldest = self.tools.paused_batches.oldest_created
        return 0 if oldest is None else max(0, int(time.time() - oldest))

    async def _close_store(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher
        await self.tools.paused_batches.close()

    def _new_metrics(self) -> ServerMetrics | None:
        if self.config.metrics_address is None and self.config.metrics_snapshots is None:
            return None
        gauges = Gauges(
            in_flight=lambda: self.tools.in_flight,
            tools=lambda: len(self.registry.handle),
            providers_up=lambda: self._providers.up,
            paused_batches=lambda: self.tools.paused_batches.count,
            paused_batch_oldest_age_seconds=self._oldest_paused_age,
            watchers=lambda: self.tools.watch.watchers,
        )
        return ServerMetrics(
            gauges, self.registry.handle.__contains__, AUDIT.counts, AUDIT.decision_counts
        )

    def _new_call_log(self) -> CallLog | None:
        """Where finished calls go: log lines at INFO, and the metrics (None: nowhere)."""
        logged = logging.getLogger("llmworker.server.calls").isEnabledFor(logging.INFO)
        if not logged and self.metrics is None:
            return None
        json_lines = self.config.log_format == "json"
        return CallLog(sys.stderr if logged else None, json_lines=json_lines, metrics=self.metrics)

    def _start_metrics(self) -> None:
        if self.metrics is None:
            return
        if self.config.metrics_address is not None:
            self._metrics_listener = MetricsListener(
                self.config.metrics_address, self.metrics, self.config.tls
            )
        if self.config.metrics_snapshots is not None:
            self._snapshots = SnapshotWriter(self.config.metrics_snapshots, self.metrics)
            self._snapshots.start()

    async def _stop_metrics(self) -> None:
        if self._snapshots is not None:
            await self._snapshots.stop()
        if self._metrics_listener is not None:
            await self._metrics_listener.aclose()

    @property
    def metrics_port(self) -> int | None:
        """The port metrics are served on (``--metrics-address`` with port 0 picks one)."""
        return self._metrics_listener.port if self._metrics_listener else None

    def _remove_socket(self) -> None:
        if self.internal_target and self.internal_target.startswith("unix:"):
            with contextlib.suppress(FileNotFoundError):
                Path(self.internal_target.removeprefix("unix:")).unlink()

    def _definitions(self) -> list[ToolDefinition]:
        definitions: list[ToolDefinition] = []
        if self.config.demo:
            definitions.extend(tool_definitions(DemoTools()))
        for spec in self.config.tool_specs:
            definitions.extend(load_definitions(spec))
        if self.config.search_tool:
            definitions.append(search_tool_definition(self.tools.search, self._auth is not None))
        return definitions

    def _new_server(self, *, reuse_port: bool) -> grpc.aio.Server:
        config = self.config
        return grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", config.max_message_bytes),
                ("grpc.max_send_message_length", config.max_message_bytes),
                ("grpc.so_reuseport", 1 if reuse_port else 0),
                ("grpc.max_concurrent_streams", config.max_concurrent_streams),
                ("grpc.max_connection_idle_ms", _milliseconds(config.max_connection_idle)),
                ("grpc.max_connection_age_ms", _milliseconds(config.max_connection_age)),
                (
                    "grpc.max_connection_age_grace_ms",
                    _milliseconds(config.max_connection_age_grace),
                ),
                # HTTP/2 keepalive for long-lived streams that carry no data for a long time
                # (WatchDefinitions): clients may ping every 10 s, even between calls,
                # without being told "too many pings". (The server's own pings are not
                # enabled: grpc-core's keepalive timer costs every call ~14 µs of CPU.)
                ("grpc.http2.max_pings_without_data", 0),
                ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
                ("grpc.keepalive_permit_without_calls", 1),
            ]
        )

    def _bind_internal(self, server: grpc.aio.Server) -> str:
        if self.config.internal_address:
            port = _bind(server, self.config.internal_address, self._credentials())
            host = self.config.internal_address.rsplit(":", 1)[0]
            return f"{host}:{port}"
        path = self.config.internal_socket or default_internal_socket()
        if path.is_socket():
            path.unlink()  # left by a process that died; binding would fail
        _bind(server, f"unix:{path}", None)  # a socket only this user can open
        path.chmod(0o600)
        return f"unix:{path}"

    def reload(self) -> None:
        """Read the TLS certificates, the caller tokens and the provider tokens again
        (SIGHUP); a file that cannot be used keeps what is in use."""
        if self._tls is not None:
            self._tls.reload()
        if self._auth is not None:
            self._auth.reload()
        if self._provider_check.reload():
            self._warn_of_orphans()

    def _warn_of_orphans(self) -> None:
        """Log the tools whose provider identity the reloaded file no longer has: they stay
        until an identity with may_lock unregisters them or their provider goes."""
        gone = self.registry.owners() - self._provider_check.labels()
        if gone:
            _log.warning(
                "provider identities %s are no longer in --provider-tokens; their tools %s "
                "stay until an identity with may_lock unregisters them or their provider stops",
                ", ".join(sorted(gone)),
                ", ".join(self.registry.owned_by(gone)),
            )

    def _transport(self) -> str:
        if self._tls is None:
            return "plaintext"
        return "TLS, client certificates required" if self._tls.files.client_ca else "TLS"

    def _credentials(self) -> grpc.ServerCredentials | None:
        return None if self._tls is None else self._tls.credentials()

    def _schedule_lock(self) -> None:
        if not self.config.internal or self.config.lock_at_start:
            self.registry.lock()
        elif self.config.registration_window is not None:
            loop = asyncio.get_running_loop()
            self._lock_timer = loop.call_later(self.config.registration_window, self.registry.lock)

    async def _register_with(self, target: str) -> None:
        config = self.config
        registration = ReplicaRegistrations(
            target,
            config.advertise or f"{config.host}:{self.port}",
            self.registry.handle.tool_definitions_sorted(),
            config.token,
            config.outgoing_tls,
            renew_every=config.provider_lease / 2,
            resolve_every=config.register_resolve_interval,
        )
        await registration.start()
        self._registration = registration


def _milliseconds(seconds: float) -> int:
    """A duration for a gRPC channel argument: whole milliseconds, at most INT_MAX."""
    return min(int(seconds * 1000), 2**31 - 1)


def _bind(server: grpc.aio.Server, address: str, credentials: grpc.ServerCredentials | None) -> int:
    try:
        if credentials is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, credentials)
    except RuntimeError as error:
        raise OSError(
            f"cannot listen on {address} ({error}); is another process using it?"
        ) from None
    if port == 0:
        raise OSError(f"cannot listen on {address}; is another process using it?")
    return port
