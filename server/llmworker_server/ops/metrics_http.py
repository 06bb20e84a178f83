"""``--metrics-address``: the HTTP listener Prometheus scrapes (``GET /metrics``)."""

from __future__ import annotations

import asyncio
import logging
from wsgiref.simple_server import WSGIServer

from prometheus_client import start_http_server
from prometheus_client.registry import Collector, CollectorRegistry

from ..config import split_address
from ..rpc.tls import TlsFiles

__all__ = ["MetricsListener"]

_log = logging.getLogger("llmworker.server.lifecycle")


class MetricsListener:
    """Serves ``collector`` at ``address`` (HOST:PORT; port 0 picks one) on a thread of its
    own, over TLS with ``tls``'s certificate and key (client certificates are not asked)."""

    def __init__(self, address: str, collector: Collector, tls: TlsFiles | None) -> None:
        host, port = split_address(address)
        registry = CollectorRegistry(auto_describe=True)
        registry.register(collector)
        self._server: WSGIServer
        self._server, _ = start_http_server(
            port,
            addr=host,
            registry=registry,
            certfile=str(tls.cert) if tls else None,
            keyfile=str(tls.key) if tls else None,
        )
        self.port: int = self._server.server_port
        _log.info(
            "metrics on %s://%s:%d/metrics",
            "https" if tls else "http",
            f"[{host}]" if ":" in host else host,
            self.port,
        )

    def close(self) -> None:
        """Stop serving (a scrape in progress finishes)."""
        self._server.shutdown()
        self._server.server_close()

    async def aclose(self) -> None:
        """``close`` without blocking the event loop (shutdown waits up to 0.5 s)."""
        await asyncio.to_thread(self.close)
