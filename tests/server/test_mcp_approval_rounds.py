"""Approval over MCP's 2026-07-28 revision: the call pauses as a batch in the paused-batch
store and the round ends with ``InputRequiredResult``; the next round brings the person's
answer with the sealed ``requestState``, on this server or on another sharing the store
and the state keys. The batch runs once; replayed, tampered or foreign state runs nothing."""

from __future__ import annotations

import asyncio
import os
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import grpc.aio
import mcp_types as types
import pytest
from mcp import Client

from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.errors import ConfigError
from llmworker_server.mcp_front.front import state_keys
from tests.server.test_auth import write_tokens
from tests.server.test_mcp_client_input import post_2026
from tests.server.test_mcp_front import Person, mcp_server, reason_of, text_of

OWNER, OTHER = "owner-token-0123456789abcdef", "other-token-0123456789abcdef"
WIPE: dict[str, Any] = {"name": "wipe", "arguments": {"path": "/tmp/a"}}


def approve(**content: str) -> dict[str, object]:
    return {"approval": {"action": "accept", "content": {"decision": "approve", **content}}}


def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "state-keys"
    path.write_text(os.urandom(32).hex() + "\n")
    path.chmod(0o600)
    return path


async def paused_batches(address: str) -> list[pb.PausedBatchSummary]:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        listing = await stub.ListPausedBatches(pb.ListPausedBatchesRequest(), timeout=10)
    return list(listing.batches)


async def test_the_sdk_client_approves_edits_and_denies_over_rounds() -> None:
    async with mcp_server() as (_, tools, url):
        answers = [
            (Person("accept", decision="approve"), "/tmp/a", "wiped /tmp/a"),
            (Person("accept", decision="approve", input_json='{"path": "/tmp/b"}'), "/", None),
        ]
        for person, path, expected in answers:
            async with Client(url, mode="2026-07-28", elicitation_callback=person) as client:
                result = await client.call_tool("wipe", {"path": path})
                assert not result.is_error
                assert text_of(result) == (expected or "wiped /tmp/b")
        deny = Person("accept", decision="deny", reason="not on a Friday")
        async with Client(url, mode="2026-07-28", elicitation_callback=deny) as client:
            denied = await client.call_tool("wipe", {"path": "/"})
            assert (denied.is_error, reason_of(denied)) == (True, "CALL_DENIED")
            assert "not on a Friday" in text_of(denied)
        async with Client(url, mode="2026-07-28") as client:  # no elicitation capability
            refused = await client.call_tool("wipe", {"path": "/"})
            assert reason_of(refused) == "APPROVAL_REQUIRED"
    assert tools.wiped == ["/tmp/a", "/tmp/b"]


async def test_a_round_holds_a_paused_batch_that_runs_once() -> None:
    async with mcp_server() as (served, tools, url):
        first = (await post_2026(url, "tools/call", WIPE))["result"]
        assert first["resultType"] == "input_required"
        form = first["inputRequests"]["approval"]
        assert form["method"] == "elicitation/create"
        assert "wipe" in form["params"]["message"]
        state = first["requestState"]
        assert "lw1" not in state  # the token is sealed, not shown
        [held] = await paused_batches(served.target)
        assert [call.name for call in held.pending_calls] == ["wipe"]
        assert tools.wiped == []

        unanswered = (await post_2026(url, "tools/call", {**WIPE, "requestState": state}))["result"]
        assert unanswered["resultType"] == "input_required"  # asked again, same batch
        assert len(await paused_batches(served.target)) == 1

        answered = {**WIPE, "inputResponses": approve(), "requestState": state}
        done = (await post_2026(url, "tools/call", answered))["result"]
        assert done["content"][0]["text"] == "wiped /tmp/a"
        assert await paused_batches(served.target) == []

        replayed = (await post_2026(url, "tools/call", answered))["result"]
        assert replayed["isError"] is True
        assert replayed["_meta"]["io.llmworker/reason"] == "RESUME_TOKEN_UNKNOWN"
        assert "resumed at" in replayed["content"][0]["text"]
    assert tools.wiped == ["/tmp/a"]


async def test_tampered_or_rebound_state_runs_nothing() -> None:
    async with mcp_server() as (_, tools, url):
        state: str = (await post_2026(url, "tools/call", WIPE))["result"]["requestState"]
        flipped = state[:-2] + ("A" if state[-2] != "A" else "B") + state[-1]
        for name, arguments, sent in [
            ("wipe", WIPE["arguments"], flipped),
            ("wipe", {"path": "/"}, state),  # the state is bound to the arguments
            ("echo", {"text": "x"}, state),  # and to the tool
        ]:
            body = {"name": name, "arguments": arguments, "inputResponses": approve()}
            refused = await post_2026(url, "tools/call", {**body, "requestState": sent})
            assert refused["error"]["code"] == types.INVALID_PARAMS
    assert tools.wiped == []


async def test_a_bad_edit_is_asked_again_and_the_batch_stays() -> None:
    async with mcp_server() as (_, tools, url):
        state = (await post_2026(url, "tools/call", WIPE))["result"]["requestState"]
        bad = {**WIPE, "inputResponses": approve(input_json="{nope"), "requestState": state}
        again = (await post_2026(url, "tools/call", bad))["result"]
        assert again["resultType"] == "input_required"
        assert "not JSON" in again["inputRequests"]["approval"]["params"]["message"]
        good = {**WIPE, "inputResponses": approve(), "requestState": again["requestState"]}
        assert (await post_2026(url, "tools/call", good))["result"]["content"][0]["text"] == (
            "wiped /tmp/a"
        )
    assert tools.wiped == ["/tmp/a"]


async def test_a_replica_sharing_store_and_keys_continues_the_call(tmp_path: Path) -> None:
    shared = {"state": f"sqlite:///{tmp_path}/state.db", "mcp_state_key_file": key_file(tmp_path)}
    async with AsyncExitStack() as stack:
        _, tools_a, url_a = await stack.enter_async_context(mcp_server(**shared))
        _, tools_b, url_b = await stack.enter_async_context(mcp_server(**shared))
        _, _, url_c = await stack.enter_async_context(
            mcp_server(state=shared["state"])  # the same store, its own key
        )
        state = (await post_2026(url_a, "tools/call", WIPE))["result"]["requestState"]
        answered = {**WIPE, "inputResponses": approve(), "requestState": state}
        foreign = await post_2026(url_c, "tools/call", answered)
        assert foreign["error"]["code"] == types.INVALID_PARAMS
        racing = await asyncio.gather(
            post_2026(url_b, "tools/call", answered), post_2026(url_a, "tools/call", answered)
        )
        texts = sorted(str(answer["result"]["content"][0]["text"]) for answer in racing)
        assert texts[1] == "wiped /tmp/a"
        assert "resumed at" in texts[0] or "interrupted" in texts[0]
    assert len(tools_a.wiped + tools_b.wiped) == 1


async def test_another_callers_token_cannot_continue_the_call(tmp_path: Path) -> None:
    tokens = write_tokens(
        tmp_path / "tokens.json",
        [{"token": OWNER, "label": "owner", "tools": ["*"]},
         {"token": OTHER, "label": "other", "tools": ["*"]}],
    )  # fmt: skip
    async with mcp_server(auth_tokens=tokens) as (_, tools, url):
        first = await post_2026(url, "tools/call", WIPE, OWNER)
        answered = {
            **WIPE,
            "inputResponses": approve(),
            "requestState": first["result"]["requestState"],
        }
        refused = await post_2026(url, "tools/call", answered, OTHER)
        assert refused["error"]["code"] == types.INVALID_PARAMS
        assert tools.wiped == []
        done = await post_2026(url, "tools/call", answered, OWNER)
        assert done["result"]["content"][0]["text"] == "wiped /tmp/a"
    assert tools.wiped == ["/tmp/a"]


def test_state_keys_come_from_a_private_file_of_long_keys(tmp_path: Path) -> None:
    path = key_file(tmp_path)
    path.write_text("a" * 32 + "\n\n" + "b" * 40 + "\n")
    assert state_keys(path) == [b"a" * 32, b"b" * 40]
    assert len(state_keys(None)[0]) == 32
    path.write_text("short\n")
    with pytest.raises(ConfigError, match="at least 32 characters"):
        state_keys(path)
    path.write_text("a" * 32)
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="--mcp-state-key-file"):
        state_keys(path)
    with pytest.raises(ConfigError, match="cannot read it"):
        state_keys(tmp_path / "missing")
