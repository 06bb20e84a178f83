"""The MCP front from the official TypeScript SDK (``@modelcontextprotocol/sdk``, Node.js):
``tests/interop/node/mcp.mjs`` lists, calls, fails a validation and an unknown tool, follows
progress, approves by elicitation, is refused from a foreign Origin, reads an image, cancels
a call, is held to its bearer token and hears of a tool registered meanwhile, against a demo
server in this process. Its
node_modules come from ``make interop`` (part of ``make test``)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from llmworker import Image, ToolOutput, Worker, tool, tool_definitions, tool_registry
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import REPO, serve
from tests.interop.test_interop import require

NODE_MCP = REPO / "tests/interop/node/mcp.mjs"
NODE_SDK = REPO / "tests/interop/node/node_modules/@modelcontextprotocol/sdk"
CHECKS = [
    "OK mcp listed",
    "OK mcp called",
    "OK mcp errors",
    "OK mcp progress",
    "OK mcp approval",
    "OK mcp origin",
    "OK mcp image",
    "OK mcp cancelled",
    "OK mcp tokens",
    "OK mcp list-changed",
]
TOKEN, NARROW = "interop-token-0123456789abcdef", "narrow-token-0123456789abcdef"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)


@tool_registry
class Pictures:
    @tool
    async def picture(self) -> ToolOutput:
        """A picture beside its caption."""
        return ToolOutput("a picture", attachments=(Image(PNG, "image/png"),))


@tool_registry
class LateTools:
    @tool
    async def late(self) -> str:
        """Registered while the client is connected."""
        return "late"


async def run_answering(answers: dict[str, Callable[[], None]], *command: str) -> tuple[int, str]:
    """Run ``command``; when it prints a line of ``answers``, call that answer."""
    process = await asyncio.create_subprocess_exec(
        *command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPO
    )
    assert process.stdout is not None
    lines: list[str] = []
    async with asyncio.timeout(60):
        async for raw in process.stdout:
            line = raw.decode().rstrip("\n")
            lines.append(line)
            if line in answers:
                answers[line]()
        await process.wait()
    assert process.returncode is not None
    return process.returncode, "\n".join(lines)


def tokens(path: Path) -> Path:
    entries = [
        {"token": TOKEN, "label": "interop", "tools": ["*"]},
        {"token": NARROW, "label": "narrow", "tools": ["echo"]},
    ]
    path.write_text(json.dumps({"tokens": entries}))
    path.chmod(0o600)
    return path


async def test_the_typescript_sdk_client_sees_the_mcp_contract(tmp_path: Path) -> None:
    require(NODE_SDK)
    worker = Worker()
    worker.register_tools([*tool_definitions(DemoTools()), *tool_definitions(Pictures())])
    async with serve(
        worker=worker,
        internal_socket=tmp_path / "registry.sock",  # a registry that takes tools later
        token="registry-token-0123456789",
        mcp_address="127.0.0.1:0",
        auth_tokens=tokens(tmp_path / "tokens.json"),
    ) as served:
        url = f"http://127.0.0.1:{served.app.mcp_port}/mcp"

        def register_late() -> None:
            served.app.registry.register([*tool_definitions(LateTools())])

        code, output = await run_answering(
            {"WAITING list-changed": register_late}, "node", str(NODE_MCP), url, TOKEN, NARROW
        )
        for _ in range(100):  # the cancelled countdown ends on the server too
            if served.app.tools.admission.in_flight == 0:
                break
            await asyncio.sleep(0.05)
        assert served.app.tools.admission.in_flight == 0
    assert code == 0, output
    assert [line for line in output.splitlines() if line.startswith("OK ")] == CHECKS, output
