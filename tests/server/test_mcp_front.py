"""The MCP front (``--mcp-address``) driven by the official MCP Python SDK's client, on both
protocol revisions: the registry's tools listed and called through the same admission as
gRPC, refusals as ``isError`` results with our reason, bearer tokens at the HTTP door, and
Host/Origin checks against DNS rebinding."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

import grpc.aio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext, ElicitationFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from llmworker import (
    Mutable,
    ToolContext,
    ToolDefinition,
    ToolError,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.config import ServerConfig
from llmworker_server.errors import ConfigError
from llmworker_server.mcp_front.stdio_bridge import options
from llmworker_server.mcp_front.tools import REASON_META
from tests.grpc_support import Served, ServerProcess, serve

REVISIONS = [pytest.param("legacy", id="2025-11-25"), pytest.param("2026-07-28", id="2026-07-28")]
AGENT, NARROW = "agent-token-0123456789", "narrow-token-0123456789"


@tool_registry
class McpTools:
    def __init__(self) -> None:
        self.ran: list[str] = []
        self.cancelled = asyncio.Event()
        self.wiped: list[str] = []

    @tool(title="Echo", read_only=True, idempotent=True)
    async def echo(self, text: str) -> str:
        """Say ``text`` back."""
        self.ran.append("echo")
        return text

    @tool
    async def weather(self, city: str) -> dict[str, object]:
        """The weather in ``city``, as structured data."""
        self.ran.append("weather")
        return {"city": city, "celsius": 21}

    @tool
    async def fail(self) -> str:
        """Always fails."""
        raise ToolError.ExecutionFailed("the backend is down")

    @tool
    async def count(self, steps: int, context: ToolContext) -> str:
        """Count to ``steps``, reporting progress."""
        for step in range(1, steps + 1):
            context.report_progress(step, steps, f"step {step}")
            await asyncio.sleep(0.06)  # progress is sent at most every 50 ms
        return f"counted to {steps}"

    @tool
    async def hang(self) -> str:
        """Wait until cancelled."""
        self.ran.append("hang")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return "never"

    @tool(requires_approval=True, destructive=True)
    async def wipe(self, path: str) -> str:
        """Wipe ``path`` (after approval)."""
        self.wiped.append(path)
        return f"wiped {path}"


@asynccontextmanager
async def mcp_server(**overrides: object) -> AsyncGenerator[tuple[Served, McpTools, str]]:
    tools = McpTools()
    worker: Worker[Mutable] = Worker()
    worker.register_tools(tool_definitions(tools))
    async with serve(None, worker=worker, mcp_address="127.0.0.1:0", **overrides) as served:
        yield served, tools, f"http://127.0.0.1:{served.app.mcp_port}/mcp"


@asynccontextmanager
async def client_of(url: str, mode: str, token: str | None = None) -> AsyncGenerator[Client]:
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE: dict[str, object] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def reason_of(result: types.CallToolResult) -> object:
    assert result.meta is not None
    return result.meta[REASON_META]


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", REVISIONS)
async def test_tools_are_listed_in_the_registry_order_with_schemas_and_hints(mode: str) -> None:
    async with mcp_server() as (_, _tools, url), client_of(url, mode) as client:
        listed = (await client.list_tools()).tools
        assert [tool.name for tool in listed] == [
            "count",
            "echo",
            "fail",
            "hang",
            "weather",
            "wipe",
        ]
        echo = listed[1]
        assert echo.title == "Echo"
        assert echo.description == "Say ``text`` back."
        assert echo.input_schema["properties"] == {"text": {"type": "string"}}
        assert echo.annotations is not None
        assert (echo.annotations.read_only_hint, echo.annotations.idempotent_hint) == (True, True)
        wipe = listed[5]
        assert wipe.annotations is not None
        assert wipe.annotations.destructive_hint
        assert listed[4].output_schema is not None  # weather returns structured data


@pytest.mark.parametrize("mode", REVISIONS)
async def test_calls_run_the_tools_and_structured_results_come_as_structured_content(
    mode: str,
) -> None:
    async with mcp_server() as (served, tools, url), client_of(url, mode) as client:
        echoed = await client.call_tool("echo", {"text": "hello over MCP"})
        assert (text_of(echoed), echoed.is_error) == ("hello over MCP", False)
        weather = await client.call_tool("weather", {"city": "Oslo"})
        assert weather.structured_content == {"city": "Oslo", "celsius": 21}
        assert json.loads(text_of(weather)) == {"city": "Oslo", "celsius": 21}
        # the same registry answers gRPC at the same time
        async with grpc.aio.insecure_channel(served.target) as channel:
            stub = tool_service_pb2_grpc.ToolServiceStub(channel)
            request = pb.CallToolRequest(name="echo", input_json='{"text": "and gRPC"}')
            assert (await stub.CallTool(request, timeout=10)).output == "and gRPC"
    assert tools.ran == ["echo", "weather", "echo"]


class Person:
    """A person who answers every approval form so."""

    def __init__(self, action: Literal["accept", "decline", "cancel"], **content: str) -> None:
        self._action: Literal["accept", "decline", "cancel"] = action
        self._content = content

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert isinstance(params, types.ElicitRequestFormParams)
        assert "wipe" in params.message
        content: dict[str, str | int | float | bool | list[str] | None] = dict(self._content)
        return types.ElicitResult(action=self._action, content=content or None)


@asynccontextmanager
async def asking_client(url: str, answer: ElicitationFnT) -> AsyncGenerator[Client]:
    async with Client(url, mode="legacy", elicitation_callback=answer) as client:
        yield client


async def test_an_approval_is_asked_of_the_person_and_the_call_runs_as_decided() -> None:
    async with mcp_server() as (_, tools, url):
        async with asking_client(url, Person("accept", decision="approve")) as client:
            approved = await client.call_tool("wipe", {"path": "/tmp/a"})
            assert (text_of(approved), approved.is_error) == ("wiped /tmp/a", False)
        edit = Person("accept", decision="approve", input_json='{"path": "/tmp/b"}')
        async with asking_client(url, edit) as client:
            edited = await client.call_tool("wipe", {"path": "/"})
            assert text_of(edited) == "wiped /tmp/b"
        deny = Person("accept", decision="deny", reason="not on a Friday")
        async with asking_client(url, deny) as client:
            denied = await client.call_tool("wipe", {"path": "/"})
            assert denied.is_error
            assert reason_of(denied) == "CALL_DENIED"
            assert "not on a Friday" in text_of(denied)
        for answer in (Person("decline"), Person("cancel")):
            async with asking_client(url, answer) as client:
                refused = await client.call_tool("wipe", {"path": "/"})
                assert reason_of(refused) == "CALL_DENIED"
        garbled = Person("accept", decision="approve", input_json="{not json")
        async with asking_client(url, garbled) as client:
            assert reason_of(await client.call_tool("wipe", {"path": "/"})) == "INVALID_REQUEST"
    assert tools.wiped == ["/tmp/a", "/tmp/b"]


@pytest.mark.parametrize("mode", REVISIONS)
async def test_failures_are_error_results_naming_the_field_or_the_reason(mode: str) -> None:
    async with mcp_server() as (_, tools, url), client_of(url, mode) as client:
        invalid = await client.call_tool("echo", {"txt": "typo"})
        assert invalid.is_error
        assert "text" in text_of(invalid)
        assert reason_of(invalid) == "TOOL_INVALID_ARGUMENT"
        failed = await client.call_tool("fail", {})
        assert failed.is_error
        assert "the backend is down" in text_of(failed)
        assert reason_of(failed) == "TOOL_EXECUTION_FAILED"
        gated = await client.call_tool("wipe", {"path": "/"})
        assert gated.is_error
        assert reason_of(gated) == "APPROVAL_REQUIRED"
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no_such_tool", {})
        assert unknown.value.code == -32602
        assert "no_such_tool" in unknown.value.error.message
        assert (await client.call_tool("echo", {"text": "still serving"})).is_error is False
    assert tools.ran == ["echo"]


@pytest.mark.parametrize("mode", REVISIONS)
async def test_a_progress_token_gets_the_tools_progress(mode: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progressed(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with mcp_server() as (_, _tools, url), client_of(url, mode) as client:
        result = await client.call_tool("count", {"steps": 3}, progress_callback=progressed)
        assert text_of(result) == "counted to 3"
    assert seen[-1] == (3, 3, "step 3")
    assert [progress for progress, _, _ in seen] == sorted(progress for progress, _, _ in seen)


@pytest.mark.parametrize("mode", REVISIONS)
async def test_a_cancelled_request_cancels_the_tool(mode: str) -> None:
    async with mcp_server() as (served, tools, url), client_of(url, mode) as client:
        calling = asyncio.ensure_future(client.call_tool("hang", {}))
        for _ in range(500):
            if tools.ran:
                break
            await asyncio.sleep(0.01)
        calling.cancel()  # the client sends notifications/cancelled, or drops the stream
        await asyncio.gather(calling, return_exceptions=True)
        await asyncio.wait_for(tools.cancelled.wait(), 10)
        for _ in range(500):
            if served.app.tools.in_flight == 0:
                break
            await asyncio.sleep(0.01)
        assert served.app.tools.in_flight == 0
        assert text_of(await client.call_tool("echo", {"text": "next"})) == "next"


@tool_registry
class LateTools:
    @tool
    async def late(self) -> str:
        """Registered while the server runs."""
        return "late"


async def test_a_listen_stream_hears_of_tools_registered_later(tmp_path: Path) -> None:
    mutable = {"internal_socket": tmp_path / "registry.sock", "token": "registry-token"}
    async with (
        mcp_server(**mutable) as (served, _tools, url),
        client_of(url, "2026-07-28") as client,
        client.listen(tools_list_changed=True) as changes,
    ):
        late: list[ToolDefinition] = [*tool_definitions(LateTools())]
        served.app.registry.register(late)
        event = await asyncio.wait_for(anext(aiter(changes)), 10)
        assert type(event).__name__ == "ToolsListChanged"
        assert "late" in [tool.name for tool in (await client.list_tools()).tools]
        assert text_of(await client.call_tool("late", {})) == "late"


def caller_tokens(path: Path) -> Path:
    entries = [
        {"token": AGENT, "label": "agent", "tools": ["*"]},
        {"token": NARROW, "label": "narrow", "tools": ["echo"]},
    ]
    path.write_text(json.dumps({"tokens": entries}))
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("mode", REVISIONS)
async def test_bearer_tokens_scope_the_listing_and_the_calls(mode: str, tmp_path: Path) -> None:
    tokens = caller_tokens(tmp_path / "tokens.json")
    async with mcp_server(auth_tokens=tokens) as (_, tools, url):
        async with client_of(url, mode, NARROW) as narrow:
            assert [tool.name for tool in (await narrow.list_tools()).tools] == ["echo"]
            forbidden = await narrow.call_tool("weather", {"city": "Oslo"})
            assert forbidden.is_error
            assert reason_of(forbidden) == "TOOL_FORBIDDEN"
            assert text_of(await narrow.call_tool("echo", {"text": "ok"})) == "ok"
        async with client_of(url, mode, AGENT) as agent:
            assert len((await agent.list_tools()).tools) == 6
    assert tools.ran == ["echo"]


async def test_no_or_a_wrong_token_is_401_with_a_bearer_challenge(tmp_path: Path) -> None:
    tokens = caller_tokens(tmp_path / "tokens.json")
    ping: dict[str, object] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with mcp_server(auth_tokens=tokens) as (_, _tools, url), httpx2.AsyncClient() as http:
        missing = await http.post(url, json=ping, headers=ACCEPT)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == 'Bearer realm="llmworker"'
        assert missing.json()["reason"] == "UNAUTHENTICATED"
        wrong = await http.post(url, json=ping, headers={**ACCEPT, "authorization": "Bearer x"})
        assert wrong.status_code == 401
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]


async def test_a_foreign_origin_or_host_is_refused_and_garbage_gets_a_json_rpc_error() -> None:
    async with mcp_server() as (_, _tools, url), httpx2.AsyncClient() as http:
        foreign = await http.post(
            url, json=INITIALIZE, headers={**ACCEPT, "origin": "http://evil.example"}
        )
        assert foreign.status_code == 403
        rebound = await http.post(url, json=INITIALIZE, headers={**ACCEPT, "host": "evil.example"})
        assert rebound.status_code in (400, 421)
        garbage = await http.post(url, content=b"{not json", headers=ACCEPT)
        assert garbage.status_code == 400
        assert garbage.json()["error"]["code"] == -32700  # a JSON-RPC parse error
        elsewhere = await http.get(url.replace("/mcp", "/other"))
        assert elsewhere.status_code == 404
        fine = await http.post(url, json=INITIALIZE, headers=ACCEPT)
        assert fine.status_code == 200


def test_mcp_beyond_loopback_needs_tls_or_the_insecure_opt_in() -> None:
    with pytest.raises(ConfigError, match=r"--mcp-address 0\.0\.0\.0:8080 would serve MCP"):
        ServerConfig(port=0, mcp_address="0.0.0.0:8080").check()
    ServerConfig(port=0, mcp_address="0.0.0.0:8080", allow_insecure=True).check()
    with pytest.raises(ConfigError, match="without --workers"):
        ServerConfig(port=50190, mcp_address="127.0.0.1:0", workers=2).check()


def blocks(language: str) -> list[str]:
    page = (Path(__file__).parents[2] / "docs" / "mcp.md").read_text()
    return [part.split("\n", 1)[1] for part in page.split("```")[1::2] if part.startswith(language)]


def test_the_documented_configs_name_the_endpoint() -> None:
    vscode, desktop = blocks("json")
    server = json.loads(vscode)["servers"]["llmworker"]
    assert (server["type"], server["url"]) == ("http", "http://127.0.0.1:8765/mcp")
    assert server["headers"]["Authorization"].startswith("Bearer ")
    (_, claude, stdio) = blocks("sh")
    assert "--transport http llmworker http://127.0.0.1:8765/mcp" in claude
    launched = json.loads(desktop)["mcpServers"]["llmworker"]
    assert launched["command"] == "llmworker-mcp-stdio"
    assert options().parse_args(launched["args"]).connect == "tools.internal:50051"
    command, *arguments = shlex.split(stdio.replace("\\\n", " "))  # one line
    assert command == "llmworker-mcp-stdio"
    assert options().parse_args(arguments).tls_ca == Path("ca.pem")


@pytest.mark.parametrize("mode", REVISIONS)
async def test_the_stdio_bridge_serves_a_remote_server_to_a_local_client(
    mode: str, tmp_path: Path
) -> None:
    tokens = caller_tokens(tmp_path / "tokens.json")
    for name, token in (("narrow", NARROW), ("agent", AGENT)):
        (tmp_path / name).write_text(token + "\n")
        (tmp_path / name).chmod(0o600)
    async with mcp_server(auth_tokens=tokens) as (served, tools, _):

        def bridge(token: str) -> StdioServerParameters:
            return StdioServerParameters(
                command=str(Path(sys.executable).parent / "llmworker-mcp-stdio"),
                args=["--connect", served.target, "--token-file", str(tmp_path / token)],
            )

        async with Client(bridge("narrow"), mode=mode) as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == ["echo"]
            echoed = await client.call_tool("echo", {"text": "through stdio"})
            assert (text_of(echoed), echoed.is_error) == ("through stdio", False)
            forbidden = await client.call_tool("weather", {"city": "Oslo"})
            assert forbidden.is_error
            assert reason_of(forbidden) == "TOOL_FORBIDDEN"
        async with Client(bridge("agent"), mode=mode) as client:
            weather = await client.call_tool("weather", {"city": "Oslo"})
            assert weather.structured_content == {"city": "Oslo", "celsius": 21}
            seen: list[float] = []

            async def progressed(progress: float, total: float | None, message: str | None) -> None:
                seen.append(progress)

            counted = await client.call_tool("count", {"steps": 2}, progress_callback=progressed)
            assert text_of(counted) == "counted to 2"
            assert seen[-1] == 2
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("no_such_tool", {})
            assert unknown.value.code == -32602
    assert tools.ran == ["echo", "weather"]


async def test_bad_bodies_are_refused_and_the_server_keeps_serving() -> None:
    call: dict[str, object] = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x" * 100_000}},
    }
    bodies = [
        b"\xff\xfe not utf-8",
        b"[" * 100_000,
        b'[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": 5}',
        b"{}",
    ]
    async with (
        mcp_server(max_message_bytes=64 * 1024) as (_, tools, url),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        too_large = await http.post(url, json=call, headers=ACCEPT)
        assert too_large.status_code == 413
        for body in bodies:
            answer = await http.post(url, content=body, headers=ACCEPT)
            assert 400 <= answer.status_code < 500, (body[:40], answer.status_code)
        async with client_of(url, "legacy") as client:
            assert text_of(await client.call_tool("echo", {"text": "still"})) == "still"
    assert tools.ran == ["echo"]


async def test_the_concurrency_limit_applies_to_mcp_calls() -> None:
    async with (
        mcp_server(max_concurrent_calls=1) as (_, tools, url),
        client_of(url, "legacy") as client,
    ):
        hanging = asyncio.ensure_future(client.call_tool("hang", {}))
        for _ in range(500):
            if tools.ran:
                break
            await asyncio.sleep(0.01)
        refused = await client.call_tool("echo", {"text": "one too many"})
        assert refused.is_error
        assert reason_of(refused) == "CONCURRENCY_LIMIT"
        hanging.cancel()
        await asyncio.gather(hanging, return_exceptions=True)


@pytest.mark.parametrize("mode", REVISIONS)
async def test_a_stop_with_mcp_calls_and_sessions_open_ends_promptly(mode: str) -> None:
    async with mcp_server() as (served, tools, url):
        session = client_of(url, mode)
        client = await session.__aenter__()
        try:
            hanging = asyncio.ensure_future(client.call_tool("hang", {}))
            for _ in range(500):
                if tools.ran:
                    break
                await asyncio.sleep(0.01)
            loop = asyncio.get_running_loop()
            started = loop.time()
            await asyncio.wait_for(served.app.stop(grace=0), 30)
            assert loop.time() - started < 15  # a generous bound: the stop does not hang
            assert tools.cancelled.is_set()  # the running call was cancelled, not left behind
            hanging.cancel()
            await asyncio.gather(hanging, return_exceptions=True)
        finally:
            with contextlib.suppress(Exception):  # the client's close: its server is gone
                await session.__aexit__(None, None, None)


async def test_the_server_process_serves_mcp_and_stops_on_sigterm() -> None:
    server = ServerProcess(
        ["--demo", "--no-internal", "--port", "0", "--mcp-address", "127.0.0.1:0"]
    )
    try:
        await server.port()
        (line,) = [line for line in server.lines if "serving MCP on " in line]
        url = line.split("serving MCP on ", 1)[1].strip()
        async with client_of(url, "2026-07-28") as client:
            assert text_of(await client.call_tool("echo", {"text": "process"})) == "process"
    finally:
        code = await asyncio.to_thread(server.stop)
    assert code == 0, server.output


def test_the_stdio_bridge_refuses_a_shared_token_file_and_plaintext_beyond_loopback(
    tmp_path: Path,
) -> None:
    bridge = str(Path(sys.executable).parent / "llmworker-mcp-stdio")
    token = tmp_path / "token"
    token.write_text(AGENT)
    token.chmod(0o644)
    shared = subprocess.run(
        [bridge, "--connect", "127.0.0.1:1", "--token-file", str(token)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert shared.returncode == 2
    assert "chmod 600" in shared.stderr
    plaintext = subprocess.run(
        [bridge, "--connect", "tools.example:50051"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert plaintext.returncode == 2
    assert "--tls" in plaintext.stderr


async def test_an_unanswered_approval_ends_without_running_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("llmworker_server.mcp_front.approval.APPROVAL_WAIT_SECONDS", 0.5)

    async def away(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        await asyncio.sleep(10)  # nobody is at the keyboard
        return types.ElicitResult(action="cancel")

    async with mcp_server() as (served, tools, url), asking_client(url, away) as client:
        unanswered = await client.call_tool("wipe", {"path": "/"})
        assert reason_of(unanswered) == "APPROVAL_REQUIRED"
        assert "nobody answered" in text_of(unanswered)
        assert served.app.tools.in_flight == 0
    assert tools.wiped == []


async def test_a_session_is_its_opener_s_and_no_other_token_s(tmp_path: Path) -> None:
    tokens = caller_tokens(tmp_path / "tokens.json")
    listing: dict[str, object] = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    async with (
        mcp_server(auth_tokens=tokens) as (_, _tools, url),
        httpx2.AsyncClient(timeout=30) as http,
    ):
        opened = await http.post(
            url, json=INITIALIZE, headers={**ACCEPT, "authorization": f"Bearer {AGENT}"}
        )
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        stolen = await http.post(
            url, json=listing, headers={**ACCEPT, **session, "authorization": f"Bearer {NARROW}"}
        )
        assert stolen.status_code == 404  # as if the session did not exist
        own = await http.post(
            url, json=listing, headers={**ACCEPT, **session, "authorization": f"Bearer {AGENT}"}
        )
        assert own.status_code == 200


async def test_a_sigterm_lets_an_mcp_call_in_flight_finish() -> None:
    server = ServerProcess(
        ["--demo", "--no-internal", "--port", "0", "--mcp-address", "127.0.0.1:0"]
    )
    try:
        await server.port()
        (line,) = [line for line in server.lines if "serving MCP on " in line]
        url = line.split("serving MCP on ", 1)[1].strip()
        async with client_of(url, "legacy") as client:
            counting = asyncio.ensure_future(client.call_tool("countdown", {"n": 30, "delay": 0.1}))
            await asyncio.sleep(0.4)
            server.terminate()  # the grace (10 s) covers the 3 s countdown; uvicorn alone gave 2
            counted = await asyncio.wait_for(counting, 30)
            assert not counted.is_error
            assert text_of(counted).split() == [str(n) for n in range(30, 0, -1)]
    finally:
        code = await asyncio.to_thread(server.stop)
    assert code == 0, server.output
