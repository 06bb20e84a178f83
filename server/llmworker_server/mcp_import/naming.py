"""The registry name of an imported tool: its server's prefix, the separator and its own name.

A name that fits the registry's rule (1-64 of ``A-Z a-z 0-9 _ -``) is kept as it is. Any
other (MCP allows ``.`` and ``/``, and longer names) is mapped the same way every time: its
other characters become ``_``, it is cut to 55 characters, and ``-`` and the first 8 hex
digits of the SHA-256 of the unmapped name follow, so two names never map to one.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

__all__ = ["registry_name", "unmapped_name"]

_VALID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_OTHER: Final = re.compile(r"[^A-Za-z0-9_-]")
_KEPT: Final = 55


def registry_name(prefix: str, separator: str, tool: str) -> str:
    """The name ``tool`` of a server prefixed ``prefix`` is registered under."""
    name = unmapped_name(prefix, separator, tool)
    if _VALID.fullmatch(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{_OTHER.sub('_', name)[:_KEPT]}-{digest}"


def unmapped_name(prefix: str, separator: str, tool: str) -> str:
    """The name before mapping: the prefix, the separator and the tool's name."""
    return f"{prefix}{separator}{tool}" if prefix else tool
