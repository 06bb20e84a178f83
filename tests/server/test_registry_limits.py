"""Registration refuses cleanly and scales; remote failures map onto the reason table."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator
from pathlib import Path

import grpc
import grpc.aio
import pytest

from llmworker import RemoteServiceError, ToolMeta, ToolRegistryClient
from llmworker._wire.messages import definition_message
from llmworker._wire.status import Reason
from llmworker.v1 import tool_pb2
from tests.server.test_server_registry import (
    SHOUT,
    TOKEN,
    call_failure,
    empty_front,
    register_failure,
    register_raw_failure,
)

BAD_TARGETS = [
    "dns:///",
    "dns:",
    "unix:",
    "unix://relative/path",
    "host-without-port",
    "127.0.0.1:99999",
    "127.0.0.1:0",
    "127.0.0.1:http",
    "ipv4:300.1.1.1:80",
    "ipv6:[::zz]:80",
    "a host:1",
    "tab\there:1",
    "line\nbreak:1",
    "[::1",
    "x" * 600,
]


@pytest.mark.parametrize("target", BAD_TARGETS)
async def test_a_target_grpc_cannot_use_is_refused_and_leaves_nothing(
    tmp_path: Path, target: str
) -> None:
    async with empty_front(tmp_path) as front:
        assert front.internal_target is not None
        failure = await register_failure(front.internal_target, SHOUT, target, TOKEN)
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_REQUEST",
        )
        assert "provider target" in failure.message
        assert "HOST:PORT" in failure.message
        assert len(front.registry.handle) == 0
        assert front._registry_service._channels == {}  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize(
    "target", ["127.0.0.1:50061", "localhost:1", "[::1]:5", "unix:///tmp/x.sock", "dns:///h:1"]
)
async def test_usable_targets_are_accepted(tmp_path: Path, target: str) -> None:
    async with (
        empty_front(tmp_path) as front,
        ToolRegistryClient(front.internal_target or "", TOKEN) as registry,
    ):
        await registry.register_tool(SHOUT, target)
        assert "shout" in front.registry.handle


async def test_refused_registrations_after_the_lock_leave_no_channel(tmp_path: Path) -> None:
    async with empty_front(tmp_path, lock_at_start=True) as front:
        assert front.internal_target is not None
        for port in range(1, 51):
            meta = ToolMeta(f"tool_{port}")
            failure = await register_failure(
                front.internal_target, meta, f"127.0.0.1:{port}", TOKEN
            )
            assert failure.reason == "REGISTRY_LOCKED"
        assert front._registry_service._channels == {}  # pyright: ignore[reportPrivateUsage]


async def test_a_duplicate_leaves_no_new_channel(tmp_path: Path) -> None:
    async with (
        empty_front(tmp_path) as front,
        ToolRegistryClient(front.internal_target or "", TOKEN) as registry,
    ):
        await registry.register_tool(SHOUT, "127.0.0.1:7")
        with pytest.raises(Exception, match="already registered"):
            await registry.register_tool(SHOUT, "127.0.0.1:8")
        channels = front._registry_service._channels  # pyright: ignore[reportPrivateUsage]
        assert list(channels) == ["127.0.0.1:7"]


async def test_a_registration_that_would_break_listing_is_refused(tmp_path: Path) -> None:
    limit = 64 * 1024
    async with (
        empty_front(tmp_path, max_message_bytes=limit) as front,
        ToolRegistryClient(front.internal_target or "", TOKEN) as registry,
    ):
        accepted = 0
        refused: RemoteServiceError | None = None
        for index in range(100):
            try:
                await registry.register_tool(
                    ToolMeta(f"tool_{index:03d}", "d" * 4000), "127.0.0.1:1"
                )
            except RemoteServiceError as error:
                refused = error
                break
            accepted += 1
        assert refused is not None
        assert refused.reason == Reason.REGISTRY_FULL
        assert refused.code is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "--max-message-bytes" in refused.message
        assert 10 <= accepted < 17
        assert len(front.registry.handle) == accepted
        listed = await asyncio.wait_for(_listing_size(f"127.0.0.1:{front.port}", limit), 10)
        assert listed <= limit


async def _listing_size(target: str, limit: int) -> int:
    from llmworker.v1 import tool_service_pb2 as pb
    from llmworker.v1 import tool_service_pb2_grpc

    options = [("grpc.max_receive_message_length", limit)]
    async with grpc.aio.insecure_channel(target, options=options) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        response = await stub.ListDefinitionsSorted(pb.ListDefinitionsSortedRequest())
        return response.ByteSize()


@pytest.mark.parametrize(
    ("definition", "problem"),
    [
        (tool_pb2.ToolDefinition(name="big", description="d" * 20_000), "description"),
        (
            tool_pb2.ToolDefinition(
                name="big", input_schema_json='{"type": "object", "x": "' + "s" * 200_000 + '"}'
            ),
            "input_schema_json",
        ),
    ],
)
async def test_oversized_definitions_are_invalid_requests(
    tmp_path: Path, definition: tool_pb2.ToolDefinition, problem: str
) -> None:
    async with empty_front(tmp_path) as front:
        failure = await register_raw_failure(front.internal_target or "", definition, "127.0.0.1:1")
        assert failure.reason == "INVALID_REQUEST"
        assert problem in failure.message
        assert "at most" in failure.message
        assert len(front.registry.handle) == 0


async def test_ten_thousand_registrations_take_seconds_not_minutes(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    async with (
        empty_front(tmp_path) as front,
        ToolRegistryClient(front.internal_target or "", TOKEN) as registry,
    ):
        started = time.perf_counter()
        fingerprint = ""
        for index in range(10_000):
            meta = ToolMeta(f"tool_{index:05d}", f"Tool number {index}", schema)
            fingerprint = await registry.register_tool(meta, "127.0.0.1:1")
        elapsed = time.perf_counter() - started
        assert fingerprint == front.registry.handle.definitions_snapshot().fingerprint
    # A sanity bound only (quadratic registration took minutes); BENCHMARKS.md has the figure.
    assert elapsed < 60, f"10,000 registrations took {elapsed:.1f} s"


@contextlib.asynccontextmanager
async def silent_tcp_server() -> AsyncGenerator[int, None]:
    """Accepts TCP connections and never says a byte."""
    held: list[asyncio.StreamWriter] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_a_provider_that_never_answers_is_a_tool_timeout(tmp_path: Path) -> None:
    async with (
        silent_tcp_server() as port,
        empty_front(tmp_path, call_timeout=0.5) as front,
        ToolRegistryClient(front.internal_target or "", TOKEN) as registry,
    ):
        await registry.register_tool(SHOUT, f"127.0.0.1:{port}")
        failure = await call_failure(f"127.0.0.1:{front.port}", "shout", '{"text": "x"}')
        assert (failure.code, failure.reason) == (grpc.StatusCode.DEADLINE_EXCEEDED, "TOOL_TIMEOUT")
        assert "shout" in failure.message


async def test_a_provider_that_is_no_llmworker_server_is_provider_unavailable(
    tmp_path: Path,
) -> None:
    bare = grpc.aio.server()
    port = bare.add_insecure_port("127.0.0.1:0")
    await bare.start()
    try:
        async with (
            empty_front(tmp_path) as front,
            ToolRegistryClient(front.internal_target or "", TOKEN) as registry,
        ):
            await registry.register_tool(SHOUT, f"127.0.0.1:{port}")
            failure = await call_failure(f"127.0.0.1:{front.port}", "shout", '{"text": "x"}')
            assert (failure.code, failure.reason) == (
                grpc.StatusCode.UNAVAILABLE,
                "PROVIDER_UNAVAILABLE",
            )
            assert "UNIMPLEMENTED" in failure.message
            assert "llmworker.v1.ToolService" in failure.message
    finally:
        await bare.stop(0)


def test_definition_message_round_trips_for_the_tests() -> None:
    assert definition_message(SHOUT).name == "shout"


@contextlib.asynccontextmanager
async def misbehaving_provider(
    trailers: tuple[tuple[str, bytes], ...],
) -> AsyncGenerator[int, None]:
    """A ToolService whose every CallTool fails with ``trailers`` as its status details."""
    from llmworker.v1 import tool_service_pb2 as pb

    async def fail(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "busy", trailers)

    handler: grpc.RpcMethodHandler[bytes, bytes] = grpc.unary_unary_rpc_method_handler(fail)
    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("llmworker.v1.ToolService", {"CallTool": handler}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    del pb
    try:
        yield port
    finally:
        await server.stop(0)


def _details(metadata: dict[str, str], reason: str = "CONCURRENCY_LIMIT") -> bytes:
    from google.protobuf import any_pb2
    from google.rpc import error_details_pb2, status_pb2  # pyright: ignore[reportMissingTypeStubs]

    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.ErrorInfo(reason=reason, domain="llmworker", metadata=metadata))
    status = status_pb2.Status(code=8, message="busy", details=[detail])
    encoded: bytes = status.SerializeToString()
    return encoded


@pytest.mark.parametrize(
    ("details", "code", "reason"),
    [
        (
            _details({"message": "m", "reason": "r", "cls": "c", "tool": "spoofed"}),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "CONCURRENCY_LIMIT",
        ),
        (_details({}, reason="MADE_UP"), grpc.StatusCode.UNAVAILABLE, "PROVIDER_UNAVAILABLE"),
        (
            _details({f"k{i}": "v" * 60 for i in range(60)}),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "CONCURRENCY_LIMIT",
        ),
        (  # over the front server's own 8 KiB limit as a client: the reply is unusable
            _details({f"k{i}": "v" * 600 for i in range(500)}),
            grpc.StatusCode.UNAVAILABLE,
            "PROVIDER_UNAVAILABLE",
        ),
        (b"\xff\xff\xff", grpc.StatusCode.UNAVAILABLE, "PROVIDER_UNAVAILABLE"),
    ],
)
async def test_a_provider_status_of_any_shape_maps_onto_the_table(
    tmp_path: Path, details: bytes, code: grpc.StatusCode, reason: str
) -> None:
    async with (
        misbehaving_provider((("grpc-status-details-bin", details),)) as port,
        empty_front(tmp_path) as front,
        ToolRegistryClient(front.internal_target or "", TOKEN) as registry,
    ):
        await registry.register_tool(SHOUT, f"127.0.0.1:{port}")
        failure = await call_failure(f"127.0.0.1:{front.port}", "shout", '{"text": "x"}')
        assert (failure.code, failure.reason) == (code, reason)
        assert failure.metadata["tool"] == "shout"
        assert len(failure.metadata) <= 16
