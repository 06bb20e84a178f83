"""A tool's questions and log lines over the MCP front, from the official Python SDK's
client on both revisions: on 2025-11-25 asked while the call runs, on 2026-07-28 as
``InputRequiredResult`` rounds the client answers and calls again (the tool runs again and
finds the answers); and what a caller that cannot answer gets."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from pydantic import FileUrl

from llmworker import (
    ClientCannotAnswer,
    Elicit,
    JsonValue,
    ListRoots,
    Mutable,
    Sample,
    ToolContext,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llmworker_server.mcp_front.tools import REASON_META
from tests.grpc_support import serve

REVISIONS = [pytest.param("legacy", id="2025-11-25"), pytest.param("2026-07-28", id="2026-07-28")]
NAME_FORM: dict[str, JsonValue] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


@tool_registry
class AskingTools:
    def __init__(self) -> None:
        self.runs: list[str] = []

    @tool
    async def greet(self, context: ToolContext) -> str:
        """Asks the person's name, then greets them."""
        self.runs.append("greet")
        answer = await context.elicit("What is your name?", NAME_FORM)
        if not answer.accepted:
            return f"no name ({answer.action})"
        return f"Hello, {answer.content['name']}!"

    @tool
    async def capital(self, context: ToolContext) -> str:
        """Asks the client's model."""
        return (await context.sample("Capital of France?", max_tokens=20)).text

    @tool
    async def workspace(self, context: ToolContext) -> str:
        """Lists the client's roots."""
        return ", ".join(root.uri for root in await context.list_roots())

    @tool
    async def survey(self, context: ToolContext) -> str:
        """Two rounds: a name, then everything else at once."""
        name = await context.elicit("Name?", NAME_FORM, key="name")
        rest = await context.ask({"model": Sample("Say hi", max_tokens=5), "roots": ListRoots()})
        return f"{name.content['name']} / {sorted(rest)}"

    @tool
    async def careful(self, context: ToolContext) -> str:
        """Asks only what the client can answer."""
        if not context.can_ask(Elicit):
            return "nobody to ask"
        try:
            await context.ask({"q": Sample("x", max_tokens=1)})
        except ClientCannotAnswer as error:
            return f"cannot sample: {error.capability}"
        return "sampled"

    @tool
    async def chatty(self, context: ToolContext) -> str:
        """Logs at three levels."""
        context.log("debug", "details")
        context.log("info", "working", {"step": 1})
        context.log("error", "something broke")
        await asyncio.sleep(0.01)
        return "done"

    @tool
    def chatty_sync(self, context: ToolContext) -> str:
        """Logs from a worker thread."""
        context.log("warning", "from a thread")
        return "done"


class Answers:
    """A client's callbacks: a person who says "Ada", a model that says "Paris", one root;
    what each was asked is kept."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.logged: list[tuple[str, Any]] = []

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        self.asked.append("sample")
        text = types.TextContent(type="text", text="Paris")
        return types.CreateMessageResult(role="assistant", content=text, model="m")

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        self.asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri=FileUrl("file:///work"), name="work")])

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logged.append((params.level, params.data))


@asynccontextmanager
async def asking_server() -> AsyncGenerator[tuple[AskingTools, str]]:
    tools = AskingTools()
    worker: Worker[Mutable] = Worker()
    worker.register_tools(tool_definitions(tools))
    async with serve(None, worker=worker, mcp_address="127.0.0.1:0") as served:
        yield tools, f"http://127.0.0.1:{served.app.mcp_port}/mcp"


def answering(url: str, mode: str, answers: Answers, **options: Any) -> Client:
    return Client(
        url,
        mode=mode,
        elicitation_callback=answers.elicit,
        sampling_callback=answers.sample,
        list_roots_callback=answers.roots,
        logging_callback=answers.log,
        **options,
    )


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", REVISIONS)
async def test_a_tool_asks_the_person_the_model_and_the_roots(mode: str) -> None:
    answers = Answers()
    async with asking_server() as (tools, url), answering(url, mode, answers) as client:
        assert text_of(await client.call_tool("greet", {})) == "Hello, Ada!"
        assert text_of(await client.call_tool("capital", {})) == "Paris"
        assert text_of(await client.call_tool("workspace", {})) == "file:///work"
        survey = await client.call_tool("survey", {})
        assert text_of(survey) == "Ada / ['model', 'roots']"
        assert text_of(await client.call_tool("careful", {})) == "sampled"
    assert answers.asked.count("What is your name?") == 1
    # 2026-07-28 runs the tool again with the answer; 2025-11-25 asks while it runs
    assert tools.runs == (["greet", "greet"] if mode != "legacy" else ["greet"])


@pytest.mark.parametrize("mode", REVISIONS)
async def test_a_client_that_cannot_answer_gets_the_capability_named(mode: str) -> None:
    async with asking_server() as (_, url), Client(url, mode=mode) as client:
        assert text_of(await client.call_tool("careful", {})) == "nobody to ask"
        if mode == "legacy":
            result = await client.call_tool("capital", {})
            assert result.is_error
            assert "'sampling' capability" in text_of(result)
            assert result.meta is not None
            assert result.meta[REASON_META] == "TOOL_EXECUTION_FAILED"
        else:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("capital", {})
            assert refused.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
            assert refused.value.error.data == {"requiredCapabilities": {"sampling": {}}}


async def test_a_declined_form_reaches_the_tool() -> None:
    async def decline(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return types.ElicitResult(action="decline")

    async with asking_server() as (_, url):
        for mode in ("legacy", "2026-07-28"):
            async with Client(url, mode=mode, elicitation_callback=decline) as client:
                assert text_of(await client.call_tool("greet", {})) == "no name (decline)"


async def test_log_lines_reach_a_2025_session_from_its_level_up() -> None:
    answers = Answers()
    async with asking_server() as (_, url), answering(url, "legacy", answers) as client:
        await client.call_tool("chatty", {})
        await client.call_tool("chatty_sync", {})
        with pytest.warns(MCPDeprecationWarning):  # gone in 2026-07-28, served for 2025-11-25
            await client.set_logging_level("error")  # pyright: ignore[reportDeprecated]
        await client.call_tool("chatty", {})
    levels = [level for level, _ in answers.logged]
    assert levels == ["debug", "info", "error", "warning", "error"]
    assert ("info", {"message": "working", "data": {"step": 1}}) in answers.logged


async def test_log_lines_reach_a_2026_request_only_at_the_level_it_asked() -> None:
    quiet, loud = Answers(), Answers()
    async with asking_server() as (_, url):
        async with answering(url, "2026-07-28", quiet) as client:
            await client.call_tool("chatty", {})
        async with answering(url, "2026-07-28", loud, log_level="info") as client:
            await client.call_tool("chatty", {})
    assert quiet.logged == []
    assert [level for level, _ in loud.logged] == ["info", "error"]


async def test_a_changed_or_foreign_request_state_is_refused() -> None:
    async with asking_server() as (_, url):
        body: dict[str, Any] = {"name": "greet", "arguments": {}}
        first = await post_2026(url, "tools/call", body)
        result = first["result"]
        assert result["resultType"] == "input_required"
        assert list(result["inputRequests"]) != []
        state: str = result["requestState"]
        key = next(iter(result["inputRequests"]))
        answer = {key: {"action": "accept", "content": {"name": "Eve"}}}
        tampered = state[:-2] + ("A" if state[-2] != "A" else "B") + state[-1]
        for bad_state, arguments in ((tampered, {}), (state, {"other": 1})):
            refused = await post_2026(
                url,
                "tools/call",
                {"name": "greet", "arguments": arguments, "inputResponses": answer,
                 "requestState": bad_state},
            )  # fmt: skip
            assert refused["error"]["code"] == types.INVALID_PARAMS
        done = await post_2026(
            url,
            "tools/call",
            {**body, "inputResponses": answer, "requestState": state},
        )
        assert done["result"]["content"][0]["text"] == "Hello, Eve!"


async def post_2026(
    url: str, method: str, params: dict[str, Any], token: str | None = None
) -> dict[str, Any]:
    """One 2026-07-28 request (with a bearer ``token``), its JSON-RPC answer (JSON or the
    last SSE event)."""
    meta: dict[str, object] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
        "mcp-name": str(params.get("name", "")),
        **({} if token is None else {"authorization": f"Bearer {token}"}),
    }
    message: dict[str, object] = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": method,
        "params": {**params, "_meta": meta},
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(url, json=message, headers=headers)
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = data[-1]
    answer: dict[str, Any] = json.loads(text)
    return answer


async def test_a_tool_that_requires_approval_may_ask_too_once_approved() -> None:
    async def person(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert isinstance(params, types.ElicitRequestFormParams)
        if params.message.startswith("Approve the call"):
            return types.ElicitResult(action="accept", content={"decision": "approve"})
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    @tool_registry
    class Guarded:
        @tool(requires_approval=True)
        async def rename_all(self, context: ToolContext) -> str:
            """Asks for a name, after its approval."""
            answer = await context.elicit("New name?", NAME_FORM)
            return f"renamed to {answer.content['name']}"

    worker: Worker[Mutable] = Worker()
    worker.register_tools(tool_definitions(Guarded()))
    async with serve(None, worker=worker, mcp_address="127.0.0.1:0") as served:
        url = f"http://127.0.0.1:{served.app.mcp_port}/mcp"
        async with Client(url, mode="legacy", elicitation_callback=person) as client:
            assert text_of(await client.call_tool("rename_all", {})) == "renamed to Ada"
