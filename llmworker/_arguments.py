"""A tool's arguments and results as text: validation errors in one line, results as JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeAlias

import pydantic_core
from pydantic import ValidationError

from ._errors import ToolError

__all__ = ["KeywordsValidator", "describe", "render_result"]

KeywordsValidator: TypeAlias = Callable[[str | bytes], dict[str, Any]]
"""Validates a JSON object into a dict: a TypedDict validator's ``validate_json``."""

_MAX_SHOWN_INPUT: Final = 40
_JSON_TYPE_NAMES: Final = {
    "list": "an array",
    "str": "a string",
    "int": "a number",
    "float": "a number",
    "bool": "a boolean",
    "NoneType": "null",
}


def describe(error: ValidationError) -> str:
    """The errors of ``error`` as one line naming each failing field path and the problem,
    e.g. ``user.age: Input should be a valid integer (got 'abc')``."""
    problems: list[str] = []
    for detail in error.errors(include_url=False):
        kind, location = detail["type"], detail["loc"]
        if kind == "json_invalid":
            reason = detail.get("ctx", {}).get("error", "")
            return f"input is not valid JSON ({reason}); send one JSON object"
        if not location and kind in ("model_type", "model_attributes_type", "dict_type"):
            given = _JSON_TYPE_NAMES.get(type(detail["input"]).__name__, "not an object")
            return f"arguments must be a JSON object, got {given}"
        path = "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in location
        ).lstrip(".")
        message = detail["msg"]
        if kind == "extra_forbidden":
            message = "unknown field; remove it"
        elif kind != "missing":
            message += f" (got {_shorten(detail['input'])})"
        problems.append(f"{path or 'input'}: {message}")
    return "; ".join(problems)


def _shorten(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN_INPUT else text[: _MAX_SHOWN_INPUT - 3] + "..."


def render_result(value: object) -> str:
    """A tool method's return value as text: str as-is, None as "", anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return pydantic_core.to_json(value).decode()
    except pydantic_core.PydanticSerializationError as error:
        raise ToolError.Internal(
            f"the tool returned {type(value).__name__}, which cannot be serialised to JSON "
            f"({error}); return str, a pydantic model, a dataclass or plain JSON data"
        ) from None
