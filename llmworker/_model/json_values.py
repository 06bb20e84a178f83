"""JSON values: deep-frozen copies and the project's canonical serialisation.

Frozen values subclass ``dict`` and ``list`` so that ``json`` and pydantic read them at C
speed and they compare equal to plain JSON, but every mutating method raises ``TypeError``.
The canonical form (sorted keys, no spaces, UTF-8) is what makes the definitions sent to an
LLM byte-identical whatever order tools were registered in.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import NoReturn, TypeAlias, cast

from .json_numbers import non_finite_value

__all__ = [
    "FrozenJsonArray",
    "FrozenJsonObject",
    "JsonObject",
    "JsonValue",
    "canonical_json",
    "freeze_json_object",
    "thaw",
]

JsonValue: TypeAlias = (
    "bool | int | float | str | Sequence[JsonValue] | Mapping[str, JsonValue] | None"
)
"""Any JSON value; read-only containers so frozen values type-check as JSON."""

JsonObject: TypeAlias = Mapping[str, JsonValue]
"""A JSON object, such as a tool's input schema."""


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(
        f"{type(self).__name__} is immutable: registered tool metadata cannot change; "
        "build a new ToolMeta (e.g. meta.with_input_schema(...)) instead"
    )


class FrozenJsonObject(dict[str, JsonValue]):
    """A JSON object that refuses mutation; equal to the plain dict it was made from."""

    __slots__ = ()

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(canonical_json(self))

    def __copy__(self) -> FrozenJsonObject:
        return self

    def __deepcopy__(self, memo: object) -> FrozenJsonObject:
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return (freeze_json_object, (thaw(self),))


class FrozenJsonArray(list[JsonValue]):
    """A JSON array that refuses mutation; equal to the plain list it was made from."""

    __slots__ = ()

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = _refuse
    clear = sort = reverse = _refuse
    __iadd__ = __imul__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(canonical_json(self))

    def __copy__(self) -> FrozenJsonArray:
        return self

    def __deepcopy__(self, memo: object) -> FrozenJsonArray:
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return (_freeze_array, (thaw(self),))


def _freeze(value: object, path: str) -> JsonValue:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path}: {value} is not valid JSON; use a finite number")
        return value
    if isinstance(value, Mapping):
        members: dict[str, JsonValue] = {}
        for key, item in cast("Mapping[object, object]", value).items():
            if not isinstance(key, str):
                raise ValueError(f"{path}: key {key!r} is not a string; JSON keys are strings")
            members[key] = _freeze(item, f"{path}.{key}")
        return FrozenJsonObject(members)
    if isinstance(value, list | tuple):
        items = cast("list[object] | tuple[object, ...]", value)
        return FrozenJsonArray(
            _freeze(item, f"{path}[{index}]") for index, item in enumerate(items)
        )
    raise ValueError(
        f"{path}: {type(value).__name__} is not a JSON value; "
        "use dict, list, str, int, float, bool or None"
    )


def _freeze_array(value: Sequence[JsonValue]) -> FrozenJsonArray:
    frozen = _freeze(list(value), "$")
    assert isinstance(frozen, FrozenJsonArray)
    return frozen


def freeze_json_object(value: Mapping[str, object]) -> FrozenJsonObject:
    """Deep-copy ``value`` into a frozen JSON object; ``ValueError`` names any non-JSON part."""
    if isinstance(value, FrozenJsonObject):
        return value
    if not isinstance(value, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"$: expected a JSON object, got {type(value).__name__}")
    frozen = _freeze(value, "$")
    assert isinstance(frozen, FrozenJsonObject)
    return frozen


def thaw(value: JsonValue) -> JsonValue:
    """Return a plain, mutable deep copy of a (possibly frozen) JSON value."""
    result: JsonValue = json.loads(json.dumps(value))
    return result


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(value: JsonValue) -> bytes:
    """Serialise ``value`` canonically: sorted keys, no whitespace, UTF-8. ``ValueError``
    names the path of a NaN or an infinity."""
    try:
        return _CANONICAL.encode(value).encode()
    except ValueError:
        found = non_finite_value(value)
        if found is None:
            raise
        path, number = found
        raise ValueError(f"{path}: {number} is not valid JSON; use a finite number") from None
