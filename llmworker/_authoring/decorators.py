"""``@tool_registry`` / ``@tool`` / ``description``: tools from plain methods.

>>> @tool_registry
... class MyApp:
...     @tool
...     async def search(self, query: Annotated[str, description("search query")]) -> str:
...         '''Run a search.'''
...         return f"Results for: {query}"
>>> app = MyApp()
>>> worker.register_tool(app.search_definition())   # mypy, with the llmworker.mypy plugin
>>> worker.register_tool(app.search.definition())   # every type checker

For each ``@tool`` method ``get_user`` the class gains ``GetUserArgs`` (the pydantic model of
its parameters), ``ToolGetUser`` (the Tool wrapping an instance) and ``get_user_definition()``.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from types import FrameType
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, final, overload

import pydantic
from pydantic.fields import FieldInfo
from typing_extensions import deprecated

from .._model.tool import ToolFactory
from .._model.tool_meta import ToolAnnotations, ToolMeta
from .generated_tool import GeneratedTool, ToolOptions, generate_tool, pascal_case
from .schema import SchemaStyle

__all__ = [
    "BoundToolMethod",
    "ToolMethod",
    "definition_of",
    "description",
    "tool",
    "tool_definitions",
    "tool_registry",
]

OwnerT = TypeVar("OwnerT")
ClassT = TypeVar("ClassT", bound=type)
P = ParamSpec("P")
R = TypeVar("R")


def description(text: str) -> FieldInfo:
    """Describe a tool parameter: ``query: Annotated[str, description("what to search")]``."""
    field: FieldInfo = pydantic.Field(description=text)
    return field


@final
class ToolMethod(Generic[OwnerT, P, R]):
    """A ``@tool`` method: still a method, plus what ``@tool_registry`` generates from it."""

    def __init__(self, function: Callable[Concatenate[OwnerT, P], R], options: ToolOptions) -> None:
        _check_signature(function)
        self.function = function
        self.options = options
        self.name: str = function.__name__
        """The method's name, which names what ``@tool_registry`` generates."""
        self.tool_name: str = options.name or function.__name__
        """The tool's name, as the model sees it."""
        self.__doc__ = function.__doc__
        self.__wrapped__ = function
        self._built: GeneratedTool | None = None
        self._owner: type | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        self._owner = owner

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> ToolMethod[OwnerT, P, R]: ...
    @overload
    def __get__(self, instance: OwnerT, owner: type | None = None) -> BoundToolMethod[P, R]: ...
    def __get__(
        self, instance: OwnerT | None, owner: type | None = None
    ) -> ToolMethod[OwnerT, P, R] | BoundToolMethod[P, R]:
        if instance is None:
            return self
        if self._built is None:
            raise self._not_built()
        return BoundToolMethod(self, instance)

    def __call__(self, instance: OwnerT, /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the method unbound, as ``MyApp.search(app, "query")``."""
        return self.function(instance, *args, **kwargs)

    def definition_for(self, instance: OwnerT) -> ToolFactory:
        """The ToolDefinition of this tool bound to ``instance``."""
        built = self._built
        if built is None:
            raise self._not_built()
        return ToolFactory(built.meta, lambda: built.wrapper(instance))

    def generate(
        self, owner: type, default_style: SchemaStyle, local_names: dict[str, object]
    ) -> GeneratedTool:
        """Build the args model, schema, meta and wrapper class for ``owner``.

        ``local_names`` resolves annotations naming classes local to the defining function.
        """
        style = self.options.schema_style or default_style
        self._built = generate_tool(owner, self.function, style, local_names, self.options)
        return self._built

    def _not_built(self) -> TypeError:
        owner = self._owner.__qualname__ if self._owner else "its class"
        return TypeError(
            f"@tool method '{self.name}' is in {owner}, which is not decorated with "
            f"@tool_registry; add @tool_registry above 'class {owner.rsplit('.', 1)[-1]}'"
        )

    def __repr__(self) -> str:
        return f"<tool method {self.function.__qualname__}>"


@final
class BoundToolMethod(Generic[P, R]):
    """A ``@tool`` method bound to an instance: call it, or take its ``definition()``."""

    __slots__ = ("__self__", "_method")

    def __init__(self, method: ToolMethod[Any, P, R], instance: object) -> None:
        self._method = method
        self.__self__: object = instance

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._method.function(self.__self__, *args, **kwargs)

    def definition(self) -> ToolFactory:
        """The ToolDefinition of this tool bound to this instance."""
        return self._method.definition_for(self.__self__)

    @property
    def __name__(self) -> str:
        return self._method.name

    @property
    def __func__(self) -> Callable[..., R]:
        return self._method.function

    def __repr__(self) -> str:
        return f"<bound tool method {self._method.function.__qualname__} of {self.__self__!r}>"


# The tools are bound to an instance, so a class is always a mistake: pyright strict reports
# this overload as deprecated, the llmworker.mypy plugin as an error.
@overload
@deprecated(
    "tool_definitions takes an instance, not the class: tool_definitions(MyApp()); "
    "an instance typed Any matches this too, so give it a type"
)
def tool_definitions(app: type[object]) -> list[ToolFactory]: ...
@overload
def tool_definitions(app: object) -> list[ToolFactory]: ...
def tool_definitions(app: object) -> list[ToolFactory]:
    """The ToolDefinitions of every ``@tool`` method of ``app`` (inherited ones too), by name.

    ``TypeError`` when ``app`` is a class (pass an instance) or its class has no ``@tool``
    methods.
    """
    if isinstance(app, type):
        raise TypeError(
            f"tool_definitions takes an instance, not the class {app.__qualname__}; "
            f"pass {app.__name__}()"
        )
    methods: dict[str, ToolMethod[Any, ..., Any]] = {}
    for klass in reversed(type(app).__mro__):
        for value in vars(klass).values():
            if isinstance(value, ToolMethod):
                method = typing.cast("ToolMethod[Any, ..., Any]", value)
                methods[method.name] = method
    if not methods:
        raise TypeError(
            f"{type(app).__qualname__} has no @tool methods; decorate methods with @tool and "
            "the class with @tool_registry"
        )
    ordered = sorted(methods.values(), key=lambda method: method.tool_name)
    return [method.definition_for(app) for method in ordered]


def definition_of(method: BoundToolMethod[P, R]) -> ToolFactory:
    """The ToolDefinition of a bound ``@tool`` method: ``definition_of(app.search)``."""
    return method.definition()


@overload
def tool(function: Callable[Concatenate[OwnerT, P], R], /) -> ToolMethod[OwnerT, P, R]: ...
@overload
def tool(
    *,
    name: str | None = None,
    title: str = "",
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
    requires_approval: bool = False,
    schema_style: SchemaStyle | None = None,
) -> Callable[[Callable[Concatenate[OwnerT, P], R]], ToolMethod[OwnerT, P, R]]: ...
def tool(
    function: Callable[Concatenate[OwnerT, P], R] | None = None,
    /,
    *,
    name: str | None = None,
    title: str = "",
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
    requires_approval: bool = False,
    schema_style: SchemaStyle | None = None,
) -> (
    ToolMethod[OwnerT, P, R]
    | Callable[[Callable[Concatenate[OwnerT, P], R]], ToolMethod[OwnerT, P, R]]
):
    """Mark a method of a ``@tool_registry`` class as a tool.

    The method's name is the tool's name (unless ``name`` gives another), its docstring the
    description, its annotated parameters the input schema (a parameter annotated
    ``ToolContext`` receives the call's context instead), and a structured return
    annotation (model, dataclass, TypedDict, ``dict[str, ...]``) the output schema.
    ``title``, the four hints (None: unknown) and ``requires_approval`` go into its
    ``ToolMeta``; ``schema_style`` overrides the registry's.

    >>> @tool(name="get-weather", title="Get weather", read_only=True, open_world=True)
    ... async def weather(self, city: str) -> Forecast: ...  # doctest: +SKIP
    """
    if name is not None:
        ToolMeta(name)  # a bad name fails here, where it was written
    options = ToolOptions(
        name,
        title,
        ToolAnnotations(read_only, destructive, idempotent, open_world),
        requires_approval,
        schema_style,
    )

    def decorate(target: Callable[Concatenate[OwnerT, P], R]) -> ToolMethod[OwnerT, P, R]:
        _check_not_yet_a_tool(target, _caller_frame(2 if function is None else 3))
        return ToolMethod(target, options)

    return decorate if function is None else decorate(function)


def _caller_frame(depth: int) -> FrameType | None:
    frame = inspect.currentframe()
    for _ in range(depth):
        frame = frame.f_back if frame else None
    return frame


def _check_not_yet_a_tool(function: Callable[..., object], class_body: FrameType | None) -> None:
    """Refuse a second ``@tool`` of the same name in the class body being executed."""
    earlier = class_body.f_locals.get(function.__name__) if class_body else None
    if isinstance(earlier, ToolMethod):
        raise TypeError(
            f"@tool {function.__qualname__}: this class already has a tool named "
            f"'{function.__name__}'; tool names must be unique, so rename one of them"
        )


@overload
def tool_registry(cls: ClassT, /) -> ClassT: ...
@overload
def tool_registry(*, schema_style: SchemaStyle = ...) -> Callable[[ClassT], ClassT]: ...
def tool_registry(
    cls: ClassT | None = None, /, *, schema_style: SchemaStyle = SchemaStyle.DEFAULT
) -> ClassT | Callable[[ClassT], ClassT]:
    """Generate the args model, Tool wrapper and ``*_definition()`` of each ``@tool`` method.

    ``schema_style`` picks how nested models appear in the schemas (see ``SchemaStyle``).
    """

    def decorate(target: ClassT) -> ClassT:
        scope = _caller_frame(2 if cls is None else 3)
        local_names = dict(scope.f_locals) if scope else {}
        _build_registry(target, schema_style, {**local_names, target.__name__: target})
        return target

    return decorate if cls is None else decorate(cls)


def _build_registry(cls: type, default_style: SchemaStyle, local_names: dict[str, object]) -> None:
    methods: list[ToolMethod[Any, ..., Any]] = [
        value for value in vars(cls).values() if isinstance(value, ToolMethod)
    ]
    for method in methods:
        _check_names_are_free(cls, method.name)
        built = method.generate(cls, default_style, local_names)
        pascal = pascal_case(method.name)
        setattr(cls, f"{pascal}Args", built.arguments)
        setattr(cls, f"Tool{pascal}", built.wrapper)
        setattr(cls, f"{method.name}_definition", _definition_method(method))


def _check_names_are_free(cls: type, name: str) -> None:
    pascal = pascal_case(name)
    for generated in (f"{pascal}Args", f"Tool{pascal}", f"{name}_definition"):
        if generated in vars(cls):
            raise TypeError(
                f"@tool_registry {cls.__qualname__}: '{generated}' is already defined, but "
                f"the tool '{name}' generates it; rename one of them"
            )


def _definition_method(method: ToolMethod[Any, ..., Any]) -> Callable[[object], ToolFactory]:
    def definition(self: object) -> ToolFactory:
        return method.definition_for(self)

    definition.__name__ = f"{method.name}_definition"
    definition.__doc__ = f"The ToolDefinition of the tool '{method.name}' bound to this instance."
    return definition


def _check_signature(function: Callable[..., object]) -> None:
    name = getattr(function, "__qualname__", repr(function))
    if isinstance(function, staticmethod | classmethod):
        raise TypeError(f"@tool {name}: put @tool on a plain method, not a static or class method")
    if not inspect.isfunction(function):
        raise TypeError(f"@tool {name}: expected a function defined in a class body")
    if "." not in function.__qualname__ or function.__qualname__.endswith(
        f"<locals>.{function.__name__}"
    ):
        raise TypeError(
            f"@tool {name}: @tool marks methods of a @tool_registry class; "
            "define it inside a class decorated with @tool_registry"
        )
    parameters = list(inspect.signature(function).parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not parameters or parameters[0].kind not in positional:
        raise TypeError(f"@tool {name}: a tool method takes self as its first parameter")
    for parameter in parameters[1:]:
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(
                f"@tool {name}: *{parameter.name} / **{parameter.name} cannot be described to "
                "a model; declare each argument as a named, annotated parameter"
            )
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(
                f"@tool {name}: parameter '{parameter.name}' is positional-only; tools are "
                "called with named arguments, so remove the '/'"
            )
        if parameter.annotation is inspect.Parameter.empty:
            raise TypeError(
                f"@tool {name}: parameter '{parameter.name}' has no type annotation; annotate "
                "it (e.g. '{parameter.name}: str') so its JSON Schema can be generated"
            )
