"""Loading tools named by ``module:attribute`` specs."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import cast

from llmworker import ToolDefinition, ToolFactory, tool_definitions

from .errors import ConfigError

__all__ = ["load_definitions"]


def load_definitions(spec: str) -> list[ToolDefinition]:
    """The definitions ``spec`` names.

    ``module:attribute`` may name a ``@tool_registry`` class (instantiated without
    arguments), an instance of one, one ToolDefinition, or a list of them. The current
    directory is importable, as with ``python -m``.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"tool spec {spec!r} is not 'module:attribute', e.g. 'myapp.tools:MyApp'")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"tool spec {spec!r}: cannot import {module_name!r}: {error}") from error
    target: object = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigError(
                f"tool spec {spec!r}: {module_name} has no attribute {attribute!r}"
            ) from None
    return _definitions_in(spec, target)


def _definitions_in(spec: str, target: object) -> list[ToolDefinition]:
    if isinstance(target, type):
        klass: type = target
        try:
            target = klass()
        except TypeError as error:
            raise ConfigError(
                f"tool spec {spec!r}: cannot instantiate {klass.__qualname__} without "
                f"arguments ({error}); point the spec at an instance instead"
            ) from error
    if isinstance(target, ToolFactory):
        return [target]
    if isinstance(target, list | tuple):
        items = cast("Iterable[object]", target)
        definitions: list[ToolDefinition] = []
        for item in items:
            if not callable(item):
                raise ConfigError(f"tool spec {spec!r}: {item!r} is not a ToolDefinition")
            # Registration checks that each returns (ToolMeta, Tool).
            definitions.append(cast("ToolDefinition", item))
        return definitions
    try:
        return list(tool_definitions(target))
    except TypeError:
        pass
    if callable(target):
        return [cast("ToolDefinition", target)]
    raise ConfigError(
        f"tool spec {spec!r} names a {type(target).__name__}; name a @tool_registry class or "
        "instance, a ToolDefinition, or a list of ToolDefinitions"
    )
