"""Streamed calls in the library: progress and chunks in order, the result last, bounded
channels, cancellation, hooks, and streaming tools called through the unary paths."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator

import pytest

from llmworker import (
    Abort,
    Completed,
    Continue,
    Mutable,
    OutputChunk,
    PostToolCallContext,
    PostToolCallOutcome,
    Progress,
    StreamEvent,
    ToolBatchAborted,
    ToolCall,
    ToolCallContext,
    ToolContext,
    ToolOutput,
    ToolResult,
    ToolServerError,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llmworker._runtime.streaming import MAX_WAITING_EVENTS, PROGRESS_INTERVAL


@tool_registry
class Long:
    def __init__(self) -> None:
        self.cancelled = asyncio.Event()
        self.started = asyncio.Event()

    @tool
    async def countdown(self, n: int, context: ToolContext) -> AsyncIterator[str]:
        """Count down from n, one chunk per step."""
        for step in range(n):
            context.report_progress(step + 1, n, f"step {step + 1} of {n}")
            yield f"{n - step}\n"
            await asyncio.sleep(0)

    @tool
    async def forever(self) -> AsyncIterator[str]:
        """Stream until cancelled."""
        self.started.set()
        try:
            while True:
                yield "."
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise

    @tool
    def crunch(self, steps: int, context: ToolContext) -> str:
        """A sync tool reporting progress from its thread."""
        for step in range(steps):
            context.report_progress(step + 1, steps)
            time.sleep(0.005)
        return "crunched"

    @tool
    async def chatty(self, reports: int, context: ToolContext) -> str:
        """Report progress far more often than anyone should see it."""
        for step in range(reports):
            context.report_progress(step + 1)
        return "said"

    @tool
    async def broken(self) -> AsyncIterator[str]:
        """Fail after one chunk."""
        yield "partial"
        raise RuntimeError("the crawl fell over")

    @tool
    async def plain(self, text: str) -> str:
        """Not a streaming tool."""
        return text


@pytest.fixture
def long() -> Long:
    return Long()


@pytest.fixture
def worker(long: Long) -> Worker[Mutable]:
    made: Worker[Mutable] = Worker()
    made.register_tools(tool_definitions(long))
    return made


async def events_of(worker: Worker[Mutable], name: str, input_json: str) -> list[StreamEvent]:
    return [event async for event in worker.stream_tool(name, input_json)]


async def read_into(seen: list[StreamEvent], stream: AsyncIterator[StreamEvent]) -> None:
    async for event in stream:
        seen.append(event)


async def test_chunks_and_progress_come_in_order_and_the_result_last(
    worker: Worker[Mutable],
) -> None:
    events = await events_of(worker, "countdown", '{"n": 3}')
    chunks = [event.text for event in events if isinstance(event, OutputChunk)]
    assert chunks == ["3\n", "2\n", "1\n"]
    assert events[0] == Progress(1.0, 3.0, "step 1 of 3")
    progress = [event for event in events if isinstance(event, Progress)]
    assert progress[-1] == Progress(3.0, 3.0, "step 3 of 3")  # the last one always arrives
    assert events[-1] == ToolOutput("3\n2\n1\n")
    assert all(not isinstance(event, ToolOutput) for event in events[:-1])


async def test_a_streaming_tool_called_through_the_unary_paths_gives_the_joined_text(
    worker: Worker[Mutable],
) -> None:
    assert await worker.call_tool("countdown", '{"n": 2}') == "2\n1\n"
    outcome = await worker.call_tools([ToolCall("a", "countdown", '{"n": 1}')])
    assert outcome == Completed([ToolResult("a", "1\n")])


async def test_a_sync_tool_reports_progress_from_its_thread(worker: Worker[Mutable]) -> None:
    events = await events_of(worker, "crunch", '{"steps": 4}')
    assert events[-1] == ToolOutput("crunched")
    progress = [event for event in events if isinstance(event, Progress)]
    assert progress
    assert progress[-1] == Progress(4.0, 4.0, "")


async def test_progress_is_coalesced_and_the_last_report_delivered(
    worker: Worker[Mutable],
) -> None:
    started = time.monotonic()
    events = await events_of(worker, "chatty", '{"reports": 10000}')
    elapsed = time.monotonic() - started
    progress = [event for event in events if isinstance(event, Progress)]
    assert len(progress) <= elapsed / PROGRESS_INTERVAL + 2
    assert progress[-1] == Progress(10000.0)
    assert events[-1] == ToolOutput("said")


async def test_a_reader_that_stops_reading_holds_a_bounded_queue(worker: Worker[Mutable]) -> None:
    stream = worker.stream_tool("countdown", '{"n": 5000}')
    first = await anext(stream)  # the call runs on while nobody reads
    await asyncio.sleep(0.3)
    events = [first, *[event async for event in stream]]
    assert len(events) <= MAX_WAITING_EVENTS + 3  # merged, not one event per chunk
    text = "".join(event.text for event in events if isinstance(event, OutputChunk))
    assert text == "".join(f"{5000 - step}\n" for step in range(5000))  # nothing lost
    assert events[-1] == ToolOutput(text)


async def test_closing_the_stream_cancels_the_tool(worker: Worker[Mutable], long: Long) -> None:
    stream = worker.stream_tool("forever", "{}")
    assert await anext(stream) == OutputChunk(".")
    await stream.aclose()
    await asyncio.wait_for(long.cancelled.wait(), 5)


async def test_cancelling_the_reader_cancels_the_tool(worker: Worker[Mutable], long: Long) -> None:
    async def read() -> None:
        async for _ in worker.stream_tool("forever", "{}"):
            pass

    reader = asyncio.create_task(read())
    await asyncio.wait_for(long.started.wait(), 5)
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader
    await asyncio.wait_for(long.cancelled.wait(), 5)


async def test_errors_are_raised_as_call_tool_raises_them(worker: Worker[Mutable]) -> None:
    with pytest.raises(ToolServerError.ToolNotFound):
        await events_of(worker, "nope", "{}")
    seen: list[StreamEvent] = []
    with pytest.raises(ToolServerError.ToolExecution, match="the crawl fell over"):
        await read_into(seen, worker.stream_tool("broken", "{}"))
    assert seen == [OutputChunk("partial")]  # what was sent stays sent
    with pytest.raises(ToolServerError.ToolExecution, match="n: Field required"):
        await events_of(worker, "countdown", "{}")


async def test_pre_hooks_run_first_and_post_hooks_rewrite_only_the_result(
    worker: Worker[Mutable],
) -> None:
    order: list[str] = []

    def before(context: ToolCallContext) -> Continue:
        order.append("pre-hook")
        return Continue()

    def after(context: PostToolCallContext) -> PostToolCallOutcome:
        context.result = ToolResult(context.result.call_id, "rewritten")
        return Continue()

    worker.add_pre_tool_call_hook(before)
    worker.add_post_tool_call_hook(after)
    async for event in worker.stream_tool("countdown", '{"n": 2}'):
        order.append(type(event).__name__)
    assert order[0] == "pre-hook"
    assert order[-1] == "ToolOutput"
    events = await events_of(worker, "countdown", '{"n": 2}')
    assert [e.text for e in events if isinstance(e, OutputChunk)] == ["2\n", "1\n"]
    assert events[-1] == ToolOutput("rewritten")


async def test_a_pre_hook_abort_ends_the_stream_before_any_event(worker: Worker[Mutable]) -> None:
    worker.add_pre_tool_call_hook(lambda context: Abort("not today"))
    seen: list[StreamEvent] = []
    with pytest.raises(ToolBatchAborted, match="not today"):
        await read_into(seen, worker.stream_tool("countdown", '{"n": 2}'))
    assert seen == []


async def test_a_tool_that_does_not_stream_sends_its_result_only(worker: Worker[Mutable]) -> None:
    assert await events_of(worker, "plain", '{"text": "hi"}') == [ToolOutput("hi")]


@pytest.mark.parametrize(
    ("progress", "total", "problem"),
    [(math.nan, None, "progress must be finite"), (1, math.inf, "total must be finite")],
)
async def test_progress_that_cannot_be_sent_is_refused(
    progress: float, total: float | None, problem: str
) -> None:
    context = ToolContext("c", "t")
    with pytest.raises(ValueError, match=problem):
        context.report_progress(progress, total)
    context.report_progress(1, 2, "nobody streams this call: a no-op")


def declare_a_tool_streaming_numbers() -> None:
    @tool_registry
    class Wrong:
        @tool
        async def numbers(self) -> AsyncIterator[int]:
            """Numbers."""
            yield 1

    tool_definitions(Wrong())


def test_an_async_generator_tool_must_say_it_streams_text() -> None:
    with pytest.raises(TypeError, match=r"annotate its return AsyncIterator\[str\]"):
        declare_a_tool_streaming_numbers()
