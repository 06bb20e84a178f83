"""The llmworker gRPC server: ``llmworker-server`` on the command line, or embedded::

from llmworker_server import ServerApp, ServerConfig

It needs the ``server`` extra (``pip install "llmworker[server]"``); without it, these names
raise one ``ImportError`` saying so.
"""

from typing import TYPE_CHECKING

from .extra import require_server_extra

if TYPE_CHECKING:
    from .app import ServerApp
    from .config import ServerConfig

__all__ = ["ServerApp", "ServerConfig"]


def __getattr__(name: str) -> object:
    """``ServerApp`` and ``ServerConfig``, once the server extra is known to be there."""
    if name == "ServerApp":
        require_server_extra()
        from .app import ServerApp

        return ServerApp
    if name == "ServerConfig":
        require_server_extra()
        from .config import ServerConfig

        return ServerConfig
    raise AttributeError(f"module 'llmworker_server' has no attribute {name!r}")
