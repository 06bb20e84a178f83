"""The server's ``grpc.health.v1.Health``: the stock asyncio service, with ``List`` (the
stock one raises in the server, leaving a traceback in its log)."""

from __future__ import annotations

from typing import Final, cast

from google.protobuf.message import Message
from grpc_health.v1 import health, health_pb2

from .handlers import Context

# HealthListResponse is in grpcio-health-checking's own health_pb2, not yet in its stubs.
_LIST_RESPONSE: Final = cast("type[Message]", getattr(health_pb2, "HealthListResponse"))  # noqa: B009

__all__ = ["ServerHealth"]


class ServerHealth(health.aio.HealthServicer):
    """Check and Watch as gRPC ships them; List answers every service it knows, except
    those set to SERVICE_UNKNOWN (a provider that left)."""

    def __init__(self) -> None:
        super().__init__()
        self._statuses: dict[str, int] = {"": health_pb2.HealthCheckResponse.SERVING}
        self._shutting_down = False

    async def set(self, service: str, status: int) -> None:
        await super().set(service, status)
        if not self._shutting_down:
            self._statuses[service] = status

    async def enter_graceful_shutdown(self) -> None:
        await super().enter_graceful_shutdown()
        self._shutting_down = True
        for service in self._statuses:
            self._statuses[service] = health_pb2.HealthCheckResponse.NOT_SERVING

    async def List(self, request: Message, context: Context) -> Message:
        unknown = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
        statuses = {
            service: health_pb2.HealthCheckResponse(status=status)
            for service, status in self._statuses.items()
            if status != unknown
        }
        return _LIST_RESPONSE(statuses=statuses)
