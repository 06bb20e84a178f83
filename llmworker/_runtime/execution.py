"""Executing one call: ``execute_tool`` refuses an input with a number JSON does not have,
sets the call's context, arms its timeout, streams when asked, and contains every defect a
tool can have so none reaches the event loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Final, TypeAlias, cast

from .._model.attachments import Audio, EmbeddedResource, Image, ResourceLink
from .._model.errors import ToolError, ToolServerError
from .._model.json_numbers import non_finite_literal, non_finite_value
from .._model.text import message_of, shorten
from .._model.tool import Tool, ToolOutput
from .context import CURRENT_CALL, ToolContext, stream_progress
from .deadlines import TimeoutWatchdog, watchdog
from .streaming import STREAMED_CALL, CallEvents, streamed_output

__all__ = ["crash_error", "execute_tool"]


async def execute_tool(
    tool: Tool,
    input_json: str,
    context: ToolContext,
    timeout: float | None = None,  # noqa: ASYNC109 - enforced by the watchdog, one timer for all
) -> str | ToolOutput:
    """Await ``tool.execute`` as the call ``context`` (what ``current_call()`` returns);
    anything but a result or a ``ToolError`` becomes Internal.

    An ``input_json`` holding NaN, Infinity, -Infinity or a number too large for a float
    (``1e400``) is refused as ``ToolError.InvalidArgument`` naming where, before any tool
    runs: JSON has none of them. A result holding one is the tool's ``ToolError.Internal``.

    A call still running ``timeout`` seconds after it began is cancelled and raises
    ``ToolServerError.ToolTimeout``. A ``ToolServerError`` passes through too: a proxy tool
    raises it when the server that implements the tool cannot be reached. So does a
    ``CancelledError`` when the calling task was asked to cancel. Anything else a tool
    raises, ``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``, another
    ``BaseException`` or a ``CancelledError`` nobody requested, is that tool's defect: it
    becomes ``ToolError.Internal`` naming the exception type and never reaches the event
    loop, which would stop.
    """
    refused = non_finite_literal(input_json)
    if refused is not None:
        raise ToolError.InvalidArgument(_not_json(*refused))
    # A Tool class may declare ``uses_current_call = False`` in its own body (the classes
    # ``@tool`` generates for methods without a ToolContext parameter do): then
    # ``current_call()`` is not set for it, a measurable part of a call's cost.
    uses = type(tool).__dict__.get("uses_current_call", True) is not False
    events = STREAMED_CALL.get()
    if events is not None and not events.claim():
        events = None  # a tool the streamed tool calls: its caller does not see its events
    if events is not None:
        stream_progress(context, events)
    token = CURRENT_CALL.set(context) if uses or events is not None else None
    watched = None if timeout is None else _watch(timeout)
    try:
        if events is None:
            result = await tool.execute(input_json)
        else:
            result = await _run_streamed(tool, input_json, events)
    except (ToolError, ToolServerError):
        raise
    except asyncio.CancelledError as error:
        if watched is not None and _fired(watched):
            raise ToolServerError.ToolTimeout(context.tool_name, watched[2]) from None
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
        raise crash_error(tool, error) from error
    except BaseException as error:
        raise crash_error(tool, error) from error
    finally:
        if watched is not None:
            _fired(watched)  # if the deadline passed as the tool returned, its result stands
        if token is not None:
            CURRENT_CALL.reset(token)
    if isinstance(result, str):
        return result
    return _checked_output(tool, context.tool_name, result)


async def _run_streamed(tool: Tool, input_json: str, events: CallEvents) -> str | ToolOutput:
    """A streamed call: a tool with a ``stream`` method sends its chunks as it makes them."""
    stream = getattr(tool, "stream", None)
    if stream is None:
        return await tool.execute(input_json)
    return await streamed_output(stream, input_json, events)


_Watched: TypeAlias = tuple[TimeoutWatchdog, "asyncio.Task[object]", float]


def _watch(timeout: float) -> _Watched:
    """Have the loop's watchdog cancel the running task ``timeout`` seconds from now."""
    dog = watchdog()
    task = asyncio.current_task(dog.loop)
    assert task is not None, "tools run in a task"
    dog.watch(task, time.monotonic() + timeout)
    return dog, task, timeout


def _fired(watched: _Watched) -> bool:
    """Stop watching; True, with the watchdog's cancel taken back, if the deadline fired."""
    dog, task, _ = watched
    if dog.finish(task):
        task.uncancel()
        return True
    return False


def _not_json(path: str, literal: str) -> str:
    """What is wrong with a number in the input, and what to send instead."""
    where, shown = shorten(path, 200), shorten(literal, 20)
    if literal in ("NaN", "Infinity", "-Infinity"):
        problem = f"{literal} is not JSON (JSON numbers are finite)"
    else:
        problem = f"{shown} is out of the range of a 64-bit float, which would read it as infinity"
    return f"{where}: {problem}; send a finite number there, or null or a string"


_ATTACHMENTS: Final = (Image, Audio, ResourceLink, EmbeddedResource)


def _checked_output(tool: Tool, name: str, result: object) -> ToolOutput:
    if not isinstance(result, ToolOutput):
        raise ToolError.Internal(
            f"{type(tool).__name__}.execute returned {type(result).__name__}; it must return "
            "str or ToolOutput"
        )
    if not isinstance(result.text, str) or not isinstance(  # pyright: ignore[reportUnnecessaryIsInstance]
        result.structured, Mapping | None
    ):
        raise ToolError.Internal(
            f"{type(tool).__name__}.execute returned a ToolOutput whose text is not str or "
            "whose structured value is not a JSON object"
        )
    if _strays(result.attachments):  # a tool's own code made them: checked, not trusted
        raise ToolError.Internal(
            f"the result of '{shorten(name)}' has attachments that are not Image, Audio, "
            "ResourceLink or EmbeddedResource values in a tuple; return those"
        )
    found = None if result.structured is None else non_finite_value(result.structured)
    if found is not None:
        path, number = found
        raise ToolError.Internal(
            f"the structured result of '{shorten(name)}' has {number} at {shorten(path, 200)}, "
            "which JSON cannot represent; return null, a string or a finite number there"
        )
    return result


def _strays(attachments: object) -> list[object]:
    """What ``attachments`` holds that is no attachment (itself, when it is no tuple)."""
    if not isinstance(attachments, tuple):
        return [attachments]
    items = cast("tuple[object, ...]", attachments)
    return [item for item in items if not isinstance(item, _ATTACHMENTS)]


def crash_error(tool: Tool, error: BaseException) -> ToolError:
    """The ``ToolError.Internal`` that answers ``error``, raised by ``tool`` by mistake."""
    message = message_of(error)
    detail = f": {message}" if message else ""
    return ToolError.Internal(
        f"{type(tool).__name__}.execute raised {type(error).__name__}{detail}"
    )
