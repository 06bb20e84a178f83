"""Providers that come and go: every provider with tools is checked on an interval, and one
that fails every check for its lease has its tools removed from a mutable registry.

A check asks the provider's ``grpc.health.v1.Health`` (service ``""``): SERVING passes, and
so does UNIMPLEMENTED (a provider without health checking answered all the same);
NOT_SERVING, no answer within the interval or no connection fail. On a locked registry the
tool set is fixed: a gone provider's tools stay listed and answer PROVIDER_UNAVAILABLE until
it comes back.

The server's health service reports each provider under ``llmworker.provider/<target>``:
SERVING while it passes its checks, NOT_SERVING while it fails them, SERVICE_UNKNOWN once it
has left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Final

import grpc
import grpc.aio
from grpc_health.v1 import health, health_pb2

from llmworker._wire import printable

from .registry import Registry
from .service import RegistryService

__all__ = ["ProviderMonitor", "provider_health_name"]

_log = logging.getLogger("llmworker.server.providers")
_HEALTH_CHECK: Final = "/grpc.health.v1.Health/Check"


def provider_health_name(provider: str) -> str:
    """The health service name under which the server reports ``provider``."""
    return f"llmworker.provider/{provider}"


class ProviderMonitor:
    """Checks each provider every ``lease / 4`` seconds and removes the tools of one that
    has not passed a check for ``lease`` seconds."""

    def __init__(
        self,
        registry: Registry,
        service: RegistryService,
        lease: float,
        health: health.aio.HealthServicer | None = None,
        *,
        elsewhere: Callable[[str], bool] | None = None,
    ) -> None:
        """``elsewhere`` tells the providers another part checks (imported MCP servers)."""
        self._registry = registry
        self._service = service
        self._elsewhere = elsewhere
        self._health = health
        self._reported: dict[str, bool] = {}  # provider -> the health status last set
        self._lease = lease
        self._interval = lease / 4
        self._passed: dict[str, float] = {}  # provider -> when it last passed a check
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            providers = self._checked()
            for gone in set(self._passed) - set(providers):
                del self._passed[gone]  # unregistered meanwhile
            for gone in set(self._reported) - set(providers):
                await self._report(gone, None)
            results = await asyncio.gather(*(self._check(provider) for provider in providers))
            now = time.monotonic()
            for provider, passed in zip(providers, results, strict=True):
                await self._report(provider, passed)
                if passed:
                    if self._passed.get(provider) == 0.0:
                        _log.info("provider %s answers again", printable(provider, 200))
                    self._passed[provider] = now
                elif now - self._passed.setdefault(provider, now) >= self._lease:
                    self._expire(provider)

    def _checked(self) -> list[str]:
        """The providers this monitor checks: those with tools, save the ones elsewhere's."""
        providers = self._registry.provider_targets()
        if self._elsewhere is None:
            return providers
        return [provider for provider in providers if not self._elsewhere(provider)]

    @property
    def up(self) -> int:
        """Providers whose last health check passed."""
        return sum(self._reported.values())

    async def _report(self, provider: str, serving: bool | None) -> None:
        """Set ``provider``'s status in the server's health service (None: it left)."""
        if self._health is None or self._reported.get(provider) == serving:
            return
        status = {
            True: health_pb2.HealthCheckResponse.SERVING,
            False: health_pb2.HealthCheckResponse.NOT_SERVING,
            None: health_pb2.HealthCheckResponse.SERVICE_UNKNOWN,
        }[serving]
        await self._health.set(provider_health_name(provider), status)
        if serving is None:
            del self._reported[provider]
        else:
            self._reported[provider] = serving

    async def _check(self, provider: str) -> bool:
        """Whether ``provider`` is alive: its health check answers SERVING, or UNIMPLEMENTED
        (a server without health checking answered all the same)."""
        check = self._service.channel_of(provider).unary_unary(
            _HEALTH_CHECK,
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        try:
            reply = await check(health_pb2.HealthCheckRequest(), timeout=self._interval)
        except grpc.aio.AioRpcError as error:
            return error.code() is grpc.StatusCode.UNIMPLEMENTED
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    def _expire(self, provider: str) -> None:
        names = self._registry.tools_of(provider)
        shown = printable(provider, 200)
        if self._registry.is_locked:
            if self._passed.get(provider, 0.0) > 0.0:
                _log.warning(
                    "provider %s failed its checks for %.3g s; the registry is locked, so its "
                    "tools stay listed and answer PROVIDER_UNAVAILABLE until it is back",
                    shown,
                    self._lease,
                )
                self._passed[provider] = 0.0  # warned: once per outage
            return
        for name in names:
            with contextlib.suppress(KeyError):
                self._registry.unregister(name)
        _log.warning(
            "provider %s failed its checks for %.3g s: removed its tools %s",
            shown,
            self._lease,
            ", ".join(names),
        )
        self._passed.pop(provider, None)
        self._service.forget_if_gone(provider)
