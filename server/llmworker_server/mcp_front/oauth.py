"""OAuth 2.0 access tokens at the MCP endpoint: this server as a resource server (RFC 9728
metadata, RFC 6750 challenges) accepting the JWTs its authorization server
(``--mcp-authorization-server``) signed with a key of its JWKS (``--mcp-jwks``), and mapping
the token's OAuth scopes to the tool-name globs they grant (``--mcp-oauth-scopes``)::

    {"scopes": {"tools:read": ["search_*", "get_*"], "tools:all": ["*"]},
     "resource": "https://mcp.example.com/mcp", "label_claim": "sub"}

``resource`` (the audience a token must name; default: the URL served) and ``label_claim``
(the claim naming the caller in logs; default ``sub``) are optional. Only asymmetric
signatures are accepted, and a token is never logged or echoed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final, TypeAlias, cast
from urllib.parse import urlsplit

import jwt

from llmworker import __version__
from llmworker._wire import ErrorStatus, Reason, message_of, printable

from ..config import is_loopback
from ..errors import ConfigError
from ..rpc.auth import Caller, Scope
from ..rpc.token_file import OAUTH_LABEL_PREFIX

__all__ = ["OAuthCallers", "OAuthSettings", "load_oauth_settings"]

_log = logging.getLogger("llmworker.server.mcp.oauth")
_ISSUER_FLAG: Final = "--mcp-authorization-server"
_JWKS_FLAG: Final = "--mcp-jwks"
_SCOPES_FLAG: Final = "--mcp-oauth-scopes"
_SCOPES_SHAPE: Final = '{"scopes": {"tools:read": ["search_*", "get_*"], "tools:all": ["*"]}}'
_SCOPES_KEYS: Final = ("scopes", "resource", "label_claim")
_ALGORITHMS: Final[Mapping[str, tuple[str, tuple[str | None, ...]]]] = {
    # alg: the kty and the crv values of the keys that may verify it (asymmetric only)
    "RS256": ("RSA", (None,)),
    "RS384": ("RSA", (None,)),
    "RS512": ("RSA", (None,)),
    "PS256": ("RSA", (None,)),
    "ES256": ("EC", ("P-256",)),
    "ES384": ("EC", ("P-384",)),
    "EdDSA": ("OKP", ("Ed25519", "Ed448")),
}
_WHY: Final[tuple[tuple[type[jwt.PyJWTError], str], ...]] = (
    # what follows "the access token" in the refusal of a token failing so (first match)
    (jwt.ExpiredSignatureError, "has expired; get a new token from {issuer}"),
    (jwt.ImmatureSignatureError, "is not valid yet (nbf or iat ahead); retry, or check clocks"),
    (jwt.InvalidAudienceError, "is for another resource; ask {issuer} for one for {audience}"),
    (jwt.InvalidIssuerError, "is not from {issuer}, the one issuer accepted here"),
    (jwt.InvalidSignatureError, "has a signature its key does not verify; get one from {issuer}"),
)
_NOT_VALID: Final = "is not valid ({error}); get an access token from {issuer}"
_LEEWAY_SECONDS: Final = 30
_MAX_TOKEN_CHARS: Final = 16 * 1024
_MAX_JWKS_BYTES: Final = 1024 * 1024
_FETCH_SECONDS: Final = 5.0
_REFRESH_SECONDS: Final = 60.0
_MAX_SCOPES_KEPT: Final = 1024
_SCOPE_TOKEN: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,128}")  # RFC 6749 scope-token
_NOT_QUOTABLE: Final = re.compile(r"[^\x20-\x7e]")

_Keys: TypeAlias = tuple[tuple[str | None, Mapping[str, jwt.PyJWK]], ...]
"""A JWKS's usable keys in its order: each key id with its key bound to each alg it fits."""


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    """Whose tokens are accepted (``authorization_server``: the issuer, compared with ``iss``
    exactly), the keys that verify them (``jwks``: a file, or an https URL), the tool globs
    each OAuth scope grants, the audience (``resource``; None: the URL served) and the claim
    naming the caller in logs."""

    authorization_server: str
    jwks: str
    scopes: Mapping[str, tuple[str, ...]]
    resource: str | None = None
    label_claim: str = "sub"


def load_oauth_settings(authorization_server: str, jwks: str, scopes_file: Path) -> OAuthSettings:
    """The settings the three flags give; ``ConfigError`` names the flag and the fix."""
    issuer = authorization_server
    problem = _url_problem(issuer) or ("it has a query" if urlsplit(issuer).query else None)
    if problem:
        raise ConfigError(
            f"{_ISSUER_FLAG} {printable(issuer, 200)}: {problem}; give the authorization "
            "server's issuer as its metadata names it, e.g. https://auth.example.com"
        )
    problem = (
        _url_problem(jwks) if "://" in jwks else None if Path(jwks).is_file() else "no such file"
    )
    if problem:
        raise ConfigError(
            f"{_JWKS_FLAG} {printable(jwks, 200)}: {problem}; give the path of the authorization "
            "server's JWKS, or its https:// URL (its jwks_uri)"
        )
    where = f"{_SCOPES_FLAG} {printable(str(scopes_file), 200)}"
    try:
        document = json.loads(scopes_file.read_bytes())
    except OSError as error:
        raise ConfigError(
            f"{where}: cannot be read ({error.strerror}); give a file like {_SCOPES_SHAPE}"
        ) from None
    except (ValueError, RecursionError) as error:
        raise ConfigError(f"{where}: not JSON ({error}); write it like {_SCOPES_SHAPE}") from None
    fields = cast("dict[str, object]", document) if isinstance(document, dict) else {}
    unknown = sorted(key for key in fields if key not in _SCOPES_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {printable(', '.join(unknown), 200)}; "
            f"the keys are {', '.join(_SCOPES_KEYS)}"
        )
    table = fields.get("scopes")
    if not isinstance(table, dict) or not table:
        raise ConfigError(
            f"{where}: map each OAuth scope to the tool globs it grants: {_SCOPES_SHAPE}"
        )
    scopes: dict[str, tuple[str, ...]] = {}
    for name, globs in cast("dict[str, object]", table).items():
        patterns = tuple(cast("list[object]", globs)) if isinstance(globs, list) else ()
        if not _SCOPE_TOKEN.fullmatch(name):
            raise ConfigError(
                f"{where}: {printable(repr(name))} is not an OAuth scope (1-128 printable ASCII "
                "characters, no spaces, quotes or backslashes); rename it"
            )
        if not patterns or not all(isinstance(glob, str) and glob for glob in patterns):
            raise ConfigError(
                f"{where}: scope {name} must grant a non-empty list of tool-name globs, e.g. "
                '["search_*", "get_*"] or ["*"]'
            )
        scopes[name] = cast("tuple[str, ...]", patterns)
    resource, label_claim = fields.get("resource"), fields.get("label_claim", "sub")
    url = resource if isinstance(resource, str) or resource is None else ""  # "": not a URL
    problem = None if url is None else _url_problem(url)
    if problem:
        raise ConfigError(
            f"{where}: resource {printable(str(resource), 200)}: {problem}; give the URL MCP "
            "clients connect to, e.g. https://mcp.example.com/mcp"
        )
    if not isinstance(label_claim, str) or not label_claim:
        raise ConfigError(f'{where}: label_claim must name a claim, e.g. "sub" or "client_id"')
    return OAuthSettings(issuer, jwks, MappingProxyType(scopes), url, label_claim)


class OAuthCallers:
    """The callers of the MCP endpoint by their OAuth access tokens, checked with the keys
    ``start()`` loads; ``resource`` is the URL served (the audience unless the settings
    name one)."""

    def __init__(self, settings: OAuthSettings, resource: str) -> None:
        self.settings = settings
        self.audience = settings.resource or resource
        self._keys: _Keys = ()
        self._scopes: dict[tuple[str, ...], Scope] = {}
        self._refresh_asked = float("-inf")
        self._refreshing: asyncio.Task[None] | None = None
        send = f"send 'Authorization: Bearer <token>' with an access token from {self._issuer}"
        self._no_token = _refused(f"this MCP endpoint needs an OAuth access token: {send}")
        self._not_bearer = _refused(f"the Authorization header is not of the Bearer scheme; {send}")

    @property
    def _issuer(self) -> str:
        return self.settings.authorization_server

    async def start(self) -> None:
        """Load the JWKS; ``ConfigError`` says why it cannot be used."""
        self._keys = await _load_keys(self.settings.jwks)

    async def refresh_keys(self) -> None:
        """Read the JWKS again (keys rotate); the keys in use stay when it cannot be used."""
        try:
            self._keys = await _load_keys(self.settings.jwks)
        except ConfigError as error:
            _log.error("OAuth signing keys not refreshed, the ones in use stay: %s", error)
            return
        _log.info("OAuth signing keys read from %s: %d keys", self.settings.jwks, len(self._keys))

    def caller(self, authorization: str | None) -> Caller | ErrorStatus:
        """The caller an ``Authorization`` header value stands for, or why it is refused
        (UNAUTHENTICATED). It never waits: a token of an unknown key id is refused now, and
        the JWKS is read again in the background (at most once a minute)."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if scheme and scheme.lower() != "bearer":
            return self._not_bearer
        if not token:
            return self._no_token
        if len(token) > _MAX_TOKEN_CHARS:
            return _refused(
                f"the bearer token is over {_MAX_TOKEN_CHARS} characters, more than an access "
                f"token has; get one from {self._issuer}"
            )
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return _refused(
                f"the bearer token is not a JWT; get an access token from {self._issuer}"
            )
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in _ALGORITHMS:
            return _refused(
                f"the access token's alg {printable(repr(alg))} is refused: only "
                f"{', '.join(_ALGORITHMS)} (asymmetric) are; have {self._issuer} use one of them"
            )
        key = self._key(header.get("kid"), alg)
        if isinstance(key, ErrorStatus):
            return key
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[key.algorithm_name],
                audience=self.audience,
                issuer=self._issuer,
                leeway=_LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud"], "enforce_minimum_key_length": True},
            )
        except jwt.PyJWTError as error:
            why = next((text for kind, text in _WHY if isinstance(error, kind)), _NOT_VALID)
            shown = printable(message_of(error), 200)
            why = why.format(issuer=self._issuer, audience=self.audience, error=shown)
            return _refused(f"the access token {why}")
        return self._caller_of(claims)

    def metadata(self) -> dict[str, object]:
        """The endpoint's Protected Resource Metadata (RFC 9728)."""
        return {
            "resource": self.audience,
            "authorization_servers": [self._issuer],
            "scopes_supported": sorted(self.settings.scopes),
            "bearer_methods_supported": ["header"],
            "resource_name": "llmworker",
        }

    def challenge(self, refusal: ErrorStatus | None, metadata_url: str) -> str:
        """The ``WWW-Authenticate`` value of a 401: where the resource metadata is, and why
        a presented token was refused (RFC 6750) or, without one, the scopes to ask for."""
        value = f'Bearer resource_metadata="{_quoted(metadata_url)}"'
        if refusal is None or refusal in (self._no_token, self._not_bearer):
            return f'{value}, scope="{" ".join(sorted(self.settings.scopes))}"'
        return f'{value}, error="invalid_token", error_description="{_quoted(refusal.message)}"'

    def _key(self, kid: object, alg: str) -> jwt.PyJWK | ErrorStatus:
        """The key that verifies ``alg`` under ``kid`` (no kid: the JWKS's only key)."""
        keys = self._keys
        found = keys if kid is None and len(keys) == 1 else [k for k in keys if k[0] == kid]
        if not found and kid is None:
            return _refused(
                f"the access token names no key (kid) and the JWKS holds {len(keys)} keys; "
                f"have {self._issuer} put the kid in its tokens' header"
            )
        if not found:
            self._refresh_soon()
            return _refused(
                f"the access token's key id {printable(repr(kid))} is not in the JWKS of "
                f"{self._issuer}; if it rotated its keys, retry in a minute (they are read again)"
            )
        bound = next((key[alg] for _, key in found if alg in key), None)
        return bound or _refused(
            f"the access token's alg {alg} does not fit its key {printable(repr(kid))} (of "
            f"another type or alg); get a new token from {self._issuer}"
        )

    def _refresh_soon(self) -> None:
        """Read the JWKS again on the running loop, unless that was asked within a minute."""
        now = time.monotonic()
        if now - self._refresh_asked < _REFRESH_SECONDS:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._refresh_asked = now
        self._refreshing = loop.create_task(self.refresh_keys())

    def _caller_of(self, claims: Mapping[str, object]) -> Caller | ErrorStatus:
        settings = self.settings
        granted = claims.get("scope", claims.get("scp"))  # a space-separated string or a list
        names = granted.split() if isinstance(granted, str) else []
        if isinstance(granted, list):
            names = [name for name in cast("list[object]", granted) if isinstance(name, str)]
        known = [name for name in names if name in settings.scopes]
        if not known:
            return _refused(
                "the access token grants none of this server's scopes (it has: "
                f"{printable(' '.join(names), 200) or 'none'}); ask {self._issuer} for one "
                f"of {', '.join(sorted(settings.scopes))}"
            )
        label = claims.get(settings.label_claim)
        if not isinstance(label, str) or not 0 < len(label) <= 256 or not label.isprintable():
            return _refused(
                f"the access token has no usable {settings.label_claim} claim (1-256 printable "
                f"characters naming the caller); ask {self._issuer} for one"
            )
        globs = tuple(sorted({glob for name in known for glob in settings.scopes[name]}))
        scope = self._scopes.get(globs)
        if scope is None:
            if len(self._scopes) >= _MAX_SCOPES_KEPT:
                self._scopes.clear()
            scope = self._scopes[globs] = Scope(globs)
        return Caller(f"{OAUTH_LABEL_PREFIX}{label}", scope)


def _read(source: str) -> bytes:
    """The document at ``source`` (a path or a URL), cut after ``_MAX_JWKS_BYTES`` + 1."""
    if "://" not in source:
        with Path(source).open("rb") as file:
            return file.read(_MAX_JWKS_BYTES + 1)
    headers = {"Accept": "application/json", "User-Agent": f"llmworker/{__version__}"}
    try:
        with urllib.request.urlopen(
            urllib.request.Request(source, headers=headers), timeout=_FETCH_SECONDS
        ) as response:
            data: bytes = response.read(_MAX_JWKS_BYTES + 1)
            final: str = response.geturl()  # where redirects led
    except urllib.error.HTTPError as error:
        error.close()  # its response, else left open for the garbage collector
        raise
    problem = _url_problem(final)
    if problem:
        raise OSError(f"redirected to {printable(final, 200)}: {problem}")
    return data


async def _load_keys(source: str) -> _Keys:
    """The usable keys of the JWKS at ``source``; ``ConfigError`` says why there are none."""
    where = f"{_JWKS_FLAG} {printable(source, 200)}"
    try:
        data = await asyncio.wait_for(asyncio.to_thread(_read, source), _FETCH_SECONDS)
        document = json.loads(data) if len(data) <= _MAX_JWKS_BYTES else None
    except TimeoutError:
        raise ConfigError(f"{where}: no answer in {_FETCH_SECONDS:g} s; check the URL") from None
    except OSError as error:
        raise ConfigError(
            f"{where}: cannot be read ({printable(message_of(error), 200)}); give the "
            "authorization server's JWKS file or its jwks_uri"
        ) from None
    except (ValueError, RecursionError) as error:
        raise ConfigError(f'{where}: not JSON ({error}); expected {{"keys": [...]}}') from None
    entries = (
        cast("dict[str, object]", document).get("keys") if isinstance(document, dict) else None
    )
    if not isinstance(entries, list):
        raise ConfigError(f'{where}: not a JWKS (of at most 1 MiB): {{"keys": [{{"kty": …}}]}}')
    keys: list[tuple[str | None, Mapping[str, jwt.PyJWK]]] = []
    for entry in cast("list[object]", entries):
        jwk = cast("dict[str, object]", entry) if isinstance(entry, dict) else {}
        if "d" in jwk or "k" in jwk:
            raise ConfigError(
                f"{where}: holds private or secret key material (a 'd' or 'k' member); "
                "give the authorization server's public keys only"
            )
        kid = jwk.get("kid")
        if jwk.get("use", "sig") != "sig" or not (kid is None or isinstance(kid, str)):
            continue
        bound: dict[str, jwt.PyJWK] = {}
        for alg, (kty, curves) in _ALGORITHMS.items():
            if jwk.get("kty") == kty and jwk.get("alg", alg) == alg and jwk.get("crv") in curves:
                try:
                    bound[alg] = jwt.PyJWK(jwk, alg)
                except jwt.PyJWTError as error:
                    _log.warning("%s: key %r not usable for %s: %s", where, kid, alg, error)
        if bound:
            keys.append((kid, bound))
    if not keys:
        raise ConfigError(
            f"{where}: no usable signature key; the JWKS must hold RSA, EC (P-256, P-384) or "
            f"Ed25519 public keys for {', '.join(_ALGORITHMS)}"
        )
    return tuple(keys)


def _url_problem(value: str) -> str | None:
    """Why ``value`` is not an https URL (http: for a loopback host only), or None."""
    try:
        parts = urlsplit(value)
        host, _ = parts.hostname, parts.port  # a port that is no number raises here
    except ValueError:
        return "not a URL"
    if parts.scheme not in ("https", "http") or not host or parts.username is not None:
        return "not an https:// URL"
    if parts.fragment or not value.isprintable() or " " in value:
        return "a URL without fragment or spaces is expected"
    if parts.scheme == "http" and not is_loopback(host):
        return "plaintext http:// is for loopback hosts only (tokens and keys could be forged)"
    return None


def _refused(message: str) -> ErrorStatus:
    return ErrorStatus.of(Reason.UNAUTHENTICATED, message)


def _quoted(text: str) -> str:
    """``text`` fit for a quoted header parameter (RFC 6750 error_description: printable
    ASCII without quotes or backslashes), at most 500 characters."""
    text = text.replace('"', "'").replace("\\", "/").replace("\u2026", "...")
    return _NOT_QUOTABLE.sub("?", text)[:500]
