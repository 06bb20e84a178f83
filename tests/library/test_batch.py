"""call_tools: hooks in order, concurrent execution, results in call order, pause/abort."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from llmworker import (
    Abort,
    Completed,
    Continue,
    Mutable,
    Pause,
    Paused,
    PostToolCallContext,
    PostToolCallHook,
    PostToolCallOutcome,
    PreToolCallHook,
    PreToolCallOutcome,
    Skip,
    ToolBatchAborted,
    ToolCall,
    ToolCallContext,
    ToolError,
    ToolResult,
    Worker,
    WorkerError,
)
from tests.support import CounterTool, EchoTool, FailingTool, SleepTool, definition_of


def make_worker() -> tuple[Worker[Mutable], CounterTool, SleepTool]:
    worker = Worker()
    counter, sleeper = CounterTool(), SleepTool()
    worker.register_tools(
        [
            definition_of("echo", EchoTool()),
            definition_of("count", counter),
            definition_of("sleep", sleeper),
            definition_of("fail", FailingTool(ToolError.ExecutionFailed("disk full"))),
        ]
    )
    return worker, counter, sleeper


def record_pre(log: list[str]) -> PreToolCallHook:
    def hook(ctx: ToolCallContext) -> PreToolCallOutcome:
        log.append(ctx.call.id)
        return Continue()

    return hook


def record_post(log: list[str]) -> PostToolCallHook:
    def hook(ctx: PostToolCallContext) -> PostToolCallOutcome:
        log.append(f"post:{ctx.call.id}")
        return Continue()

    return hook


def completed(outcome: Completed | Paused) -> list[ToolResult]:
    assert isinstance(outcome, Completed), outcome
    return outcome.results


async def test_results_come_back_in_call_order_with_errors_as_results() -> None:
    worker, _, _ = make_worker()
    results = completed(
        await worker.lock().call_tools(
            [
                ToolCall("1", "sleep", '{"seconds": 0.03}'),
                ToolCall("2", "echo", '{"x": 1}'),
                ToolCall("3", "missing", "{}"),
                ToolCall("4", "fail", "{}"),
            ]
        )
    )
    assert results == [
        ToolResult("1", "slept"),
        ToolResult("2", '{"x": 1}'),
        ToolResult("3", "Tool 'missing' not found", is_error=True),
        ToolResult("4", "Execution failed: disk full", is_error=True),
    ]


async def test_calls_run_concurrently() -> None:
    worker, _, sleeper = make_worker()
    calls = [ToolCall(str(i), "sleep", '{"seconds": 0.2}') for i in range(10)]
    started = time.perf_counter()
    results = completed(await worker.call_tools(calls))
    elapsed = time.perf_counter() - started
    assert [result.content for result in results] == ["slept"] * 10
    assert sleeper.started == 10
    assert elapsed < 1.0, f"10 calls of 0.2 s took {elapsed:.2f} s: they did not overlap"


async def test_one_instance_serves_every_call_of_every_batch() -> None:
    worker, counter, _ = make_worker()
    for _ in range(3):
        await worker.call_tools([ToolCall("a", "count", "{}"), ToolCall("b", "count", "{}")])
    assert counter.count == 6


async def test_hooks_run_in_registration_order_pre_sequentially_post_in_call_order() -> None:
    worker, _, _ = make_worker()
    log: list[str] = []

    def pre(tag: str) -> PreToolCallHook:
        async def hook(ctx: ToolCallContext) -> PreToolCallOutcome:
            log.append(f"pre{tag}:{ctx.call.id}")
            return Continue()

        return hook

    def post(tag: str) -> PostToolCallHook:
        def hook(ctx: PostToolCallContext) -> PostToolCallOutcome:
            log.append(f"post{tag}:{ctx.call.id}")
            return Continue()

        return hook

    worker.add_pre_tool_call_hook(pre("A"))
    worker.add_post_tool_call_hook(post("A"))
    locked = worker.lock()
    locked.add_pre_tool_call_hook(pre("B"))
    locked.add_post_tool_call_hook(post("B"))
    await locked.call_tools(
        [
            ToolCall("1", "sleep", '{"seconds": 0.02}'),
            ToolCall("2", "echo", "{}"),
            ToolCall("3", "missing", "{}"),
        ]
    )
    assert log == [
        "preA:1", "preB:1", "preA:2", "preB:2",
        "postA:1", "postB:1", "postA:2", "postB:2",
    ]  # fmt: skip


async def test_pre_hook_sees_meta_and_live_tool_and_can_rewrite_the_call() -> None:
    worker, counter, _ = make_worker()
    seen: list[tuple[str, int]] = []

    def pre(ctx: ToolCallContext) -> PreToolCallOutcome:
        if isinstance(ctx.tool, CounterTool):
            seen.append((ctx.meta.name, ctx.tool.count))
        if ctx.meta.name == "echo":
            ctx.call.input_json = json.dumps({"rewritten": True})
        return Continue()

    worker.add_pre_tool_call_hook(pre)
    results = completed(
        await worker.call_tools([ToolCall("1", "count", "{}"), ToolCall("2", "echo", "{}")])
    )
    await worker.call_tools([ToolCall("3", "count", "{}")])
    assert seen == [("count", 0), ("count", 1)]
    assert results[1].content == '{"rewritten": true}'
    assert counter.count == 2


async def test_post_hook_can_rewrite_the_result() -> None:
    worker, _, _ = make_worker()

    def redact(ctx: PostToolCallContext) -> PostToolCallOutcome:
        if ctx.result.is_error:
            ctx.result = ToolResult(ctx.result.call_id, "redacted", is_error=True)
        return Continue()

    worker.add_post_tool_call_hook(redact)
    results = completed(
        await worker.call_tools([ToolCall("1", "fail", "{}"), ToolCall("2", "echo", "ok")])
    )
    assert results == [ToolResult("1", "redacted", is_error=True), ToolResult("2", "ok")]


async def test_skip_stops_later_hooks_and_the_call() -> None:
    worker, counter, _ = make_worker()
    later: list[str] = []
    worker.add_pre_tool_call_hook(lambda ctx: Skip() if ctx.meta.name == "count" else Continue())
    worker.add_pre_tool_call_hook(record_pre(later))
    worker.add_post_tool_call_hook(record_post(later))
    results = completed(
        await worker.call_tools([ToolCall("1", "count", "{}"), ToolCall("2", "echo", "hi")])
    )
    assert counter.count == 0
    assert results == [
        ToolResult("1", "Tool 'count' was skipped by a pre-tool-call hook", skipped=True),
        ToolResult("2", "hi"),
    ]
    assert later == ["2", "post:2"]


async def test_pre_hook_abort_stops_the_batch_before_anything_runs() -> None:
    worker, counter, _ = make_worker()
    worker.add_pre_tool_call_hook(
        lambda ctx: Abort("echo is forbidden") if ctx.meta.name == "echo" else Continue()
    )
    with pytest.raises(ToolBatchAborted) as caught:
        await worker.call_tools([ToolCall("1", "count", "{}"), ToolCall("2", "echo", "{}")])
    assert caught.value.reason == "echo is forbidden"
    assert caught.value.call_id == "2"
    assert str(caught.value) == "Tool batch aborted by a hook at call '2': echo is forbidden"
    assert not caught.value.after_execution
    assert counter.count == 0


async def test_post_hook_abort_raises_with_its_reason() -> None:
    worker, _, _ = make_worker()
    worker.add_post_tool_call_hook(lambda ctx: Abort("result leaked a secret"))
    with pytest.raises(ToolBatchAborted, match="result leaked a secret") as caught:
        await worker.call_tools([ToolCall("1", "echo", "{}")])
    assert caught.value.after_execution  # the call ran before the hook saw its result


async def test_pause_returns_control_and_resume_continues_after_the_pausing_hook() -> None:
    worker, counter, _ = make_worker()
    approvals: list[str] = []
    after: list[str] = []

    def approval(ctx: ToolCallContext) -> PreToolCallOutcome:
        if ctx.meta.name == "count" and ctx.call.id not in approvals:
            return Pause()
        return Continue()

    worker.add_pre_tool_call_hook(approval)
    worker.add_pre_tool_call_hook(record_pre(after))
    calls = [ToolCall("1", "echo", "a"), ToolCall("2", "count", "{}"), ToolCall("3", "echo", "b")]
    outcome = await worker.call_tools(calls)

    assert isinstance(outcome, Paused)
    assert outcome.paused_call.id == "2"
    assert [call.id for call in outcome.pending_calls] == ["1", "2", "3"]
    assert counter.count == 0
    assert after == ["1"]

    approvals.append("2")
    locked = worker.lock()
    results = completed(await locked.resume(outcome))
    assert [result.content for result in results] == ["a", "1", "b"]
    assert after == ["1", "2", "3"]
    with pytest.raises(WorkerError, match="already resumed"):
        await locked.resume(outcome)


async def test_cancelling_the_batch_cancels_the_tools_in_flight() -> None:
    worker, _, sleeper = make_worker()
    batch = asyncio.create_task(
        worker.call_tools([ToolCall(str(i), "sleep", '{"seconds": 30}') for i in range(3)])
    )
    for _ in range(100):  # the three calls start within a few loop iterations
        await asyncio.sleep(0)
    assert sleeper.started == 3
    batch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(batch, timeout=5)
    assert sleeper.cancelled == 3
