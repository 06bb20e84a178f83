"""The ``Tool`` classes ``@tool`` generates around a method: validate the input, run the
method (in a thread when it is sync), and turn its result or its failure into the answer."""

from __future__ import annotations

import asyncio
import inspect
import typing
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any

import pydantic_core

from .._model.errors import ToolError
from .._model.text import message_of
from .._model.tool import Tool, ToolOutput
from .._runtime.context import current_call
from .._runtime.execution import crash_error
from .._runtime.streaming import streamed_output
from .arguments import render_result
from .arguments_model import ArgumentsModel

__all__ = ["streaming_wrapper_class", "streams_text", "wrapper_class"]


def _async_body(function: Callable[..., object]) -> Callable[..., Awaitable[object]]:
    return typing.cast("Callable[..., Awaitable[object]]", function)


class _ThreadCrash(Exception):
    """Carries a ``BaseException`` out of a sync tool's thread as an ordinary exception.

    Raised through the future of ``asyncio.to_thread``, a ``GeneratorExit`` is raised a
    second time in the awaiting task after it was caught (CPython 3.11), so it must not
    cross the thread boundary as it is.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(message_of(error))
        self.error = error


def _in_thread(function: Callable[..., object], instance: object, values: dict[str, Any]) -> object:
    try:
        return function(instance, **values)
    except Exception:
        raise
    except BaseException as error:
        raise _ThreadCrash(error) from None


def _structured_output(result: object, tool: str) -> ToolOutput:
    """A structured result of ``tool`` as its compact JSON text beside its JSON object."""
    text = render_result(result, tool)
    value = pydantic_core.to_jsonable_python(result)
    if not isinstance(value, dict):
        raise ToolError.Internal(
            f"tool '{tool}' returned {type(result).__name__}, but its return annotation "
            "promises a JSON object; return what the annotation says"
        )
    return ToolOutput(text, typing.cast("dict[str, Any]", value))


def wrapper_class(
    owner: type,
    function: Callable[..., object],
    arguments: ArgumentsModel,
    pascal: str,
    context_parameter: str | None,
    structured: bool,
    name: str,
) -> type[Tool]:
    """The Tool class running ``function`` (the tool ``name``) on one ``owner`` instance."""
    run = _async_body(function) if inspect.iscoroutinefunction(function) else None

    class Wrapper:
        __slots__ = ("instance",)
        uses_current_call = context_parameter is not None

        def __init__(self, instance: object) -> None:
            self.instance = instance

        async def execute(self, input_json: str) -> str | ToolOutput:
            values = arguments.validate(input_json)
            if context_parameter is not None:
                values[context_parameter] = current_call()
            try:
                if run is not None:
                    result = await run(self.instance, **values)
                else:
                    result = await asyncio.to_thread(_in_thread, function, self.instance, values)
            except ToolError:
                raise
            except _ThreadCrash as crash:
                raise crash_error(self, crash.error) from crash.error
            except Exception as error:
                raise ToolError.ExecutionFailed(message_of(error)) from error
            if isinstance(result, ToolOutput):  # attachments, or a value, beside the text
                return result
            if structured:
                return _structured_output(result, name)
            return result if isinstance(result, str) else render_result(result, name)

    Wrapper.__name__ = f"Tool{pascal}"
    Wrapper.__qualname__ = f"{owner.__qualname__}.Tool{pascal}"
    Wrapper.__module__ = owner.__module__
    Wrapper.__doc__ = f"The Tool running {owner.__qualname__}.{function.__name__} on one instance."
    return Wrapper


def streams_text(returned: object) -> bool:
    """Whether a return annotation is an async iterator (or generator) of ``str``."""
    origin = typing.get_origin(returned)
    streams = origin in (AsyncIterator, AsyncIterable, AsyncGenerator)
    return streams and typing.get_args(returned)[:1] == (str,)


def streaming_wrapper_class(
    owner: type,
    function: Callable[..., object],
    arguments: ArgumentsModel,
    pascal: str,
    context_parameter: str | None,
) -> type[Tool]:
    """The Tool of an async generator method: ``stream`` yields its chunks, ``execute``
    (for unary calls) returns them joined."""
    chunks_of = typing.cast("Callable[..., AsyncIterator[object]]", function)

    class StreamingWrapper:
        __slots__ = ("instance",)
        uses_current_call = context_parameter is not None

        def __init__(self, instance: object) -> None:
            self.instance = instance

        async def execute(self, input_json: str) -> str | ToolOutput:
            return await streamed_output(self.stream, input_json, None)

        async def stream(self, input_json: str) -> AsyncIterator[str]:
            values = arguments.validate(input_json)
            if context_parameter is not None:
                values[context_parameter] = current_call()
            try:
                async for chunk in chunks_of(self.instance, **values):
                    if not isinstance(chunk, str):
                        raise ToolError.Internal(
                            f"the tool streamed {type(chunk).__name__}, not str; yield text"
                        )
                    yield chunk
            except ToolError:
                raise
            except Exception as error:
                raise ToolError.ExecutionFailed(message_of(error)) from error

    StreamingWrapper.__name__ = f"Tool{pascal}"
    StreamingWrapper.__qualname__ = f"{owner.__qualname__}.Tool{pascal}"
    StreamingWrapper.__module__ = owner.__module__
    StreamingWrapper.__doc__ = (
        f"The streaming Tool running {owner.__qualname__}.{function.__name__} on one instance."
    )
    return StreamingWrapper
