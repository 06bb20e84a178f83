"""Shutdown: no accepted call lost, NOT_SERVING first, bounded by the grace whatever tools
and clients do."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections import Counter

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2

from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from tests.grpc_support import ServerProcess
from tests.server.test_crash_proof import CRASH_TOOLS

SERVE = [*CRASH_TOOLS, "--port", "0", "--no-internal"]


async def closed_loop_load(port: int, workers: int, stop_after: float) -> Counter[str]:
    """``workers`` clients calling echo back to back on 4 channels until the server is gone
    (or ``stop_after`` seconds); counts the status codes."""
    codes: Counter[str] = Counter()
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for _ in range(4)]
    deadline = time.monotonic() + stop_after
    request = pb.CallToolRequest(name="echo", input_json='{"text": "load"}')

    async def worker(index: int) -> None:
        stub = tool_service_pb2_grpc.ToolServiceStub(channels[index % len(channels)])
        while time.monotonic() < deadline:
            try:
                await stub.CallTool(request, timeout=5)
                codes["OK"] += 1
            except grpc.aio.AioRpcError as error:
                codes[error.code().name] += 1
                if error.code() is grpc.StatusCode.UNAVAILABLE:
                    return  # the server is gone: a client would go elsewhere

    try:
        await asyncio.gather(*(worker(index) for index in range(workers)))
    finally:
        for channel in channels:
            await channel.close()
    return codes


async def test_sigterm_under_load_loses_no_accepted_call() -> None:
    process = ServerProcess([*SERVE, "--log-level", "WARNING"])
    try:
        port = await process.port()
        load = asyncio.ensure_future(closed_loop_load(port, workers=32, stop_after=20))
        await asyncio.sleep(1.5)
        process.terminate()
        codes = await load
        assert await asyncio.to_thread(process.stop) == 0
    finally:
        process.process.kill()
        process.stop()
    assert codes["OK"] > 100, codes
    assert codes["CANCELLED"] == 0, codes
    assert set(codes) <= {"OK", "UNAVAILABLE"}, codes


async def test_health_is_not_serving_during_the_drain_delay() -> None:
    process = ServerProcess([*SERVE, "--drain-delay", "1.5"])
    try:
        port = await process.port()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            check = channel.unary_unary(
                "/grpc.health.v1.Health/Check",
                request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                response_deserializer=health_pb2.HealthCheckResponse.FromString,
            )
            tools = tool_service_pb2_grpc.ToolServiceStub(channel)
            request = health_pb2.HealthCheckRequest(service="llmworker.v1.ToolService")
            assert (await check(request)).status == health_pb2.HealthCheckResponse.SERVING
            process.terminate()
            await asyncio.sleep(0.5)
            reply = await check(request)
            assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
            echoed = await tools.CallTool(
                pb.CallToolRequest(name="echo", input_json='{"text": "a"}')
            )
            assert echoed.output == "a", "calls are still served while draining"
        started = time.monotonic()
        assert await asyncio.to_thread(process.stop) == 0
        assert time.monotonic() - started < 5
    finally:
        process.process.kill()
        process.stop()


async def test_a_blocked_sync_tool_does_not_outlive_the_grace() -> None:
    process = ServerProcess([*SERVE, "--grace", "1"])
    try:
        port = await process.port()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            blocked = asyncio.ensure_future(
                stub.CallTool(pb.CallToolRequest(name="block", input_json='{"seconds": 6}'))
            )
            await asyncio.sleep(0.3)
            signalled = time.monotonic()
            process.terminate()
            code = await asyncio.to_thread(process.stop)
            took = time.monotonic() - signalled
            outcome = (await asyncio.gather(blocked, return_exceptions=True))[0]
    finally:
        process.process.kill()
        process.stop()
    assert code == 0
    assert took < 2.0, f"exited {took:.2f} s after SIGTERM with --grace 1"
    assert isinstance(outcome, grpc.aio.AioRpcError)
    assert outcome.code() is grpc.StatusCode.UNAVAILABLE


def h2_frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return (
        struct.pack(">I", len(payload))[1:]
        + bytes([kind, flags])
        + struct.pack(">I", stream)
        + payload
    )


def hpack_literal(name: str, value: str) -> bytes:
    """A header as an HPACK literal without indexing (names and values under 127 bytes)."""
    encoded_name, encoded_value = name.encode(), value.encode()
    return (
        bytes([0, len(encoded_name)]) + encoded_name + bytes([len(encoded_value)]) + encoded_value
    )


def abandoned_stream(port: int, *, half_close: bool) -> socket.socket:
    """A connection with one CallTool stream whose message never completes."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=5)
    headers = b"".join(
        hpack_literal(name, value)
        for name, value in [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/llmworker.v1.ToolService/CallTool"),
            (":authority", f"127.0.0.1:{port}"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ]
    )
    partial = b"\x00" + struct.pack(">I", 100) + b"abc"  # says 100 bytes, sends 3
    connection.sendall(
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
        + h2_frame(0x4, 0, 0, b"")  # SETTINGS
        + h2_frame(0x1, 0x4, 1, headers)  # HEADERS, END_HEADERS
        + h2_frame(0x0, 0x1 if half_close else 0, 1, partial)  # DATA
    )
    return connection


async def test_streams_that_never_reach_a_handler_do_not_hold_up_the_stop() -> None:
    process = ServerProcess([*SERVE, "--grace", "20"])
    sockets: list[socket.socket] = []
    try:
        port = await process.port()
        sockets = [abandoned_stream(port, half_close=bool(index % 2)) for index in range(6)]
        await asyncio.sleep(0.3)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            reply = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "x"}'))
            assert reply.output == "x"
        started = time.monotonic()
        code = await asyncio.to_thread(process.stop)
        took = time.monotonic() - started
    finally:
        for connection in sockets:
            connection.close()
        process.process.kill()
        process.stop()
    assert code == 0
    assert took < 5, f"the stop waited {took:.1f} s for streams no handler ever saw"


async def test_a_second_signal_exits_at_once() -> None:
    process = ServerProcess([*SERVE, "--grace", "30"])
    try:
        port = await process.port()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            slow = asyncio.ensure_future(
                stub.CallTool(pb.CallToolRequest(name="sleep", input_json='{"seconds": 20}'))
            )
            await asyncio.sleep(0.3)
            process.terminate()
            await asyncio.sleep(0.3)
            started = time.monotonic()
            process.process.send_signal(15)
            code = await asyncio.to_thread(process.process.wait, 10)
            assert time.monotonic() - started < 3
            slow.cancel()
    finally:
        process.process.kill()
        process.stop()
    assert code == 1
    assert "second SIGTERM: exiting at once" in process.output
