"""Server reflection that also answers for method names.

grpcio-reflection looks symbols up with ``DescriptorPool.FindFileContainingSymbol``, which
does not know methods: asking for ``llmworker.v1.ToolService.CallTool`` (as ghz and
``grpcurl describe`` do) gets NOT_FOUND (grpc/grpc#34743, bojand/ghz#419). A method lives in
its service's file, so the pool given to the reflection service retries with the service.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Final, TypeAlias, cast

import grpc
import grpc.aio
from google.protobuf import descriptor, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2

from .handlers import add_service

__all__ = ["enable_reflection"]

_V1: Final = "grpc.reflection.v1.ServerReflection"
_ReflectionInfo: TypeAlias = Callable[
    [AsyncIterator[reflection_pb2.ServerReflectionRequest], grpc.aio.ServicerContext[Any, Any]],
    AsyncIterator[reflection_pb2.ServerReflectionResponse],
]


class _MethodAwarePool:
    """The default descriptor pool, finding the file of ``package.Service.Method`` too."""

    def __init__(self, pool: descriptor_pool.DescriptorPool) -> None:
        self._pool = pool

    def FindFileContainingSymbol(self, symbol: str) -> descriptor.FileDescriptor:
        try:
            return self._pool.FindFileContainingSymbol(symbol)
        except KeyError:
            service = symbol.rpartition(".")[0]
            if not service:
                raise
            method = symbol.rpartition(".")[2]
            if self._pool.FindServiceByName(service).methods_by_name.get(method) is None:
                raise
            return self._pool.FindFileContainingSymbol(service)

    def FindFileByName(self, name: str) -> descriptor.FileDescriptor:
        return self._pool.FindFileByName(name)

    def FindMessageTypeByName(self, name: str) -> descriptor.Descriptor:
        return self._pool.FindMessageTypeByName(name)

    def FindExtensionByNumber(
        self, message: descriptor.Descriptor, number: int
    ) -> descriptor.FieldDescriptor:
        return self._pool.FindExtensionByNumber(message, number)

    def FindAllExtensions(self, message: descriptor.Descriptor) -> list[descriptor.FieldDescriptor]:
        return self._pool.FindAllExtensions(message)


def enable_reflection(server: grpc.aio.Server, service_names: Sequence[str]) -> None:
    """Serve reflection for ``service_names`` and the reflection service itself, as
    ``grpc.reflection.v1alpha`` and as ``grpc.reflection.v1`` (whose messages are the same
    on the wire: v1 is v1alpha renamed; grpcio-reflection ships only v1alpha)."""
    # Duck-typed: the reflection service calls only the methods _MethodAwarePool has.
    pool = cast("descriptor_pool.DescriptorPool", _MethodAwarePool(descriptor_pool.Default()))
    servicer = reflection.aio.ReflectionServicer(
        [*service_names, reflection.SERVICE_NAME], pool=pool
    )
    info = cast("_ReflectionInfo", getattr(servicer, "ServerReflectionInfo"))  # noqa: B009 - untyped
    handler = grpc.stream_stream_rpc_method_handler(
        info,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    for name in (reflection.SERVICE_NAME, _V1):
        add_service(server, name, {"ServerReflectionInfo": handler})
