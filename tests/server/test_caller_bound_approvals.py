"""Approvals belong to their caller: with --auth-tokens a paused batch is resumed only by the
caller (label) that paused it, or by a token whose ``approves`` globs match its pending
tools; another caller gets PERMISSION_DENIED / RESUME_FORBIDDEN and the batch stays
resumable by its owner."""

from __future__ import annotations

from pathlib import Path

import grpc
import grpc.aio
import pytest

from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.errors import AuthTokensError
from llmworker_server.rpc.auth import CallerTokens
from tests.grpc_support import failure_of, serve
from tests.server.test_auth import bearer, demo_worker, write_tokens

OWNER = "owner-token-0123456789"
OWNER_TOO = "owner-second-token-0123"  # the same label: a rotated token
OTHER = "other-token-0123456789"
UI = "approvals-ui-token-0123"
NARROW = "narrow-approver-token-0"


def tokens(path: Path) -> Path:
    return write_tokens(
        path,
        [
            {"token": OWNER, "tools": ["*"], "label": "agent-a"},
            {"token": OWNER_TOO, "tools": ["*"], "label": "agent-a"},
            {"token": OTHER, "tools": ["*"], "label": "agent-b"},
            {"token": UI, "tools": ["echo"], "label": "approvals-ui", "approves": ["kv_*"]},
            {"token": NARROW, "tools": ["*"], "label": "narrow", "approves": ["echo"]},
        ],
    )


def _paused_batch() -> pb.CallToolsRequest:
    return pb.CallToolsRequest(
        calls=[
            pb.CallToolRequest(call_id="1", name="kv_set", input_json='{"key":"k","value":"v"}'),
            pb.CallToolRequest(call_id="2", name="kv_delete", input_json='{"key": "k"}'),
        ]
    )


def _edited(token: str) -> pb.ResumeBatchRequest:
    decision = pb.CallDecision(
        call_id="2", approve_with_input=pb.EditedApproval(input_json='{"key": "other"}')
    )
    return pb.ResumeBatchRequest(resume_token=token, decisions=[decision])


def _approved(token: str) -> pb.ResumeBatchRequest:
    return pb.ResumeBatchRequest(
        resume_token=token, decisions=[pb.CallDecision(call_id="2", approve=pb.Approval())]
    )


async def test_another_caller_cannot_resume_and_the_owner_still_can(tmp_path: Path) -> None:
    async with (
        serve(worker=demo_worker(), auth_tokens=tokens(tmp_path / "t.json"), internal=False)
        as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):  # fmt: skip
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        reply = await stub.CallTools(_paused_batch(), metadata=bearer(OWNER), timeout=10)
        assert reply.WhichOneof("outcome") == "paused"
        token = reply.paused.resume_token
        for stranger in (OTHER, NARROW):  # narrow approves echo only, not kv_delete
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.ResumeBatch(_edited(token), metadata=bearer(stranger), timeout=10)
            failure = failure_of(caught.value)
            assert (failure.code, failure.reason) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "RESUME_FORBIDDEN",
            )
            assert "the caller 'agent-a' paused it" in failure.message
            assert "stays resumable by its owner" in failure.message
            assert token not in failure.message
        # Nothing ran, and the owner resumes (with another token of the same label).
        resumed = await stub.ResumeBatch(_approved(token), metadata=bearer(OWNER_TOO), timeout=10)
        assert resumed.WhichOneof("outcome") == "completed"
        # "deleted": the owner's decision ran on key k, not a stranger's edit ("other").
        assert [result.output for result in resumed.completed.results] == ["ok", "deleted"]
        assert served.app.tools.in_flight == 0


async def test_an_approver_decides_another_callers_batch(tmp_path: Path) -> None:
    async with (
        serve(worker=demo_worker(), auth_tokens=tokens(tmp_path / "t.json"), internal=False)
        as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):  # fmt: skip
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        reply = await stub.CallTools(_paused_batch(), metadata=bearer(OWNER), timeout=10)
        token = reply.paused.resume_token
        # The UI's own tools are only echo: approving kv_* is its approver scope's grant.
        resumed = await stub.ResumeBatch(_approved(token), metadata=bearer(UI), timeout=10)
        assert resumed.WhichOneof("outcome") == "completed"
        assert [result.output for result in resumed.completed.results] == ["ok", "deleted"]
        assert served.app.tools.in_flight == 0


async def test_without_caller_tokens_any_holder_of_the_resume_token_resumes() -> None:
    async with (
        serve(worker=demo_worker(), internal=False) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        reply = await stub.CallTools(_paused_batch(), timeout=10)
        resumed = await stub.ResumeBatch(_approved(reply.paused.resume_token), timeout=10)
        assert [result.output for result in resumed.completed.results] == ["ok", "deleted"]
        assert served.app.tools.in_flight == 0


def test_approves_must_be_a_list_of_globs(tmp_path: Path) -> None:
    path = write_tokens(tmp_path / "t.json", [{"token": OWNER, "tools": ["*"], "approves": "kv_*"}])
    with pytest.raises(AuthTokensError, match=r"tokens\[0\]: approves must be a non-empty list"):
        CallerTokens.load(path)


async def test_a_batch_stays_its_callers_when_an_entry_before_it_is_removed(
    tmp_path: Path,
) -> None:
    """Default labels come from the token, not the entry's place: removing the first entry
    must not hand its label (and its paused batches) to the next one."""
    path = write_tokens(tmp_path / "t.json", [{"token": OWNER, "tools": ["*"]},
                                              {"token": OTHER, "tools": ["*"]}])  # fmt: skip
    async with (
        serve(worker=demo_worker(), auth_tokens=path, internal=False) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        reply = await stub.CallTools(_paused_batch(), metadata=bearer(OWNER), timeout=10)
        write_tokens(path, [{"token": OTHER, "tools": ["*"]}])
        served.app.reload()
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.ResumeBatch(
                _approved(reply.paused.resume_token), metadata=bearer(OTHER), timeout=10
            )
        assert failure_of(caught.value).reason == "RESUME_FORBIDDEN"
