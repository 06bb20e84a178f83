"""The RPCs of llmworker.v1 that clients make (the server too, to check a provider), each
defined once (method path and message types), and how a failed one comes back.

``bind`` makes a method's multicallable on an asyncio or a blocking channel, as a registered
method: the path is registered with the channel once, not sent through the core per call
(the fast path gRPC's generated stubs take). The generated ``*_pb2_grpc`` stubs are typed
for asyncio channels only, hence this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Generic, NoReturn, TypeVar, final, overload

import grpc
import grpc.aio
from google.protobuf.message import Message

from ..v1 import tool_registry_pb2 as registry_pb
from ..v1 import tool_service_pb2 as pb
from .status import error_from_rpc

__all__ = [
    "CALL_TOOL",
    "CALL_TOOLS",
    "CALL_TOOL_STREAM",
    "GET_TOOL",
    "LIST_DEFINITIONS_SORTED",
    "LOCK_REGISTRY",
    "REGISTER_TOOL",
    "RESUME_BATCH",
    "SEARCH_TOOLS",
    "UNREGISTER_TOOL",
    "WATCH_DEFINITIONS",
    "ServerStream",
    "Unary",
    "bind",
    "raise_failure",
]

RequestT = TypeVar("RequestT", bound=Message)
ResponseT = TypeVar("ResponseT", bound=Message)


@final
@dataclass(frozen=True, slots=True)
class Unary(Generic[RequestT, ResponseT]):
    """A unary RPC: one request, one response."""

    path: str
    request: type[RequestT]
    response: type[ResponseT]


@final
@dataclass(frozen=True, slots=True)
class ServerStream(Generic[RequestT, ResponseT]):
    """A server-streaming RPC: one request, a stream of responses."""

    path: str
    request: type[RequestT]
    response: type[ResponseT]


_TOOL_SERVICE: Final = "/llmworker.v1.ToolService/"
_TOOL_REGISTRY: Final = "/llmworker.v1.ToolRegistry/"

GET_TOOL: Final = Unary(_TOOL_SERVICE + "GetTool", pb.GetToolRequest, pb.GetToolResponse)
CALL_TOOL: Final = Unary(_TOOL_SERVICE + "CallTool", pb.CallToolRequest, pb.CallToolResponse)
CALL_TOOLS: Final = Unary(_TOOL_SERVICE + "CallTools", pb.CallToolsRequest, pb.CallToolsResponse)
RESUME_BATCH: Final = Unary(
    _TOOL_SERVICE + "ResumeBatch", pb.ResumeBatchRequest, pb.CallToolsResponse
)
CALL_TOOL_STREAM: Final = ServerStream(
    _TOOL_SERVICE + "CallToolStream", pb.CallToolRequest, pb.CallToolEvent
)
LIST_DEFINITIONS_SORTED: Final = Unary(
    _TOOL_SERVICE + "ListDefinitionsSorted",
    pb.ListDefinitionsSortedRequest,
    pb.ListDefinitionsSortedResponse,
)
SEARCH_TOOLS: Final = Unary(
    _TOOL_SERVICE + "SearchTools", pb.SearchToolsRequest, pb.SearchToolsResponse
)
WATCH_DEFINITIONS: Final = ServerStream(
    _TOOL_SERVICE + "WatchDefinitions",
    pb.WatchDefinitionsRequest,
    pb.ListDefinitionsSortedResponse,
)
REGISTER_TOOL: Final = Unary(
    _TOOL_REGISTRY + "RegisterTool",
    registry_pb.RegisterToolRequest,
    registry_pb.RegisterToolResponse,
)
UNREGISTER_TOOL: Final = Unary(
    _TOOL_REGISTRY + "UnregisterTool",
    registry_pb.UnregisterToolRequest,
    registry_pb.UnregisterToolResponse,
)
LOCK_REGISTRY: Final = Unary(
    _TOOL_REGISTRY + "LockRegistry",
    registry_pb.LockRegistryRequest,
    registry_pb.LockRegistryResponse,
)


@overload
def bind(
    method: Unary[RequestT, ResponseT], channel: grpc.aio.Channel
) -> grpc.aio.UnaryUnaryMultiCallable[RequestT, ResponseT]: ...
@overload
def bind(
    method: Unary[RequestT, ResponseT], channel: grpc.Channel
) -> grpc.UnaryUnaryMultiCallable[RequestT, ResponseT]: ...
@overload
def bind(
    method: ServerStream[RequestT, ResponseT], channel: grpc.aio.Channel
) -> grpc.aio.UnaryStreamMultiCallable[RequestT, ResponseT]: ...
@overload
def bind(
    method: ServerStream[RequestT, ResponseT], channel: grpc.Channel
) -> grpc.UnaryStreamMultiCallable[RequestT, ResponseT]: ...
def bind(
    method: Unary[RequestT, ResponseT] | ServerStream[RequestT, ResponseT],
    channel: grpc.aio.Channel | grpc.Channel,
) -> (
    grpc.aio.UnaryUnaryMultiCallable[RequestT, ResponseT]
    | grpc.UnaryUnaryMultiCallable[RequestT, ResponseT]
    | grpc.aio.UnaryStreamMultiCallable[RequestT, ResponseT]
    | grpc.UnaryStreamMultiCallable[RequestT, ResponseT]
):
    """``method``'s multicallable on ``channel``, as a registered method."""
    serialize, deserialize = method.request.SerializeToString, method.response.FromString
    # grpc's type stubs lack the keyword its generated stubs pass.
    if isinstance(method, Unary):
        return channel.unary_unary(
            method.path,
            serialize,
            deserialize,
            _registered_method=True,  # type: ignore[call-arg]
        )
    return channel.unary_stream(
        method.path,
        serialize,
        deserialize,
        _registered_method=True,  # type: ignore[call-arg]
    )


def raise_failure(rpc_error: grpc.RpcError) -> NoReturn:
    """Raise what a failed call stands for, as a local ``ToolServerHandle`` raises it."""
    error = error_from_rpc(rpc_error)
    raise error from error.__cause__
