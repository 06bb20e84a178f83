"""Caller authentication for the public ToolService: bearer tokens from an ``--auth-tokens``
file, each with the tool-name patterns it may use, a label for logs, optionally the
client-certificate subject it must come with (mTLS) and the tools whose paused batches it
may decide for other callers (an approver, e.g. an approval UI).

The file is JSON (private: mode 0600)::

    {"tokens": [
      {"token": "…", "tools": ["*"], "label": "ops"},
      {"sha256": "<hex of the token's SHA-256>", "tools": ["echo", "kv_*"], "label": "agent",
       "client_subject": "CN=agent-7"},
      {"token": "…", "tools": ["kv_*"], "label": "approvals-ui", "approves": ["kv_*"]}
    ]}
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

from llmworker._wire import ErrorStatus, Reason, printable, shorten

from ..errors import AuthTokensError
from .audit import CURRENT_CALLER, CURRENT_RPC
from .handlers import CallerContext, Context, abort
from .token_file import DigestTable, EntryReader, Globs, bearer, client_subjects, read_entries

__all__ = ["Caller", "CallerCheck", "CallerTokens", "Scope", "caller_scope", "use_scope"]

RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT")

_log = logging.getLogger("llmworker.server.auth")
_AUTHENTICATED: Final = contextvars.ContextVar["tuple[CallerTokens, Caller] | None"](
    "llmworker_authenticated", default=None
)
"""The caller ``first`` authenticated for the running RPC (each RPC runs in its own task) and
the tokens it was found in, so its token is hashed and compared once until a reload."""
_SCOPE: Final = contextvars.ContextVar["Scope | None"]("llmworker_caller_scope", default=None)
"""The scope of the caller whose call the running task serves (set when it was admitted)."""
_FLAG: Final = "--auth-tokens"
_ENTRY_KEYS: Final = ("token", "sha256", "tools", "label", "client_subject", "approves")
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
class Scope(Globs):
    """The tool-name patterns (``fnmatch`` globs, case-sensitive) a caller may use."""

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
    """Who a token belongs to: a label for logs, its scope, the client-certificate subject
    it must come with (None: any connection), and the tools whose paused batches it may
    decide for other callers (None: only its own)."""

    label: str
    scope: Scope
    client_subject: str | None = None
    approves: Globs | None = None


class CallerTokens:
    """The callers of one ``--auth-tokens`` file, by the SHA-256 of their tokens."""

    def __init__(self, callers: DigestTable[Caller]) -> None:
        self._callers = callers

    @classmethod
    def load(cls, path: Path) -> CallerTokens:
        """Read and check ``path``; ``AuthTokensError`` says what is wrong where."""
        entries = read_entries(
            _FLAG, path, "tokens", '{"tokens": [{"token" or "sha256", "tools", "label"}, …]}'
        )
        callers: dict[bytes, Caller] = {}
        scopes: dict[tuple[str, ...], Scope] = {}  # equal patterns share one scope (and cache)
        for index, entry in enumerate(entries):
            reader = EntryReader(entry, f"{_FLAG} {path}: tokens[{index}]", _ENTRY_KEYS)
            digest = reader.digest()
            patterns = reader.globs("tools", '["echo", "kv_*"] or ["*"] for every tool')
            approves = reader.globs("approves", '["kv_*"] or ["*"]', required=False)
            caller = Caller(
                # Not the entry's index: a label must not pass to another token when an
                # entry before it is removed (a paused batch belongs to its caller's label).
                reader.label(f"token-{digest.hex()[:12]}"),
                scopes.get(patterns) or scopes.setdefault(patterns, Scope(patterns)),
                reader.subject(),
                Globs(approves) if approves else None,
            )
            if digest in callers:
                raise AuthTokensError(
                    f"{_FLAG} {path}: tokens[{index}] repeats the token of "
                    f"'{callers[digest].label}'; give each caller its own token"
                )
            callers[digest] = caller
        return cls(DigestTable(callers))

    def __len__(self) -> int:
        return len(self._callers)

    def caller(self, context: CallerContext) -> Caller | ErrorStatus:
        """The caller a request comes from, or why it is refused (UNAUTHENTICATED)."""
        presented = bearer(context.invocation_metadata() or ())
        if presented is None:
            return _NO_TOKEN
        caller = self._callers.find(presented)
        if caller is None:
            return _UNKNOWN_TOKEN
        if caller.client_subject is not None and caller.client_subject not in client_subjects(
            context
        ):
            return ErrorStatus.of(
                Reason.UNAUTHENTICATED,
                f"the token labelled '{caller.label}' is bound to a client certificate "
                f"({printable(caller.client_subject, 200)}), and this connection did not "
                "present it; connect with that certificate (mTLS)",
            )
        return caller


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

    def caller(self, context: CallerContext) -> Caller | ErrorStatus:
        """The caller of a request, or why it is refused (UNAUTHENTICATED): the one ``first``
        authenticated for this RPC while no reload came since (a watch learns of a revoked
        token), else its token looked up now."""
        authenticated = _AUTHENTICATED.get()
        if authenticated is not None and authenticated[0] is self._tokens:
            return authenticated[1]
        return self._tokens.caller(context)

    def admit(self, context: CallerContext, tools: Iterable[str]) -> Caller | ErrorStatus:
        """The caller, if it may use ``tools``; else why not (UNAUTHENTICATED,
        TOOL_FORBIDDEN)."""
        caller = self.caller(context)
        if isinstance(caller, ErrorStatus):
            return caller
        for tool in tools:
            if not caller.scope.allows(tool):
                return caller.scope.forbidden(tool, caller)
        _SCOPE.set(caller.scope)
        return caller

    def first(
        self, behavior: Callable[[RequestT, Context], Awaitable[ResponseT]], method: str
    ) -> Callable[[RequestT, Context], Awaitable[ResponseT]]:
        """``behavior`` (the RPC ``method``) behind the caller check: an unknown caller is
        refused UNAUTHENTICATED before anything reads its request (its size, its fields, its
        resume token)."""

        async def authenticated(request: RequestT, context: Context) -> ResponseT:
            caller = self._tokens.caller(context)
            if isinstance(caller, ErrorStatus):
                CURRENT_RPC.set(method)
                await abort(context, caller)
            CURRENT_CALLER.set(caller.label)
            _AUTHENTICATED.set((self._tokens, caller))
            return await behavior(request, context)

        return authenticated

    def first_stream(
        self, behavior: Callable[[RequestT, Context], AsyncIterator[ResponseT]], method: str
    ) -> Callable[[RequestT, Context], AsyncIterator[ResponseT]]:
        """``first`` for a server-streaming RPC."""

        async def authenticated(request: RequestT, context: Context) -> AsyncIterator[ResponseT]:
            caller = self._tokens.caller(context)
            if isinstance(caller, ErrorStatus):
                CURRENT_RPC.set(method)
                await abort(context, caller)
            CURRENT_CALLER.set(caller.label)
            _AUTHENTICATED.set((self._tokens, caller))
            async for response in behavior(request, context):
                yield response

        return authenticated


def use_scope(scope: Scope) -> None:
    """Make ``scope`` the running call's caller scope (``caller_scope()``)."""
    _SCOPE.set(scope)


def caller_scope() -> Scope | None:
    """The scope of the caller the running call was admitted for; None when no caller was
    checked (a server without ``--auth-tokens``, or outside a call)."""
    return _SCOPE.get()
