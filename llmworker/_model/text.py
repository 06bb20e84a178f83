"""Untrusted text made safe to echo: shortened with an ellipsis, control characters escaped.

Names, targets and messages that arrive in requests end up in status messages, ErrorInfo
metadata and log lines. Echoed as they are, a 10,000-character name overflows gRPC's 8 KiB
metadata limit and a name holding a newline forges a log line.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["ELLIPSIS", "message_of", "printable", "shorten", "shorten_utf8"]

ELLIPSIS: Final = "…"
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ESCAPES: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shorten(text: str, limit: int = 64) -> str:
    """``text`` if it has at most ``limit`` characters, else its start, ``…`` and the length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}{ELLIPSIS}({len(text)} characters)"


def shorten_utf8(text: str, limit: int) -> str:
    """``text`` as valid UTF-8 (a lone surrogate becomes ``?``), cut to at most ``limit``
    bytes (ending ``…`` when cut)."""
    encoded = text.encode(errors="replace")
    if len(encoded) <= limit:
        return text if text.isascii() else encoded.decode()
    cut = encoded[: limit - len(ELLIPSIS.encode())].decode(errors="ignore")
    return cut + ELLIPSIS


def message_of(error: object) -> str:
    """``str(error)``, or a note saying it failed: an exception's ``__str__`` is its author's
    code and may itself raise."""
    try:
        return str(error)
    except BaseException:
        return f"<{type(error).__name__} whose str() failed>"


def _escape(match: re.Match[str]) -> str:
    character = match.group()
    code = ord(character)
    return _ESCAPES.get(character) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str, limit: int = 64) -> str:
    """``text`` shortened, with every control character written as an escape (``\\n``,
    ``\\x1b``), so that it stays on one log line and cannot pose as another."""
    return _CONTROL.sub(_escape, shorten(text, limit))
