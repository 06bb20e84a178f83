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
from google.rpc import error_details_pb2  # pyright: ignore[reportMissingTypeStubs]

from llmworker import ToolFactory, ToolMeta
from llmworker._wire.status import CODES
from llmworker.v1 import tool_registry_pb2, tool_registry_pb2_grpc, tool_service_pb2_grpc
from llmworker.v1 import tool_service_pb2 as pb
from tests.grpc_support import failure_of, serve
from tests.server.test_crash_proof import crash_worker
from tests.server.test_server_limits import trailers_size
from tests.support import EchoTool

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
        for method in ("CallTool", "GetTool", "ListDefinitionsSorted", "CallTools", "ResumeBatch"):
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


def random_batch(rng: random.Random) -> pb.CallToolsRequest:
    calls: list[pb.CallToolRequest] = []
    for index in range(rng.randrange(0, 12)):
        call = random_request(rng) if rng.random() < 0.7 else pb.CallToolRequest(name="gated")
        call.call_id = rng.choice([f"c{index}", f"c{index}", "", "dup", random_text(rng, 5)])
        if rng.random() < 0.2:
            key = rng.choice(["user", "tenant.id", "Bad", "", random_text(rng, 3)])
            call.metadata[key] = random_text(rng, rng.randrange(0, 50))
        calls.append(call)
    return pb.CallToolsRequest(calls=calls)


def check_results(results: list[pb.CallResult]) -> set[str]:
    reasons: set[str] = set()
    for result in results:
        if not result.is_error:
            continue
        info = error_details_pb2.ErrorInfo()
        assert result.error.details[0].Unpack(info), result
        assert info.reason in TABLE, result
        assert result.error.code == TABLE[info.reason].value[0], result
        reasons.add(info.reason)
    return reasons


async def test_random_batches_and_decisions_get_results_or_reasons_from_the_table() -> None:
    rng = random.Random(20261202)
    worker = crash_worker()
    worker.register_tool(ToolFactory(ToolMeta("gated").with_requires_approval(), EchoTool))
    seen: set[str] = set()
    async with (
        serve(worker=worker, call_timeout=2.0, max_paused_batches=5) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        tokens: list[str] = []
        for _ in range(150):
            call: Awaitable[pb.CallToolsResponse]
            if tokens and rng.random() < 0.4:
                token = tokens.pop(rng.randrange(len(tokens)))
                decisions = [
                    pb.CallDecision(
                        call_id=rng.choice(["c0", "c1", "c2", "dup", "zz"]),
                        approve=pb.Approval() if rng.random() < 0.5 else None,
                        deny=pb.Denial(reason=random_text(rng, 20)) if rng.random() < 0.3 else None,
                    )
                    for _ in range(rng.randrange(0, 4))
                ]
                call = stub.ResumeBatch(
                    pb.ResumeBatchRequest(resume_token=token, decisions=decisions), timeout=10
                )
            else:
                call = stub.CallTools(random_batch(rng), timeout=10)
            outcome = (await asyncio.gather(call, return_exceptions=True))[0]
            if isinstance(outcome, grpc.aio.AioRpcError):
                failure = failure_of(outcome)
                assert failure.reason in TABLE, failure
                assert failure.code is TABLE[failure.reason], failure
                assert trailers_size(outcome) < 8 * 1024
                seen.add(failure.reason)
                continue
            assert isinstance(outcome, pb.CallToolsResponse), outcome
            if outcome.WhichOneof("outcome") == "paused":
                seen.add("PAUSED")
                tokens.append(outcome.paused.resume_token)
                seen |= check_results(list(outcome.paused.results))
            else:
                seen.add("COMPLETED")
                seen |= check_results(list(outcome.completed.results))
        assert served.app.tools.in_flight == 0
        await served.app.tools.paused_batches.refresh()
        assert served.app.tools.paused_batches.count <= 5
        reply = await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "x"}'))
        assert reply.output == "x"
    assert {"COMPLETED", "PAUSED", "INVALID_REQUEST", "TOOL_NOT_FOUND"} <= seen, seen
