"""``--loop``: the event loop the server runs on, uvloop by default where it is installed.

uvloop serves the same calls with less CPU per call (BENCHMARKS.md); ``--loop asyncio`` is
the standard library's loop, for platforms without uvloop or to rule it out.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

from .errors import ConfigError

__all__ = ["EventLoopChoice", "choose_loop"]


@dataclass(frozen=True, slots=True)
class EventLoopChoice:
    """An event loop's name and how to make one."""

    name: str
    new_event_loop: Callable[[], asyncio.AbstractEventLoop]


def choose_loop(wanted: str) -> EventLoopChoice:
    """The loop ``--loop`` names (``auto``: uvloop if importable, else asyncio); ConfigError
    when uvloop is asked for and not installed."""
    if wanted == "asyncio" or (wanted == "auto" and importlib.util.find_spec("uvloop") is None):
        return EventLoopChoice("asyncio", asyncio.new_event_loop)
    try:
        import uvloop
    except ImportError as error:
        raise ConfigError(
            f"--loop uvloop: uvloop is not installed ({error}); pip install uvloop, or use "
            "--loop asyncio"
        ) from error
    return EventLoopChoice("uvloop", uvloop.new_event_loop)
