"""A tool of an MCP server, as the registry runs it: each call becomes a ``tools/call`` on
the server's current session, with the call's id, metadata and trace context in ``_meta``,
its deadline as the request's timeout, its progress reported to a streaming caller, and its
cancellation sent on as ``notifications/cancelled`` (the SDK does that when the call's task
is cancelled)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Final, Protocol, TypeAlias, cast

import grpc
import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from llmworker import RemoteServiceError, ToolError, ToolOutput, current_call
from llmworker._wire import CODES, Reason, shorten

from .definitions import output_of

if TYPE_CHECKING:
    from mcp import Client

__all__ = [
    "CALL_ID_META",
    "METADATA_META",
    "ImportedTool",
    "OutgoingSpan",
    "ServerSession",
    "unavailable",
]

CALL_ID_META: Final = "io.llmworker/call_id"
"""The ``_meta`` key carrying the call's id to the MCP server."""
METADATA_META: Final = "io.llmworker/metadata"
"""The ``_meta`` key carrying the caller's call metadata (an object of strings)."""

OutgoingSpan: TypeAlias = Callable[[str], AbstractContextManager[dict[str, str]]]
"""Opens a CLIENT span for a request (named ``tools/call NAME``) and gives the W3C trace
context headers to send with it."""


class ImportedTool:
    """Runs the tool ``remote_name`` of the MCP server ``link`` reaches."""

    __slots__ = ("_link", "_remote_name", "_span")

    def __init__(self, link: ServerSession, remote_name: str, span: OutgoingSpan | None) -> None:
        self._link = link
        self._remote_name = remote_name
        self._span = span

    async def execute(self, input_json: str) -> str | ToolOutput:
        arguments = _arguments(input_json)
        context = current_call()
        meta: dict[str, object] = {CALL_ID_META: context.call_id}
        if context.metadata:
            meta[METADATA_META] = dict(context.metadata)

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            with contextlib.suppress(ValueError):  # a server's nonsense is not the caller's
                context.report_progress(progress, total, message or "")

        client = self._link.client()
        if self._span is None:
            return await self._call(client, arguments, meta, on_progress, context.time_remaining())
        with self._span(f"tools/call {self._remote_name}") as carrier:
            meta.update(carrier)
            return await self._call(client, arguments, meta, on_progress, context.time_remaining())

    async def _call(
        self,
        client: Client,
        arguments: dict[str, object],
        meta: dict[str, object],
        on_progress: ProgressFnT,
        seconds: float | None,
    ) -> str | ToolOutput:
        server = self._link.name
        try:
            result = await client.call_tool(
                self._remote_name,
                arguments,
                read_timeout_seconds=seconds,
                progress_callback=on_progress,
                meta=cast("types.RequestParamsMeta", meta),
            )
        except MCPError as error:
            raise self._refusal(error) from None
        except ValidationError as error:
            raise ToolError.ExecutionFailed(
                f"the MCP server '{server}' answered tool '{self._remote_name}' with a result "
                f"that is not valid MCP ({shorten(str(error), 300)}); fix the server"
            ) from None
        except Exception as error:  # a broken session: the link reconnects
            self._link.suspect()
            raise unavailable(
                server, f"{type(error).__name__}: {shorten(str(error), 200)}"
            ) from None
        return output_of(result, server)

    def _refusal(self, error: MCPError) -> BaseException:
        server, code = self._link.name, error.code
        said = shorten(error.message, 500)
        if code == types.CONNECTION_CLOSED:
            self._link.suspect()
            return unavailable(server, said)
        if code == types.REQUEST_TIMEOUT:
            return RemoteServiceError(
                CODES[Reason.TOOL_TIMEOUT],
                Reason.TOOL_TIMEOUT.value,
                f"the MCP server '{server}' did not answer tool '{self._remote_name}' in time "
                f"({said}); raise the call's deadline or make the tool faster",
                {},
            )
        if code == types.INVALID_PARAMS:
            return ToolError.InvalidArgument(
                f"the MCP server '{server}' refused the arguments of '{self._remote_name}': {said}"
            )
        return ToolError.ExecutionFailed(
            f"the MCP server '{server}' answered tool '{self._remote_name}' with error "
            f"{code}: {said}"
        )

    def __repr__(self) -> str:
        return f"ImportedTool({self._link.name!r}, {self._remote_name!r})"


class ServerSession(Protocol):
    """What an imported tool needs of its server's link (``link.McpServerLink``)."""

    @property
    def name(self) -> str: ...

    def client(self) -> Client:
        """The connected session; ``RemoteServiceError`` (PROVIDER_UNAVAILABLE) while down."""
        ...

    def suspect(self) -> None:
        """A call found the session broken: check it now."""
        ...


def unavailable(server: str, why: str) -> RemoteServiceError:
    """The refusal of a call to a server that cannot be reached now."""
    return RemoteServiceError(
        grpc.StatusCode.UNAVAILABLE,
        Reason.PROVIDER_UNAVAILABLE.value,
        f"the MCP server '{server}' cannot be used now ({why}); retry once it is back "
        "(the llmworker server's log says why it is down)",
        {},
    )


def _arguments(input_json: str) -> dict[str, object]:
    try:
        arguments: object = json.loads(input_json or "{}")
    except (json.JSONDecodeError, RecursionError) as error:
        raise ToolError.InvalidArgument(f"the input is not JSON ({error})") from None
    if not isinstance(arguments, dict):
        raise ToolError.InvalidArgument(
            f"the input is a JSON {type(arguments).__name__}; an MCP tool takes an object"
        )
    return cast("dict[str, object]", arguments)
