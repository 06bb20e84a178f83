"""What the ``--auth-tokens`` and ``--provider-tokens`` files share: a private JSON file of
entries, each a bearer token (or its SHA-256), a label, glob lists and optionally the
client-certificate subject the token must come with; and how a request's token and
certificate are read and matched.

A presented token's SHA-256 is compared with every known digest in constant time, so a file
may hold digests only; tokens are never logged.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Generic, TypeVar, cast

from ..errors import AuthTokensError
from .handlers import CallerContext

__all__ = [
    "OAUTH_LABEL_PREFIX",
    "DigestTable",
    "EntryReader",
    "Globs",
    "bearer",
    "client_subjects",
    "exposed_secret_file",
    "read_entries",
]

T = TypeVar("T")

_MIN_TOKEN_CHARS: Final = 16
_DIGEST: Final = re.compile(r"[0-9a-fA-F]{64}")
_LABEL: Final = re.compile(r"[\x21-\x7e]{1,64}")
OAUTH_LABEL_PREFIX: Final = "oauth:"
"""The labels of OAuth callers (``mcp_front.oauth``): no token file may use them."""
_MAX_REMEMBERED: Final = 4096


@dataclass(frozen=True, slots=True, eq=False)
class Globs:
    """Names matched by ``fnmatch`` globs, case-sensitive (answers remembered per name)."""

    patterns: tuple[str, ...]
    _regex: re.Pattern[str] = field(init=False, repr=False)
    _seen: dict[str, bool] = field(init=False, repr=False, default_factory=dict[str, bool])

    def __post_init__(self) -> None:
        joined = "|".join(f"(?:{fnmatch.translate(pattern)})" for pattern in self.patterns)
        object.__setattr__(self, "_regex", re.compile(joined))

    def allows(self, name: str) -> bool:
        """Whether ``name`` matches one of the patterns."""
        allowed = self._seen.get(name)
        if allowed is None:
            if len(self._seen) >= _MAX_REMEMBERED:
                self._seen.clear()
            allowed = self._seen[name] = self._regex.fullmatch(name) is not None
        return allowed


class DigestTable(Generic[T]):
    """Entries by the SHA-256 of their tokens; a lookup compares every digest in constant
    time."""

    def __init__(self, entries: Mapping[bytes, T]) -> None:
        self._entries = tuple(entries.items())

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[T]:
        """Every entry, in file order."""
        return [entry for _, entry in self._entries]

    def find(self, token: bytes) -> T | None:
        """The entry of ``token``, or None."""
        digest = hashlib.sha256(token).digest()
        found: T | None = None
        for known, entry in self._entries:  # every digest compared, in constant time
            if hmac.compare_digest(known, digest):
                found = entry
        return found


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


def read_entries(flag: str, path: Path, key: str, shape: str) -> list[object]:
    """The list under ``key`` of the private JSON file ``path``; ``AuthTokensError`` names
    what is wrong (``shape`` shows what is expected)."""
    exposed = exposed_secret_file(path)
    if exposed is not None:
        raise AuthTokensError(f"{flag} {exposed}")
    try:
        document = json.loads(path.read_bytes())
    except OSError as error:
        raise AuthTokensError(f"{flag} {path}: cannot be read ({error.strerror})") from None
    except ValueError as error:
        raise AuthTokensError(f"{flag} {path}: not JSON ({error})") from None
    entries = cast("dict[str, object]", document).get(key) if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise AuthTokensError(f"{flag} {path}: expected {shape}")
    return cast("list[object]", entries)


class EntryReader:
    """Reads the fields of one file entry, naming it (``where``) in every refusal."""

    def __init__(self, entry: object, where: str, keys: Iterable[str]) -> None:
        if not isinstance(entry, dict):
            raise AuthTokensError(f"{where}: expected an object")
        self.entry = cast("dict[str, object]", entry)
        self.where = where
        known = tuple(keys)
        unknown = sorted(str(key) for key in self.entry if key not in known)
        if unknown:
            raise AuthTokensError(
                f"{where}: unknown key(s) {', '.join(unknown)}; the keys are {', '.join(known)}"
            )

    def digest(self) -> bytes:
        """The SHA-256 of the entry's token, from ``token`` or ``sha256``."""
        where = self.where
        token, hexdigest = self.entry.get("token"), self.entry.get("sha256")
        if (token is None) == (hexdigest is None):
            raise AuthTokensError(f"{where}: give exactly one of token and sha256")
        if token is not None:
            if isinstance(token, str) and token != token.strip():
                raise AuthTokensError(
                    f"{where}: the token starts or ends with whitespace, which a presented "
                    "token never has (it is stripped): remove it"
                )
            if not isinstance(token, str) or len(token) < _MIN_TOKEN_CHARS:
                raise AuthTokensError(
                    f"{where}: a token must be a string of at least {_MIN_TOKEN_CHARS} "
                    "characters (random ones: a short token can be guessed)"
                )
            return hashlib.sha256(token.encode()).digest()
        if not isinstance(hexdigest, str) or not _DIGEST.fullmatch(hexdigest):
            raise AuthTokensError(
                f"{where}: sha256 must be 64 hex digits (e.g. from 'printf %s TOKEN | sha256sum')"
            )
        return bytes.fromhex(hexdigest)

    def label(self, default: str | None) -> str:
        """The entry's label (``default`` when absent; None: it is required)."""
        label = self.entry.get("label", default)
        if not isinstance(label, str) or not _LABEL.fullmatch(label):
            raise AuthTokensError(
                f"{self.where}: label must be 1-64 printable ASCII characters, no spaces"
            )
        if label.startswith(OAUTH_LABEL_PREFIX):
            raise AuthTokensError(
                f"{self.where}: labels beginning '{OAUTH_LABEL_PREFIX}' name the MCP front's "
                "OAuth callers (their sessions and paused batches); choose another label"
            )
        return label

    def globs(self, key: str, example: str, *, required: bool = True) -> tuple[str, ...]:
        """The non-empty list of globs under ``key`` (empty when absent and not required)."""
        value = self.entry.get(key)
        if value is None and not required:
            return ()
        patterns = tuple(cast("list[object]", value)) if isinstance(value, list) else ()
        if not patterns or not all(isinstance(pattern, str) and pattern for pattern in patterns):
            raise AuthTokensError(f"{self.where}: {key} must be a non-empty list, e.g. {example}")
        return cast("tuple[str, ...]", patterns)

    def subject(self) -> str | None:
        """The client-certificate subject the token must come with, if any."""
        subject = self.entry.get("client_subject")
        if subject is not None and (not isinstance(subject, str) or not subject):
            raise AuthTokensError(
                f"{self.where}: client_subject must be a certificate subject, e.g. CN=bot"
            )
        return subject

    def flag(self, key: str) -> bool:
        """The boolean under ``key`` (False when absent)."""
        value = self.entry.get(key, False)
        if not isinstance(value, bool):
            raise AuthTokensError(f"{self.where}: {key} must be true or false")
        return value


def bearer(metadata: Iterable[tuple[str, str | bytes]]) -> bytes | None:
    """The token of the request's ``authorization: Bearer <token>`` metadata, if any."""
    for key, value in metadata:
        if key == "authorization":
            text = value.encode() if isinstance(value, str) else value
            scheme, _, token = text.partition(b" ")
            return token.strip() if scheme.lower() == b"bearer" and token.strip() else None
    return None


def client_subjects(context: CallerContext) -> list[str]:
    """The client certificate's subject and common name, as gRPC reports them (empty
    without a verified client certificate)."""
    properties = context.auth_context()
    subjects = [value.decode(errors="replace") for value in properties.get("x509_subject", ())]
    for value in properties.get("x509_common_name", ()):
        subjects.append("CN=" + value.decode(errors="replace"))
    return subjects
