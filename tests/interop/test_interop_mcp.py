"""The MCP front from the official TypeScript SDK (``@modelcontextprotocol/sdk``, Node.js):
``tests/interop/node/mcp.mjs`` lists, calls, fails a validation and an unknown tool, follows
progress, approves by elicitation, is refused from a foreign Origin, reads an image, cancels
a call, and is held to its bearer token, against a demo server in this process. Its
node_modules come from ``make interop`` (part of ``make test``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from llmworker import Image, ToolOutput, Worker, tool, tool_definitions, tool_registry
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import REPO, serve
from tests.interop.test_interop import require, run

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
]
TOKEN, NARROW = "interop-token-0123456789abcdef", "narrow-token-0123456789abcdef"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)


@tool_registry
class Pictures:
    @tool
    async def picture(self) -> ToolOutput:
        """A picture beside its caption."""
        return ToolOutput("a picture", attachments=(Image(PNG, "image/png"),))


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
        internal=False,
        mcp_address="127.0.0.1:0",
        auth_tokens=tokens(tmp_path / "tokens.json"),
    ) as served:
        url = f"http://127.0.0.1:{served.app.mcp_port}/mcp"
        code, output = await run("node", str(NODE_MCP), url, TOKEN, NARROW)
        for _ in range(100):  # the cancelled countdown ends on the server too
            if served.app.tools.admission.in_flight == 0:
                break
            await asyncio.sleep(0.05)
        assert served.app.tools.admission.in_flight == 0
    assert code == 0, output
    assert [line for line in output.splitlines() if line.startswith("OK ")] == CHECKS, output
