"""Random requests, seeded: every answer is a result or a status with a reason from the
table, within a client's default limits, and the server goes on serving."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable
from pathlib import Path
from typing import cast

import grpc
import grpc.aio

from llmworker._status import CODES
from llmworker.v1 import tool_registry_pb2, tool_registry_pb2_grpc, tool_service_pb2_grpc
from llmworker.v1 import tool_service_pb2 as pb

from .grpc_support import failure_of, serve
from .test_crash_proof import crash_worker
from .test_server_limits import trailers_size

TABLE = {reason.value: code for reason, code in CODES.items()}
NAMES = ["echo", "take", "crash", "crash_sync", "emit", "ratio", "fail", "sleep", "counter"]


def random_text(rng: random.Random, size: int) -> str:
    alphabet = 'ab{}[]",:\\ \n\x00\x1béü🙂\u2028%'
    return "".join(rng.choice(alphabet) for _ in range(size))


def random_json(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False, 0, -1, 2**70, 1.5, 1e308])
    if kind in (1, 2):
        return random_text(rng, rng.randrange(0, 80))
    if kind == 3:
        return rng.randrange(-5, 5)
    if kind == 4:
        return rng.choice(["x", "exit", "keyboard", "base", "huge", "surrogate", "key"])
    if kind == 5:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(0, 30))]
    keys = ["text", "items", "weights", "kind", "size", "seconds", "numerator", "denominator"]
    return {
        rng.choice([*keys, random_text(rng, rng.randrange(1, 20))]): random_json(rng, depth + 1)
        for _ in range(rng.randrange(0, 8))
    }


def random_request(rng: random.Random) -> pb.CallToolRequest:
    name = rng.choice(NAMES) if rng.random() < 0.8 else random_text(rng, rng.randrange(0, 300))
    if rng.random() < 0.15:
        input_json = random_text(rng, rng.randrange(0, 500))
    else:
        value = random_json(rng)
        if isinstance(value, dict):
            members = cast("dict[str, object]", value)
            if "seconds" in members:
                members["seconds"] = 0
            if members.get("kind") == "huge":
                members["size"] = rng.choice([10, 5 << 20])
        input_json = json.dumps(value, ensure_ascii=rng.random() < 0.5)
    return pb.CallToolRequest(name=name, input_json=input_json)


async def test_random_calls_get_results_or_reasons_from_the_table() -> None:
    rng = random.Random(20261201)
    seen: set[str] = set()
    async with (
        serve(worker=crash_worker(), call_timeout=2.0) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        for _ in range(400):
            request = random_request(rng)
            outcome = (
                await asyncio.gather(stub.CallTool(request, timeout=10), return_exceptions=True)
            )[0]
            if isinstance(outcome, grpc.aio.AioRpcError):
                failure = failure_of(outcome)
                assert failure.reason in TABLE, (request, failure)
                assert failure.code is TABLE[failure.reason], (request, failure)
                assert failure.domain == "llmworker"
                assert trailers_size(outcome) < 8 * 1024
                seen.add(failure.reason)
            else:
                assert isinstance(outcome, pb.CallToolResponse), outcome
                seen.add("OK")
        reply = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "x"}'))
        assert reply.output == "x"
    assert {"OK", "TOOL_NOT_FOUND", "TOOL_INVALID_ARGUMENT", "INVALID_REQUEST"} <= seen, seen


async def test_random_bytes_as_requests_get_reasons_from_the_table() -> None:
    rng = random.Random(7)
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        for method in ("CallTool", "GetTool", "ListDefinitionsSorted"):
            raw = channel.unary_unary(
                f"/llmworker.v1.ToolService/{method}",
                request_serializer=bytes,
                response_deserializer=bytes,
            )
            for _ in range(150):
                body = rng.randbytes(rng.randrange(0, 200))
                outcome = (await asyncio.gather(raw(body, timeout=10), return_exceptions=True))[0]
                if isinstance(outcome, grpc.aio.AioRpcError):
                    failure = failure_of(outcome)
                    assert failure.reason in TABLE, (method, body, failure)
                    assert failure.code is TABLE[failure.reason]
                else:
                    assert isinstance(outcome, bytes), outcome
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        reply = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "x"}'))
        assert reply.output == "x"


async def test_random_registrations_get_reasons_and_leave_the_registry_whole(
    tmp_path: Path,
) -> None:
    rng = random.Random(11)
    async with (
        serve(internal_socket=tmp_path / "r.sock") as served,
        grpc.aio.insecure_channel(served.app.internal_target or "") as channel,
    ):
        before = served.app.registry.handle.definitions_snapshot()
        raw = channel.unary_unary(
            "/llmworker.v1.ToolRegistry/RegisterTool",
            request_serializer=bytes,
            response_deserializer=bytes,
        )
        stub = tool_registry_pb2_grpc.ToolRegistryStub(channel)
        for index in range(200):
            call: Awaitable[object]
            if index % 2:
                call = raw(rng.randbytes(rng.randrange(0, 300)), timeout=10)
            else:
                request = tool_registry_pb2.RegisterToolRequest(
                    provider_target=random_text(rng, rng.randrange(0, 40))
                )
                request.definition.name = random_text(rng, rng.randrange(0, 80))
                request.definition.input_schema_json = json.dumps(random_json(rng))
                call = stub.RegisterTool(request, timeout=10)
            outcome = (await asyncio.gather(call, return_exceptions=True))[0]
            if isinstance(outcome, grpc.aio.AioRpcError):
                failure = failure_of(outcome)
                assert failure.reason in TABLE, failure
                assert failure.code is TABLE[failure.reason]
        assert served.app.registry.handle.definitions_snapshot() == before
        assert served.app._registry_service._channels == {}  # pyright: ignore[reportPrivateUsage]
