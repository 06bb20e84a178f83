"""What ``@tool_registry`` generates for one method: its arguments model, meta and Tool class."""

from __future__ import annotations

import asyncio
import inspect
import typing
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, Final, Literal, final

import pydantic
import pydantic_core
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    with_config,
)
from pydantic_core import SchemaValidator
from typing_extensions import TypedDict

from .._model.errors import ToolError
from .._model.text import message_of
from .._model.tool import Tool, ToolOutput
from .._model.tool_meta import ToolAnnotations, ToolMeta
from .._runtime.context import ToolContext, current_call
from .._runtime.execution import crash_error
from .._runtime.streaming import streamed_output
from .arguments import KeywordsValidator, describe, render_result, unknown_fields
from .schema import SchemaStyle, arguments_schema, is_structured, output_schema
from .validation_schema import null_means_default, validation_schema

__all__ = [
    "ArgumentsModel",
    "GeneratedTool",
    "ToolOptions",
    "generate_tool",
    "pascal_case",
]


@final
class ToolOptions:
    """What ``@tool(...)`` says beside the method: the tool's name, title, annotations,
    whether it requires approval, and the schema style."""

    __slots__ = ("annotations", "name", "requires_approval", "schema_style", "title")

    def __init__(
        self,
        name: str | None = None,
        title: str = "",
        annotations: ToolAnnotations | None = None,
        requires_approval: bool = False,
        schema_style: SchemaStyle | None = None,
    ) -> None:
        self.name: str | None = name
        self.title: str = title
        self.annotations: ToolAnnotations = annotations or ToolAnnotations()
        self.requires_approval: bool = requires_approval
        self.schema_style: SchemaStyle | None = schema_style


_RECHECKED_INPUT_CHARS: Final = 16 * 1024
"""Invalid inputs up to this size are described with their unknown fields too."""


def pascal_case(name: str) -> str:
    """``get_user`` -> ``GetUser``: each snake_case segment capitalised."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


@final
class ArgumentsModel:
    """The pydantic model of a tool's parameters, built when first needed.

    A model costs about 0.5 ms and 20 KB (class, core schema, validator, serializer). A server
    with thousands of tools calls few of them, so once its JSON Schema is taken the model is
    dropped and rebuilt on first use. As a class attribute (``MyApp.GetUserArgs``) it reads as
    the model class itself. Calls validate with ``validate``: the same fields and rules, but
    as a dict of keyword arguments, without a model instance per call.
    """

    __slots__ = (
        "_fields",
        "_model",
        "_module",
        "_name",
        "_qualname",
        "_strict_validator",
        "_validator",
        "_where",
    )

    def __init__(
        self, name: str, qualname: str, module: str, fields: dict[str, Any], where: str
    ) -> None:
        self._name, self._qualname, self._module = name, qualname, module
        self._fields = fields
        self._where = where
        self._model: type[BaseModel] | None = None
        self._validator: KeywordsValidator | None = None
        self._strict_validator: KeywordsValidator | None = None

    def get(self) -> type[BaseModel]:
        """The model class, built on first use."""
        if self._model is None:
            self._model = self._build()
        return self._model

    def release(self) -> None:
        """Drop the model; ``get`` builds it again."""
        self._model = None

    def validate(self, input_json: str) -> dict[str, Any]:
        """The method's keyword arguments from ``input_json``; missing optional ones get their
        defaults. ``ToolError.InvalidArgument`` says, in one line, what is wrong where."""
        try:
            values = (self._validator or self._build_validator())(input_json)
        except ValidationError as error:
            raise ToolError.InvalidArgument(self._describe(input_json, error)) from None
        if len(values) > len(self._fields):  # extras are allowed in, then refused here
            unknown = [name for name in values if name not in self._fields]
            raise ToolError.InvalidArgument(unknown_fields(unknown))
        return values

    def __get__(self, instance: object, owner: type | None = None) -> type[BaseModel]:
        return self.get()

    def _build(self) -> type[BaseModel]:
        try:
            model: type[BaseModel] = pydantic.create_model(
                self._name,
                __config__=ConfigDict(extra="forbid"),
                __module__=self._module,
                **self._fields,
            )
        except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as error:
            raise TypeError(
                f"{self._where}: a parameter type has no JSON Schema: {error}"
            ) from error
        model.__qualname__ = self._qualname
        return model

    def _describe(self, input_json: str, error: ValidationError) -> str:
        """The problems of an invalid input. A small input is validated again refusing
        unknown fields, so that one message names them beside the other problems."""
        if len(input_json) > _RECHECKED_INPUT_CHARS:
            return describe(error)
        if self._strict_validator is None:
            self._strict_validator = self._keywords_validator(extra="forbid")
        try:
            self._strict_validator(input_json)
        except ValidationError as strict_error:
            return describe(strict_error)
        return describe(error)

    def _build_validator(self) -> KeywordsValidator:
        # Unknown fields are let in and refused by ``validate``: pydantic would make one error
        # per unknown field, and a request can hold hundreds of thousands of them.
        validator = self._validator = self._keywords_validator(extra="allow")
        return validator

    def _keywords_validator(self, *, extra: Literal["allow", "forbid"]) -> KeywordsValidator:
        keywords: dict[str, Any] = {
            name: annotation if default is ... else Annotated[annotation, Field(default=default)]
            for name, (annotation, default) in self._fields.items()
        }
        shape = with_config(extra=extra)(TypedDict(self._name, keywords))  # type: ignore[operator]
        schema = validation_schema(TypeAdapter[Any](shape).core_schema)
        validator: KeywordsValidator = SchemaValidator(schema).validate_json
        return validator


@final
class GeneratedTool:
    """One method's meta, arguments model and Tool class."""

    __slots__ = ("arguments", "meta", "wrapper")

    def __init__(
        self, meta: ToolMeta, arguments: ArgumentsModel, wrapper: Callable[[object], Tool]
    ) -> None:
        self.meta: ToolMeta = meta
        self.arguments: ArgumentsModel = arguments
        self.wrapper: Callable[[object], Tool] = wrapper


def generate_tool(
    owner: type,
    function: Callable[..., object],
    style: SchemaStyle,
    local_names: dict[str, object],
    options: ToolOptions,
) -> GeneratedTool:
    """Generate the tool of ``function``, a method of ``owner``.

    ``local_names`` resolves annotations naming classes local to the defining function.
    """
    name = options.name or function.__name__
    where = f"@tool {owner.__qualname__}.{function.__name__}"
    pascal = pascal_case(function.__name__)
    hints = _hints(function, local_names, where)
    fields, context_parameter = _fields(function, hints)
    arguments = ArgumentsModel(
        f"{pascal}Args", f"{owner.__qualname__}.{pascal}Args", owner.__module__, fields, where
    )
    schema = arguments_schema(arguments.get(), style, name)
    arguments.release()
    returned = hints.get("return")
    structured = is_structured(returned)
    doc = inspect.cleandoc(function.__doc__ or "") or f"Tool: {name}"
    meta = ToolMeta(
        name,
        doc,
        schema,
        title=options.title,
        output_schema=_output_schema(returned, style, name, where) if structured else None,
        annotations=options.annotations,
        requires_approval=options.requires_approval,
    )
    if inspect.isasyncgenfunction(function):
        if not _streams_text(returned):
            raise TypeError(
                f"{where}: an async generator tool streams text chunks: annotate its return "
                f"AsyncIterator[str] (got {returned!r})"
            )
        wrapper = _streaming_wrapper_class(owner, function, arguments, pascal, context_parameter)
    else:
        wrapper = _wrapper_class(owner, function, arguments, pascal, context_parameter, structured)
    return GeneratedTool(meta, arguments, wrapper)


def _output_schema(
    returned: object, style: SchemaStyle, name: str, where: str
) -> dict[str, object]:
    """The output schema of a structured return annotation (never OpenAI-strict: that
    style is about inputs)."""
    output_style = SchemaStyle.INLINE if style is SchemaStyle.OPENAI_STRICT else style
    try:
        return output_schema(returned, output_style, name)
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as error:
        raise TypeError(f"{where}: its return type has no JSON Schema: {error}") from error


def _hints(
    function: Callable[..., object], local_names: dict[str, object], where: str
) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function, localns=local_names, include_extras=True)
    except Exception as error:
        raise TypeError(f"{where}: cannot resolve its annotations: {error}") from error


def _is_context(annotation: object) -> bool:
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation is ToolContext


def _fields(
    function: Callable[..., object], hints: dict[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """The model fields of the method's parameters, and the name of the one annotated
    ``ToolContext`` (not a field: the call's context is passed there)."""
    fields: dict[str, Any] = {}
    context_parameter: str | None = None
    for parameter in list(inspect.signature(function).parameters.values())[1:]:
        annotation = hints[parameter.name]
        if _is_context(annotation):
            context_parameter = parameter.name
            continue
        if parameter.default is inspect.Parameter.empty:
            fields[parameter.name] = (annotation, ...)
        else:
            fields[parameter.name] = (
                typing.Annotated[annotation, BeforeValidator(null_means_default)],
                parameter.default,
            )
    return fields, context_parameter


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


def _structured_output(result: object) -> ToolOutput:
    """A structured result as its compact JSON text beside its JSON object."""
    text = render_result(result)
    value = pydantic_core.to_jsonable_python(result)
    if not isinstance(value, dict):
        raise ToolError.Internal(
            f"the tool returned {type(result).__name__}, but its return annotation promises "
            "a JSON object; return what the annotation says"
        )
    return ToolOutput(text, typing.cast("dict[str, Any]", value))


def _wrapper_class(
    owner: type,
    function: Callable[..., object],
    arguments: ArgumentsModel,
    pascal: str,
    context_parameter: str | None,
    structured: bool,
) -> type[Tool]:
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
            if structured:
                return _structured_output(result)
            return result if isinstance(result, str) else render_result(result)

    Wrapper.__name__ = f"Tool{pascal}"
    Wrapper.__qualname__ = f"{owner.__qualname__}.Tool{pascal}"
    Wrapper.__module__ = owner.__module__
    Wrapper.__doc__ = f"The Tool running {owner.__qualname__}.{function.__name__} on one instance."
    return Wrapper


def _streams_text(returned: object) -> bool:
    """Whether a return annotation is an async iterator (or generator) of ``str``."""
    origin = typing.get_origin(returned)
    streams = origin in (AsyncIterator, AsyncIterable, AsyncGenerator)
    return streams and typing.get_args(returned)[:1] == (str,)


def _streaming_wrapper_class(
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
