"""One call run as a stream of events: ``Worker.stream_tool``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping

from .._model.tool import ToolOutput
from .batch import HookChains, run_one_call
from .streaming import STREAMED_CALL, CallEvents, StreamEvent
from .tool_server import ToolServerHandle

__all__ = ["stream_one_call"]


async def stream_one_call(
    handle: ToolServerHandle,
    hooks: HookChains,
    call_id: str,
    name: str,
    input_json: str,
    metadata: Mapping[str, str],
    deadline: float | None,
    timeout: float | None,  # noqa: ASYNC109 - enforced by the watchdog, one timer for all
) -> AsyncGenerator[StreamEvent]:
    """Run the call as ``run_one_call`` does (pre-hooks before the first event), yielding
    its progress and chunks, then its result as a ``ToolOutput``; its error is raised as
    ``run_one_call`` raises it. Closing the iterator early cancels the call."""
    events = CallEvents()
    token = STREAMED_CALL.set(events)
    try:  # the task copies the context: its call streams into ``events``
        task = asyncio.create_task(
            run_one_call(handle, hooks, call_id, name, input_json, metadata, deadline, timeout)
        )
    finally:
        STREAMED_CALL.reset(token)
    task.add_done_callback(lambda _: events.finish())
    try:
        while (event := await events.next()) is not None:
            yield event
        output = await task
    finally:
        if not task.done():
            task.cancel()
            task.add_done_callback(_retrieved)
    yield output if isinstance(output, ToolOutput) else ToolOutput(output)


def _retrieved(task: asyncio.Task[object]) -> None:
    """Collect the outcome of a call whose reader left, so it is not reported unretrieved."""
    if not task.cancelled():
        task.exception()
