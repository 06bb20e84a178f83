"""A Go provider built with the Go SDK and a TypeScript provider built with the TypeScript SDK
both register with one Python server, and each calls the other's tool through it with its
SDK's client: the definitions (a struct's and a zod schema's) as registered, the calls,
a refused argument as TOOL_INVALID_ARGUMENT from either side."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncGenerator
from pathlib import Path

from llmworker import Worker
from tests.grpc_support import REPO, serve

TOKEN = "e2e-provider-token-0123456789"
GO_PROGRAM = """package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	"github.com/llmworker/llmworker/sdk/go/provider"
)

type Reverse struct {
	Text string `json:"text" jsonschema:"description=the text to reverse"`
}

func main() {
	server, registry, token := os.Args[1], os.Args[2], os.Args[3]
	reverse := provider.Tool("go_reverse", "Reverse a text (Go)",
		func(_ context.Context, in Reverse) (string, error) {
			if in.Text == "" {
				return "", provider.InvalidArgument("text is empty")
			}
			runes := []rune(in.Text)
			slices.Reverse(runes)
			return string(runes), nil
		})
	tools, err := provider.New(reverse)
	must(err)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	go func() { _ = tools.Serve(listener) }()
	ctx := context.Background()
	for tools.Address() == "" {
		time.Sleep(10 * time.Millisecond)
	}
	must(tools.Register(ctx, registry, provider.WithToken(token)))
	fmt.Println("READY go")
	client, err := llmworker.Dial(server)
	must(err)
	for {
		result, err := client.CallTool(ctx, "ts_upper", map[string]any{"text": "from go"})
		if errors.As(err, &llmworker.ToolNotFound{}) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		must(err)
		fmt.Println("CALLED ts_upper", result.Output)
		break
	}
	_, err = client.CallTool(ctx, "ts_upper", map[string]any{"text": 7})
	fmt.Println("REFUSED ts_upper", errors.As(err, &llmworker.ToolInvalidArgument{}))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	<-stop
	tools.Stop(ctx)
}

func must(err error) {
	if err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
}
"""
NODE_PROGRAM = """import { z } from "%(zod)s";
import {
  InvalidArgument, Provider, ToolInvalidArgument, ToolNotFound, createClient, defineTool,
} from "%(sdk)s";

const [server, registry, token] = process.argv.slice(2);
const upper = defineTool({
  name: "ts_upper",
  description: "Upper-case a text (TypeScript)",
  input: z.object({ text: z.string().describe("the text to upper-case") }),
  run: ({ text }) => {
    if (text === "") throw new InvalidArgument("text is empty");
    return text.toUpperCase();
  },
  readOnly: true,
});
const provider = new Provider([upper]);
await provider.serve();
await provider.register(registry, { token });
console.log("READY ts");
const client = createClient(server);
for (;;) {
  try {
    const result = await client.callTool("go_reverse", { text: "from ts" });
    console.log("CALLED go_reverse", result.output);
    break;
  } catch (error) {
    if (!(error instanceof ToolNotFound)) throw error;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
try {
  await client.callTool("go_reverse", { text: "" });
} catch (error) {
  console.log("REFUSED go_reverse", error instanceof ToolInvalidArgument);
}
process.on("SIGINT", async () => {
  await provider.stop();
  process.exit(0);
});
"""


async def run(directory: Path, *command: str) -> str:
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=directory,
        env={**os.environ, "GOFLAGS": "-mod=mod"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode == 0, output.decode()
    return output.decode()


@contextlib.asynccontextmanager
async def started(directory: Path, *command: str) -> AsyncGenerator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        *command, cwd=directory, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


async def lines_until(process: asyncio.subprocess.Process, prefix: str) -> list[str]:
    """The output lines up to the first starting with ``prefix`` (20 s at most)."""
    assert process.stdout is not None
    seen: list[str] = []
    async with asyncio.timeout(20):
        while not seen or not seen[-1].startswith(prefix):
            line = await process.stdout.readline()
            assert line, "the program ended:\n" + "".join(seen)
            seen.append(line.decode().rstrip("\n"))
    return seen


async def test_a_go_and_a_typescript_provider_call_each_other_through_the_server(
    tmp_path: Path,
) -> None:
    go_dir, node_dir = tmp_path / "go", tmp_path / "node"
    go_dir.mkdir()
    node_dir.mkdir()
    (go_dir / "go.mod").write_text(
        "module example.com/e2e\n\ngo 1.26.0\n\n"
        "require github.com/llmworker/llmworker/sdk/go v0.0.0\n\n"
        f"replace github.com/llmworker/llmworker/sdk/go => {REPO / 'sdk/go'}\n"
    )
    (go_dir / "main.go").write_text(GO_PROGRAM)
    await run(go_dir, "go", "mod", "tidy")
    await run(go_dir, "go", "build", "-o", "e2e", ".")
    sdk = REPO / "sdk/typescript"
    (node_dir / "main.mjs").write_text(
        NODE_PROGRAM % {"sdk": sdk / "dist/index.js", "zod": sdk / "node_modules/zod/index.js"}
    )
    socket = tmp_path / "registry.sock"
    async with serve(None, worker=Worker(), internal_socket=socket, token=TOKEN) as served:
        registry = f"unix://{socket}"
        async with (
            started(go_dir, str(go_dir / "e2e"), served.target, registry, TOKEN) as go,
            started(node_dir, "node", "main.mjs", served.target, registry, TOKEN) as node,
        ):
            go_lines = await lines_until(go, "REFUSED")
            node_lines = await lines_until(node, "REFUSED")
            handle = served.app.registry.handle
            reverse, upper = handle.get_tool("go_reverse"), handle.get_tool("ts_upper")
            assert reverse is not None
            assert upper is not None
            assert reverse[0].input_schema["properties"] == {
                "text": {"type": "string", "description": "the text to reverse"}
            }
            assert upper[0].annotations.read_only is True
    assert go_lines[-2:] == ["CALLED ts_upper FROM GO", "REFUSED ts_upper true"], go_lines
    assert node_lines[-2:] == ["CALLED go_reverse st morf", "REFUSED go_reverse true"], node_lines
