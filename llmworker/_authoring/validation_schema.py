"""The core schema a tool's arguments are validated with: pydantic's, rewritten so that
validation follows the JSON Schema the model saw and its cost stays bounded, at every depth.

Three rewrites, applied to the whole schema, nested models included:

- every list, tuple, set and dict stops at its first invalid item, so the errors of one input
  are bounded by the schema's shape, not the input's size;
- ``null`` for a field that has a default selects the default, and ``null`` for a TypedDict
  key that is not required leaves it out, as strict-mode schemas (where every optional field is
  required and nullable) tell the model;
- a float refuses what it would read as NaN or infinity (an integer too large, the string
  ``"inf"``) unless its own schema allows them: JSON has neither.

pydantic-core validates a nested model or pydantic dataclass with the validator prebuilt on
its class, ignoring the schema it is given; so a nested model whose schema the rewrites change
is validated as a shadow subclass (which has no prebuilt validator, and shares the model's
layout and config) and given back its own class at once. A model with a custom ``__init__``
validates itself and keeps its own rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, cast

import pydantic_core
from pydantic_core import CoreSchema

__all__ = ["null_means_default", "validation_schema"]

_Node = dict[str, object]
_SEQUENCES: Final = frozenset({"list", "tuple", "set", "frozenset", "dict"})


def null_means_default(value: object) -> object:
    """A before-validator: ``null`` selects the field's default."""
    if value is None:
        raise pydantic_core.PydanticUseDefault()
    return value


def _null_means_absent(value: object) -> object:
    """A before-validator: ``null`` leaves the TypedDict key out."""
    if value is None:
        raise pydantic_core.PydanticOmit()
    return value


def validation_schema(schema: CoreSchema) -> CoreSchema:
    """A copy of ``schema`` with both rewrites applied (see the module's docstring)."""
    rewrite = _Rewrite()
    rewritten = rewrite.node(schema)
    rewrite.label_unions(rewritten)
    return cast("CoreSchema", rewritten)


class _Rewrite:
    """One rewrite of a schema; each model class gets one shadow."""

    def __init__(self) -> None:
        self._shadows: dict[type, type] = {}
        self._shadowed_refs: dict[str, str] = {}  # ref of a shadowed model -> its class name

    def node(self, node: object) -> object:
        if isinstance(node, list | tuple):  # a union's choices may be (schema, label) tuples
            items = [self.node(item) for item in cast("list[object]", node)]
            return items if isinstance(node, list) else tuple(items)
        if not isinstance(node, dict):
            return node
        original = cast("_Node", node)
        copied = {key: self.node(value) for key, value in original.items()}
        kind = copied.get("type")
        if kind in _SEQUENCES:
            copied["fail_fast"] = True
        elif kind == "default" and not _null_is_the_default(copied):
            copied["schema"] = _before(null_means_default, cast("_Node", copied["schema"]))
        elif kind == "typed-dict":
            _omit_null_keys(copied)
        elif kind == "float" and "allow_inf_nan" not in copied:
            copied["allow_inf_nan"] = False
        elif kind == "dataclass" and copied != original:
            copied.setdefault("generic_origin", copied["cls"])  # pydantic-core: no prebuilt
        elif kind == "model" and copied != original and not copied.get("custom_init"):
            return self._shadowed(copied)
        return copied

    def _shadowed(self, model: _Node) -> _Node:
        """``model`` validated as its class's shadow, then given its own class back."""
        cls = cast("type", model["cls"])
        shadow = self._shadows.get(cls)
        if shadow is None:
            shadow = self._shadows[cls] = _shadow_of(cls)
        inner = {key: value for key, value in model.items() if key != "ref"}
        inner["cls"] = shadow
        wrapper: _Node = {
            "type": "function-after",
            "function": {"type": "no-info", "function": _ClassRestorer(cls)},
            "schema": inner,
        }
        if "ref" in model:
            wrapper["ref"] = model["ref"]  # references to the model now reach the wrapper
            self._shadowed_refs[cast("str", model["ref"])] = cls.__name__
        return wrapper

    def label_unions(self, node: object) -> None:
        """Label each union choice that is a shadowed model with the model's name, the label
        it had: pydantic-core would call it by its wrapper in error paths."""
        if isinstance(node, list | tuple):
            for item in cast("list[object]", node):
                self.label_unions(item)
            return
        if not isinstance(node, dict):
            return
        union = cast("_Node", node)
        for value in union.values():
            self.label_unions(value)
        if union.get("type") == "union":
            choices = cast("list[object]", union["choices"])
            union["choices"] = [self._labelled(choice) for choice in choices]

    def _labelled(self, choice: object) -> object:
        if not isinstance(choice, dict):
            return choice
        node = cast("_Node", choice)
        function = node.get("function")
        if isinstance(function, dict):
            restorer = cast("_Node", function).get("function")
            if isinstance(restorer, _ClassRestorer):
                return (node, restorer.name)
        reference = node.get("schema_ref")
        if isinstance(reference, str) and reference in self._shadowed_refs:
            return (node, self._shadowed_refs[reference])
        return node


def _null_is_the_default(node: _Node) -> bool:
    """Whether ``null`` already validates to the default: a nullable field defaulting to None."""
    inner = cast("_Node", node["schema"])
    return "default" in node and node["default"] is None and inner.get("type") == "nullable"


def _omit_null_keys(typed_dict: _Node) -> None:
    """``null`` for a key that is not required leaves it out, unless the key takes ``null``."""
    total = typed_dict.get("total", True)
    for field in cast("dict[str, _Node]", typed_dict["fields"]).values():
        inner = cast("_Node", field["schema"])
        if field.get("required", total) or inner.get("type") in ("default", "nullable"):
            continue
        field["schema"] = _before(_null_means_absent, inner)


def _before(validator: Callable[[object], object], inner: _Node) -> _Node:
    """``inner`` after ``validator``, unless ``inner`` already starts with it."""
    function = inner.get("function")
    if (
        inner.get("type") == "function-before"
        and isinstance(function, dict)
        and cast("_Node", function).get("function") is validator
    ):
        return inner
    return {
        "type": "function-before",
        "function": {"type": "no-info", "function": validator},
        "schema": inner,
    }


def _shadow_of(cls: type) -> type:
    """A subclass of ``cls`` with its layout and name, made without its metaclass's
    ``__new__``: so it has no prebuilt validator of its own."""
    namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__slots__": ()}
    return type.__new__(type(cls), cls.__name__, (cls,), namespace)


class _ClassRestorer:
    """An after-validator giving a shadow's instance its model class back."""

    __slots__ = ("_cls", "name")

    def __init__(self, cls: type) -> None:
        self._cls = cls
        self.name = cls.__name__

    def __call__(self, instance: object) -> object:
        object.__setattr__(instance, "__class__", self._cls)
        return instance
