"""What ``@tool_registry`` generates for one method: its arguments model, meta and Tool class."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, final

import pydantic
from pydantic import (
    BeforeValidator,
)

from .._model.tool import Tool
from .._model.tool_meta import ToolAnnotations, ToolMeta
from .._runtime.context import ToolContext
from .arguments_model import ArgumentsModel
from .schema import SchemaStyle, arguments_schema, is_structured, output_schema
from .tool_classes import streaming_wrapper_class, streams_text, wrapper_class
from .validation_schema import null_means_default

__all__ = [
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


def pascal_case(name: str) -> str:
    """``get_user`` -> ``GetUser``: each snake_case segment capitalised."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


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
        if not streams_text(returned):
            raise TypeError(
                f"{where}: an async generator tool streams text chunks: annotate its return "
                f"AsyncIterator[str] (got {returned!r})"
            )
        wrapper = streaming_wrapper_class(owner, function, arguments, pascal, context_parameter)
    else:
        wrapper = wrapper_class(
            owner, function, arguments, pascal, context_parameter, structured, name
        )
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
