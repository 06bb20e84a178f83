"""A mypy plugin that teaches mypy what ``@tool_registry`` generates.

Enable it in your mypy configuration::

    [tool.mypy]
    plugins = ["llmworker.mypy"]

For each ``@tool`` method ``get_user`` of a ``@tool_registry`` class, mypy then knows
``get_user_definition(self) -> ToolFactory`` and the class attributes ``GetUserArgs``
(``type[pydantic.BaseModel]``) and ``ToolGetUser`` (``type[Tool]``); a misspelt name stays an
error, and so does ``tool_definitions(MyApp)`` (the class, not an instance). Pyright has no
plugins: there, use ``app.get_user.definition()``, typed everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from mypy.errorcodes import ARG_TYPE
from mypy.nodes import CallExpr, Decorator, Expression, RefExpr
from mypy.plugin import ClassDefContext, FunctionContext, Plugin
from mypy.plugins.common import add_attribute_to_class, add_method_to_class
from mypy.types import FunctionLike, Instance, ProperType, Type, TypeType, get_proper_type

__all__ = ["plugin"]

_REGISTRY: Final = "llmworker._authoring.decorators.tool_registry"
_TOOL: Final = "llmworker._authoring.decorators.tool"
_TOOL_DEFINITIONS: Final = "llmworker._authoring.decorators.tool_definitions"
_TOOL_FACTORY: Final = "llmworker._model.tool.ToolFactory"
_TOOL_PROTOCOL: Final = "llmworker._model.tool.Tool"
_BASE_MODEL: Final = "pydantic.main.BaseModel"


def _refers_to(expression: Expression, fullname: str) -> bool:
    if isinstance(expression, CallExpr):
        expression = expression.callee
    return isinstance(expression, RefExpr) and expression.fullname == fullname


def _pascal_case(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _add_generated_members(ctx: ClassDefContext) -> bool:
    """Add ``<tool>_definition``, ``<Tool>Args`` and ``Tool<Tool>`` for each @tool method."""
    factory = ctx.api.named_type_or_none(_TOOL_FACTORY)
    tool_protocol = ctx.api.named_type_or_none(_TOOL_PROTOCOL)
    base_model = ctx.api.named_type_or_none(_BASE_MODEL)
    if factory is None or tool_protocol is None or base_model is None:
        return False  # not analysed yet: ask mypy to call again
    for statement in ctx.cls.defs.body:
        if not isinstance(statement, Decorator):
            continue
        if not any(_refers_to(decorator, _TOOL) for decorator in statement.original_decorators):
            continue
        name = statement.func.name
        pascal = _pascal_case(name)
        add_method_to_class(ctx.api, ctx.cls, f"{name}_definition", [], factory)
        add_attribute_to_class(
            ctx.api, ctx.cls, f"{pascal}Args", TypeType(base_model), is_classvar=True
        )
        add_attribute_to_class(
            ctx.api, ctx.cls, f"Tool{pascal}", TypeType(tool_protocol), is_classvar=True
        )
    return True


def _refuse_a_class(ctx: FunctionContext) -> Type:
    """Report ``tool_definitions(MyApp)``: the tools are bound to an instance."""
    for argument in (argument for arguments in ctx.arg_types for argument in arguments):
        name = _class_name(get_proper_type(argument))
        if name is not None:
            fix = f"pass {name}()" if name else "pass an instance"
            ctx.api.fail(
                f"tool_definitions takes an instance, not a class; {fix}",
                ctx.context,
                code=ARG_TYPE,
            )
    return ctx.default_return_type


def _class_name(argument: ProperType) -> str | None:
    """The class's name when ``argument`` is a class object ("" when it is not known), else
    None."""
    if isinstance(argument, FunctionLike) and argument.is_type_obj():
        return argument.type_object().name
    if isinstance(argument, TypeType):
        item = get_proper_type(argument.item)
        return item.type.name if isinstance(item, Instance) else ""
    if isinstance(argument, Instance) and argument.type.fullname == "builtins.type":
        return ""
    return None


# Private (underscored) so that pyright --verifytypes leaves it out of the public API: without
# mypy installed its base class is unknown. `__all__` would not do: it hides imports only.
class _LlmworkerPlugin(Plugin):
    """Hooks ``@tool_registry`` classes and ``tool_definitions`` calls."""

    def get_class_decorator_hook_2(self, fullname: str) -> Callable[[ClassDefContext], bool] | None:
        return _add_generated_members if fullname == _REGISTRY else None

    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        return _refuse_a_class if fullname == _TOOL_DEFINITIONS else None


def plugin(version: str) -> type[Plugin]:
    """The entry point mypy calls."""
    return _LlmworkerPlugin
