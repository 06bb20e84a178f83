"""The llmworker gRPC server: ``llmworker-server`` on the command line, or embedded::

from llmworker_server import ServerApp, ServerConfig
"""

from .app import ServerApp
from .config import ServerConfig

__all__ = ["ServerApp", "ServerConfig"]
