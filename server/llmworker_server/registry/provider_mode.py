"""Provider mode (``--register-with``): this server's tools registered with another server's
internal ToolRegistry, and kept there.

The registration is renewed every ``lease / 2`` seconds (an identical definition changes
nothing on the other side), so a restarted server gets the tools back within that time.
A name taken by another provider (often this provider's previous run, which the other
server removes once its lease runs out) or an unreachable server is logged and retried; a
registration refused for good (a locked registry, a wrong token, a definition it does not
take) stops this server with a message saying what to do. A graceful stop unregisters the
tools first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Final

from llmworker import (
    ClientTls,
    RemoteServiceError,
    ToolMeta,
    ToolRegistryClient,
    ToolRegistryError,
    ToolServerError,
)
from llmworker._wire import Reason, printable

__all__ = ["ProviderRegistration", "RegistrationRefused"]

_log = logging.getLogger("llmworker.server.provider")
_UNREGISTER_SECONDS: Final = 2.0
_FOR_GOOD: Final = frozenset(
    {Reason.REGISTRY_LOCKED, Reason.UNAUTHENTICATED, Reason.INVALID_REQUEST, Reason.REGISTRY_FULL}
)


class RegistrationRefused(ValueError):
    """The other server refused the registration for good; the message says what to do."""


class ProviderRegistration:
    """Keeps ``tools`` registered with the ToolRegistry at ``target`` as ``provider``."""

    def __init__(
        self,
        target: str,
        provider: str,
        tools: Sequence[ToolMeta],
        token: str | None,
        tls: ClientTls | None,
        renew_every: float,
    ) -> None:
        self._target = target
        self._provider = provider
        self._tools = list(tools)
        self._client = ToolRegistryClient(target, token, tls=tls, timeout=renew_every)
        self._renew_every = renew_every
        self._task: asyncio.Task[None] | None = None
        self._trouble: str | None = None  # what the last failed attempt logged

    async def start(self) -> None:
        """Register once (``RegistrationRefused`` if refused for good), then keep renewing."""
        try:
            registered = await self._register()
        except RegistrationRefused:
            await self._client.close()
            raise
        if registered:
            _log.info(
                "registered %d tools with %s as %s",
                len(self._tools),
                printable(self._target, 200),
                printable(self._provider, 200),
            )
        self._task = asyncio.get_running_loop().create_task(self._renew())

    async def stop(self) -> None:
        """Stop renewing and unregister the tools (best effort, briefly)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, RegistrationRefused):
                await self._task
        try:
            async with asyncio.timeout(_UNREGISTER_SECONDS):
                for meta in self._tools:
                    with contextlib.suppress(ToolServerError, ToolRegistryError):
                        await self._client.unregister_tool(meta.name, self._provider)
            _log.info("unregistered %d tools from %s", len(self._tools), self._target)
        except TimeoutError:
            _log.warning("could not unregister from %s in time; its lease ends them", self._target)
        await self._client.close()

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self._renew_every)
            try:
                await self._register()
            except RegistrationRefused as refused:
                _log.error("%s", refused)  # the server keeps serving; nothing more to renew
                return

    async def _register(self) -> bool:
        """One attempt at every tool: True if all are registered."""
        try:
            for meta in self._tools:
                await self._client.register_tool(meta, self._provider)
        except ToolRegistryError.DuplicateName as error:
            self._note(
                f"tool '{error.name}' is registered at {self._target} by another provider (if "
                "it is this provider's previous run, the server removes it once its lease "
                f"ends); retrying every {self._renew_every:.3g} s"
            )
            return False
        except RemoteServiceError as error:
            if error.reason in _FOR_GOOD:
                raise RegistrationRefused(
                    f"--register-with {self._target} refused the tools ({error.reason}): "
                    f"{error.message}"
                ) from None
            self._note(
                f"cannot register with {self._target} ({error.reason}: {error.message}); "
                f"retrying every {self._renew_every:.3g} s"
            )
            return False
        except (ToolServerError, ToolRegistryError) as error:  # e.g. a registry's own defect
            self._note(
                f"registering with {self._target} failed ({type(error).__qualname__}: "
                f"{printable(str(error), 300)}); retrying every {self._renew_every:.3g} s"
            )
            return False
        if self._trouble is not None:
            _log.info("registered again with %s", self._target)
            self._trouble = None
        return True

    def _note(self, trouble: str) -> None:
        if trouble != self._trouble:  # once per kind of trouble, not at every retry
            _log.warning("%s", trouble)
            self._trouble = trouble
