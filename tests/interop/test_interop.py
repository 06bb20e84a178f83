"""Workers in other languages: a Go and a Node.js client, and a Go tool provider.

The Node.js checks run through the TypeScript SDK (``@llmworker/sdk``, ``sdk/typescript``).
The binaries and node_modules come from ``make interop`` (part of ``make test``); a missing
one is a failure that says how to build it, never a skip.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
from pathlib import Path

import grpc.aio
import pytest

from llmworker import (
    DefinitionFormat,
    RemoteToolServerHandle,
    ToolError,
    ToolServerError,
    Worker,
    tool_definitions,
)
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import REPO, serve
from tests.tls_support import Pki

GO_BINARY = REPO / "tests/interop/go/bin/interop"
NODE_CLIENT = REPO / "tests/interop/node/client.mjs"
NODE_AGENT = REPO / "tests/interop/node/agent.mjs"
NODE_FORMATS = REPO / "tests/interop/node/formats.mjs"
NODE_STREAM = REPO / "tests/interop/node/stream.mjs"
NODE_WATCH = REPO / "tests/interop/node/watch.mjs"
# The SDK as the Node checks import it (a link to sdk/typescript): built, and installed.
NODE_MODULES = REPO / "tests/interop/node/node_modules/@llmworker/sdk/dist/index.js"
TOKEN = "interop-token"
CHECKS = [
    "OK list 4 sorted definitions",
    "OK list unchanged for a known fingerprint",
    "OK call echo",
    "OK unknown tool",
    "OK invalid arguments",
    "OK deadline honoured",
]
# What the Node client checks besides: the status trailer the SDK's typed error came from,
# and a batch's per-call google.rpc.Status typed by the SDK.
NODE_CHECKS = [
    "OK status trailer: google.rpc.Status agrees with grpc-status and grpc-message",
    "OK batch: a result and a per-call google.rpc.Status",
]


AGENT_CHECKS = [
    "OK agent listing: titles, annotations, output schemas, approval",
    "OK agent call id and metadata reach the tool",
    "OK agent approval required for CallTool",
    "OK agent bad metadata refused",
    "OK agent batch completed",
    "OK agent batch paused for approval",
    "OK agent batch resumed: approve, deny, edited input",
    "OK agent resume token single use",
    "OK agent duplicate call ids refused",
]


def require(path: Path) -> None:
    if not path.exists():
        pytest.fail(f"{path.relative_to(REPO)} is missing: run 'make interop' (make test does)")


async def run(*command: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPO
    )
    output, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, output.decode()


@pytest.mark.parametrize("language", ["go", "node"])
async def test_a_client_in_another_language_sees_the_same_contract(language: str) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    async with serve() as served:
        fingerprint = served.app.registry.handle.definitions_snapshot().fingerprint
        if language == "go":
            code, output = await run(
                str(GO_BINARY), "client", "-target", served.target, "-fingerprint", fingerprint
            )
        else:
            code, output = await run("node", str(NODE_CLIENT), served.target, fingerprint)
        assert code == 0, output
        for check in CHECKS + (NODE_CHECKS if language == "node" else []):
            assert check in output, output
        for _ in range(100):
            if served.tools.cancelled:
                break
            await asyncio.sleep(0.02)
        assert served.tools.cancelled == 1, "the deadline must cancel the tool coroutine"


@pytest.mark.parametrize("language", ["go", "node"])
async def test_an_agent_in_another_language_runs_batches_with_approval(language: str) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=worker) as served:
        if language == "go":
            code, output = await run(str(GO_BINARY), "agent", "-target", served.target)
        else:
            code, output = await run(
                "node", str(REPO / "tests/interop/node/agent.mjs"), served.target
            )
        assert code == 0, output
        for check in AGENT_CHECKS:
            assert check in output, output
        assert served.app.tools.in_flight == 0


FORMAT_CHECKS = [
    "OK formats openai_chat_strict",
    "OK formats anthropic",
    "OK formats unchanged for a known fingerprint",
    "OK formats unknown format refused",
    "OK formats provider tool calls answered in openai_chat",
    "OK formats provider tool calls paused and resumed in anthropic",
    "OK formats provider output without a format refused",
]


@pytest.mark.parametrize("language", ["go", "node"])
async def test_provider_formats_over_grpc_are_the_bytes_python_makes(
    language: str, tmp_path: Path
) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    handle = worker.tool_server_handle()
    (tmp_path / "openai_chat_strict.json").write_bytes(
        handle.definitions_for(DefinitionFormat.OPENAI_CHAT_STRICT).json
    )
    (tmp_path / "anthropic.json").write_bytes(
        handle.definitions_for(DefinitionFormat.ANTHROPIC, cache_last=True).json
    )
    async with serve(worker=worker) as served:
        if language == "go":
            command = [
                str(GO_BINARY),
                "formats",
                "-target",
                served.target,
                "-expect",
                str(tmp_path),
            ]
        else:
            command = ["node", str(NODE_FORMATS), served.target, str(tmp_path)]
        code, output = await run(*command)
    assert code == 0, output
    for check in FORMAT_CHECKS:
        assert check in output, output


STREAM_CHECKS = [
    "OK stream countdown: progress and chunks in order, then the result",
    "OK stream a tool that does not stream sends its result only",
    "OK stream errors: CallTool's status and ErrorInfo",
    "OK stream cancelling the stream cancels the tool",
]


@pytest.mark.parametrize("language", ["go", "node"])
async def test_a_client_in_another_language_streams_a_call_and_cancels_it(language: str) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=worker) as served:
        if language == "go":
            code, output = await run(str(GO_BINARY), "stream", "-target", served.target)
        else:
            code, output = await run("node", str(NODE_STREAM), served.target)
        assert code == 0, output
        for check in STREAM_CHECKS:
            assert check in output, output
        for _ in range(250):  # the cancelled countdown ends once its note is written
            if served.app.tools.in_flight == 0:
                break
            await asyncio.sleep(0.02)
        assert served.app.tools.in_flight == 0, "the cancelled stream's call must end"


WATCH_CHECKS = [
    "OK watch the first message is the current state, fingerprinted as ListDefinitionsSorted",
    "OK watch unchanged for a known fingerprint",
    "OK watch openai_chat definitions_json",
    "OK watch a registration reaches every watch",
    "OK watch a tool that leaves reaches every watch",
    "OK watch cancelling ends the watches",
]


@pytest.mark.parametrize("language", ["go", "node"])
async def test_a_client_in_another_language_watches_a_tool_arrive_and_leave(
    language: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="llmworker.server.registry")
    require(GO_BINARY if language == "go" else NODE_MODULES)
    # No registration window or lock: the registry stays open for the client's RegisterTool,
    # whose made-up provider is not asked for the tool.
    async with serve(
        internal_socket=tmp_path / "registry.sock", token=TOKEN, provider_check_timeout=0
    ) as served:
        internal = served.app.internal_target
        assert internal is not None
        assert not served.app.registry.is_locked
        handle = served.app.registry.handle
        before = {meta.name for meta in handle.definitions_snapshot().definitions}
        if language == "go":
            code, output = await run(
                str(GO_BINARY), "watch", "-target", served.target, "-registry", internal,
                "-token", TOKEN,
            )  # fmt: skip
        else:
            code, output = await run("node", str(NODE_WATCH), served.target, internal, TOKEN)
        assert code == 0, output
        for check in WATCH_CHECKS:
            assert check in output, output
        assert f"registered tool={language}_watch_" in caplog.text
        assert f"unregistered tool={language}_watch_" in caplog.text
        after = {meta.name for meta in handle.definitions_snapshot().definitions}
        assert after == before, "the tool the client registered has left"
        for _ in range(250):  # the cancels reach the server after the client has exited
            if served.app.tools.watch.watchers == 0:
                break
            await asyncio.sleep(0.02)
        assert served.app.tools.watch.watchers == 0, "the cancelled watches must end"


async def test_a_go_provider_serves_a_tool_to_python_through_the_server(tmp_path: Path) -> None:
    require(GO_BINARY)
    async with serve(internal_socket=tmp_path / "registry.sock", token=TOKEN) as served:
        assert served.app.internal_target is not None
        provider = await asyncio.create_subprocess_exec(
            str(GO_BINARY), "provider", "-registry", served.app.internal_target, "-token", TOKEN,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            assert provider.stdout is not None
            ready = await asyncio.wait_for(provider.stdout.readline(), timeout=30)
            assert ready.startswith(b"READY "), ready
            async with await RemoteToolServerHandle.connect(served.target) as handle:
                assert handle.get_tool("go_reverse") is not None
                assert await handle.call_tool("go_reverse", '{"text": "héllo"}') == "olléh"
                with pytest.raises(ToolServerError.ToolExecution) as caught:
                    await handle.call_tool("go_reverse", '{"txt": 1}')
                assert isinstance(caught.value.__cause__, ToolError.InvalidArgument)
                assert str(caught.value) == (
                    "Tool execution failed: Invalid argument: text: Field required; "
                    "txt: unknown field; remove it"
                )
                found = handle.get_tool("go_reverse")
                assert found is not None
                assert await found[1].execute('{"text": "abc"}') == "cba"
            async with grpc.aio.insecure_channel(served.target) as channel:
                stub = tool_service_pb2_grpc.ToolServiceStub(channel)
                request = pb.CallToolRequest(
                    name="go_whoami", input_json="{}", call_id="py-7", metadata={"user": "ada"}
                )
                reply = await stub.CallTool(request, timeout=10)
                assert json.loads(reply.output) == {"call_id": "py-7", "metadata": {"user": "ada"}}
        finally:
            provider.terminate()
            await asyncio.wait_for(provider.wait(), timeout=10)


NODE_TLS = REPO / "tests/interop/node/tls.mjs"


def tls_command(language: str, target: str, ca: Path, *extra: str, expect: str = "ok") -> list[str]:
    """The Go or Node TLS check against ``target`` (``extra``: a client cert and key)."""
    if language == "go":
        pair = ["-cert", extra[0], "-key", extra[1]] if extra else []
        return [str(GO_BINARY), "tls", "-target", target, "-ca", str(ca), *pair, "-expect", expect]
    return ["node", str(NODE_TLS), target, str(ca), *extra, "--expect", expect]


@pytest.mark.parametrize("language", ["go", "node"])
async def test_clients_in_other_languages_use_tls_and_mutual_tls(language: str, pki: Pki) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    client = (str(pki.client.cert), str(pki.client.key))
    stranger = (str(pki.stranger.cert), str(pki.stranger.key))
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=worker, internal=False, tls=pki.server_files()) as served:
        code, output = await run(*tls_command(language, served.target, pki.ca.cert))
        assert code == 0, output
        assert "OK tls listing" in output, output
        assert "OK tls call echo" in output, output
        code, output = await run(
            *tls_command(language, served.target, pki.ca.cert, expect="plaintext-refused")
        )
        assert code == 0, output
        assert "OK tls plaintext refused: UNAVAILABLE" in output, output
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=worker, internal=False, tls=pki.server_files(mutual=True)) as served:
        code, output = await run(*tls_command(language, served.target, pki.ca.cert, *client))
        assert code == 0, output
        assert "OK tls call echo" in output, output
        for presented in [(), stranger]:
            code, output = await run(
                *tls_command(language, served.target, pki.ca.cert, *presented, expect="refused")
            )
            assert code == 0, output
            assert "OK tls refused: UNAVAILABLE" in output, output


NODE_AUTH = REPO / "tests/interop/node/auth.mjs"
AUTH_CHECKS = [
    "OK auth health needs no token",
    "OK auth no token refused",
    "OK auth unknown token refused",
    "OK auth invalid request without a token refused",
    "OK auth listing shows the token's tools",
    "OK auth call allowed",
    "OK auth forbidden tool refused",
    "OK auth batch with a forbidden call refused",
]


@pytest.mark.parametrize("language", ["go", "node"])
async def test_clients_in_other_languages_use_caller_tokens_with_scopes(
    language: str, tmp_path: Path
) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    token = "interop-agent-token-0123456789"
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [{"token": token, "tools": ["echo", "kv_*"]}]}))
    tokens.chmod(0o600)
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    allowed = ",".join(["echo", "kv_delete", "kv_get", "kv_list", "kv_set"])
    async with serve(worker=worker, internal=False, auth_tokens=tokens) as served:
        if language == "go":
            command = [str(GO_BINARY), "auth", "-target", served.target, "-token", token,
                       "-tools", allowed, "-forbidden", "calculate"]  # fmt: skip
        else:
            command = ["node", str(NODE_AUTH), served.target, token, allowed, "calculate"]
        code, output = await run(*command)
        assert code == 0, output
        for check in AUTH_CHECKS:
            assert check in output, output
        assert served.app.tools.in_flight == 0
