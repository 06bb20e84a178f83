"""Go (grpc-go) and Node (the TypeScript SDK) call tools the server imported from an MCP
server written with the official SDK (tests/mcp_import's fixture, over stdio): a structured
result, progress on CallToolStream, an MCP error result as TOOL_EXECUTION_FAILED with the
server's text.

The binaries come from ``make interop`` (part of ``make test``); a missing one is a failure
that says how to build it, never a skip.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llmworker import Worker
from tests.grpc_support import REPO, serve
from tests.interop.test_interop import GO_BINARY, NODE_MODULES, require, run
from tests.mcp_import.support import sdk_stdio

NODE_IMPORTED = REPO / "tests/interop/node/imported.mjs"
CHECKS = [
    "OK imported a structured result",
    "OK imported progress then the result on CallToolStream",
    "OK imported an MCP error result is TOOL_EXECUTION_FAILED",
]


@pytest.mark.parametrize("language", ["go", "node"])
async def test_go_and_node_call_an_imported_mcp_tool(language: str, tmp_path: Path) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    settings = sdk_stdio("sdk", tmp_path / "events.jsonl")
    async with serve(None, worker=Worker(), mcp_servers=(settings,), internal=False) as served:
        if language == "go":
            command = [str(GO_BINARY), "imported", "-target", served.target]
        else:
            command = ["node", str(NODE_IMPORTED), served.target]
        code, output = await run(*command)
    assert code == 0, output
    assert [line for line in output.splitlines() if line.startswith("OK ")] == CHECKS, output
