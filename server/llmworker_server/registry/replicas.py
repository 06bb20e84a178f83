"""``--register-with`` a name for many replicas: this provider's tools registered with every
registry the target names, and kept there as replicas come and go.

- ``ipv4:10.0.0.1:7000,10.0.0.2:7000`` (or ``ipv6:[…]:p,…``) names each replica's internal
  address;
- ``dns:///registry.internal:7000`` (or ``dns:registry.internal:7000``) names every address the
  name resolves to, resolved again every ``resolve_every`` seconds: a replica that appears is
  registered with, one whose address is gone is left (a replica that comes back at the same
  address gets the tools back at the next renewal, as with one registry);
- anything else (``host:port``, ``unix:…``) is one registry, as before.

Each registry has its own ``ProviderRegistration`` (renewal every ``lease / 2``, its own
warnings); a graceful stop unregisters from all of them at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from collections.abc import Callable, Sequence

from llmworker import ClientTls, ToolMeta
from llmworker._wire import printable

from ..errors import ConfigError
from .provider_mode import ProviderRegistration, RegistrationRefused

__all__ = ["ReplicaRegistrations", "registry_addresses"]

_log = logging.getLogger("llmworker.server.provider")


def _address_target(host: str, port: int | str) -> str:
    return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"


def _dns_name(target: str) -> str | None:
    """``host:port`` of a ``dns:`` target (``dns:///h:p``, ``dns://authority/h:p``,
    ``dns:h:p``), else None."""
    if not target.startswith("dns:"):
        return None
    rest = target.removeprefix("dns:")
    if rest.startswith("//"):
        rest = rest[2:].partition("/")[2]
    return rest


async def registry_addresses(target: str) -> list[str]:
    """The registries ``target`` names, one gRPC target each (sorted; ValueError naming a
    target that is not HOST:PORT)."""
    for scheme in ("ipv4:", "ipv6:"):
        if target.startswith(scheme):
            parts = [part.strip() for part in target[len(scheme) :].split(",")]
            for part in parts:
                host, colon, port = part.rpartition(":")
                if not colon or not host or not port.isdigit():
                    raise ConfigError(
                        f"--register-with {target}: {part!r} is not HOST:PORT; list the "
                        f"replicas as {scheme}HOST:PORT,HOST:PORT"
                    )
            return sorted({f"{scheme}{part}" for part in parts})
    name = _dns_name(target)
    if name is None:
        return [target]
    host, colon, port = name.rpartition(":")
    if not colon or not port.isdigit():
        raise ConfigError(f"--register-with {target}: a dns: target needs HOST:PORT")
    host = host.strip("[]")
    with contextlib.suppress(ValueError):
        return [_address_target(str(ipaddress.ip_address(host)), port)]
    found = await asyncio.get_running_loop().getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    return sorted({_address_target(str(address[4][0]), port) for address in found})


class ReplicaRegistrations:
    """Keeps ``tools`` registered as ``provider`` with every registry ``target`` names."""

    def __init__(
        self,
        target: str,
        provider: str,
        tools: Sequence[ToolMeta],
        token: str | None,
        tls: ClientTls | None,
        renew_every: float,
        resolve_every: float,
    ) -> None:
        self._target = target
        self._make: Callable[[str], ProviderRegistration] = lambda address: ProviderRegistration(
            address, provider, tools, token, tls, renew_every
        )
        self._resolve_every = resolve_every
        self._registrations: dict[str, ProviderRegistration] = {}
        self._refused: set[str] = set()  # registries that refused for good: not asked again
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Register with every registry (``RegistrationRefused`` if one refuses for good:
        the same token and tools would be refused by all), then keep up with the target."""
        try:
            addresses = await registry_addresses(self._target)
        except OSError as error:  # a name not (yet) in DNS: followed until it resolves
            _log.warning("cannot resolve %s (%s); trying again", self._target, error)
            addresses = []
        try:
            for address in addresses:
                registration = self._make(address)
                await registration.start()
                self._registrations[address] = registration
        except RegistrationRefused:
            await self.stop()
            raise
        if len(addresses) > 1:
            _log.info(
                "registering with %d registries: %s",
                len(addresses),
                printable(", ".join(addresses), 400),
            )
        if _dns_name(self._target) is not None:
            self._task = asyncio.get_running_loop().create_task(self._follow())

    async def _follow(self) -> None:
        """Resolve the name again every ``resolve_every`` seconds; join new replicas, leave
        gone ones. Nothing a registry answers ends it."""
        while True:
            await asyncio.sleep(self._resolve_every)
            try:
                await self._follow_once()
            except Exception as error:
                _log.warning(
                    "following %s: %s; trying again in %.3g s",
                    self._target,
                    printable(str(error), 300),
                    self._resolve_every,
                )

    async def _follow_once(self) -> None:
        try:
            addresses = set(await registry_addresses(self._target))
        except OSError as error:
            _log.warning("cannot resolve %s (%s); keeping its registries", self._target, error)
            return
        self._refused &= addresses  # an address reused by a new replica is asked again
        for gone in set(self._registrations) - addresses:
            _log.info("registry %s left %s: unregistering", gone, self._target)
            await self._registrations.pop(gone).stop()
        for new in sorted(addresses - set(self._registrations) - self._refused):
            _log.info("registry %s joined %s: registering", new, self._target)
            registration = self._make(new)
            try:
                await registration.start()
            except RegistrationRefused as refused:
                _log.error("%s", refused)  # that replica only; the others keep the tools
                self._refused.add(new)
                continue
            self._registrations[new] = registration

    async def stop(self) -> None:
        """Stop following the target and unregister from every registry at once."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        registrations, self._registrations = list(self._registrations.values()), {}
        stopped = await asyncio.gather(
            *(registration.stop() for registration in registrations), return_exceptions=True
        )
        for problem in stopped:
            if isinstance(problem, Exception):  # a registry's own lease ends its tools
                _log.warning("could not unregister cleanly: %s", printable(str(problem), 300))
