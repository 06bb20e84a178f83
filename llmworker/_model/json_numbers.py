"""The numbers JSON does not have, found in JSON text and in Python values.

JSON (RFC 8259) has no NaN and no infinities, and a 64-bit float reads a number like ``1e400``
as infinity: a call's input holding one is refused, and so is a result. Python's ``json``
reads and writes ``NaN`` and ``Infinity``, and ``json.loads`` turns ``1e400`` into ``inf``,
so neither may decide.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Final, cast

from .text import printable

__all__ = ["non_finite_literal", "non_finite_value"]


_SHOWN_KEY_CHARS: Final = 40
_LONG_TEXT: Final = 1024
"""A text longer than this is first cut to what lies outside its strings."""
_MAX_CUT_QUOTES: Final = 64
"""The quotes a long text is cut at: a few strings make most of a long input."""
_NUMBER_SHAPES: Final = bytes(
    ord("0") if 0x30 <= byte <= 0x39 else ord("e") if byte in b"eE+" else ord(" ")
    for byte in range(256)
)
"""Maps each digit to ``0``, ``e``, ``E`` and ``+`` to ``e``, every other byte to a space."""
_LARGE_EXPONENT: Final = b"e000"
_MANY_DIGITS: Final = b"0" * 200
"""In those shapes, what a number too large for a float holds: an exponent of three digits
or more, or more than 200 digits before its point (it takes 309, or 210 with ``e99``)."""


def non_finite_literal(json_text: str) -> tuple[str, str] | None:
    """The path and text of the first NaN, Infinity, -Infinity or number too large for a
    float in ``json_text`` (``("$.items[2]", "1e400")``), or None: also when ``json_text``
    is not JSON, which its reader will say.

    It costs substring searches at C speed (a byte translation too where there are digits),
    over the text outside the strings of a long one; only a text holding such a literal, or
    something like one, is read.
    """
    text = json_text
    if len(text) > _LONG_TEXT:
        if not ("N" in text or "I" in text or _has_digit(text)):
            return None
        text = _outside_strings(text)
    if ("N" in text and "NaN" in text) or ("I" in text and "Infinity" in text):
        return _first_non_finite_literal(json_text)
    if not _has_digit(text):
        return None
    shapes = text.encode(errors="surrogatepass").translate(_NUMBER_SHAPES)
    if shapes.find(_LARGE_EXPONENT) < 0 and shapes.find(_MANY_DIGITS) < 0:
        return None
    return _first_non_finite_literal(json_text)


def _has_digit(text: str) -> bool:
    # Ten single-character searches run at memchr speed: faster than a regex or a loop.
    return (
        "0" in text
        or "1" in text
        or "2" in text
        or "3" in text
        or "4" in text
        or "5" in text
        or "6" in text
        or "7" in text
        or "8" in text
        or "9" in text
    )


def _outside_strings(text: str) -> str:
    """``text`` without the contents of its first strings (where a literal is only text),
    the rest past ``_MAX_CUT_QUOTES`` quotes kept whole."""
    parts = text.split('"', _MAX_CUT_QUOTES)
    kept = [parts[0]]
    inside = False
    for before, after in itertools.pairwise(parts):
        if not inside:
            inside = True
        elif before.endswith("\\") and (len(before) - len(before.rstrip("\\"))) % 2:
            continue  # an escaped quote: the string goes on
        else:
            inside = False
            kept.append(after)
    if inside and len(parts) > _MAX_CUT_QUOTES:
        kept.append(parts[-1])  # the rest begins in a string
    return " ".join(kept)


class _NonFinite(str):
    """A number literal no float can hold, as ``json.loads`` met it."""

    __slots__ = ()


class _Members(list[tuple[str, object]]):
    """A JSON object's members in order, a duplicate key's too."""

    __slots__ = ()


def _ignored(literal: str) -> None:
    """Integers are JSON however large: not read (nor limited to 4,300 digits)."""


def _first_non_finite_literal(json_text: str) -> tuple[str, str] | None:
    """Read ``json_text`` marking each literal no float can hold; the path of the first."""
    found: list[_NonFinite] = []

    def non_finite(literal: str) -> _NonFinite:
        marker = _NonFinite(literal)
        found.append(marker)
        return marker

    def checked_float(literal: str) -> _NonFinite | None:
        return None if math.isfinite(float(literal)) else non_finite(literal)

    try:
        tree: object = json.loads(
            json_text,
            parse_constant=non_finite,
            parse_float=checked_float,
            parse_int=_ignored,
            object_pairs_hook=_Members,
        )
    except (ValueError, RecursionError):
        return None
    if not found:
        return None
    return next(path for path, value in _walk(tree) if value is found[0]), str(found[0])


def non_finite_value(value: object) -> tuple[str, float] | None:
    """The path and value of the first NaN or infinity in ``value``, looking into mappings,
    lists and tuples (``("$.rows[1].v", inf)``), or None."""
    if not _holds_non_finite(value):
        return None
    return next(
        (path, item)
        for path, item in _walk(value)
        if isinstance(item, float) and not math.isfinite(item)
    )


def _holds_non_finite(value: object) -> bool:
    """Whether ``value`` holds a NaN or an infinity: the common types first, by identity.
    A container met twice (a cycle, which no encoder takes) is looked into once."""
    pending = [value]
    seen: set[int] = set()
    while pending:
        item = pending.pop()
        if type(item) is str or type(item) is int:
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        if type(item) is dict or isinstance(item, Mapping):
            pending.extend(cast("Mapping[object, object]", item).values())
        elif isinstance(item, list | tuple):
            pending.extend(cast("Sequence[object]", item))
    return False


def _walk(root: object) -> Iterator[tuple[str, object]]:
    """Every value in ``root`` with its path, depth first in document order, each container
    looked into once."""
    pending: list[tuple[str, object]] = [("$", root)]
    seen: set[int] = set()
    while pending:
        path, value = pending.pop()
        yield path, value
        if isinstance(value, str | int | float) or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, _Members):
            members: list[tuple[object, object]] = list(value)
        elif isinstance(value, list | tuple):
            items = enumerate(cast("Sequence[object]", value))
            pending.extend(reversed([(f"{path}[{index}]", item) for index, item in items]))
            continue
        elif isinstance(value, Mapping):
            members = list(cast("Mapping[object, object]", value).items())
        else:
            continue
        shown = [(f"{path}.{printable(str(key), _SHOWN_KEY_CHARS)}", item) for key, item in members]
        pending.extend(reversed(shown))
