"""The server's own errors, under one base.

    ServerError                    anything the server refuses on its own account
    ├── ConfigError (ValueError)   a setting that cannot be used; names the flag and the fix
    │   ├── AuthTokensError        an --auth-tokens file that cannot be used
    │   └── TlsFilesError          a certificate, key or CA file that cannot be read or used
    ├── RegistryLockedError        the registry is locked: tools can no longer be added
    └── RegistryFullError (ValueError)  the listing would outgrow the largest message

Errors of the tools and the calls are the library's (``llmworker.ToolError`` and the rest);
on the wire every one of them is a status with a reason from the README's table.
"""

from __future__ import annotations

__all__ = [
    "AuthTokensError",
    "ConfigError",
    "RegistryFullError",
    "RegistryLockedError",
    "ServerError",
    "TlsFilesError",
]


class ServerError(Exception):
    """The base of the server's own errors."""


class ConfigError(ServerError, ValueError):
    """A setting that cannot be used; the message names the flag and what to change."""


class AuthTokensError(ConfigError):
    """An ``--auth-tokens`` file that cannot be used; the message names what to fix."""


class TlsFilesError(ConfigError):
    """A certificate, key or CA file that cannot be read or used; the message names it."""


class RegistryLockedError(ServerError):
    """The registry is locked; tools can no longer be added."""


class RegistryFullError(ServerError, ValueError):
    """The definitions listing would outgrow the largest message the server sends."""
