"""SearchTools from grpc-go and the TypeScript SDK against the demo tools: the tool a query
means comes first with scores best first, a prefix, a provider format in the same order, bad
requests refused INVALID_ARGUMENT / INVALID_REQUEST, nothing for words no tool has.

The Python checks are tests/server/test_search_tools.py; the binaries come from ``make
interop`` (part of ``make test``); a missing one is a failure that says how to build it,
never a skip.
"""

from __future__ import annotations

import pytest

from llmworker import Worker, tool_definitions
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import REPO, serve
from tests.interop.test_interop import GO_BINARY, NODE_MODULES, require, run

NODE_SEARCH = REPO / "tests/interop/node/search.mjs"
CHECKS = [
    "OK search the tool a query means comes first",
    "OK search a word matches the words it begins",
    "OK search a provider format in the same order",
    "OK search bad requests refused naming the field",
    "OK search words no tool has find nothing",
]


@pytest.mark.parametrize("language", ["go", "node"])
async def test_search_tools_from_go_and_node(language: str) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=worker, internal=False) as served:
        if language == "go":
            command = [str(GO_BINARY), "search", "-target", served.target]
        else:
            command = ["node", str(NODE_SEARCH), served.target]
        code, output = await run(*command)
    assert code == 0, output
    assert [line for line in output.splitlines() if line.startswith("OK ")] == CHECKS, output
