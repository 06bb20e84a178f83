"""Choosing the paused-batch store: ``--state``, ``--state-file``, ``$LLMWORKER_STATE``, the
default SQLite file in the state directory, and what the server answers when the store
goes away under it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import grpc.aio
import psycopg
import pytest

from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.config import ServerConfig
from llmworker_server.errors import ConfigError
from llmworker_server.state.location import shown_url
from llmworker_server.state.schema import HOLD_LOCK
from tests.grpc_support import ServerProcess, failure_of, serve
from tests.pg_support import Cluster
from tests.server.test_auth import demo_worker

Stub = tool_service_pb2_grpc.ToolServiceStub
DELETE = pb.CallToolsRequest(
    calls=[pb.CallToolRequest(call_id="d", name="kv_delete", input_json='{"key": "k"}')]
)
DEMO = ["--demo", "--no-internal", "--port", "0"]


async def held_in(process: ServerProcess) -> str:
    """Pause one batch on ``process``; the store its start-up line names."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{await process.port()}") as channel:
        paused = await Stub(channel).CallTools(DELETE, timeout=10)
        assert paused.WhichOneof("outcome") == "paused"
    (line,) = [line for line in process.lines if "paused batches in " in line]
    return line.split("paused batches in ", 1)[1].split(" (", 1)[0]


async def test_the_default_store_is_a_private_sqlite_file_in_the_state_directory(
    private_state_dir: Path,
) -> None:
    server = ServerProcess(DEMO)
    try:
        store = await held_in(server)
    finally:
        server.stop()
    database = private_state_dir / "paused-batches.db"
    assert store == f"sqlite://{database}"
    assert database.stat().st_mode & 0o777 == 0o600


async def test_the_state_url_may_come_from_a_private_file_or_the_environment(
    tmp_path: Path,
) -> None:
    named = tmp_path / "state-url"
    named.write_text(f"sqlite:///{tmp_path}/from-file.db\n")
    named.chmod(0o600)
    from_file = ServerProcess([*DEMO, "--state-file", str(named)])
    from_env = ServerProcess(DEMO, env={"LLMWORKER_STATE": f"sqlite:///{tmp_path}/from-env.db"})
    try:
        assert await held_in(from_file) == f"sqlite://{tmp_path}/from-file.db"
        assert await held_in(from_env) == f"sqlite://{tmp_path}/from-env.db"
    finally:
        from_file.stop()
        from_env.stop()
    named.chmod(0o644)
    exposed = ServerProcess([*DEMO, "--state-file", str(named)])
    assert await asyncio.to_thread(exposed.process.wait, 30) != 0
    exposed.stop()
    assert "chmod 600" in exposed.output


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"state": "mysql://db/x"}, "is no store"),
        ({"state": "sqlite:"}, "needs a file"),
        ({"pause_ttl": 31 * 86_400.0}, "30 days"),
        ({"pause_ttl": float("nan")}, "--paused-batch-ttl must be a positive number"),
        ({"state_pool_size": 0}, "--state-pool-size must be at least 1"),
    ],
)
def test_a_store_setting_that_cannot_work_is_refused(
    settings: dict[str, object], message: str
) -> None:
    config = ServerConfig(port=0)
    for key, value in settings.items():
        setattr(config, key, value)
    with pytest.raises(ConfigError, match=message):
        config.check()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql://app:s3cret@db.internal:5432/llm?sslmode=require",
            "postgresql://app:***@db.internal:5432/llm?sslmode=require",
        ),
        (
            "postgresql://app@db/llm?password=s3cret&sslmode=require",
            "postgresql://app@db/llm?password=***&sslmode=require",
        ),
        ("host=db user=app password=s3cret dbname=llm", "host=db user=app password=*** dbname=llm"),
        ("host=db PASSWORD = 's3 cret\\' x' dbname=llm", "host=db PASSWORD = *** dbname=llm"),
        ("postgresql://app:s3cret@[::1/llm", "(a --state value that is no URL)"),
    ],
)
def test_logs_never_show_a_database_password(url: str, shown: str) -> None:
    assert shown_url(url) == shown
    assert "s3" not in str(ServerConfig(port=0, state=url).described())
    with pytest.raises(ConfigError) as refused:  # not a URL this server opens
        ServerConfig(port=0, state=url.replace("postgresql://", "mysql://")).check()
    assert "s3" not in str(refused.value)


async def test_a_store_that_goes_away_answers_state_unavailable_and_calls_go_on(
    tmp_path: Path,
) -> None:
    cluster = Cluster(tmp_path / "pg")
    url = cluster.start()
    try:
        async with (
            serve(worker=demo_worker(), state=url, internal=False) as served,
            grpc.aio.insecure_channel(served.target) as channel,
        ):
            stub = Stub(channel)
            paused = await stub.CallTools(DELETE, timeout=10)
            token = paused.paused.resume_token
            await asyncio.to_thread(cluster.stop)
            for request in (
                stub.CallTools(DELETE, timeout=30),
                stub.ResumeBatch(pb.ResumeBatchRequest(resume_token=token), timeout=30),
                stub.ListPausedBatches(pb.ListPausedBatchesRequest(), timeout=30),
            ):
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await request
                failure = failure_of(raised.value)
                assert (failure.code, failure.reason) == (
                    grpc.StatusCode.UNAVAILABLE,
                    "STATE_UNAVAILABLE",
                )
                assert "nothing ran" in failure.message
            echo = pb.CallToolRequest(name="echo", input_json='{"text": "still here"}')
            answer = await stub.CallTool(echo, timeout=10)
            assert answer.output == "still here"
    finally:
        cluster.stop()


async def test_a_lock_another_session_holds_is_state_unavailable_within_seconds(
    postgres_url: str,
) -> None:
    # A replica stuck inside a transaction holding the hold lock (or a row) must not hang
    # the others' RPCs: the lock wait ends at the sessions' lock_timeout.
    async with (
        serve(worker=demo_worker(), state=postgres_url, internal=False) as served,
        grpc.aio.insecure_channel(served.target) as channel,
        await psycopg.AsyncConnection.connect(postgres_url) as stuck,
    ):
        stub = Stub(channel)
        await stuck.execute("SELECT pg_advisory_xact_lock(%s)", [HOLD_LOCK])  # and stays in it
        started = asyncio.get_running_loop().time()
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await stub.CallTools(DELETE, timeout=60)
        waited = asyncio.get_running_loop().time() - started
        failure = failure_of(raised.value)
        assert (failure.code, failure.reason) == (grpc.StatusCode.UNAVAILABLE, "STATE_UNAVAILABLE")
        assert waited < 30  # the lock_timeout is 5 s; a generous bound, not a benchmark
        await stuck.rollback()
        paused = await stub.CallTools(DELETE, timeout=10)
        assert paused.WhichOneof("outcome") == "paused"
