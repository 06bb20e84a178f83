"""A mypy plugin that teaches mypy what ``@tool_registry`` generates.

Enable it in your mypy configuration::

    [tool.mypy]
    plugins = ["llmworker.mypy"]

For each ``@tool`` method ``get_user`` of a ``@tool_registry`` class, mypy then knows
``get_user_definition(self) -> ToolFactory`` and the class attributes ``GetUserArgs``
(``type[pydantic.BaseModel]``) and ``ToolGetUser`` (``type[Tool]``); a misspelt name stays an
error. Pyright has no plugins: there, use ``app.get_user.definition()``, typed everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from mypy.nodes import CallExpr, Decorator, Expression, RefExpr
from mypy.plugin import ClassDefContext, Plugin
from mypy.plugins.common import add_attribute_to_class, add_method_to_class
from mypy.types import TypeType

__all__ = ["plugin"]

_REGISTRY: Final = "llmworker._authoring.decorators.tool_registry"
_TOOL: Final = "llmworker._authoring.decorators.tool"
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


class LlmworkerPlugin(Plugin):
    """Hooks ``@tool_registry`` classes."""

    def get_class_decorator_hook_2(self, fullname: str) -> Callable[[ClassDefContext], bool] | None:
        return _add_generated_members if fullname == _REGISTRY else None


def plugin(version: str) -> type[Plugin]:
    """The entry point mypy calls."""
    return LlmworkerPlugin
