"""A tour of the core: register tools, lock the worker, run a batch through hooks."""

from __future__ import annotations

import asyncio
import json

from llmworker import (
    Completed,
    Continue,
    Pause,
    PostToolCallContext,
    PostToolCallOutcome,
    PreToolCallOutcome,
    Skip,
    ToolCall,
    ToolCallContext,
    ToolError,
    ToolFactory,
    ToolMeta,
    Worker,
)


class Counter:
    """Counts its calls: state kept for the whole session."""

    def __init__(self) -> None:
        self.count = 0

    async def execute(self, input_json: str) -> str:
        self.count += 1
        return json.dumps({"count": self.count})


class Divide:
    async def execute(self, input_json: str) -> str:
        args = json.loads(input_json)
        try:
            return str(args["a"] / args["b"])
        except ZeroDivisionError:
            raise ToolError.ExecutionFailed("division by zero") from None


def announce(ctx: ToolCallContext) -> PreToolCallOutcome:
    print(f"  pre   {ctx.call.id}: {ctx.meta.name}({ctx.call.input_json})")
    if ctx.meta.name == "delete_everything":
        return Skip()
    if ctx.meta.name == "divide" and '"b": 0' in ctx.call.input_json:
        return Pause()
    return Continue()


def report(ctx: PostToolCallContext) -> PostToolCallOutcome:
    flag = "error" if ctx.result.is_error else "ok"
    print(f"  post  {ctx.call.id}: {flag}: {ctx.result.content}")
    return Continue()


async def main() -> None:
    worker = Worker()
    worker.register_tools(
        [
            ToolFactory(ToolMeta("counter", "Counts calls"), Counter),
            ToolFactory(
                ToolMeta("divide", "Divides a by b").with_input_schema(
                    {
                        "type": "object",
                        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                        "required": ["a", "b"],
                    }
                ),
                Divide,
            ),
            ToolFactory(ToolMeta("delete_everything", "Never runs"), Counter),
        ]
    )
    worker.add_pre_tool_call_hook(announce)
    worker.add_post_tool_call_hook(report)
    locked = worker.lock()
    print("definitions sent to the model (sorted, canonical):")
    snapshot = locked.tool_server_handle().definitions_snapshot()
    print(f"  {snapshot.canonical_json.decode()[:100]}…  sha256 {snapshot.fingerprint[:12]}")

    calls = [
        ToolCall("c1", "counter", "{}"),
        ToolCall("c2", "divide", '{"a": 1, "b": 4}'),
        ToolCall("c3", "delete_everything", "{}"),
        ToolCall("c4", "counter", "{}"),
        ToolCall("c5", "divide", '{"a": 1, "b": 0}'),
        ToolCall("c6", "nope", "{}"),
    ]
    print("batch:")
    outcome = await locked.call_tools(calls)
    while not isinstance(outcome, Completed):
        print(f"  paused at {outcome.paused_call.id}; the operator approves and resumes")
        outcome = await locked.resume(outcome)
    print("results:")
    for result in outcome.results:
        print(f"  {result.call_id}: {'ERROR ' if result.is_error else ''}{result.content}")


if __name__ == "__main__":
    asyncio.run(main())
