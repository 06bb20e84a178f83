"""Reaching a ToolServer over gRPC: remote ToolServerHandles (the proxy Tool is
``RemoteTool``, in ``remote_tool``; the blocking handle is in ``sync_remote``).

``RemoteToolServerHandle`` has the public methods of ``ToolServerHandle``: ``get_tool``,
``tool_definitions_sorted``, ``definitions_for``, ``len()`` and ``in`` answer from a cached
copy of the server's definitions (kept current by ``WatchDefinitions``, or refreshed cheaply
by fingerprint with ``await refresh()``), ``call_tool`` always asks the server and raises
what a local handle would. So hooks and application code run unchanged on either.

>>> async with await RemoteToolServerHandle.connect("127.0.0.1:50051") as handle:
...     print(await handle.call_tool("echo", '{"text": "hi"}'))
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Mapping, Sequence
from typing import Final, final

import grpc
import grpc.aio

from .._formats.definition_formats import DefinitionFormat
from .._model.calls import ToolCall
from .._model.decisions import Decision
from .._model.errors import RemoteServiceError
from .._model.outcomes import Completed, RemotePaused
from .._model.tool import Tool
from .._model.tool_meta import ToolMeta
from .._runtime.streaming import StreamEvent
from .._wire.status import Reason, error_from_rpc
from .._wire.stubs import (
    CALL_TOOL,
    CALL_TOOL_STREAM,
    CALL_TOOLS,
    LIST_DEFINITIONS_SORTED,
    RESUME_BATCH,
    SEARCH_TOOLS,
    WATCH_DEFINITIONS,
    bind,
    raise_failure,
)
from .._wire.tls import ClientTls, aio_channel, with_tls_hint
from ..v1 import tool_service_pb2 as pb
from .balancing import RETRYING_SERVICE_CONFIG, SERVICE_CONFIG, retry_is_safe
from .base import DefinitionsCache, RemoteHandleBase, stream_request
from .batch import ResumeToken, aborted, calls_request, outcome_of, resume_request
from .channel_owner import ChannelOwner
from .found_tools import FoundTools, found_tools, search_request
from .remote_tool import RemoteTool
from .stream import read_events
from .sync_remote import SyncRemoteToolServerHandle

__all__ = ["RemoteToolServerHandle", "SyncRemoteToolServerHandle"]


_WATCH_RETRY_FIRST: Final = 0.5
_WATCH_RETRY_MAX: Final = 30.0

_TOKEN_USED: Final = frozenset({Reason.RESUME_TOKEN_UNKNOWN.value, Reason.HOOK_ABORTED.value})
"""Failures of ResumeBatch after which the server no longer holds the batch."""


def _service_config(config: str) -> tuple[str, str]:
    return ("grpc.service_config", config)


@final
class RemoteToolServerHandle(RemoteHandleBase, ChannelOwner):
    """A ToolServerHandle backed by a gRPC channel (asyncio).

    Besides calls, it reads the cached definitions as a local handle reads its registry:
    ``tool_definitions_sorted()``, ``definitions_snapshot()``, ``definitions_fingerprint()``,
    ``definitions_for(format)``, ``len(handle)`` and ``name in handle``.
    """

    def __init__(
        self,
        channel: grpc.aio.Channel,
        *,
        call_timeout: float | None = None,
        retrying_channel: grpc.aio.Channel | None = None,
    ) -> None:
        """Calls go through ``channel``; a call to a tool annotated idempotent or read-only
        goes through ``retrying_channel`` instead, when given (``connect(balanced=True)``)."""
        self._channel = channel
        self._retrying = retrying_channel
        self._retrying_call = bind(CALL_TOOL, retrying_channel) if retrying_channel else None
        self._call_timeout = call_timeout
        self._cache = DefinitionsCache()
        self._tools: dict[str, RemoteTool] = {}
        self._list = bind(LIST_DEFINITIONS_SORTED, channel)
        self._search = bind(SEARCH_TOOLS, channel)
        self._watch_method = bind(WATCH_DEFINITIONS, channel)
        self._watching: asyncio.Task[None] | None = None
        self._call = bind(CALL_TOOL, channel)
        self._call_tools = bind(CALL_TOOLS, channel)
        self._resume = bind(RESUME_BATCH, channel)
        self._stream = bind(CALL_TOOL_STREAM, channel)

    @classmethod
    async def connect(
        cls,
        target: str,
        *,
        call_timeout: float | None = None,
        max_message_bytes: int = 4 << 20,
        watch: bool = True,
        tls: ClientTls | None = None,
        token: str | None = None,
        balanced: bool = False,
    ) -> RemoteToolServerHandle:
        """Open a channel to ``target`` (over TLS with ``tls``, else plaintext) and fetch
        the definitions; with ``watch`` (the default), keep them current as the server's
        registry changes (``WatchDefinitions``: no polling; a server without it is left to
        ``refresh()``). ``token`` goes with every call as ``authorization: Bearer`` (for a
        server that checks callers); one with a line break is refused (``ValueError``).

        ``balanced`` spreads calls over every replica ``target`` names
        (``dns:///tools.internal:50051``, ``ipv4:10.0.0.1:50051,10.0.0.2:50051``) with gRPC's
        ``round_robin`` and client-side health checking, and retries a call that failed with
        UNAVAILABLE on another replica, but only for a tool annotated idempotent or read-only
        (``_client/balancing.py``: any other call might then run twice)."""
        options: list[tuple[str, int | str]] = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
        ]
        if not balanced:
            channel, retrying = aio_channel(target, tls, options, token), None
        else:
            channel = aio_channel(target, tls, [*options, _service_config(SERVICE_CONFIG)], token)
            retrying = aio_channel(
                target, tls, [*options, _service_config(RETRYING_SERVICE_CONFIG)], token
            )
        handle = cls(channel, call_timeout=call_timeout, retrying_channel=retrying)
        try:
            await handle.refresh()
        except RemoteServiceError as error:
            await handle.close()
            raise with_tls_hint(error, tls) from None
        except BaseException:
            await handle.close()
            raise
        if watch:
            handle.start_watching()
        return handle

    def start_watching(self) -> None:
        """Keep the cached definitions current through ``WatchDefinitions`` until ``close``
        (reconnecting with backoff when the stream ends)."""
        if self._watching is None or self._watching.done():
            self._watching = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        backoff = _WATCH_RETRY_FIRST
        while True:
            call = self._watch_method(self._cache.watch_request())
            try:
                async for response in call:
                    backoff = _WATCH_RETRY_FIRST
                    if self._cache.update(response):
                        self._tools = self._proxies()
            except grpc.aio.AioRpcError as error:
                if error.code() is grpc.StatusCode.UNIMPLEMENTED:
                    return  # an older server: refresh() it is
            except Exception:  # a message this client cannot read: watch again later
                pass
            finally:
                call.cancel()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _WATCH_RETRY_MAX)

    async def close(self) -> None:
        """Stop watching and close the channel."""
        if self._watching is not None:
            self._watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watching
        if self._retrying is not None:
            await self._retrying.close()
        await super().close()

    async def refresh(self) -> bool:
        """Fetch the definitions unless the server's fingerprint is the one held; True if
        they changed."""
        try:
            response = await self._list(self._cache.list_request(), timeout=self._call_timeout)
        except grpc.aio.AioRpcError as rpc_error:
            raise_failure(rpc_error)
        changed = self._cache.update(response)
        if changed:
            self._tools = self._proxies()
        return changed

    def _proxies(self) -> dict[str, RemoteTool]:
        return {
            name: RemoteTool(self._channel_for(meta), name, self._call_timeout)
            for name, meta in self._cache.by_name.items()
        }

    def _channel_for(self, meta: ToolMeta | None) -> grpc.aio.Channel:
        if self._retrying is not None and retry_is_safe(meta):
            return self._retrying
        return self._channel

    def get_tool(self, name: str) -> tuple[ToolMeta, Tool] | None:
        """The cached meta and a proxy Tool for ``name``, or None."""
        meta = self._cache.by_name.get(name)
        return None if meta is None else (meta, self._tools[name])

    async def call_tool(self, name: str, input_json: str) -> str:
        """Run ``name`` on the server; raises as ``ToolServerHandle.call_tool`` does."""
        call = self._call
        if self._retrying_call is not None and retry_is_safe(self._cache.by_name.get(name)):
            call = self._retrying_call
        try:
            response = await call(
                pb.CallToolRequest(name=name, input_json=input_json), timeout=self._call_timeout
            )
        except grpc.aio.AioRpcError as rpc_error:
            raise_failure(rpc_error)
        return response.output

    async def search_tools(
        self, query: str, *, limit: int = 10, form: DefinitionFormat | None = None
    ) -> FoundTools:
        """The tools the server's ``SearchTools`` ranks best for ``query`` (a few words: "delete
        a key"), at most ``limit`` (1-100), best first; with ``form``, also as that provider's
        ``tools`` JSON. Only the tools this handle's token may use are found. A bad query or
        limit raises ``RemoteServiceError`` (INVALID_REQUEST) naming it."""
        try:
            response = await self._search(
                search_request(query, limit, form), timeout=self._call_timeout
            )
        except grpc.aio.AioRpcError as rpc_error:
            raise_failure(rpc_error)
        return found_tools(response, form)

    async def call_tools(self, calls: Sequence[ToolCall]) -> Completed | RemotePaused:
        """Run a batch on the server (CallTools), as ``Worker.call_tools`` runs one: the
        server's hooks and approvals apply, and its timeouts (the calls' own ``deadline`` and
        ``timeout`` stay here: the RPC has the handle's ``call_timeout``). A ``RemotePaused``
        outcome holds the server's resume token; a hook's ``Abort`` raises
        ``ToolBatchAborted``."""
        request = calls_request(calls)
        return await self._batch(self._call_tools(request, timeout=self._call_timeout))

    async def resume(
        self, paused: RemotePaused, decisions: Mapping[str, Decision] | None = None
    ) -> Completed | RemotePaused:
        """Go on with a batch this server paused (ResumeBatch), as ``Worker.resume``; an
        in-process ``Paused`` is refused (``WorkerError``; type checkers refuse it too)."""
        decisions = decisions or {}
        token = paused.take(ResumeToken, decisions)
        request = resume_request(token.token, decisions)
        try:
            return await self._batch(self._resume(request, timeout=self._call_timeout))
        except RemoteServiceError as error:
            if error.reason not in _TOKEN_USED:  # the server kept the batch: resume again
                paused.give_back(token)
            raise

    async def _batch(self, answer: Awaitable[pb.CallToolsResponse]) -> Completed | RemotePaused:
        try:
            response = await answer
        except grpc.aio.AioRpcError as rpc_error:
            error = error_from_rpc(rpc_error)
            if isinstance(error, RemoteServiceError):
                stopped = aborted(error)
                if stopped is not None:
                    raise stopped from None
            raise error from error.__cause__
        return outcome_of(response)

    def stream_tool(
        self,
        name: str,
        input_json: str,
        *,
        call_id: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> AsyncGenerator[StreamEvent]:
        """Run ``name`` on the server as a stream (CallToolStream), as ``Worker.stream_tool``:
        progress and chunks, then the result as a ``ToolOutput``; the failure raised as
        ``call_tool`` raises it. Closing the generator cancels the call."""
        request = stream_request(name, input_json, call_id, metadata)
        return read_events(self._stream(request, timeout=self._call_timeout))
