"""Numbers JSON does not have (NaN, Infinity, -Infinity, 1e400, -1e400) in a call's input_json,
from grpc-go and the TypeScript SDK: refused INVALID_ARGUMENT / TOOL_INVALID_ARGUMENT naming
the field by CallTool, CallToolStream and, for that call only, CallTools; the server goes on
serving.

The Python client's checks are tests/server/test_non_finite_numbers.py; the binaries come from
``make interop`` (part of ``make test``); a missing one is a failure that says how to build
it, never a skip.
"""

from __future__ import annotations

import pytest

from llmworker import Worker, tool_definitions
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import REPO, serve
from tests.interop.test_interop import GO_BINARY, NODE_MODULES, require, run

NODE_NUMBERS = REPO / "tests/interop/node/numbers.mjs"
CHECKS = [
    *(
        f"OK numbers {literal} refused naming the field"
        for literal in ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"]
    ),
    "OK numbers stream refused",
    "OK numbers batch refuses only that call",
    "OK numbers a nested field refused naming its path",
    "OK numbers server still serves",
]


@pytest.mark.parametrize("language", ["go", "node"])
async def test_numbers_that_are_not_json_are_refused_naming_the_field(language: str) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=worker, internal=False) as served:
        if language == "go":
            command = [str(GO_BINARY), "numbers", "-target", served.target]
        else:
            command = ["node", str(NODE_NUMBERS), served.target]
        code, output = await run(*command)
    assert code == 0, output
    lines = output.splitlines()
    for check in CHECKS:
        assert check in lines, output
