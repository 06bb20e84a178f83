"""Operators see unexpected failures once, with traceback; clients may see less."""

from __future__ import annotations

import logging

import grpc
import grpc.aio
import pytest

from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.rpc.failure_log import FailureLog
from tests.grpc_support import failure_of, serve
from tests.server.test_crash_proof import crash_worker


async def crash_call(target: str, kind: str) -> grpc.aio.AioRpcError:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CallTool(
                pb.CallToolRequest(name="crash", input_json=f'{{"kind": "{kind}"}}')
            )
        return caught.value


async def test_a_crash_is_logged_with_traceback_tool_and_call_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, "llmworker.server.failures")
    async with serve(worker=crash_worker()) as served:
        error = await crash_call(served.target, "key")
    failure = failure_of(error)
    assert failure.reason == "TOOL_EXECUTION_FAILED"
    assert failure.message == "Tool execution failed: Execution failed: 'missing_key'"
    call_id = failure.metadata["call_id"]
    records = [record for record in caplog.records if record.name == "llmworker.server.failures"]
    assert len(records) == 1
    text = records[0].getMessage()
    assert f"tool=crash call_id={call_id} raised KeyError: 'missing_key'" in text
    assert "Traceback" in text
    assert "in crash" in text
    assert all(line.startswith("    | ") for line in text.splitlines()[1:])


async def test_a_tool_error_raised_on_purpose_is_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, "llmworker.server.failures")
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CallTool(pb.CallToolRequest(name="fail", input_json='{"kind": "invalid"}'))
        assert "call_id" not in failure_of(caught.value).metadata
    assert not [record for record in caplog.records if record.name == "llmworker.server.failures"]


async def test_redact_errors_sends_a_generic_message_with_the_call_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, "llmworker.server.failures")
    async with serve(worker=crash_worker(), redact_errors=True) as served:
        for kind, reason in [("key", "TOOL_EXECUTION_FAILED"), ("exit", "TOOL_INTERNAL")]:
            failure = failure_of(await crash_call(served.target, kind))
            assert failure.reason == reason
            call_id = failure.metadata["call_id"]
            assert f"call_id={call_id}" in failure.message
            assert "missing_key" not in failure.message
            assert "missing_key" not in failure.metadata.get("tool_error", "")
            assert "SystemExit" not in failure.message
    assert "missing_key" in caplog.text  # the server kept the details


def test_a_failing_tool_cannot_flood_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, "llmworker.server.failures")
    failures = FailureLog(burst=3, window=60)
    for index in range(100):
        failures.report("flaky", str(index), RuntimeError("down\n2099-01-01 forged line"))
    failures.report("other", "x", RuntimeError("also down"))
    records = [record.getMessage() for record in caplog.records]
    assert len(records) == 4
    assert sum("tool=flaky" in record for record in records) == 3
    assert all("\n2099" not in record for record in records)
    assert "down\\n2099-01-01 forged line" in records[0]


def test_after_the_window_the_next_traceback_counts_what_was_left_out(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.ERROR, "llmworker.server.failures")
    now = [1000.0]
    monkeypatch.setattr("llmworker_server.rpc.log_budget.time.monotonic", lambda: now[0])
    failures = FailureLog(burst=1, window=10)
    for _ in range(5):
        failures.report("flaky", "1", RuntimeError("down"))
    now[0] += 11
    failures.report("flaky", "2", RuntimeError("down"))
    records = [record.getMessage() for record in caplog.records]
    assert len(records) == 2
    assert "(4 similar failures of this tool were not logged)" in records[1]
