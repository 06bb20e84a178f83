"""The Go SDK's typed errors for the reasons the other interop checks do not reach."""

from __future__ import annotations

from pathlib import Path

from llmworker import Worker, tool_definitions
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import serve
from tests.interop.test_interop import GO_BINARY, TOKEN, require, run

REASONS_CHECKS = [
    "OK reasons a name the server has refused (DUPLICATE_NAME)",
    "OK reasons a tool over its timeout (TOOL_TIMEOUT)",
    "OK reasons a pause over --max-paused-batches (PAUSED_BATCHES_FULL)",
    "OK reasons a schema a strict format cannot take (DEFINITION_FORMAT_UNSUPPORTED)",
    "OK reasons a provider that went away (PROVIDER_UNAVAILABLE)",
    "OK reasons a registration after the lock (REGISTRY_LOCKED)",
]


async def test_go_gets_each_reason_as_its_typed_error(tmp_path: Path) -> None:
    require(GO_BINARY)
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
        code, output = await run(
            str(GO_BINARY), "reasons", "-target", served.target,
            "-registry", served.app.internal_target, "-token", TOKEN,
        )  # fmt: skip
        assert code == 0, output
        for check in REASONS_CHECKS:
            assert check in output, output
        assert served.app.tools.in_flight == 0
