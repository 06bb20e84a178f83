"""Caller authentication for the public ToolService: bearer tokens from an ``--auth-tokens``
file, each with the tool-name patterns it may use, a label for logs, and optionally the
client-certificate subject it must come with (mTLS).

The file is JSON::

    {"tokens": [
      {"token": "…", "tools": ["*"], "label": "ops"},
      {"sha256": "<hex of the token's SHA-256>", "tools": ["echo", "kv_*"], "label": "agent",
       "client_subject": "CN=agent-7"}
    ]}

A presented token's SHA-256 is compared with every known digest in constant time, so the
file may hold digests only; tokens are never logged.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypeVar, cast

from llmworker._wire import ErrorStatus, Reason, printable, shorten

from ..errors import AuthTokensError
from .handlers import Context, abort

__all__ = ["Caller", "CallerCheck", "CallerTokens", "Scope", "exposed_secret_file"]

RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT")

_log = logging.getLogger("llmworker.server.auth")
_MIN_TOKEN_CHARS: Final = 16
_DIGEST: Final = re.compile(r"[0-9a-fA-F]{64}")
_LABEL: Final = re.compile(r"[\x21-\x7e]{1,64}")
_ENTRY_KEYS: Final = frozenset({"token", "sha256", "tools", "label", "client_subject"})
_MAX_REMEMBERED: Final = 4096
_NO_TOKEN: Final = ErrorStatus.of(
    Reason.UNAUTHENTICATED,
    "this server needs a caller token: send 'authorization: Bearer <token>' metadata with a "
    "token from its --auth-tokens file",
)
_UNKNOWN_TOKEN: Final = ErrorStatus.of(
    Reason.UNAUTHENTICATED,
    "the bearer token is not one this server knows (it may have been revoked); ask for a "
    "token from its --auth-tokens file",
)


@dataclass(frozen=True, slots=True, eq=False)
class Scope:
    """The tool-name patterns (``fnmatch`` globs, case-sensitive) a caller may use."""

    patterns: tuple[str, ...]
    _regex: re.Pattern[str] = field(init=False, repr=False)
    _seen: dict[str, bool] = field(init=False, repr=False, default_factory=dict[str, bool])

    def __post_init__(self) -> None:
        joined = "|".join(f"(?:{fnmatch.translate(pattern)})" for pattern in self.patterns)
        object.__setattr__(self, "_regex", re.compile(joined))

    def allows(self, tool: str) -> bool:
        """Whether ``tool`` matches one of the patterns (answers remembered per name)."""
        allowed = self._seen.get(tool)
        if allowed is None:
            if len(self._seen) >= _MAX_REMEMBERED:
                self._seen.clear()
            allowed = self._seen[tool] = self._regex.fullmatch(tool) is not None
        return allowed

    def forbidden(self, tool: str, caller: Caller) -> ErrorStatus:
        """The refusal of a call to ``tool`` outside this scope."""
        name = shorten(tool)
        return ErrorStatus.of(
            Reason.TOOL_FORBIDDEN,
            f"the token labelled '{caller.label}' may not use tool '{name}' (its tools: "
            f"{shorten(', '.join(self.patterns), 200)}); use a token whose tools include it",
            tool=name,
        )


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a token belongs to: a label for logs, its scope, and the client-certificate
    subject it must come with (None: any connection)."""

    label: str
    scope: Scope
    client_subject: str | None = None


class CallerTokens:
    """The callers of one ``--auth-tokens`` file, by the SHA-256 of their tokens."""

    def __init__(self, callers: Mapping[bytes, Caller]) -> None:
        self._callers = tuple(callers.items())

    @classmethod
    def load(cls, path: Path) -> CallerTokens:
        """Read and check ``path``; ``AuthTokensError`` says what is wrong where."""
        exposed = exposed_secret_file(path)
        if exposed is not None:
            raise AuthTokensError(f"--auth-tokens {exposed}")
        try:
            document = json.loads(path.read_bytes())
        except OSError as error:
            raise AuthTokensError(
                f"--auth-tokens {path}: cannot be read ({error.strerror})"
            ) from None
        except ValueError as error:
            raise AuthTokensError(f"--auth-tokens {path}: not JSON ({error})") from None
        entries = (
            cast("dict[str, object]", document).get("tokens")
            if isinstance(document, dict)
            else None
        )
        if not isinstance(entries, list):
            raise AuthTokensError(
                f'--auth-tokens {path}: expected {{"tokens": [{{"token" or "sha256", "tools", '
                '"label"}, …]}'
            )
        callers: dict[bytes, Caller] = {}
        scopes: dict[tuple[str, ...], Scope] = {}  # equal patterns share one scope (and cache)
        for index, entry in enumerate(cast("list[object]", entries)):
            where = f"--auth-tokens {path}: tokens[{index}]"
            digest, caller = _entry(entry, where, f"token-{index}", scopes)
            if digest in callers:
                raise AuthTokensError(
                    f"--auth-tokens {path}: tokens[{index}] repeats the token of "
                    f"'{callers[digest].label}'; give each caller its own token"
                )
            callers[digest] = caller
        return cls(callers)

    def __len__(self) -> int:
        return len(self._callers)

    def caller(self, context: Context) -> Caller | ErrorStatus:
        """The caller a request comes from, or why it is refused (UNAUTHENTICATED)."""
        presented = _bearer(context.invocation_metadata() or ())
        if presented is None:
            return _NO_TOKEN
        digest = hashlib.sha256(presented).digest()
        caller: Caller | None = None
        for known, candidate in self._callers:  # every digest compared, in constant time
            if hmac.compare_digest(known, digest):
                caller = candidate
        if caller is None:
            return _UNKNOWN_TOKEN
        if caller.client_subject is not None and caller.client_subject not in _subjects(context):
            return ErrorStatus.of(
                Reason.UNAUTHENTICATED,
                f"the token labelled '{caller.label}' is bound to a client certificate "
                f"({printable(caller.client_subject, 200)}), and this connection did not "
                "present it; connect with that certificate (mTLS)",
            )
        return caller


def _entry(
    entry: object, where: str, default_label: str, scopes: dict[tuple[str, ...], Scope]
) -> tuple[bytes, Caller]:
    if not isinstance(entry, dict):
        raise AuthTokensError(f"{where}: expected an object")
    entry = cast("dict[str, object]", entry)
    unknown = sorted(str(key) for key in entry if key not in _ENTRY_KEYS)
    if unknown:
        raise AuthTokensError(
            f"{where}: unknown key(s) {', '.join(unknown)}; the keys are token or sha256, "
            "tools, label and client_subject"
        )
    token, hexdigest = entry.get("token"), entry.get("sha256")
    if (token is None) == (hexdigest is None):
        raise AuthTokensError(f"{where}: give exactly one of token and sha256")
    if token is not None:
        if isinstance(token, str) and token != token.strip():
            raise AuthTokensError(
                f"{where}: the token starts or ends with whitespace, which a presented token "
                "never has (it is stripped): remove it"
            )
        if not isinstance(token, str) or len(token) < _MIN_TOKEN_CHARS:
            raise AuthTokensError(
                f"{where}: a token must be a string of at least {_MIN_TOKEN_CHARS} characters "
                "(random ones: a short token can be guessed)"
            )
        digest = hashlib.sha256(token.encode()).digest()
    else:
        if not isinstance(hexdigest, str) or not _DIGEST.fullmatch(hexdigest):
            raise AuthTokensError(
                f"{where}: sha256 must be 64 hex digits (e.g. from 'printf %s TOKEN | sha256sum')"
            )
        digest = bytes.fromhex(hexdigest)
    tools = entry.get("tools")
    patterns = tuple(cast("list[object]", tools)) if isinstance(tools, list) else ()
    if not patterns or not all(isinstance(pattern, str) and pattern for pattern in patterns):
        raise AuthTokensError(
            f'{where}: tools must be a non-empty list of tool names or globs, e.g. ["echo", '
            '"kv_*"] or ["*"] for every tool'
        )
    label = entry.get("label", default_label)
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise AuthTokensError(f"{where}: label must be 1-64 printable ASCII characters, no spaces")
    subject = entry.get("client_subject")
    if subject is not None and (not isinstance(subject, str) or not subject):
        raise AuthTokensError(f"{where}: client_subject must be a certificate subject, e.g. CN=bot")
    key = cast("tuple[str, ...]", patterns)
    scope = scopes.get(key) or scopes.setdefault(key, Scope(key))
    return digest, Caller(label, scope, subject)


def exposed_secret_file(path: Path) -> str | None:
    """Why the secret file ``path`` must not be used, if group or others may read or write
    it (as OpenSSH refuses such a key); None when it is private or cannot be examined (its
    reading then says why)."""
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        return None
    if mode & 0o077:
        return (
            f"{path}: mode {mode:04o} lets group or others reach this secret; run chmod 600 {path}"
        )
    return None


def _bearer(metadata: Iterable[tuple[str, str | bytes]]) -> bytes | None:
    for key, value in metadata:
        if key == "authorization":
            text = value.encode() if isinstance(value, str) else value
            scheme, _, token = text.partition(b" ")
            return token.strip() if scheme.lower() == b"bearer" and token.strip() else None
    return None


def _subjects(context: Context) -> list[str]:
    """The client certificate's subject and common name, as gRPC reports them (empty
    without a verified client certificate)."""
    properties = context.auth_context()
    subjects = [value.decode(errors="replace") for value in properties.get("x509_subject", ())]
    for value in properties.get("x509_common_name", ()):
        subjects.append("CN=" + value.decode(errors="replace"))
    return subjects


class CallerCheck:
    """The ``--auth-tokens`` file in force: ``reload()`` (SIGHUP) reads it again and keeps
    the callers in use when the new file cannot be used."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tokens = CallerTokens.load(path)

    def reload(self) -> bool:
        try:
            tokens = CallerTokens.load(self.path)
        except AuthTokensError as error:
            _log.error("caller tokens not reloaded, the ones in use stay: %s", error)
            return False
        self._tokens = tokens
        _log.info("caller tokens reloaded from %s: %d callers", self.path, len(tokens))
        return True

    def caller(self, context: Context) -> Caller | ErrorStatus:
        """The caller of a request, or why it is refused (UNAUTHENTICATED)."""
        return self._tokens.caller(context)

    def admit(self, context: Context, tools: Iterable[str]) -> Caller | ErrorStatus:
        """The caller, if it may use ``tools``; else why not (UNAUTHENTICATED,
        TOOL_FORBIDDEN)."""
        caller = self._tokens.caller(context)
        if isinstance(caller, ErrorStatus):
            return caller
        for tool in tools:
            if not caller.scope.allows(tool):
                return caller.scope.forbidden(tool, caller)
        return caller

    def first(
        self, behavior: Callable[[RequestT, Context], Awaitable[ResponseT]]
    ) -> Callable[[RequestT, Context], Awaitable[ResponseT]]:
        """``behavior`` behind the caller check: an unknown caller is refused UNAUTHENTICATED
        before anything reads its request (its size, its fields, its resume token)."""

        async def authenticated(request: RequestT, context: Context) -> ResponseT:
            caller = self._tokens.caller(context)
            if isinstance(caller, ErrorStatus):
                await abort(context, caller)
            return await behavior(request, context)

        return authenticated

    def first_stream(
        self, behavior: Callable[[RequestT, Context], AsyncIterator[ResponseT]]
    ) -> Callable[[RequestT, Context], AsyncIterator[ResponseT]]:
        """``first`` for a server-streaming RPC."""

        async def authenticated(request: RequestT, context: Context) -> AsyncIterator[ResponseT]:
            caller = self._tokens.caller(context)
            if isinstance(caller, ErrorStatus):
                await abort(context, caller)
            async for response in behavior(request, context):
                yield response

        return authenticated
