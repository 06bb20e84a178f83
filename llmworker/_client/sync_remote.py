"""The blocking remote handle, for scripts and sync code: ``RemoteToolServerHandle``'s
lookups, calls and streams over a blocking channel (re-exported by ``remote``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Self, final

import grpc

from .._formats.definition_formats import DefinitionFormat
from .._model.errors import RemoteServiceError
from .._model.tool_meta import ToolMeta
from .._runtime.streaming import StreamEvent
from .._wire.caller_token import bearer_metadata
from .._wire.stubs import (
    CALL_TOOL,
    CALL_TOOL_STREAM,
    LIST_DEFINITIONS_SORTED,
    SEARCH_TOOLS,
    bind,
    raise_failure,
)
from .._wire.tls import ClientTls, sync_channel, with_tls_hint
from ..v1 import tool_service_pb2 as pb
from .base import DefinitionsCache, RemoteHandleBase, stream_request
from .found_tools import FoundTools, found_tools, search_request
from .stream import read_events_blocking

__all__ = ["SyncRemoteToolServerHandle"]


@final
class SyncRemoteToolServerHandle(RemoteHandleBase):
    """The blocking variant of ``RemoteToolServerHandle``, for scripts and sync code.

    It fetches the definitions when made and on ``refresh()``, and reads them as the async
    handle does: ``tool_definitions_sorted()``, ``definitions_snapshot()``,
    ``definitions_fingerprint()``, ``definitions_for(format)``, ``len(handle)`` and
    ``name in handle``.
    """

    def __init__(
        self,
        target: str,
        *,
        call_timeout: float | None = None,
        tls: ClientTls | None = None,
        token: str | None = None,
    ) -> None:
        """Connect to ``target`` and fetch the definitions; ``token`` goes with every call as
        ``authorization: Bearer`` (one with a line break is refused: ``ValueError``)."""
        self._metadata = bearer_metadata(token)
        self._channel = sync_channel(target, tls)
        self._call_timeout = call_timeout
        self._cache = DefinitionsCache()
        self._list = bind(LIST_DEFINITIONS_SORTED, self._channel)
        self._search = bind(SEARCH_TOOLS, self._channel)
        self._call = bind(CALL_TOOL, self._channel)
        self._stream = bind(CALL_TOOL_STREAM, self._channel)
        try:
            self.refresh()
        except RemoteServiceError as error:
            self.close()
            raise with_tls_hint(error, tls) from None
        except BaseException:
            self.close()
            raise

    def refresh(self) -> bool:
        """As ``RemoteToolServerHandle.refresh``."""
        try:
            response = self._list(
                self._cache.list_request(), timeout=self._call_timeout, metadata=self._metadata
            )
        except grpc.RpcError as rpc_error:
            raise_failure(rpc_error)
        return self._cache.update(response)

    def get_tool(self, name: str) -> ToolMeta | None:
        """The cached meta of ``name``, or None (call it with ``call_tool``)."""
        return self._cache.by_name.get(name)

    def call_tool(self, name: str, input_json: str) -> str:
        """As ``ToolServerHandle.call_tool``, blocking."""
        try:
            response = self._call(
                pb.CallToolRequest(name=name, input_json=input_json),
                timeout=self._call_timeout,
                metadata=self._metadata,
            )
        except grpc.RpcError as rpc_error:
            raise_failure(rpc_error)
        return response.output

    def search_tools(
        self, query: str, *, limit: int = 10, form: DefinitionFormat | None = None
    ) -> FoundTools:
        """As ``RemoteToolServerHandle.search_tools``, blocking."""
        try:
            response = self._search(
                search_request(query, limit, form),
                timeout=self._call_timeout,
                metadata=self._metadata,
            )
        except grpc.RpcError as rpc_error:
            raise_failure(rpc_error)
        return found_tools(response, form)

    def stream_tool(
        self,
        name: str,
        input_json: str,
        *,
        call_id: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> Iterator[StreamEvent]:
        """As ``RemoteToolServerHandle.stream_tool``, a blocking iterator."""
        request = stream_request(name, input_json, call_id, metadata)
        call = self._stream(request, timeout=self._call_timeout, metadata=self._metadata)
        return read_events_blocking(call)

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
