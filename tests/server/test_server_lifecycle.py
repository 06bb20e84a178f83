"""Server lifecycle: locking, health, reflection, graceful shutdown, the command line."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import grpc
import grpc.aio
import pytest
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.cli import parse_args
from llmworker_server.config import ServerConfig
from tests.grpc_support import REPO, ServerProcess, serve


async def test_without_an_internal_listener_the_registry_locks_at_start() -> None:
    async with serve(internal=False) as served:
        assert served.app.internal_target is None
        assert served.app.registry.is_locked
        assert served.app.registry.worker.is_locked


async def test_the_lock_flag_and_the_registration_window(tmp_path: Path) -> None:
    async with serve(internal_socket=tmp_path / "a.sock", lock_at_start=True) as served:
        assert served.app.registry.is_locked
    async with serve(internal_socket=tmp_path / "b.sock", registration_window=0.2) as served:
        assert not served.app.registry.is_locked
        await asyncio.sleep(0.4)
        assert served.app.registry.is_locked


async def test_health_answers_serving_and_reflection_lists_the_services() -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        for service in ("", "llmworker.v1.ToolService"):
            reply = await check(health_pb2.HealthCheckRequest(service=service))
            assert reply.status == health_pb2.HealthCheckResponse.SERVING

        def services_and_method_file() -> tuple[list[str], str]:
            with grpc.insecure_channel(served.target) as sync_channel:
                database = ProtoReflectionDescriptorDatabase(sync_channel)
                # ghz and `grpcurl describe` ask for the file of a method symbol.
                method_file = database.FindFileContainingSymbol("llmworker.v1.ToolService.CallTool")
                return sorted(database.get_services()), method_file.name

        services, method_file = await asyncio.to_thread(services_and_method_file)
        assert services == [
            "grpc.health.v1.Health",
            "grpc.reflection.v1alpha.ServerReflection",
            "llmworker.v1.ToolService",
        ]
        assert method_file == "llmworker/v1/tool_service.proto"


async def test_stop_lets_a_call_in_flight_finish_and_refuses_new_ones() -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        in_flight = asyncio.ensure_future(
            stub.CallTool(pb.CallToolRequest(name="sleep", input_json='{"seconds": 0.5}'))
        )
        for _ in range(100):
            if served.tools.started:
                break
            await asyncio.sleep(0.01)
        stopping = asyncio.ensure_future(served.app.stop(grace=5))
        await asyncio.sleep(0.1)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.CallTool(pb.CallToolRequest(name="echo", input_json='{"text": "late"}'))
        assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
        assert (await in_flight).output == "slept 0.5"
        await stopping


async def test_sigterm_finishes_the_call_in_flight_and_exits_zero() -> None:
    process = ServerProcess(
        ["--tools", "tests.server_tools:ServerTestTools", "--port", "0", "--no-internal"]
    )
    try:
        port = await process.port()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            call = asyncio.ensure_future(
                stub.CallTool(pb.CallToolRequest(name="sleep", input_json='{"seconds": 1}'))
            )
            await asyncio.sleep(0.3)
            process.terminate()
            assert (await call).output == "slept 1.0"
        assert await asyncio.to_thread(process.stop) == 0
    finally:
        process.process.kill()
        process.stop()
    assert "tool=sleep status=OK" in process.output
    assert "signal received: finishing calls in flight (grace 10.0 s, drain delay 0.0 s)" in (
        process.output
    )


def test_help_documents_every_flag() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "llmworker_server", "--help"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    for flag in [
        "--tools", "--demo", "--host", "--port", "--workers", "--max-message-bytes",
        "--no-internal", "--internal-socket", "--internal-address", "--token-file", "--lock",
        "--registration-window", "--register-with", "--advertise", "--call-timeout",
        "--tool-timeout", "--max-concurrent-calls", "--grace", "--log-level", "LLMWORKER_TOKEN",
    ]:  # fmt: skip
        assert flag in completed.stdout, flag


def test_parse_args_reads_flags_and_the_token_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LLMWORKER_TOKEN", "from-env")
    config = parse_args(
        ["--port", "0", "--tool-timeout", "search=2.5", "--call-timeout", "0", "--demo"]
    )
    assert config.token == "from-env"
    assert config.tool_timeouts == {"search": 2.5}
    assert config.call_timeout is None
    assert config.host == "127.0.0.1"
    assert config.demo


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--internal-address", "127.0.0.1:0"], "set a token"),
        (["--tool-timeout", "oops"], "is not NAME=SECONDS"),
        (["--workers", "2"], "add --no-internal"),
        (["--max-concurrent-calls", "0"], "must be at least 1"),
    ],
)
def test_unsafe_or_malformed_flags_are_refused_with_the_fix(
    arguments: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("LLMWORKER_TOKEN", raising=False)
    with pytest.raises(SystemExit) as exited:
        parse_args(arguments)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_the_default_config_listens_on_loopback_only() -> None:
    assert ServerConfig().host == "127.0.0.1"
    assert ServerConfig().internal_address is None


@pytest.mark.parametrize(
    "arguments",
    [
        ["--token", "hunter2-secret"],
        ["--token=hunter2-secret"],
        ["--tok", "hunter2-secret"],
        ["--token-f", "hunter2-secret"],
        ["--demo", "hunter2-secret"],
        ["--tokn=hunter2-secret"],
    ],
)
def test_a_secret_on_the_command_line_is_refused_and_never_echoed(
    arguments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(arguments)
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert "hunter2-secret" not in error
    if arguments[0].split("=")[0] == "--token":
        assert "LLMWORKER_TOKEN" in error
        assert "--token-file" in error


def test_the_token_is_not_in_the_config_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMWORKER_TOKEN", "hunter2-secret")
    config = parse_args(["--port", "0"])
    assert config.token == "hunter2-secret"
    assert "hunter2-secret" not in repr(config)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--max-input-bytes", "0"], "--max-input-bytes must be at least 1"),
        (["--tool-max-input-bytes", "x"], "is not NAME=BYTES"),
        (["--drain-delay", "-1"], "--drain-delay must be a number of seconds"),
        (["--grace", "nan"], "--grace must be a number of seconds"),
        (["--max-concurrent-streams", "0"], "--max-concurrent-streams must be at least 1"),
    ],
)
def test_limit_flags_are_checked(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_args(arguments)
    assert message in capsys.readouterr().err


def test_the_new_flags_are_documented() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "llmworker_server", "--help"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    for flag in [
        "--max-input-bytes", "--tool-max-input-bytes", "--redact-errors", "--drain-delay",
        "--max-concurrent-streams", "--max-connection-idle", "--max-connection-age",
        "--max-connection-age-grace",
    ]:  # fmt: skip
        assert flag in completed.stdout, flag


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--call-timeout", "-1"], "--call-timeout must be a positive number of seconds"),
        (["--call-timeout", "nan"], "--call-timeout must be a positive number of seconds"),
        (["--tool-timeout", "x=-2"], "--tool-timeout x must be a positive number of seconds"),
        (["--tool-timeout", "x=inf"], "--tool-timeout x must be a positive number of seconds"),
    ],
)
def test_timeouts_must_be_positive_and_finite(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_args(arguments)
    assert message in capsys.readouterr().err


def test_one_ctrl_c_stops_workers_gracefully() -> None:
    port = 50173
    process = subprocess.Popen(
        [sys.executable, "-m", "llmworker_server", "--demo", "--no-internal", "--workers", "2",
         "--port", str(port)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        served = 0
        while served < 2 and time.monotonic() < deadline:
            line = process.stdout.readline() if process.stdout else ""
            served += " tools on " in line
        assert served == 2, "both workers should report serving"
        os.killpg(process.pid, signal.SIGINT)  # what a terminal sends on Ctrl-C
        output, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, output
    assert "exiting at once" not in output


def test_the_version_is_one_number_for_the_library_and_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from importlib.metadata import version

    import llmworker

    with pytest.raises(SystemExit) as exited:
        parse_args(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"llmworker-server {llmworker.__version__}"
    assert version("llmworker") == llmworker.__version__


async def test_health_list_answers_every_service_and_leaves_no_traceback() -> None:
    # HealthListResponse is in grpcio-health-checking's health_pb2, not yet in its stubs.
    list_response = cast("type[Message]", getattr(health_pb2, "HealthListResponse"))  # noqa: B009
    process = ServerProcess(["--demo", "--no-internal", "--port", "0"])
    try:
        target = f"127.0.0.1:{await process.port()}"
        async with grpc.aio.insecure_channel(target) as channel:
            listing: grpc.aio.UnaryUnaryMultiCallable[None, Message] = channel.unary_unary(
                "/grpc.health.v1.Health/List",
                request_serializer=lambda _: b"",
                response_deserializer=list_response.FromString,
            )
            reply = await listing(None, timeout=10)
        fields = {descriptor.name: value for descriptor, value in reply.ListFields()}
        entries = cast("Mapping[str, health_pb2.HealthCheckResponse]", fields["statuses"])
        statuses = {name: status.status for name, status in entries.items()}
        serving = health_pb2.HealthCheckResponse.SERVING
        assert statuses == {"": serving, "llmworker.v1.ToolService": serving}
    finally:
        process.stop()
    assert "Traceback" not in process.output


async def test_stopping_twice_is_harmless() -> None:
    async with serve() as served:
        await served.app.stop(grace=0)
        await served.app.stop(grace=0)  # and serve() stops it a third time on the way out


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
async def test_reflection_answers_as_v1_and_v1alpha(version: str) -> None:
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        info = channel.stream_stream(
            f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        requests = [
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(
                file_containing_symbol="llmworker.v1.ToolService.CallTool"
            ),
        ]
        replies = [reply async for reply in info(iter(requests), timeout=10)]
        assert isinstance(replies[0], reflection_pb2.ServerReflectionResponse)
        names = [service.name for service in replies[0].list_services_response.service]
        assert "llmworker.v1.ToolService" in names
        assert isinstance(replies[1], reflection_pb2.ServerReflectionResponse)
        assert replies[1].file_descriptor_response.file_descriptor_proto
