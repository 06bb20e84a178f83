"""Server reflection that also answers for method names.

grpcio-reflection looks symbols up with ``DescriptorPool.FindFileContainingSymbol``, which
does not know methods: asking for ``llmworker.v1.ToolService.CallTool`` (as ghz and
``grpcurl describe`` do) gets NOT_FOUND (grpc/grpc#34743, bojand/ghz#419). A method lives in
its service's file, so the pool given to the reflection service retries with the service.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import grpc.aio
from google.protobuf import descriptor, descriptor_pool
from grpc_reflection.v1alpha import reflection

__all__ = ["enable_reflection"]


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
    """Serve reflection for ``service_names`` and the reflection service itself."""
    # Duck-typed: the reflection service calls only the methods _MethodAwarePool has.
    pool = cast("descriptor_pool.DescriptorPool", _MethodAwarePool(descriptor_pool.Default()))
    reflection.enable_server_reflection([*service_names, reflection.SERVICE_NAME], server, pool)
