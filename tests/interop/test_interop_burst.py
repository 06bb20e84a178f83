"""A burst on one connection, from grpc-go and the TypeScript SDK (@llmworker/sdk, Connect's
gRPC transport): admission answers every call (OK or CONCURRENCY_LIMIT), gRPC's own stream
refusal (REFUSED_STREAM, a bare UNAVAILABLE) none.

The Python client's burst is tests/server/test_admission.py; the binaries come from
``make interop`` (part of ``make test``); a missing one is a failure that says how to build
it, never a skip.
"""

from __future__ import annotations

import pytest

from llmworker import Worker, tool_definitions
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import REPO, serve
from tests.interop.test_interop import GO_BINARY, NODE_MODULES, require, run

NODE_BURST = REPO / "tests/interop/node/burst.mjs"
SLOW = 4
BURST = 300


@pytest.mark.parametrize("language", ["go", "node"])
async def test_a_burst_on_one_connection_gets_only_documented_answers(language: str) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=worker, max_concurrent_calls=SLOW, internal=False) as served:
        if language == "go":
            command = [str(GO_BINARY), "burst", "-target", served.target,
                       "-slow", str(SLOW), "-burst", str(BURST)]  # fmt: skip
        else:
            command = ["node", str(NODE_BURST), served.target, str(SLOW), str(BURST)]
        code, output = await run(*command)
    assert code == 0, output
    assert f"OK burst of {BURST} on one connection: only documented answers" in output, output
