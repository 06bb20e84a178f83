"""The server's own dependencies come with ``pip install "llmworker[server]"``. They are
checked before anything imports them, so a missing extra is one sentence, not a traceback."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from typing import Final

__all__ = ["MissingServerExtra", "launch", "require_server_extra"]

_MODULES: Final = ("grpc_health", "grpc_reflection", "prometheus_client")


class MissingServerExtra(ImportError):
    """The ``server`` extra is not installed; the message says how to install it."""


def require_server_extra() -> None:
    """Raise ``MissingServerExtra`` naming the missing modules, if any is missing."""
    missing = [module for module in _MODULES if importlib.util.find_spec(module) is None]
    if missing:
        raise MissingServerExtra(
            f"llmworker-server needs the server extra ({', '.join(missing)} not installed): "
            "pip install 'llmworker[server]'"
        )


def launch(argv: Sequence[str] | None = None) -> int:
    """``llmworker-server``: the extra checked first, then the command line."""
    try:
        require_server_extra()
    except MissingServerExtra as error:
        print(error, file=sys.stderr)
        return 1
    from .cli import main

    return main(argv)
