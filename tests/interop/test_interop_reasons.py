"""The Go and TypeScript SDKs' typed errors for the reasons the other interop checks do not
reach."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmworker import Worker, tool_definitions
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import REPO, serve
from tests.interop.test_interop import GO_BINARY, NODE_MODULES, TOKEN, require, run

NODE_REASONS = REPO / "tests/interop/node/reasons.mjs"

REASONS_CHECKS = [
    "OK reasons a name the server has refused (DUPLICATE_NAME)",
    "OK reasons a tool over its timeout (TOOL_TIMEOUT)",
    "OK reasons a pause over --max-paused-batches (PAUSED_BATCHES_FULL)",
    "OK reasons a schema a strict format cannot take (DEFINITION_FORMAT_UNSUPPORTED)",
    "OK reasons a provider that went away (PROVIDER_UNAVAILABLE)",
    "OK reasons a registration after the lock (REGISTRY_LOCKED)",
]


@pytest.mark.parametrize("language", ["go", "node"])
async def test_each_reason_is_its_typed_error_from_go_and_node(
    language: str, tmp_path: Path
) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(
        worker=worker,
        internal_socket=tmp_path / "registry.sock",
        token=TOKEN,
        tool_timeouts={"countdown": 0.3},
        max_paused_batches=1,
    ) as served:
        assert served.app.internal_target is not None
        internal = served.app.internal_target
        if language == "go":
            command = [str(GO_BINARY), "reasons", "-target", served.target,
                       "-registry", internal, "-token", TOKEN]  # fmt: skip
        else:
            command = ["node", str(NODE_REASONS), served.target, internal, TOKEN]
        code, output = await run(*command)
        assert code == 0, output
        for check in REASONS_CHECKS:
            assert check in output, output
        assert served.app.tools.in_flight == 0
