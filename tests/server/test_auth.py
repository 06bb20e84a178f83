"""Caller tokens with per-tool scopes on the public ToolService: refusals, the caller's own
view of the definitions, batches, tokens bound to client certificates, reloads, and token
files that cannot work."""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
from collections.abc import Sequence
from pathlib import Path

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from llmworker import (
    ClientTls,
    Mutable,
    RemoteServiceError,
    RemoteToolServerHandle,
    SyncRemoteToolServerHandle,
    ToolOutput,
    Worker,
    tool_definitions,
)
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.app import ServerApp
from llmworker_server.cli import parse_args
from llmworker_server.config import ServerConfig
from llmworker_server.demo_tools import DemoTools
from llmworker_server.errors import AuthTokensError
from llmworker_server.rpc.auth import CallerCheck
from tests.grpc_support import RpcFailure, ServerProcess, failure_of, serve, wait_for_line
from tests.tls_support import Pki

AGENT = "agent-token-0123456789abcdef"
OPS = "ops-token-0123456789abcdef"
BOUND = "bound-token-0123456789abcdef"
KV_TOOLS = ["echo", "kv_delete", "kv_get", "kv_list", "kv_set"]


def demo_worker() -> Worker[Mutable]:
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    return worker


def write_tokens(path: Path, entries: Sequence[dict[str, object]]) -> Path:
    path.write_text(json.dumps({"tokens": list(entries)}))
    path.chmod(0o600)
    return path


def standard_tokens(path: Path) -> Path:
    return write_tokens(
        path,
        [
            {"token": AGENT, "tools": ["echo", "kv_*"], "label": "agent"},
            {"sha256": hashlib.sha256(OPS.encode()).hexdigest(), "tools": ["*"], "label": "ops"},
            {"token": BOUND, "tools": ["echo"], "label": "bot", "client_subject": "CN=client"},
        ],
    )


def bearer(token: str | None) -> tuple[tuple[str, str], ...]:
    return () if token is None else (("authorization", f"Bearer {token}"),)


async def listing(
    target: str, token: str | None, **fields: object
) -> pb.ListDefinitionsSortedResponse:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        request = pb.ListDefinitionsSortedRequest(**fields)  # type: ignore[arg-type]
        return await stub.ListDefinitionsSorted(request, metadata=bearer(token), timeout=10)


async def failure(call: object) -> RpcFailure:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    return failure_of(caught.value)


async def test_callers_without_a_known_token_are_refused_and_health_stays_open(
    tmp_path: Path,
) -> None:
    tokens = standard_tokens(tmp_path / "tokens.json")
    async with serve(worker=demo_worker(), auth_tokens=tokens) as served:
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            echo = pb.CallToolRequest(name="echo", input_json='{"text": "x"}')
            for token in (None, "not-a-known-token-at-all", ""):
                metadata = bearer(token)
                for call in (
                    stub.CallTool(echo, metadata=metadata, timeout=10),
                    stub.GetTool(pb.GetToolRequest(name="echo"), metadata=metadata, timeout=10),
                    stub.ListDefinitionsSorted(
                        pb.ListDefinitionsSortedRequest(), metadata=metadata, timeout=10
                    ),
                    stub.CallTools(pb.CallToolsRequest(calls=[echo]), metadata=metadata),
                ):
                    refused = await failure(call)
                    assert (refused.code, refused.reason) == (
                        grpc.StatusCode.UNAUTHENTICATED,
                        "UNAUTHENTICATED",
                    )
                    assert "--auth-tokens" in refused.message
            stream = stub.CallToolStream(echo, timeout=10)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in stream:
                    pass
            assert failure_of(caught.value).reason == "UNAUTHENTICATED"
            watch = stub.WatchDefinitions(pb.WatchDefinitionsRequest(), timeout=10)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in watch:
                    pass
            assert failure_of(caught.value).reason == "UNAUTHENTICATED"
            check = channel.unary_unary(
                "/grpc.health.v1.Health/Check",
                request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                response_deserializer=health_pb2.HealthCheckResponse.FromString,
            )
            answer = await check(health_pb2.HealthCheckRequest(), timeout=10)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING

        def reflected_services() -> list[str]:
            with grpc.insecure_channel(served.target) as sync_channel:
                return sorted(ProtoReflectionDescriptorDatabase(sync_channel).get_services())

        assert "llmworker.v1.ToolService" in await asyncio.to_thread(reflected_services)
        assert served.app.tools.in_flight == 0


async def test_a_caller_sees_and_calls_only_the_tools_of_its_token(tmp_path: Path) -> None:
    tokens = standard_tokens(tmp_path / "tokens.json")
    async with serve(worker=demo_worker(), auth_tokens=tokens) as served:
        full = served.app.registry.handle.definitions_snapshot()
        scoped = await listing(served.target, AGENT)
        assert [d.name for d in scoped.definitions] == KV_TOOLS
        assert scoped.fingerprint != full.fingerprint
        unchanged = await listing(served.target, AGENT, known_fingerprint=scoped.fingerprint)
        assert unchanged.unchanged
        everything = await listing(served.target, OPS)  # a sha256 entry, every tool
        assert everything.fingerprint == full.fingerprint
        assert len(everything.definitions) == len(full.definitions)
        formatted = await listing(served.target, AGENT, format=pb.DEFINITION_FORMAT_OPENAI_CHAT)
        names = [tool["function"]["name"] for tool in json.loads(formatted.definitions_json)]
        assert names == KV_TOOLS

        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            reply = await stub.CallTool(
                pb.CallToolRequest(name="echo", input_json='{"text": "hi"}'),
                metadata=bearer(AGENT),
                timeout=10,
            )
            assert reply.output == "hi"
            for call in (
                stub.CallTool(
                    pb.CallToolRequest(name="calculate", input_json='{"expression": "1"}'),
                    metadata=bearer(AGENT),
                ),
                stub.GetTool(pb.GetToolRequest(name="calculate"), metadata=bearer(AGENT)),
            ):
                forbidden = await failure(call)
                assert (forbidden.code, forbidden.reason) == (
                    grpc.StatusCode.PERMISSION_DENIED,
                    "TOOL_FORBIDDEN",
                )
                assert forbidden.metadata["tool"] == "calculate"
                assert "labelled 'agent'" in forbidden.message
                assert AGENT not in forbidden.message

            batch = pb.CallToolsRequest(
                calls=[
                    pb.CallToolRequest(
                        call_id="a", name="kv_set", input_json='{"key": "k", "value": "v"}'
                    ),
                    pb.CallToolRequest(call_id="b", name="now", input_json="{}"),
                ]
            )
            refused = await failure(stub.CallTools(batch, metadata=bearer(AGENT), timeout=10))
            assert (refused.reason, refused.metadata["tool"]) == ("TOOL_FORBIDDEN", "now")
            unset = await failure(  # nothing of a refused batch ran: kv_set did not
                stub.CallTool(
                    pb.CallToolRequest(name="kv_get", input_json='{"key": "k"}'),
                    metadata=bearer(AGENT),
                    timeout=10,
                )
            )
            assert "no value under key 'k'" in unset.message


async def test_a_token_bound_to_a_client_certificate_needs_that_certificate(
    tmp_path: Path, pki: Pki
) -> None:
    tokens = standard_tokens(tmp_path / "tokens.json")
    request = pb.CallToolRequest(name="echo", input_json='{"text": "bound"}')
    async with serve(
        worker=demo_worker(), auth_tokens=tokens, tls=pki.server_files(mutual=True)
    ) as served:
        credentials = pki.client_tls(pki.client).credentials()
        async with grpc.aio.secure_channel(served.target, credentials) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            reply = await stub.CallTool(request, metadata=bearer(BOUND), timeout=10)
            assert reply.output == "bound"
    async with serve(worker=demo_worker(), auth_tokens=tokens, tls=pki.server_files()) as served:
        credentials = ClientTls.from_files(root_ca=pki.ca.cert).credentials()
        async with grpc.aio.secure_channel(served.target, credentials) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            refused = await failure(stub.CallTool(request, metadata=bearer(BOUND), timeout=10))
            assert refused.reason == "UNAUTHENTICATED"
            assert "bound to a client certificate (CN=client)" in refused.message


async def test_sighup_reloads_the_tokens_and_a_bad_file_keeps_the_old_ones(
    tmp_path: Path,
) -> None:
    tokens = standard_tokens(tmp_path / "tokens.json")
    process = ServerProcess(
        ["--demo", "--no-internal", "--port", "0", "--auth-tokens", str(tokens)]
    )
    try:
        target = f"127.0.0.1:{await process.port()}"
        assert "callers checked" in "".join(process.lines)
        assert len((await listing(target, AGENT)).definitions) == len(KV_TOOLS)

        tokens.write_text("{not json")
        process.process.send_signal(signal.SIGHUP)
        await wait_for_line(process, "caller tokens not reloaded")
        assert len((await listing(target, AGENT)).definitions) == len(KV_TOOLS)

        write_tokens(tokens, [{"token": OPS, "tools": ["now"], "label": "ops"}])
        process.process.send_signal(signal.SIGHUP)
        await wait_for_line(process, "caller tokens reloaded")
        refused = await failure(listing(target, AGENT))  # revoked
        assert refused.reason == "UNAUTHENTICATED"
        assert [d.name for d in (await listing(target, OPS)).definitions] == ["now"]
    finally:
        process.stop()
    log = "".join(process.lines)
    assert AGENT not in log
    assert OPS not in log


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("[]", 'expected {"tokens"'),
        ('{"tokens": [{"token": "short", "tools": ["*"]}]}', "at least 16 characters"),
        ('{"tokens": [{"sha256": "abc", "tools": ["*"]}]}', "sha256 must be 64 hex digits"),
        (
            f'{{"tokens": [{{"token": "{AGENT}", "sha256": "{"0" * 64}", "tools": ["*"]}}]}}',
            "exactly one of token and sha256",
        ),
        (f'{{"tokens": [{{"token": "{AGENT}", "tools": []}}]}}', "tools must be a non-empty"),
        (f'{{"tokens": [{{"token": "{AGENT}", "tools": ["*"], "scope": 1}}]}}', "unknown key"),
        (
            f'{{"tokens": [{{"token": "{AGENT}", "tools": ["*"], "label": "two words"}}]}}',
            "label must be 1-64 printable",
        ),
        (
            f'{{"tokens": [{{"token": "{AGENT}", "tools": ["*"], "label": "oauth:alice"}}]}}',
            "name the MCP front's OAuth callers",
        ),
        (
            f'{{"tokens": [{{"token": "{AGENT}", "tools": ["*"]}}, '
            f'{{"sha256": "{hashlib.sha256(AGENT.encode()).hexdigest()}", "tools": ["x"]}}]}}',
            "repeats the token",
        ),
        ("{oops", "not JSON"),
        (
            f'{{"tokens": [{{"token": " {AGENT}", "tools": ["*"]}}]}}',
            "tokens[0]: the token starts or ends with whitespace",
        ),
    ],
)
def test_a_token_file_that_cannot_work_refuses_to_start(
    tmp_path: Path, document: str, message: str
) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(document)
    path.chmod(0o600)
    with pytest.raises(AuthTokensError, match="--auth-tokens") as caught:
        ServerApp(ServerConfig(port=0, internal=False, auth_tokens=path))
    assert message in str(caught.value)
    assert AGENT not in str(caught.value)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620], ids=lambda mode: f"{mode:04o}")
def test_a_token_file_others_can_reach_refuses_to_start_and_to_reload(
    tmp_path: Path, mode: int
) -> None:
    path = standard_tokens(tmp_path / "tokens.json")
    check = CallerCheck(path)
    path.chmod(mode)
    assert check.reload() is False  # the callers in use stay
    with pytest.raises(AuthTokensError) as caught:
        ServerApp(ServerConfig(port=0, internal=False, auth_tokens=path))
    assert f"mode {mode:04o}" in str(caught.value)
    assert f"chmod 600 {path}" in str(caught.value)
    path.chmod(0o400)
    assert check.reload() is True


def test_a_registry_token_file_others_can_read_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token_file = tmp_path / "registry-token"
    token_file.write_text("a-registry-token-0123456789\n")
    token_file.chmod(0o644)
    with pytest.raises(SystemExit):
        parse_args(["--demo", "--token-file", str(token_file)])
    error = capsys.readouterr().err
    assert "--token-file" in error
    assert "mode 0644" in error
    assert "a-registry-token" not in error
    token_file.chmod(0o600)
    assert parse_args(["--demo", "--token-file", str(token_file)]).token == (
        "a-registry-token-0123456789"
    )


def test_a_missing_token_file_refuses_to_start(tmp_path: Path) -> None:
    with pytest.raises(AuthTokensError, match="cannot be read"):
        ServerApp(ServerConfig(port=0, internal=False, auth_tokens=tmp_path / "absent.json"))


async def test_the_python_handles_send_their_caller_token(tmp_path: Path) -> None:
    tokens = standard_tokens(tmp_path / "tokens.json")
    async with serve(worker=demo_worker(), auth_tokens=tokens) as served:
        async with await RemoteToolServerHandle.connect(served.target, token=AGENT) as handle:
            assert [meta.name for meta in handle.tool_definitions_sorted()] == KV_TOOLS
            assert await handle.call_tool("echo", '{"text": "as agent"}') == "as agent"
            with pytest.raises(RemoteServiceError) as caught:
                await handle.call_tool("calculate", '{"expression": "1"}')
            assert (caught.value.code, caught.value.reason) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "TOOL_FORBIDDEN",
            )
            events = [event async for event in handle.stream_tool("echo", '{"text": "s"}')]
            assert events[-1] == ToolOutput("s")
        with pytest.raises(RemoteServiceError) as caught:
            await RemoteToolServerHandle.connect(served.target, watch=False)
        assert caught.value.reason == "UNAUTHENTICATED"

        def blocking() -> list[str]:
            handle = SyncRemoteToolServerHandle(served.target, token=OPS)
            try:
                assert handle.call_tool("now", "{}")
                return [meta.name for meta in handle.tool_definitions_sorted()]
            finally:
                handle.close()

        assert len(await asyncio.to_thread(blocking)) == len(
            served.app.registry.handle.tool_definitions_sorted()
        )


async def test_the_call_log_names_the_caller_by_its_label(tmp_path: Path) -> None:
    tokens = standard_tokens(tmp_path / "tokens.json")
    process = ServerProcess(
        ["--demo", "--no-internal", "--port", "0", "--log-level", "INFO",
         "--auth-tokens", str(tokens)]
    )  # fmt: skip
    try:
        target = f"127.0.0.1:{await process.port()}"
        async with grpc.aio.insecure_channel(target) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            echo = pb.CallToolRequest(name="echo", input_json='{"text": "x"}')
            await stub.CallTool(echo, metadata=bearer(AGENT), timeout=10)
            batch = pb.CallToolsRequest(
                calls=[pb.CallToolRequest(call_id="1", name="now", input_json="{}")]
            )
            await stub.CallTools(batch, metadata=bearer(OPS), timeout=10)
        await wait_for_line(process, "tool=now status=OK")
    finally:
        process.stop()
    lines = process.output.splitlines()
    assert any("tool=echo status=OK" in line and line.endswith(" caller=agent") for line in lines)
    assert any("tool=now status=OK" in line and line.endswith(" caller=ops") for line in lines)
    assert AGENT not in process.output


_NOT_PROTOBUF = b"\xff\xff\xff\xff"
_UNARY_RPCS = [
    "GetTool",
    "CallTool",
    "ListDefinitionsSorted",
    "CallTools",
    "RunProviderToolCalls",
    "ResumeBatch",
    "ListPausedBatches",
]
_STREAM_RPCS = ["CallToolStream", "WatchDefinitions"]
# Requests each RPC would refuse (or read at length) before looking at its caller, once
# parsed: an empty name, model output that is no JSON, a resume token of another replica.
_BAD_REQUESTS: dict[str, bytes] = {
    "GetTool": pb.GetToolRequest(name="").SerializeToString(),
    "CallTool": pb.CallToolRequest(name="", input_json="{").SerializeToString(),
    "CallTools": pb.CallToolsRequest().SerializeToString(),
    "RunProviderToolCalls": pb.RunProviderToolCallsRequest(
        model_output_json="{" * 100_000
    ).SerializeToString(),
    "ResumeBatch": pb.ResumeBatchRequest(resume_token="elsewhere.x.y").SerializeToString(),
    "ListPausedBatches": pb.ListPausedBatchesRequest(page_token="not a token").SerializeToString(),
    "CallToolStream": pb.CallToolRequest(name="").SerializeToString(),
}


async def _send(
    channel: grpc.aio.Channel, path: str, streaming: bool, request: bytes, token: str | None
) -> None:
    """Send raw ``request`` bytes to ``path``, reading a stream to its end."""
    if streaming:
        stream = channel.unary_stream(path, request_serializer=_raw, response_deserializer=_raw)
        async for _ in stream(request, metadata=bearer(token), timeout=10):
            pass
    else:
        unary = channel.unary_unary(path, request_serializer=_raw, response_deserializer=_raw)
        await unary(request, metadata=bearer(token), timeout=10)


def _raw(data: bytes) -> bytes:
    return data


@pytest.mark.parametrize("rpc", _UNARY_RPCS + _STREAM_RPCS)
async def test_every_rpc_refuses_an_unknown_caller_before_it_reads_the_request(
    rpc: str, tmp_path: Path
) -> None:
    tokens = standard_tokens(tmp_path / "tokens.json")
    path = f"/llmworker.v1.ToolService/{rpc}"
    async with (
        serve(worker=demo_worker(), auth_tokens=tokens) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        requests = [_NOT_PROTOBUF, *([_BAD_REQUESTS[rpc]] if rpc in _BAD_REQUESTS else [])]
        for request in requests:
            for token in (None, "not-a-known-token-at-all"):
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await _send(channel, path, rpc in _STREAM_RPCS, request, token)
                refused = failure_of(caught.value)
                assert (refused.code, refused.reason) == (
                    grpc.StatusCode.UNAUTHENTICATED,
                    "UNAUTHENTICATED",
                ), (request[:20], token, refused.message)
