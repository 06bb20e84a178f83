"""Which MCP servers to import tools from: ``--mcp-server NAME=URL``,
``--mcp-server NAME=stdio:COMMAND ARGS…`` and the ``--mcp-servers FILE`` config file.

The file has the ``mcpServers`` shape MCP clients already use, with a few keys of ours::

    {"mcpServers": {
      "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
                "env": {"LOG": "1"}, "cwd": "/srv", "exclude": ["write_*"]},
      "search": {"url": "https://search.internal/mcp", "tokenFile": "/run/secrets/search",
                 "caFile": "/etc/ssl/internal-ca.pem", "include": ["web_*"], "prefix": "web"}}}

Reading settings imports nothing of the MCP SDK, so the server's options can be checked
without it.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, cast
from urllib.parse import urlsplit

from ..errors import ConfigError
from ..rpc.token_file import exposed_secret_file

__all__ = [
    "DEFAULT_SEPARATOR",
    "McpServerSettings",
    "check_separator",
    "load_servers_file",
    "server_from_flag",
]

DEFAULT_SEPARATOR: Final = "__"
_SERVER_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,32}")
_SEPARATOR: Final = re.compile(r"[A-Za-z0-9_-]{0,4}")
_FILE_KEYS: Final = frozenset(
    {"url", "tokenFile", "caFile", "command", "args", "env", "cwd", "include", "exclude", "prefix"}
)
_FLAG_FORMS: Final = "use NAME=https://HOST/mcp or NAME=stdio:COMMAND ARGS"


@dataclass(frozen=True, slots=True)
class McpServerSettings:
    """One MCP server: reached at ``url`` (Streamable HTTP) or launched as ``command``
    (stdio). Its tools are named ``prefix`` + the separator + their own name (``prefix``
    "": their own name alone), those matching ``include`` (default every tool) and not
    ``exclude``."""

    name: str
    url: str | None = None
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    cwd: Path | None = None
    token_file: Path | None = None
    ca_file: Path | None = None
    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()
    prefix: str | None = None

    @property
    def tool_prefix(self) -> str:
        """What the server's tool names start with (its name unless configured)."""
        return self.name if self.prefix is None else self.prefix

    @property
    def provider(self) -> str:
        """The provider target its tools are registered under: it holds a space, which no
        gRPC provider's target may, so the two never mix."""
        return f"mcp server {self.name}"

    def describe(self) -> str:
        """Where the server is, for logs: the URL without its query (which may hold a key;
        tokens belong in tokenFile), or the command."""
        if self.url is not None:
            return self.url.partition("?")[0]
        return "stdio: " + shlex.join(self.command)


def check_separator(separator: str) -> str:
    """``separator`` if usable between a prefix and a tool name, else ``ConfigError``."""
    if not _SEPARATOR.fullmatch(separator):
        raise ConfigError(
            f"--mcp-tool-separator {separator!r}: use 0-4 of the characters tool names may "
            "hold (A-Z a-z 0-9 _ -), e.g. '__' (the default) or '-'"
        )
    return separator


def server_from_flag(value: str) -> McpServerSettings:
    """The server one ``--mcp-server`` value names; ``ConfigError`` says what to fix."""
    name, equals, where = value.partition("=")
    if not equals or not where:
        raise ConfigError(f"--mcp-server {value!r} names no server; {_FLAG_FORMS}")
    _check_name(name, "--mcp-server")
    if where.startswith("stdio:"):
        try:
            command = tuple(shlex.split(where.removeprefix("stdio:")))
        except ValueError as error:
            raise ConfigError(
                f"--mcp-server {name}: the command cannot be split ({error})"
            ) from None
        return _checked(McpServerSettings(name, command=command), f"--mcp-server {name}")
    return _checked(McpServerSettings(name, url=where), f"--mcp-server {name}")


def load_servers_file(path: Path) -> list[McpServerSettings]:
    """The servers of an ``mcpServers`` config file; ``ConfigError`` names the entry."""
    where = f"--mcp-servers {path}"
    try:
        document: object = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ConfigError(f"{where}: cannot read it as JSON ({error})") from None
    servers = (
        cast("dict[str, object]", document).get("mcpServers")
        if isinstance(document, dict)
        else None
    )
    if not isinstance(servers, dict) or not servers:
        raise ConfigError(f'{where}: expected {{"mcpServers": {{"NAME": {{"url": …}}, …}}}}')
    settings: list[McpServerSettings] = []
    for name, entry in cast("dict[str, object]", servers).items():
        _check_name(name, where)
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: server '{name}' must be an object with url or command")
        settings.append(_entry(name, cast("dict[str, object]", entry), f"{where}: server '{name}'"))
    return settings


def _entry(name: str, entry: dict[str, object], where: str) -> McpServerSettings:
    unknown = sorted(set(entry) - _FILE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: {sorted(_FILE_KEYS)}")
    command = entry.get("command")
    args = entry.get("args", [])
    if command is not None and (not isinstance(command, str) or not _strings(args)):
        raise ConfigError(f"{where}: command must be a string and args a list of strings")
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(value, str) for value in cast("dict[str, object]", env).values()
    ):
        raise ConfigError(f"{where}: env must map names to strings")
    settings = McpServerSettings(
        name,
        url=_text(entry, "url", where),
        command=() if not isinstance(command, str) else (command, *cast("list[str]", args)),
        env=cast("dict[str, str]", env),
        cwd=_path(entry, "cwd", where),
        token_file=_path(entry, "tokenFile", where),
        ca_file=_path(entry, "caFile", where),
        include=_globs(entry, "include", where) or ("*",),
        exclude=_globs(entry, "exclude", where),
        prefix=_text(entry, "prefix", where),
    )
    return _checked(settings, where)


def _checked(settings: McpServerSettings, where: str) -> McpServerSettings:
    if (settings.url is None) == (not settings.command):
        raise ConfigError(f"{where}: give either a url or a command, not both or neither")
    if settings.url is not None:
        parts = urlsplit(settings.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"{where}: {settings.url!r} is not an http(s) URL; {_FLAG_FORMS}")
        if parts.username or parts.password:
            raise ConfigError(f"{where}: put no credentials in the URL; use tokenFile")
    elif settings.token_file is not None or settings.ca_file is not None:
        raise ConfigError(f"{where}: tokenFile and caFile are for a url, not a command")
    if settings.prefix is not None and not re.fullmatch(r"[A-Za-z0-9_-]{0,32}", settings.prefix):
        raise ConfigError(f"{where}: prefix must be 0-32 of A-Z a-z 0-9 _ -")
    for path in (settings.token_file, settings.ca_file):
        if path is not None and not path.is_file():
            raise ConfigError(f"{where}: {path} is not a readable file")
    exposed = None if settings.token_file is None else exposed_secret_file(settings.token_file)
    if exposed is not None:
        raise ConfigError(f"{where}: tokenFile {exposed}")
    return settings


def _check_name(name: str, where: str) -> None:
    if not _SERVER_NAME.fullmatch(name):
        raise ConfigError(
            f"{where}: server name {name!r} must be 1-32 of A-Z a-z 0-9 _ - (it prefixes the "
            "names of its tools)"
        )


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(item, str) for item in cast("list[object]", value)
    )


def _text(entry: dict[str, object], key: str, where: str) -> str | None:
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be a string")
    return value


def _path(entry: dict[str, object], key: str, where: str) -> Path | None:
    value = _text(entry, key, where)
    return None if value is None else Path(value)


def _globs(entry: dict[str, object], key: str, where: str) -> tuple[str, ...]:
    if key not in entry:
        return ()
    value = entry[key]
    if not _strings(value) or not value or not all(cast("list[str]", value)):
        raise ConfigError(f'{where}: {key} must be a list of tool-name globs, e.g. ["read_*"]')
    return tuple(cast("list[str]", value))
