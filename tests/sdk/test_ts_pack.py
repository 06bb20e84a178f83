"""The TypeScript SDK as a team would install it: ``npm pack`` gives a tarball that installs
in an empty directory, and a ten-line program calls a tool of a running server with it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from llmworker import Worker, tool_definitions
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import REPO, serve

SDK = REPO / "sdk/typescript"
PROGRAM = """import { ToolNotFound, createClient } from "@llmworker/sdk";

const client = createClient(process.argv[2]);
const result = await client.callTool("echo", { text: "from a tarball" });
console.log(result.output);
try {
  await client.callTool("no_such_tool");
} catch (error) {
  console.log(error instanceof ToolNotFound, error.metadata.tool);
}
"""


async def run(directory: Path, *command: str) -> str:
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=directory,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), 300)
    text = output.decode()
    assert process.returncode == 0, f"{command}: {text}"
    return text


async def test_the_packed_tarball_installs_and_runs_in_an_empty_directory(tmp_path: Path) -> None:
    assert (SDK / "dist/index.js").exists(), "build the SDK first: make sdk-ts"
    packed = await run(SDK, "npm", "pack", "--pack-destination", str(tmp_path), "--silent")
    tarball = tmp_path / packed.strip().splitlines()[-1]
    project = tmp_path / "agent"
    project.mkdir()
    (project / "package.json").write_text('{"name": "agent", "private": true, "type": "module"}')
    await run(
        project, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error", str(tarball)
    )
    (project / "main.mjs").write_text(PROGRAM)
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(None, worker=worker, internal=False) as served:
        output = await run(project, "node", "main.mjs", served.target)
    assert output.splitlines() == ["from a tarball", "true no_such_tool"]
