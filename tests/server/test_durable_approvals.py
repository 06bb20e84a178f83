"""Paused batches in a shared store (SQLite, PostgreSQL): they outlive a kill -9, any process
on the store resumes them, exactly once, and a resume cut short is never run again.

Servers run as child processes with ``tests.durable_tools``, whose tools append a line to a
file each time they run: the file says how often a batch really ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncGenerator
from pathlib import Path

import grpc
import grpc.aio
import psycopg
import pytest

from llmworker import Continue, Worker, tool_definitions
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.errors import ConfigError
from tests.durable_tools import MarkingTools
from tests.grpc_support import ServerProcess, failure_of, serve

Stub = tool_service_pb2_grpc.ToolServiceStub
TOOLS = ["--tools", "tests.durable_tools:MarkingTools", "--no-internal"]
WORKERS_PORT = 50183


def start(state: str, *extra: str) -> ServerProcess:
    return ServerProcess(
        [*TOOLS, "--state", state, *extra, *([] if "--port" in extra else ["--port", "0"])],
        env={"PYTHONUNBUFFERED": "1"},
    )


@contextlib.asynccontextmanager
async def stub_of(process: ServerProcess) -> AsyncGenerator[Stub]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{await process.port()}") as channel:
        yield Stub(channel)


def marking(marks: Path, note: str, tool: str = "mark", **more: object) -> pb.CallToolsRequest:
    body = {"path": str(marks), "note": note, **more}
    return pb.CallToolsRequest(
        calls=[pb.CallToolRequest(call_id=f"c-{note}", name=tool, input_json=json.dumps(body))]
    )


def approve(token: str, *call_ids: str) -> pb.ResumeBatchRequest:
    decisions = [pb.CallDecision(call_id=call_id, approve=pb.Approval()) for call_id in call_ids]
    return pb.ResumeBatchRequest(resume_token=token, decisions=decisions)


async def pause(stub: Stub, marks: Path, note: str, tool: str = "mark", **more: object) -> str:
    response = await stub.CallTools(marking(marks, note, tool, **more), timeout=10)
    assert response.WhichOneof("outcome") == "paused"
    assert response.paused.batch_id
    return response.paused.resume_token


def notes(marks: Path) -> list[str]:
    return marks.read_text().splitlines() if marks.exists() else []


async def refused(call: object) -> tuple[grpc.StatusCode, str, str, dict[str, str]]:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call  # type: ignore[misc]
    failure = failure_of(raised.value)
    return failure.code, failure.reason, failure.message, failure.metadata


async def kill(process: ServerProcess) -> None:
    process.process.kill()
    await asyncio.to_thread(process.process.wait, 10)
    process.stop()


async def test_a_batch_paused_before_kill_9_resumes_once_after_restart(tmp_path: Path) -> None:
    state, marks = f"sqlite:///{tmp_path}/state.db", tmp_path / "marks"
    first = start(state)
    try:
        async with stub_of(first) as stub:
            token = await pause(stub, marks, "once")
    finally:
        await kill(first)
    second = start(state)
    try:
        async with stub_of(second) as stub:
            done = await stub.ResumeBatch(approve(token, "c-once"), timeout=10)
            assert done.completed.results[0].output == "marked once"
            code, reason, _, _ = await refused(stub.ResumeBatch(approve(token, "c-once")))
            assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "RESUME_TOKEN_UNKNOWN")
    finally:
        second.stop()
    assert notes(marks) == ["once"]


async def test_a_resume_cut_short_by_kill_9_is_never_run_again(tmp_path: Path) -> None:
    state, marks = f"sqlite:///{tmp_path}/state.db", tmp_path / "marks"
    first = start(state)
    try:
        async with stub_of(first) as stub:
            token = await pause(stub, marks, "slow", "mark_slowly", seconds=60)
            running = asyncio.ensure_future(stub.ResumeBatch(approve(token, "c-slow"), timeout=90))
            for _ in range(200):
                if notes(marks):
                    break
                await asyncio.sleep(0.05)
            assert notes(marks) == ["started slow"]
            await kill(first)
            with contextlib.suppress(grpc.aio.AioRpcError):
                await running
    finally:
        await kill(first)
    second = start(state)
    try:
        async with stub_of(second) as stub:
            code, reason, message, metadata = await refused(
                stub.ResumeBatch(approve(token, "c-slow"), timeout=10)
            )
    finally:
        second.stop()
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "BATCH_INTERRUPTED")
    assert metadata["may_have_run"] == "c-slow"
    assert "never runs again" in message
    assert notes(marks) == ["started slow"]


async def test_the_workers_of_one_host_share_the_sqlite_store(tmp_path: Path) -> None:
    state, marks = f"sqlite:///{tmp_path}/state.db", tmp_path / "marks"
    server = start(state, "--workers", "2", "--port", str(WORKERS_PORT))
    target = f"127.0.0.1:{WORKERS_PORT}"
    try:
        await server.port()
        for _ in range(100):  # both children serve
            if server.output.count(" tools on ") >= 2:
                break
            await asyncio.sleep(0.05)
        for round_ in range(12):  # new connections: the kernel picks a process each time
            async with grpc.aio.insecure_channel(target) as channel:
                token = await pause(Stub(channel), marks, str(round_))
            async with grpc.aio.insecure_channel(target) as channel:
                done = await Stub(channel).ResumeBatch(approve(token, f"c-{round_}"), timeout=10)
            assert done.WhichOneof("outcome") == "completed", done
    finally:
        assert server.stop() == 0, server.output
    assert sorted(notes(marks), key=int) == [str(round_) for round_ in range(12)]


async def test_two_servers_on_one_postgresql_resume_each_others_batches_once(
    tmp_path: Path,
    postgres_url: str,
) -> None:
    marks = tmp_path / "marks"
    a, b = start(postgres_url), start(postgres_url)
    try:
        async with stub_of(a) as on_a, stub_of(b) as on_b:
            token = await pause(on_a, marks, "moved")
            listed = await on_b.ListPausedBatches(pb.ListPausedBatchesRequest(), timeout=10)
            assert [call.name for batch in listed.batches for call in batch.pending_calls] == [
                "mark"
            ]
            done = await on_b.ResumeBatch(approve(token, "c-moved"), timeout=10)
            assert done.completed.results[0].output == "marked moved"
            outcomes: list[str] = []
            for race in range(10):  # the same token on A and B at once: one runs it
                token = await pause(on_a, marks, f"race{race}")
                both = await asyncio.gather(
                    on_a.ResumeBatch(approve(token, f"c-race{race}"), timeout=10),
                    on_b.ResumeBatch(approve(token, f"c-race{race}"), timeout=10),
                    return_exceptions=True,
                )
                for outcome in both:
                    if isinstance(outcome, grpc.aio.AioRpcError):
                        outcomes.append(failure_of(outcome).reason)
                    else:
                        assert isinstance(outcome, pb.CallToolsResponse)
                        outcomes.append(outcome.WhichOneof("outcome") or "")
    finally:
        a.stop()
        b.stop()
    assert outcomes.count("completed") == 10
    assert set(outcomes) - {"completed"} <= {"RESUME_TOKEN_UNKNOWN", "BATCH_INTERRUPTED"}
    assert sorted(notes(marks)) == sorted(["moved", *(f"race{race}" for race in range(10))])


async def test_an_expired_batch_resumes_nothing(tmp_path: Path) -> None:
    worker = Worker()
    worker.register_tools(tool_definitions(MarkingTools()))
    marks = tmp_path / "marks"
    async with (
        serve(worker=worker, pause_ttl=0.5, internal=False) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = Stub(channel)
        token = await pause(stub, marks, "late")
        await asyncio.sleep(0.7)
        code, reason, _, _ = await refused(stub.ResumeBatch(approve(token, "c-late")))
        assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "RESUME_TOKEN_UNKNOWN")
        listed = await stub.ListPausedBatches(pb.ListPausedBatchesRequest(), timeout=10)
        assert list(listed.batches) == []
    assert notes(marks) == []


async def test_the_store_keeps_no_resume_secret(tmp_path: Path) -> None:
    database = tmp_path / "state.db"
    server = start(f"sqlite:///{database}")
    try:
        async with stub_of(server) as stub:
            token = await pause(stub, tmp_path / "marks", "secret")
    finally:
        server.stop()
    secret = token.split(".")[2]
    assert len(secret) >= 32  # 192 random bits
    files = await asyncio.to_thread(lambda: sorted(tmp_path.glob("state.db*")))
    stored = b"".join(path.read_bytes() for path in files)
    assert secret.encode() not in stored
    assert token.split(".")[1].encode() in stored  # the batch id is no secret
    assert database.stat().st_mode & 0o077 == 0


def test_a_sqlite_schema_from_the_future_refuses_to_start(tmp_path: Path) -> None:
    database = tmp_path / "state.db"
    with contextlib.closing(sqlite3.connect(database)) as db:
        db.execute("CREATE TABLE llmworker_schema (version INTEGER NOT NULL)")
        db.execute("INSERT INTO llmworker_schema VALUES (99)")
        db.commit()
    server = start(f"sqlite:///{database}")
    code = server.process.wait(timeout=30)
    server.stop()
    assert code != 0
    assert "schema version 99" in server.output
    assert "versions up to 1" in server.output


async def test_a_postgresql_schema_from_the_future_refuses_to_start(
    postgres_url: str,
) -> None:
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as db:
        await db.execute("CREATE TABLE llmworker_schema (version INTEGER NOT NULL)")
        await db.execute("INSERT INTO llmworker_schema VALUES (7)")
    server = start(postgres_url)
    code = await asyncio.to_thread(server.process.wait, 30)
    server.stop()
    assert code != 0
    assert "schema version 7" in server.output
    assert "password" not in server.output.lower() or "***" in server.output


async def test_hooks_a_shared_store_cannot_check_refuse_to_start() -> None:
    worker = Worker()
    worker.register_tools(tool_definitions(MarkingTools()))
    worker.add_pre_tool_call_hook(lambda _context: Continue())
    with pytest.raises(ConfigError, match="no stable name"):
        async with serve(worker=worker, internal=False):
            pass
    async with serve(worker=worker, internal=False, state="memory") as served:
        assert not served.app.tools.paused_batches.shared
