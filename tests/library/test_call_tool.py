"""Worker.call_tool: one call through the hooks, answered as ToolServerHandle.call_tool answers."""

from __future__ import annotations

import asyncio

import pytest

from llmworker import (
    Abort,
    Completed,
    Continue,
    Mutable,
    Pause,
    PostToolCallContext,
    PostToolCallHook,
    PostToolCallOutcome,
    PreToolCallHook,
    PreToolCallOutcome,
    Skip,
    ToolBatchAborted,
    ToolCall,
    ToolCallContext,
    ToolCallPaused,
    ToolError,
    ToolResult,
    ToolServerError,
    Worker,
    WorkerStateError,
)
from tests.support import EchoTool, FailingTool, SleepTool, definition_of


class WrongResultTool:
    """Returns something that is not a str, which a Tool must not do."""

    async def execute(self, input_json: str) -> str:
        return 42  # type: ignore[return-value]


def make_worker() -> Worker[Mutable]:
    worker = Worker()
    worker.register_tools(
        [
            definition_of("echo", EchoTool()),
            definition_of("fail", FailingTool(ToolError.InvalidArgument("no such city"))),
            definition_of("crash", FailingTool(RuntimeError("boom"))),
            definition_of("wrong", WrongResultTool()),
        ]
    )
    return worker


async def test_without_hooks_a_call_answers_with_the_tools_text() -> None:
    assert await make_worker().lock().call_tool("echo", '{"a": 1}') == '{"a": 1}'


async def test_an_unknown_tool_raises_tool_not_found() -> None:
    with pytest.raises(ToolServerError.ToolNotFound, match="Tool 'nope' not found"):
        await make_worker().call_tool("nope", "{}")


@pytest.mark.parametrize(
    ("name", "cause", "message"),
    [
        ("fail", ToolError.InvalidArgument, "Invalid argument: no such city"),
        ("crash", ToolError.Internal, "FailingTool.execute raised RuntimeError: boom"),
        ("wrong", ToolError.Internal, "WrongResultTool.execute returned int; it must return str"),
    ],
)
async def test_a_failing_tool_raises_tool_execution_caused_by_its_tool_error(
    name: str, cause: type[ToolError], message: str
) -> None:
    with pytest.raises(ToolServerError.ToolExecution) as raised:
        await make_worker().call_tool(name, "{}")
    assert isinstance(raised.value.__cause__, cause)
    assert message in str(raised.value)


async def answer_of(worker: Worker[Mutable], name: str, input_json: str) -> object:
    """call_tool's answer: its text, or the type, text and cause's type of what it raised."""
    try:
        return await worker.call_tool(name, input_json, call_id="7")
    except ToolServerError as error:
        return (type(error), str(error), type(error.__cause__))


def batch_answer(result: ToolResult) -> object:
    """What call_tool should answer for the lone result ``call_tools`` gave."""
    if not result.is_error:
        return result.content
    if isinstance(result.error, ToolServerError):
        return (type(result.error), str(result.error), type(None))
    expected = ToolServerError.ToolExecution(result.content)
    return (type(expected), str(expected), type(result.error))


def rewrite_input(ctx: ToolCallContext) -> PreToolCallOutcome:
    ctx.call = ToolCall(ctx.call.id, ctx.call.name, '{"rewritten": true}')
    return Continue()


def skip(ctx: ToolCallContext) -> PreToolCallOutcome:
    return Skip()


def make_error(ctx: PostToolCallContext) -> PostToolCallOutcome:
    ctx.result = ToolResult(ctx.call.id, "refused by policy", is_error=True)
    return Continue()


def redact(ctx: PostToolCallContext) -> PostToolCallOutcome:
    ctx.result = ToolResult(ctx.call.id, "[redacted]")
    return Continue()


@pytest.mark.parametrize(
    ("pre", "post"),
    [(None, None), (rewrite_input, None), (skip, None), (None, make_error), (None, redact)],
)
@pytest.mark.parametrize("name", ["echo", "fail", "crash", "nope"])
async def test_call_tool_answers_what_call_tools_gives_for_a_batch_of_one(
    name: str,
    pre: PreToolCallHook | None,
    post: PostToolCallHook | None,
) -> None:
    worker = make_worker()
    if pre is not None:
        worker.add_pre_tool_call_hook(pre)
    if post is not None:
        worker.add_post_tool_call_hook(post)
    outcome = await worker.call_tools([ToolCall("7", name, '{"text": "hi"}')])
    assert isinstance(outcome, Completed)
    assert await answer_of(worker, name, '{"text": "hi"}') == batch_answer(outcome.results[0])


async def test_hooks_see_the_call_id_name_and_input() -> None:
    worker = make_worker()
    seen: list[ToolCall] = []

    def record(ctx: ToolCallContext) -> PreToolCallOutcome:
        seen.append(ctx.call)
        return Continue()

    worker.add_pre_tool_call_hook(record)
    await worker.call_tool("echo", "{}", call_id="call-9")
    assert seen == [ToolCall("call-9", "echo", "{}")]


async def test_a_hooks_abort_raises_tool_batch_aborted() -> None:
    worker = make_worker()
    worker.add_pre_tool_call_hook(lambda ctx: Abort("not today"))
    with pytest.raises(ToolBatchAborted) as raised:
        await worker.call_tool("echo", "{}", call_id="c1")
    assert (raised.value.reason, raised.value.call_id) == ("not today", "c1")


async def test_a_pause_raises_tool_call_paused_which_resumes() -> None:
    worker = make_worker()
    worker.add_pre_tool_call_hook(lambda ctx: Pause())
    with pytest.raises(
        ToolCallPaused, match="the call to 'echo' was paused by a pre-tool-call hook"
    ) as raised:
        await worker.call_tool("echo", '{"x": 1}', call_id="c2")
    assert raised.value.paused.paused_call == ToolCall("c2", "echo", '{"x": 1}')
    outcome = await worker.resume(raised.value.paused)
    assert outcome == Completed([ToolResult("c2", '{"x": 1}')])


async def test_cancelling_the_caller_cancels_the_tool() -> None:
    worker, sleeper = Worker(), SleepTool()
    worker.register_tool(definition_of("sleep", sleeper))
    call = asyncio.ensure_future(worker.call_tool("sleep", '{"seconds": 30}'))
    await asyncio.sleep(0.05)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert (sleeper.started, sleeper.cancelled) == (1, 1)


async def test_a_consumed_worker_refuses_call_tool() -> None:
    worker = make_worker()
    worker.lock()
    with pytest.raises(WorkerStateError, match="consumed by lock"):
        await worker.call_tool("echo", "{}")
