"""ListPausedBatches shows each caller what it may decide, a page at a time, and ResumeBatch
decides by batch id under the same rule as by token."""

from __future__ import annotations

import base64
from pathlib import Path

import grpc
import grpc.aio
import pytest

from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from tests.grpc_support import failure_of, serve
from tests.server.test_auth import bearer, demo_worker
from tests.server.test_caller_bound_approvals import NARROW, OTHER, OWNER, OWNER_TOO, UI, tokens

Stub = tool_service_pb2_grpc.ToolServiceStub


CRAFTED_POSITIONS = [
    "[" * 50_000,  # nested past the recursion limit
    '["9' + "9" * 5_000 + '", "0123456789abcdef"]',
    "[" + "9" * 5_000 + ', "0123456789abcdef"]',  # a float cannot hold it
    '[1e999, "0123456789abcdef"]',  # infinity
    '[true, "0123456789abcdef"]',
    "[1.5, 5]",
    '[1.5, "not-an-id"]',
    '[1.5, "0123456789abcdef", 3]',
    '{"created": 1.5}',
]


def page_token(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


def deleting(key: str) -> pb.CallToolsRequest:
    body = f'{{"key": "{key}"}}'
    return pb.CallToolsRequest(
        calls=[pb.CallToolRequest(call_id="d", name="kv_delete", input_json=body)]
    )


async def listed(stub: Stub, token: str, page_size: int = 0) -> list[pb.PausedBatchSummary]:
    """Every batch the caller sees, following the page tokens."""
    shown: list[pb.PausedBatchSummary] = []
    page_token = ""
    for _ in range(100):
        request = pb.ListPausedBatchesRequest(page_size=page_size, page_token=page_token)
        page = await stub.ListPausedBatches(request, metadata=bearer(token), timeout=10)
        assert page_size == 0 or len(page.batches) <= page_size
        shown.extend(page.batches)
        page_token = page.next_page_token
        if not page_token:
            return shown
    raise AssertionError("the pages never ended")


async def test_a_caller_lists_its_own_batches_and_an_approver_those_it_may_decide(
    tmp_path: Path,
) -> None:
    async with (
        serve(worker=demo_worker(), auth_tokens=tokens(tmp_path / "tokens.json")) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = Stub(channel)
        ids: list[str] = []
        for key in ("a", "b", "c"):
            paused = await stub.CallTools(deleting(key), metadata=bearer(OWNER), timeout=10)
            ids.append(paused.paused.batch_id)
        mine = await listed(stub, OWNER, page_size=1)
        assert [batch.batch_id for batch in mine] == ids  # oldest first, one per page
        assert [batch.caller for batch in mine] == ["agent-a"] * 3
        assert mine[0].pending_calls[0].name == "kv_delete"
        assert mine[0].pending_calls[0].input_json == '{"key": "a"}'
        assert mine[0].pending_calls[0].awaiting_approval
        assert mine[0].create_time.ToNanoseconds() < mine[0].expire_time.ToNanoseconds()
        assert [batch.batch_id for batch in await listed(stub, OWNER_TOO)] == ids  # same label
        assert await listed(stub, OTHER) == []
        assert [batch.batch_id for batch in await listed(stub, UI)] == ids  # approves kv_*
        assert await listed(stub, NARROW) == []  # approves echo only


async def test_an_approver_decides_by_batch_id_and_others_may_not(tmp_path: Path) -> None:
    async with (
        serve(worker=demo_worker(), auth_tokens=tokens(tmp_path / "tokens.json")) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = Stub(channel)
        paused = await stub.CallTools(deleting("k"), metadata=bearer(OWNER), timeout=10)
        batch_id = paused.paused.batch_id
        deny = pb.CallDecision(call_id="d", deny=pb.Denial(reason="not today"))
        by_id = pb.ResumeBatchRequest(batch_id=batch_id, decisions=[deny])
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await stub.ResumeBatch(by_id, metadata=bearer(OTHER), timeout=10)
        assert failure_of(raised.value).reason == "RESUME_FORBIDDEN"
        both = pb.ResumeBatchRequest(batch_id=batch_id, resume_token=paused.paused.resume_token)
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await stub.ResumeBatch(both, metadata=bearer(OWNER), timeout=10)
        assert failure_of(raised.value).reason == "INVALID_REQUEST"
        done = await stub.ResumeBatch(by_id, metadata=bearer(UI), timeout=10)
        result = done.completed.results[0]
        assert result.is_error
        assert "not today" in result.output
        assert await listed(stub, OWNER) == []
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await stub.ResumeBatch(by_id, metadata=bearer(UI), timeout=10)
        assert failure_of(raised.value).code == grpc.StatusCode.NOT_FOUND


async def test_bad_pages_are_refused_naming_the_field() -> None:
    async with (
        serve(worker=demo_worker()) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = Stub(channel)
        for request, field in [
            (pb.ListPausedBatchesRequest(page_size=-1), "page_size"),
            (pb.ListPausedBatchesRequest(page_token="garbage"), "page_token"),
            (pb.ListPausedBatchesRequest(page_token="W10="), "page_token"),  # []
            *[
                (pb.ListPausedBatchesRequest(page_token=page_token(text)), "page_token")
                for text in CRAFTED_POSITIONS
            ],
        ]:
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await stub.ListPausedBatches(request, timeout=10)
            failure = failure_of(raised.value)
            assert failure.reason == "INVALID_REQUEST"
            assert field in failure.message
        empty = await stub.ListPausedBatches(pb.ListPausedBatchesRequest(page_size=10_000))
        assert list(empty.batches) == []
        assert empty.next_page_token == ""


async def test_a_caller_seeing_some_of_many_batches_gets_every_one_across_pages(
    tmp_path: Path,
) -> None:
    # A page fills part-way through a short read of the store: the rest of that read is
    # on the next page, not lost.
    async with (
        serve(worker=demo_worker(), auth_tokens=tokens(tmp_path / "tokens.json")) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = Stub(channel)
        mine: list[str] = []
        for index, caller in enumerate([OWNER, OTHER, OTHER] + [OWNER] * 6):
            paused = await stub.CallTools(deleting(f"k{index}"), metadata=bearer(caller))
            if caller == OWNER:
                mine.append(paused.paused.batch_id)
        for page_size in (1, 2, 3, 5, 7, 50):
            shown = [batch.batch_id for batch in await listed(stub, OWNER, page_size=page_size)]
            assert shown == mine, f"page_size {page_size}"
