"""A tool's arguments and results as text: validation errors in one line, results as JSON."""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from typing import Any, Final, TypeAlias, cast

import pydantic_core
from pydantic import ValidationError

from .._model.errors import ToolError
from .._model.json_numbers import non_finite_value
from .._model.text import printable, shorten

__all__ = [
    "MAX_PROBLEMS",
    "KeywordsValidator",
    "describe",
    "render_result",
    "unknown_fields",
    "with_more_problems",
]

KeywordsValidator: TypeAlias = Callable[[str | bytes], dict[str, Any]]
"""Validates a JSON object into a dict: a TypedDict validator's ``validate_json``."""

MAX_PROBLEMS: Final = 10
"""How many problems a validation error lists; the rest are counted."""
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
    e.g. ``user.age: Input should be a valid integer (got 'abc')``; past ``MAX_PROBLEMS``
    it ends ``(+N more problems)``."""
    problems: list[str] = []
    count = error.error_count()
    for detail in error.errors(include_url=False)[:MAX_PROBLEMS]:
        kind, location = detail["type"], detail["loc"]
        if kind == "json_invalid":
            reason = detail.get("ctx", {}).get("error", "")
            return f"input is not valid JSON ({reason}); send one JSON object"
        if not location and kind in ("model_type", "model_attributes_type", "dict_type"):
            given = _JSON_TYPE_NAMES.get(type(detail["input"]).__name__, "not an object")
            return f"arguments must be a JSON object, got {given}"
        path = "".join(
            f"[{part}]" if isinstance(part, int) else f".{printable(part, _MAX_SHOWN_INPUT)}"
            for part in location
        ).lstrip(".")
        message = detail["msg"]
        if kind == "extra_forbidden":
            message = "unknown field; remove it"
        elif kind != "missing":
            message += f" (got {_shorten(detail['input'])})"
        problems.append(f"{path or 'input'}: {message}")
    return with_more_problems(problems, count)


def with_more_problems(problems: list[str], count: int) -> str:
    """``problems`` joined by ``; ``, then ``(+N more problems)`` for those not listed."""
    text = "; ".join(problems)
    return text if count <= len(problems) else f"{text} (+{count - len(problems)} more problems)"


def unknown_fields(names: list[str]) -> str:
    """The message for arguments the tool does not take, in ``describe``'s format."""
    listed = [f"{printable(name, _MAX_SHOWN_INPUT)}: unknown field; remove it" for name in names]
    return with_more_problems(listed[:MAX_PROBLEMS], len(names))


def _shorten(value: object) -> str:
    if isinstance(value, str | bytes) and len(value) > _MAX_SHOWN_INPUT:
        value = value[:_MAX_SHOWN_INPUT]
    text = reprlib.repr(cast("object", value)) if isinstance(value, dict | list) else repr(value)
    return text if len(text) <= _MAX_SHOWN_INPUT else text[: _MAX_SHOWN_INPUT - 3] + "..."


def render_result(value: object, tool: str) -> str:
    """The return value of the method of ``tool`` as text: str as-is, None as "", anything
    else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        rendered = pydantic_core.to_json(value)
    except pydantic_core.PydanticSerializationError as error:
        raise ToolError.Internal(
            f"tool '{shorten(tool)}' returned {type(value).__name__}, which cannot be "
            "serialised to JSON "
            f"({error}); return str, a pydantic model, a dataclass or plain JSON data"
        ) from None
    # JSON has no NaN nor infinities (``json.loads`` in most languages refuses them): a
    # result holding one is the tool's defect, reported rather than sent. ``find``, not
    # ``in``: bytes' ``in`` first tries its argument as an int, twice as slow.
    if rendered.find(b"NaN") >= 0 or rendered.find(b"Infinity") >= 0:  # rare: look closer
        found = non_finite_value(pydantic_core.to_jsonable_python(value))
        if found is not None:
            path, number = found
            raise ToolError.Internal(
                f"the result of '{shorten(tool)}' has {number} at {shorten(path)}, which JSON "
                "cannot represent; return null, a string or a finite number there"
            )
    return rendered.decode()
