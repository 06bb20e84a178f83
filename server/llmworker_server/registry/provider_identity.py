"""Who may register tools: provider identities from a ``--provider-tokens`` file, or the
one shared registry token (the simple mode: one identity allowed everything).

The file is JSON (private: mode 0600), one entry per provider::

    {"providers": [
      {"token": "…", "label": "search", "tools": ["web_*"],
       "targets": ["127.0.0.1:7*", "unix:/run/llmworker/search.sock"]},
      {"sha256": "<hex of the token's SHA-256>", "label": "ops", "tools": ["*"],
       "targets": ["*"], "client_subject": "CN=ops", "may_lock": true}
    ]}

An identity may register only tools its ``tools`` globs match, naming only targets its
``targets`` globs match (in the form ``canonical_target`` gives); a tool belongs to the
identity that registered it, so only that identity renews, replaces, re-attaches or
unregisters it. ``may_lock`` (an operator's identity) lets it call LockRegistry and unregister
any tool, a revoked identity's too.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from llmworker._wire import ErrorStatus, Reason, printable, shorten

from ..errors import AuthTokensError
from ..rpc.handlers import Context
from ..rpc.token_file import DigestTable, EntryReader, Globs, bearer, client_subjects, read_entries
from .provider_target import canonical_target

__all__ = ["SHARED_TOKEN_LABEL", "ProviderCheck", "ProviderIdentity"]

_log = logging.getLogger("llmworker.server.registry")
_FLAG: Final = "--provider-tokens"
_ENTRY_KEYS: Final = (
    "token", "sha256", "label", "tools", "targets", "client_subject", "may_lock"
)  # fmt: skip
_EVERYTHING: Final = Globs(("*",))
SHARED_TOKEN_LABEL: Final = "registry-token"
"""The one identity of the simple mode (the shared token, or none on the private socket)."""


@dataclass(frozen=True, slots=True)
class ProviderIdentity:
    """A provider: its label, the tools it may register, the targets it may name, the
    client-certificate subject its token must come with and whether it may lock."""

    label: str
    tools: Globs
    targets: Globs
    client_subject: str | None = None
    may_lock: bool = False

    def tool_refusal(self, name: str) -> ErrorStatus | None:
        """Why this identity may not register ``name``, if it may not."""
        if self.tools.allows(name):
            return None
        shown = shorten(name)
        return ErrorStatus.of(
            Reason.PROVIDER_FORBIDDEN,
            f"the provider identity '{self.label}' may not register tool '{shown}' (its "
            f"tools: {shorten(', '.join(self.tools.patterns), 200)}); register it with the "
            "identity whose tools include it, or add it to this identity's tools in the "
            "server's --provider-tokens file",
            tool=shown,
        )

    def target_refusal(self, name: str, target: str) -> ErrorStatus | None:
        """Why this identity may not name ``target`` (refused before anything dials it)."""
        canonical = canonical_target(target)
        if self.targets.allows(canonical):
            return None
        return ErrorStatus.of(
            Reason.INVALID_REQUEST,
            f"tool '{shorten(name)}': the provider identity '{self.label}' may not name "
            f"target {printable(canonical, 200)!r} (its targets: "
            f"{shorten(', '.join(self.targets.patterns), 200)}); serve the tool at one of "
            "them, or add the target to this identity in the server's --provider-tokens file",
            tool=shorten(name),
        )


_SIMPLE: Final = ProviderIdentity(SHARED_TOKEN_LABEL, _EVERYTHING, _EVERYTHING, None, True)


class ProviderCheck:
    """Tells which provider identity a ToolRegistry request comes from: one of a
    ``--provider-tokens`` file (``reload()`` reads it again, keeping the identities in use
    when the new file cannot be used), or the shared token's one identity."""

    def __init__(self, *, shared_token: str | None = None, path: Path | None = None) -> None:
        self.path = path
        self._shared = f"Bearer {shared_token}".encode() if shared_token else None
        self._identities = _load(path) if path is not None else None

    def reload(self) -> bool:
        """Read the ``--provider-tokens`` file again; False (and logged) when it cannot be
        used."""
        if self.path is None:
            return True
        try:
            identities = _load(self.path)
        except AuthTokensError as error:
            _log.error("provider tokens not reloaded, the ones in use stay: %s", error)
            return False
        self._identities = identities
        _log.info("provider tokens reloaded from %s: %d providers", self.path, len(identities))
        return True

    def labels(self) -> set[str]:
        """The labels of the identities in force."""
        if self._identities is None:
            return {SHARED_TOKEN_LABEL}
        return {identity.label for identity in self._identities.entries()}

    def identify(self, context: Context) -> ProviderIdentity | ErrorStatus:
        """The identity of a request, or why it is refused (UNAUTHENTICATED)."""
        metadata = context.invocation_metadata() or ()
        if self._identities is None:
            return self._simple(metadata)
        presented = bearer(metadata)
        identity = None if presented is None else self._identities.find(presented)
        if identity is None:
            return ErrorStatus.of(
                Reason.UNAUTHENTICATED,
                "the ToolRegistry needs a provider token as 'authorization: Bearer <token>' "
                "metadata, one of the server's --provider-tokens file",
            )
        subject = identity.client_subject
        if subject is not None and subject not in client_subjects(context):
            return ErrorStatus.of(
                Reason.UNAUTHENTICATED,
                f"the provider token labelled '{identity.label}' is bound to a client "
                f"certificate ({printable(subject, 200)}), and this connection did not "
                "present it; connect with that certificate (mTLS)",
            )
        return identity

    def _simple(
        self, metadata: Iterable[tuple[str, str | bytes]]
    ) -> ProviderIdentity | ErrorStatus:
        if self._shared is None:
            return _SIMPLE  # the private socket, reachable by this user only
        presented = b""
        for key, value in metadata:
            if key == "authorization":
                presented = value.encode() if isinstance(value, str) else value
        if hmac.compare_digest(presented, self._shared):
            return _SIMPLE
        return ErrorStatus.of(
            Reason.UNAUTHENTICATED,
            "the ToolRegistry needs the server's token as 'authorization: Bearer <token>' metadata",
        )


def _load(path: Path) -> DigestTable[ProviderIdentity]:
    entries = read_entries(
        _FLAG,
        path,
        "providers",
        '{"providers": [{"token" or "sha256", "label", "tools", "targets"}, …]}',
    )
    identities: dict[bytes, ProviderIdentity] = {}
    labels: set[str] = set()
    for index, entry in enumerate(entries):
        reader = EntryReader(entry, f"{_FLAG} {path}: providers[{index}]", _ENTRY_KEYS)
        digest = reader.digest()
        label = reader.label(None)
        if label in labels:
            raise AuthTokensError(
                f"{reader.where}: label '{label}' is taken by another entry; a tool belongs "
                "to the label that registered it, so give each provider its own"
            )
        if digest in identities:
            raise AuthTokensError(
                f"{reader.where} repeats the token of '{identities[digest].label}'; give each "
                "provider its own token"
            )
        labels.add(label)
        identities[digest] = ProviderIdentity(
            label,
            Globs(reader.globs("tools", '["web_*"] or ["*"] for every tool')),
            Globs(reader.globs("targets", '["127.0.0.1:*", "unix:/run/llmworker/*.sock"]')),
            reader.subject(),
            reader.flag("may_lock"),
        )
    return DigestTable(identities)
