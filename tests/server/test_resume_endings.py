"""How a resume that does not end normally leaves its batch, on the memory and SQLite stores:
cut short after its calls started, it answers BATCH_INTERRUPTED and never runs again; a
pre-hook's abort (nothing ran) ends it; a post-hook's abort (the calls ran) leaves it
interrupted; a re-pause the store refuses gives the claim back; a damaged record answers
BATCH_UNRESUMABLE and drops out of listings without failing them."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import grpc.aio
import pytest

from llmworker import (
    Abort,
    Continue,
    Mutable,
    Pause,
    PostToolCallContext,
    PostToolCallOutcome,
    PreToolCallOutcome,
    ToolCallContext,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.state.store import StateUnavailable
from tests.grpc_support import RpcFailure, Served, failure_of, serve

Stub = tool_service_pb2_grpc.ToolServiceStub
STORES = [pytest.param("memory", id="memory"), pytest.param("", id="sqlite")]


@tool_registry
class EndingTools:
    def __init__(self) -> None:
        self.started: list[str] = []

    @tool(requires_approval=True)
    async def slow_delete(self, path: str, seconds: float) -> str:
        """Delete ``path`` after approval, taking ``seconds``."""
        self.started.append(path)
        await asyncio.sleep(seconds)
        return f"deleted {path}"


def abort_forbidden(context: ToolCallContext) -> PreToolCallOutcome:
    return (
        Abort("that path is forbidden") if "/forbidden" in context.call.input_json else Continue()
    )


def pause_for_review(context: ToolCallContext) -> PreToolCallOutcome:
    return (
        Pause("a second person reviews it") if "/review" in context.call.input_json else Continue()
    )


def abort_after_audit(context: PostToolCallContext) -> PostToolCallOutcome:
    return (
        Abort("the audit refused the result") if "/audit" in context.call.input_json else Continue()
    )


@asynccontextmanager
async def ending_server(state: str) -> AsyncGenerator[tuple[Served, Stub, EndingTools]]:
    tools = EndingTools()
    worker: Worker[Mutable] = Worker()
    worker.register_tools(tool_definitions(tools))
    worker.add_pre_tool_call_hook(abort_forbidden)
    worker.add_pre_tool_call_hook(pause_for_review)
    worker.add_post_tool_call_hook(abort_after_audit)
    async with (
        serve(None, worker=worker, state=state) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        yield served, Stub(channel), tools


def deleting(path: str, seconds: float = 0.0) -> pb.CallToolsRequest:
    body = f'{{"path": "{path}", "seconds": {seconds}}}'
    return pb.CallToolsRequest(
        calls=[pb.CallToolRequest(call_id="d", name="slow_delete", input_json=body)]
    )


def approving(token: str) -> pb.ResumeBatchRequest:
    approve = pb.CallDecision(call_id="d", approve=pb.Approval())
    return pb.ResumeBatchRequest(resume_token=token, decisions=[approve])


async def paused_token(stub: Stub, path: str, seconds: float = 0.0) -> str:
    reply = await stub.CallTools(deleting(path, seconds), timeout=10)
    assert reply.WhichOneof("outcome") == "paused"
    return reply.paused.resume_token


async def refusal(stub: Stub, request: pb.ResumeBatchRequest) -> RpcFailure:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.ResumeBatch(request, timeout=10)
    return failure_of(raised.value)


async def settled(served: Served) -> None:
    """Until the server has no call in flight (a cancelled resume has unwound)."""
    for _ in range(500):
        if served.app.tools.in_flight == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("a call stayed in flight")


@pytest.mark.parametrize("state", STORES)
async def test_a_resume_cut_short_while_its_call_runs_is_interrupted_for_good(state: str) -> None:
    async with ending_server(state) as (served, stub, tools):
        token = await paused_token(stub, "/slow", seconds=30)
        running = stub.ResumeBatch(approving(token))
        for _ in range(500):
            if tools.started:
                break
            await asyncio.sleep(0.01)
        assert tools.started == ["/slow"]
        running.cancel()  # the client goes away while the call runs
        await settled(served)
        refused = await refusal(stub, approving(token))
        assert (refused.code, refused.reason) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "BATCH_INTERRUPTED",
        )
        assert refused.metadata["may_have_run"] == "d"
        assert "client went away" in refused.message
    assert tools.started == ["/slow"]  # never run again


@pytest.mark.parametrize("state", STORES)
async def test_a_pre_hook_abort_on_resume_ends_the_batch_having_run_nothing(state: str) -> None:
    async with ending_server(state) as (_, stub, tools):
        token = await paused_token(stub, "/forbidden")
        aborted = await refusal(stub, approving(token))
        assert (aborted.code, aborted.reason) == (grpc.StatusCode.ABORTED, "HOOK_ABORTED")
        gone = await refusal(stub, approving(token))
        assert (gone.code, gone.reason) == (grpc.StatusCode.NOT_FOUND, "RESUME_TOKEN_UNKNOWN")
        assert "resumed_at" not in gone.metadata
    assert tools.started == []


@pytest.mark.parametrize("state", STORES)
async def test_a_post_hook_abort_leaves_the_batch_interrupted(state: str) -> None:
    async with ending_server(state) as (_, stub, tools):
        token = await paused_token(stub, "/audit")
        aborted = await refusal(stub, approving(token))
        assert aborted.reason == "HOOK_ABORTED"
        again = await refusal(stub, approving(token))
        assert again.reason == "BATCH_INTERRUPTED"
        assert again.metadata["may_have_run"] == "d"
    assert tools.started == ["/audit"]


async def test_a_re_pause_the_store_refuses_gives_the_claim_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (a shared store only: the memory store's hold never fails, and a resume there takes
    # the batch object itself, so a refused re-pause would end the batch, having run nothing)
    async with ending_server("") as (served, stub, tools):
        token = await paused_token(stub, "/review")
        store = served.app.tools.paused_batches
        hold = store.hold

        async def unavailable(*args: object, **kwargs: object) -> None:
            raise StateUnavailable("the test's store is down for a moment")

        monkeypatch.setattr(store, "hold", unavailable)
        refused = await refusal(stub, approving(token))
        assert (refused.code, refused.reason) == (
            grpc.StatusCode.UNAVAILABLE,
            "STATE_UNAVAILABLE",
        )
        monkeypatch.setattr(store, "hold", hold)
        again = await stub.ResumeBatch(approving(token), timeout=10)  # the claim came back
        assert again.paused.reason == "a second person reviews it"
        done = await stub.ResumeBatch(approving(again.paused.resume_token), timeout=10)
        assert done.completed.results[0].output == "deleted /review"
    assert tools.started == ["/review"]


async def test_a_damaged_record_is_unresumable_and_left_out_of_listings(
    private_state_dir: Path,
) -> None:
    async with ending_server("") as (_, stub, tools):
        damaged = await paused_token(stub, "/one")
        kept = await paused_token(stub, "/two")
        damaged_id = damaged.split(".")[1]
        with sqlite3.connect(private_state_dir / "paused-batches.db") as db:
            db.execute(
                "UPDATE paused_batches SET batch = ?, summary = ? WHERE id = ?",
                ['{"v": 1, "hooks": [], "calls": 5}', "[1, 2, 3]", damaged_id],
            )
        refused = await refusal(stub, approving(damaged))
        assert (refused.code, refused.reason) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "BATCH_UNRESUMABLE",
        )
        listing = await stub.ListPausedBatches(pb.ListPausedBatchesRequest(), timeout=10)
        assert [batch.batch_id for batch in listing.batches] == [kept.split(".")[1]]
        done = await stub.ResumeBatch(approving(kept), timeout=10)
        assert done.completed.results[0].output == "deleted /two"
    assert tools.started == ["/two"]
