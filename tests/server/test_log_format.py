"""``--log-format text|json`` and the start-up line: the release and the settings, never a
secret; ``--loop`` picks the event loop the start-up line names."""

from __future__ import annotations

import asyncio
import json
import logging
import sys

import grpc.aio
import pytest

from llmworker import __version__
from llmworker.v1 import tool_service_pb2, tool_service_pb2_grpc
from llmworker_server.event_loop import choose_loop
from llmworker_server.ops.log_format import JsonFormatter
from tests.grpc_support import ServerProcess, wait_for_line

_SECRET = "registry-token-that-must-never-be-logged"
_KEYS = {"time", "level", "logger", "message"}


async def _fail_twice_then_stop(server: ServerProcess, name: str = "echo") -> int:
    """Two failing calls (bad arguments, then to ``name``), logged; then SIGTERM (also when
    something failed on the way: no server outlives its test)."""
    try:
        port = await server.port()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            for request in (
                tool_service_pb2.CallToolRequest(name="echo", input_json='{"text": 1}'),
                tool_service_pb2.CallToolRequest(name=name),
            ):
                with pytest.raises(grpc.aio.AioRpcError):
                    await stub.CallTool(request)
        await wait_for_line(server, "llmworker.server.calls")
    finally:
        code = await asyncio.to_thread(server.stop)
    return code


async def test_json_logs_are_one_object_a_line_with_fixed_keys() -> None:
    server = ServerProcess(
        ["--demo", "--port", "0", "--log-format", "json", "--lock"],
        env={"LLMWORKER_TOKEN": _SECRET},
    )
    assert await _fail_twice_then_stop(server, name='bad\n"name') == 0
    lines = [json.loads(line) for line in server.lines]
    assert all(line.keys() >= _KEYS for line in lines), server.output
    calls = [line for line in lines if line["logger"] == "llmworker.server.calls"]
    assert [call["status"] for call in calls] == ["INVALID_ARGUMENT", "NOT_FOUND"]
    keys = _KEYS | {"tool", "status", "duration_ms", "caller", "transport"}
    assert all(set(call) == keys and call["transport"] == "grpc" for call in calls)
    assert calls[0]["tool"] == "echo"
    assert calls[1]["tool"] == '"bad\\n\\"name"'  # escaped as the text line shows it
    assert calls[0]["caller"] is None
    (start,) = [line for line in lines if "starting" in line["message"]]
    assert start["version"] == __version__
    assert start["config"]["token"] == "set"
    assert start["config"]["log_format"] == "json"
    assert _SECRET not in server.output


async def test_text_logs_start_with_the_release_and_the_changed_settings() -> None:
    server = ServerProcess(["--demo", "--port", "0", "--lock"], env={"LLMWORKER_TOKEN": _SECRET})
    assert await _fail_twice_then_stop(server) == 0
    (start,) = [line for line in server.lines if " starting (" in line]
    assert f"llmworker-server {__version__} starting (Python " in start
    assert "settings: port=0 demo=True" in start
    assert "token=set" in start
    assert _SECRET not in server.output
    assert " INFO llmworker.server.calls tool=echo status=INVALID_ARGUMENT duration_ms=" in (
        server.output
    )


def test_a_json_line_carries_the_traceback_as_one_key() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "failed"
    assert "ValueError: boom" in line["exception"]
    assert line["time"].endswith("Z")


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
async def test_the_server_serves_on_the_loop_asked_for(loop: str) -> None:
    server = ServerProcess(["--demo", "--no-internal", "--port", "0", "--loop", loop])
    assert await _fail_twice_then_stop(server) == 0
    assert f"event loop {loop});" in server.output


def test_auto_is_uvloop_where_it_is_installed() -> None:
    assert choose_loop("auto").name == "uvloop"
    assert choose_loop("asyncio").name == "asyncio"
