"""The audit trail: requests refused before anything ran are logged (RPC, reason, tool, the
caller's label when known, never a token) and counted as llmworker_refusals_total{reason};
approval decisions are logged as audit lines; a flood of refusals is rate-limited in the log
but fully counted."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from pathlib import Path

import grpc
import grpc.aio
import pytest

from llmworker import ToolMeta
from llmworker._wire import ErrorStatus, Reason
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.rpc.audit import AUDIT, Audit
from tests.grpc_support import serve
from tests.server.test_auth import AGENT, OPS, bearer, demo_worker, standard_tokens
from tests.server.test_metrics import metric_value, scrape_until
from tests.server.test_provider_identities import OPS as OPS_PROVIDER
from tests.server.test_provider_identities import Registry, front, reason

_AUDIT_LOG = "llmworker.server.audit"


def audit_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == _AUDIT_LOG]


async def _refused(call: Awaitable[object]) -> None:
    with pytest.raises(grpc.aio.AioRpcError):
        await call


async def test_refusals_are_logged_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, logger=_AUDIT_LOG)
    monkeypatch.setattr(AUDIT, "burst", 10**9)  # earlier tests' refusals used up the rate
    before = AUDIT.counts()
    tokens = standard_tokens(tmp_path / "tokens.json")
    async with (
        serve(
            worker=demo_worker(),
            auth_tokens=tokens,
            internal=False,
            metrics_address="127.0.0.1:0",
            max_concurrent_calls=1,
        ) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        echo = pb.CallToolRequest(name="echo", input_json='{"text": "x"}')
        await _refused(stub.CallTool(echo, timeout=10))  # no token
        await _refused(stub.CallTool(echo, metadata=bearer("wrong-token-0123456789"), timeout=10))
        forbidden = pb.CallToolRequest(name="now", input_json="{}")
        await _refused(stub.CallTool(forbidden, metadata=bearer(AGENT), timeout=10))
        await _refused(stub.GetTool(pb.GetToolRequest(name=""), metadata=bearer(AGENT)))
        slow = pb.CallToolRequest(name="countdown", input_json='{"n": 100, "delay": 0.1}')
        busy = stub.CallToolStream(slow, metadata=bearer(OPS))
        await busy.read()
        await _refused(stub.CallTool(echo, metadata=bearer(AGENT), timeout=10))  # at the limit
        busy.cancel()
        url = f"http://127.0.0.1:{served.app.metrics_port}/metrics"
        samples = await scrape_until(url, "llmworker_refusals_total", 1, reason="TOOL_FORBIDDEN")
    after = AUDIT.counts()
    delta = {reason: after.get(reason, 0) - before.get(reason, 0) for reason in after}
    assert delta["UNAUTHENTICATED"] == 2
    assert delta["TOOL_FORBIDDEN"] == 1
    assert delta["INVALID_REQUEST"] == 1
    assert delta["CONCURRENCY_LIMIT"] == 1
    assert metric_value(samples, "llmworker_refusals_total", reason="UNAUTHENTICATED") >= 2
    lines = audit_lines(caplog)
    for expected in [  # a line may end saying how many earlier ones the rate left out
        "refused rpc=CallTool reason=UNAUTHENTICATED",
        "refused rpc=CallTool reason=TOOL_FORBIDDEN tool=now caller=agent",
        "refused rpc=GetTool reason=INVALID_REQUEST caller=agent",
        "refused rpc=CallTool reason=CONCURRENCY_LIMIT tool=echo caller=agent",
    ]:
        assert any(line.split(" (")[0] == expected for line in lines), expected
    assert all(AGENT not in line and "wrong-token" not in line for line in lines)


async def test_approval_decisions_are_audit_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=_AUDIT_LOG)
    tokens = standard_tokens(tmp_path / "tokens.json")
    async with (
        serve(worker=demo_worker(), auth_tokens=tokens, internal=False) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        batch = pb.CallToolsRequest(
            calls=[
                pb.CallToolRequest(call_id="a", name="kv_delete", input_json='{"key": "x"}'),
                pb.CallToolRequest(call_id="b", name="kv_delete", input_json='{"key": "y"}'),
            ]
        )
        reply = await stub.CallTools(batch, metadata=bearer(AGENT), timeout=10)
        token = reply.paused.resume_token
        decisions = [
            pb.CallDecision(
                call_id="a", approve_with_input=pb.EditedApproval(input_json='{"key": "z"}')
            ),
            pb.CallDecision(call_id="b", deny=pb.Denial(reason="keep y")),
        ]
        resume = pb.ResumeBatchRequest(resume_token=token, decisions=decisions)
        await stub.ResumeBatch(resume, metadata=bearer(AGENT), timeout=10)
        assert served.app.tools.in_flight == 0
    batch_id = token.split(".")[1]
    lines = audit_lines(caplog)
    assert f"decision edit batch={batch_id} call_id=a tool=kv_delete by=agent owner=agent" in lines
    assert f"decision deny batch={batch_id} call_id=b tool=kv_delete by=agent owner=agent" in lines
    assert all(token.split(".")[2] not in line for line in lines), "the secret was logged"


async def test_a_flood_of_refusals_is_rate_limited_in_the_log_and_fully_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=_AUDIT_LOG)
    audit = Audit(burst=3, window=60.0)
    refusal = ErrorStatus.of(Reason.UNAUTHENTICATED, "no token")
    for _ in range(1000):
        audit.refused(refusal)
    await asyncio.sleep(0)
    assert audit.counts() == {"UNAUTHENTICATED": 1000}
    assert len(audit_lines(caplog)) == 3


async def test_a_tool_name_cannot_forge_fields_of_an_audit_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, logger=_AUDIT_LOG)
    monkeypatch.setattr(AUDIT, "burst", 10**9)
    tokens = standard_tokens(tmp_path / "tokens.json")
    async with (
        serve(worker=demo_worker(), auth_tokens=tokens, internal=False) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        forged = pb.CallToolRequest(name='deploy caller=ops reason=OK "x"', input_json="{}")
        await _refused(stub.CallTool(forged, metadata=bearer(AGENT), timeout=10))
        assert served.app.tools.in_flight == 0
    assert (
        r'refused rpc=CallTool reason=TOOL_FORBIDDEN tool="deploy caller=ops reason=OK \"x\"" '
        "caller=agent"
    ) in audit_lines(caplog)


async def test_every_registry_refusal_is_audited(tmp_path: Path) -> None:
    """A ToolRegistry error registers nothing: TOOL_NOT_FOUND and PROVIDER_UNAVAILABLE there
    are refusals too (from a call they are its outcome, in the call log)."""
    before = AUDIT.counts()
    async with (
        front(tmp_path, provider_check_timeout=0.5),
        grpc.aio.insecure_channel(f"unix:{tmp_path / 'internal.sock'}") as channel,
    ):
        ops = Registry(channel, OPS_PROVIDER)
        assert reason(await ops.unregister("nothing_here")) == ("NOT_FOUND", "TOOL_NOT_FOUND")
        gone = await ops.register(ToolMeta("absent"), "127.0.0.1:1")  # nothing listens
        assert reason(gone) == ("UNAVAILABLE", "PROVIDER_UNAVAILABLE")
    after = AUDIT.counts()
    assert after.get("TOOL_NOT_FOUND", 0) - before.get("TOOL_NOT_FOUND", 0) == 1
    assert after.get("PROVIDER_UNAVAILABLE", 0) - before.get("PROVIDER_UNAVAILABLE", 0) == 1
