"""A Go program outside the repository uses the Go SDK through a ``replace`` directive, as a
team trying it from a checkout would: ``go mod tidy`` resolves it, and it calls a tool of a
running server."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from llmworker import Worker, tool_definitions
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import REPO, serve

MAIN = """package main

import (
	"context"
	"fmt"
	"os"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
)

func main() {
	client, err := llmworker.Dial(os.Args[1])
	if err != nil {
		panic(err)
	}
	defer client.Close()
	input := map[string]any{"text": "from outside"}
	result, err := client.CallTool(context.Background(), "echo", input)
	fmt.Println(result.Output, err)
}
"""


async def go(directory: Path, *arguments: str) -> str:
    process = await asyncio.create_subprocess_exec(
        "go",
        *arguments,
        cwd=directory,
        env={**os.environ, "GOFLAGS": "-mod=mod"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), 300)
    text = output.decode()
    assert process.returncode == 0, text
    return text


async def test_a_program_outside_the_repository_uses_the_go_sdk(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text(
        "module example.com/agent\n\ngo 1.26.0\n\n"
        "require github.com/llmworker/llmworker/sdk/go v0.0.0\n\n"
        f"replace github.com/llmworker/llmworker/sdk/go => {REPO / 'sdk/go'}\n"
    )
    (tmp_path / "main.go").write_text(MAIN)
    await go(tmp_path, "mod", "tidy")
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(None, worker=worker, internal=False) as served:
        output = await go(tmp_path, "run", ".", served.target)
    assert output.strip().splitlines()[-1] == "from outside <nil>"
