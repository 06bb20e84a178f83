"""The MCP front from the official TypeScript SDK (``@modelcontextprotocol/sdk``, Node.js):
``tests/interop/node/mcp.mjs`` lists, calls, fails a validation and an unknown tool, follows
progress, approves by elicitation and is refused from a foreign Origin, against a demo server
in this process. Its node_modules come from ``make interop`` (part of ``make test``)."""

from __future__ import annotations

from llmworker import Worker, tool_definitions
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
]


async def test_the_typescript_sdk_client_sees_the_mcp_contract() -> None:
    require(NODE_SDK)
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=worker, internal=False, mcp_address="127.0.0.1:0") as served:
        url = f"http://127.0.0.1:{served.app.mcp_port}/mcp"
        code, output = await run("node", str(NODE_MCP), url)
    assert code == 0, output
    assert [line for line in output.splitlines() if line.startswith("OK ")] == CHECKS, output
