"""A caller token sent with every call of a channel: ``authorization: Bearer <token>``
metadata, as a server started with ``--auth-tokens`` requires."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import grpc
import grpc.aio

__all__ = ["bearer_metadata", "caller_token_interceptors", "with_metadata"]

RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT")


def _header(token: str) -> tuple[str, str]:
    if not token or any(character in token for character in "\r\n\0"):
        raise ValueError("a caller token must be non-empty text on one line")
    return "authorization", f"Bearer {token}"


def bearer_metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    """The call metadata that carries ``token`` (none without one)."""
    return () if token is None else (_header(token),)


def caller_token_interceptors(token: str) -> list[grpc.aio.ClientInterceptor]:
    """Interceptors that add ``token`` to every unary and server-streaming call of an
    asyncio channel (the calls the llmworker clients make). gRPC files each interceptor
    under one kind of call only, hence one per kind."""
    header = _header(token)
    return [_UnaryToken(header), _StreamToken(header)]


def with_metadata(
    details: grpc.aio.ClientCallDetails, *pairs: tuple[str, str]
) -> grpc.aio.ClientCallDetails:
    """``details`` with ``pairs`` added to its metadata (for client interceptors)."""
    metadata = grpc.aio.Metadata(*(details.metadata or ()), *pairs)
    return grpc.aio.ClientCallDetails(
        details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
    )


class _UnaryToken(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, header: tuple[str, str]) -> None:
        self._header = header

    async def intercept_unary_unary(
        self,
        continuation: Callable[
            [grpc.aio.ClientCallDetails, RequestT],
            Awaitable[grpc.aio.UnaryUnaryCall[RequestT, ResponseT]],
        ],
        client_call_details: grpc.aio.ClientCallDetails,
        request: RequestT,
    ) -> ResponseT | grpc.aio.UnaryUnaryCall[RequestT, ResponseT]:
        return await continuation(with_metadata(client_call_details, self._header), request)


class _StreamToken(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, header: tuple[str, str]) -> None:
        self._header = header

    async def intercept_unary_stream(
        self,
        continuation: Callable[
            [grpc.aio.ClientCallDetails, RequestT],
            Awaitable[grpc.aio.UnaryStreamCall[RequestT, ResponseT]],
        ],
        client_call_details: grpc.aio.ClientCallDetails,
        request: RequestT,
    ) -> AsyncIterator[ResponseT] | grpc.aio.UnaryStreamCall[RequestT, ResponseT]:
        return await continuation(with_metadata(client_call_details, self._header), request)
