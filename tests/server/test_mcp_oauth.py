"""OAuth access tokens at the MCP endpoint (``mcp_front.oauth``): JWTs signed with keys made
here, checked against a JWKS file or a JWKS served over HTTP on 127.0.0.1 by the test;
refusals that say what is wrong, the resource metadata and the ``WWW-Authenticate``
challenge, the settings the flags give, and key rotation."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from llmworker._wire import ErrorStatus, Reason
from llmworker_server.errors import ConfigError
from llmworker_server.mcp_front.oauth import OAuthCallers, OAuthSettings, load_oauth_settings
from llmworker_server.rpc.auth import Caller

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey

ISSUER = "https://auth.example.com"
RESOURCE = "https://127.0.0.1:8443/mcp"
SCOPES = {"tools:read": ("search_*", "get_*"), "tools:kv": ("kv_*", "get_*"), "tools:all": ("*",)}
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
EC384_KEY = ec.generate_private_key(ec.SECP384R1())
ED_KEY = ed25519.Ed25519PrivateKey.generate()
DROP = object()
"""A claim value meaning: leave the claim out."""


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def public_jwk(key: PrivateKey, kid: str | None, **members: str) -> dict[str, object]:
    """The JWK of ``key``'s public half, built from its numbers (not by the code tested)."""
    public = key.public_key()
    jwk: dict[str, object]
    if isinstance(public, rsa.RSAPublicKey):
        numbers = public.public_numbers()
        n, e = numbers.n, numbers.e
        jwk = {
            "kty": "RSA",
            "n": b64(n.to_bytes((n.bit_length() + 7) // 8)),
            "e": b64(e.to_bytes(3)),
        }
    elif isinstance(public, ec.EllipticCurvePublicKey):
        size = (public.curve.key_size + 7) // 8
        point = public.public_numbers()
        crv = {"secp256r1": "P-256", "secp384r1": "P-384"}[public.curve.name]
        jwk = {
            "kty": "EC",
            "crv": crv,
            "x": b64(point.x.to_bytes(size)),
            "y": b64(point.y.to_bytes(size)),
        }
    else:
        raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        jwk = {"kty": "OKP", "crv": "Ed25519", "x": b64(raw)}
    if kid is not None:
        jwk["kid"] = kid
    return {**jwk, "use": "sig", **members}


def claims(**overrides: object) -> dict[str, object]:
    now = int(time.time())
    values: dict[str, object] = {
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "alice",
        "iat": now,
        "exp": now + 300,
        "scope": "tools:read",
    }
    values.update(overrides)
    return {name: value for name, value in values.items() if value is not DROP}


def token(
    key: PrivateKey = RSA_KEY, alg: str = "RS256", kid: str | None = "rsa-1", **overrides: object
) -> str:
    return jwt.encode(
        claims(**overrides), key, algorithm=alg, headers={"kid": kid} if kid else None
    )


def unsigned(header: dict[str, object], secret: bytes | None = None, **overrides: object) -> str:
    """A JWT made by hand: no signature, or an HMAC-SHA256 one with ``secret``."""
    signing_input = (
        f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims(**overrides)).encode())}"
    )
    if secret is None:
        return signing_input + "."
    return f"{signing_input}.{b64(hmac.digest(secret, signing_input.encode(), hashlib.sha256))}"


def write_jwks(path: Path, *keys: dict[str, object]) -> Path:
    path.write_text(json.dumps({"keys": list(keys)}))
    return path


async def started(
    jwks: Path | str, resource: str | None = None, label_claim: str = "sub"
) -> OAuthCallers:
    callers = OAuthCallers(
        OAuthSettings(ISSUER, str(jwks), SCOPES, resource, label_claim), RESOURCE
    )
    await callers.start()
    return callers


def accepted(result: Caller | ErrorStatus) -> Caller:
    assert isinstance(result, Caller), result
    return result


def refused(result: Caller | ErrorStatus) -> str:
    assert isinstance(result, ErrorStatus), result
    assert result.reason == Reason.UNAUTHENTICATED
    return result.message


@pytest.fixture
async def callers(tmp_path: Path) -> OAuthCallers:
    """Callers checked with a JWKS file of an RSA key (rsa-1) and an EC P-256 key (ec-1)."""
    return await started(
        write_jwks(tmp_path / "jwks.json", public_jwk(RSA_KEY, "rsa-1"), public_jwk(EC_KEY, "ec-1"))
    )


class JwksServer:
    """A JWKS served over HTTP on 127.0.0.1 (a port of its own), counting its requests."""

    def __init__(self, *keys: dict[str, object]) -> None:
        self.status = 200
        self.body = json.dumps({"keys": list(keys)}).encode()
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests += 1
                self.send_response(owner.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(owner.body)))
                self.end_headers()
                self.wfile.write(owner.body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/.well-known/jwks.json"
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,))
        self._thread.start()

    def serve(self, *keys: dict[str, object]) -> None:
        self.body = json.dumps({"keys": list(keys)}).encode()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)
        assert not self._thread.is_alive()


@pytest.fixture
def jwks_server() -> Iterator[JwksServer]:
    server = JwksServer(public_jwk(RSA_KEY, "rsa-1"))
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize(
    ("key", "alg"),
    [
        (RSA_KEY, "RS256"),
        (RSA_KEY, "RS384"),
        (RSA_KEY, "RS512"),
        (RSA_KEY, "PS256"),
        (EC_KEY, "ES256"),
        (EC384_KEY, "ES384"),
        (ED_KEY, "EdDSA"),
    ],
)
async def test_a_valid_token_is_its_callers_label_and_scope(
    tmp_path: Path, key: PrivateKey, alg: str
) -> None:
    callers = await started(write_jwks(tmp_path / "jwks.json", public_jwk(key, "k1")))
    caller = accepted(callers.caller(f"Bearer {token(key, alg, 'k1', sub='alice@example.com')}"))
    assert caller.label == "oauth:alice@example.com"
    assert caller.scope.patterns == ("get_*", "search_*")
    assert caller.scope.allows("search_docs")
    assert caller.scope.allows("get_page")
    assert not caller.scope.allows("kv_set")


async def test_scopes_grant_the_union_of_their_globs_from_scope_or_scp(
    callers: OAuthCallers,
) -> None:
    spaced = accepted(callers.caller(f"Bearer {token(scope='tools:read openid tools:kv')}"))
    assert spaced.scope.patterns == ("get_*", "kv_*", "search_*")
    listed = token(EC_KEY, "ES256", "ec-1", scope=DROP, scp=["tools:kv", "profile"])
    assert accepted(callers.caller(f"bearer {listed}")).scope.patterns == ("get_*", "kv_*")
    everything = accepted(callers.caller(f"Bearer {token(scope='tools:all tools:read')}"))
    assert everything.scope.allows("kv_delete")


async def test_a_token_granting_no_known_scope_is_refused(callers: OAuthCallers) -> None:
    message = refused(callers.caller(f"Bearer {token(scope='openid profile')}"))
    assert "none of this server's scopes (it has: openid profile)" in message
    assert "tools:all, tools:kv, tools:read" in message
    assert "it has: none" in refused(callers.caller(f"Bearer {token(scope=DROP)}"))


async def test_time_claims_are_checked_with_30_s_leeway(callers: OAuthCallers) -> None:
    now = int(time.time())
    expired = refused(callers.caller(f"Bearer {token(exp=now - 120)}"))
    assert f"has expired; get a new token from {ISSUER}" in expired
    accepted(callers.caller(f"Bearer {token(exp=now - 10)}"))
    assert "not valid yet" in refused(callers.caller(f"Bearer {token(nbf=now + 120)}"))
    assert "not valid yet" in refused(callers.caller(f"Bearer {token(iat=now + 120)}"))
    accepted(callers.caller(f"Bearer {token(nbf=now + 10)}"))


@pytest.mark.parametrize("claim", ["exp", "iss", "aud"])
async def test_a_token_without_a_required_claim_is_refused(
    callers: OAuthCallers, claim: str
) -> None:
    lacking = jwt.encode(claims(**{claim: DROP}), RSA_KEY, "RS256", headers={"kid": "rsa-1"})
    message = refused(callers.caller(f"Bearer {lacking}"))
    assert f'Token is missing the "{claim}" claim' in message


async def test_the_issuer_must_match_exactly(callers: OAuthCallers) -> None:
    for issuer in ("https://evil.example.com", f"{ISSUER}/"):
        message = refused(callers.caller(f"Bearer {token(iss=issuer)}"))
        assert f"is not from {ISSUER}, the one issuer accepted here" in message


async def test_the_audience_must_include_the_resource(
    callers: OAuthCallers, tmp_path: Path
) -> None:
    message = refused(callers.caller(f"Bearer {token(aud='https://other.example.com/mcp')}"))
    assert f"ask {ISSUER} for one for {RESOURCE}" in message
    accepted(callers.caller(f"Bearer {token(aud=['https://other.example.com', RESOURCE])}"))
    named = await started(
        write_jwks(tmp_path / "named.json", public_jwk(RSA_KEY, "rsa-1")),
        resource="https://mcp.example.com/mcp",
    )
    assert "https://mcp.example.com/mcp" in refused(named.caller(f"Bearer {token()}"))
    accepted(named.caller(f"Bearer {token(aud='https://mcp.example.com/mcp')}"))


async def test_a_signature_by_another_key_is_refused(callers: OAuthCallers) -> None:
    message = refused(callers.caller(f"Bearer {token(OTHER_RSA_KEY)}"))
    assert "has a signature its key does not verify" in message


async def test_an_unknown_key_id_is_refused(callers: OAuthCallers) -> None:
    message = refused(callers.caller(f"Bearer {token(kid='rotated-9')}"))
    assert f"key id 'rotated-9' is not in the JWKS of {ISSUER}" in message


async def test_a_token_without_kid_needs_a_jwks_of_one_key(
    callers: OAuthCallers, tmp_path: Path
) -> None:
    assert "names no key (kid)" in refused(callers.caller(f"Bearer {token(kid=None)}"))
    single = await started(write_jwks(tmp_path / "one.json", public_jwk(EC_KEY, None)))
    accepted(single.caller(f"Bearer {token(EC_KEY, 'ES256', None)}"))


async def test_unsigned_and_hmac_tokens_are_refused(callers: OAuthCallers) -> None:
    for alg in ("none", "None"):
        message = refused(callers.caller(f"Bearer {unsigned({'alg': alg, 'kid': 'rsa-1'})}"))
        assert f"alg '{alg}' is refused" in message
    # the classic confusion: the RSA public key (PEM) as the HMAC secret
    pem = RSA_KEY.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    forged = unsigned({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}, pem)
    assert "alg 'HS256' is refused" in refused(callers.caller(f"Bearer {forged}"))
    assert "is refused" in refused(callers.caller(f"Bearer {unsigned({'kid': 'rsa-1'})}"))


async def test_an_alg_that_does_not_fit_the_key_is_refused(
    callers: OAuthCallers, tmp_path: Path
) -> None:
    # RS256 claimed for the EC key's kid (and signed with RSA)
    message = refused(callers.caller(f"Bearer {token(RSA_KEY, 'RS256', 'ec-1')}"))
    assert "alg RS256 does not fit its key 'ec-1'" in message
    # a JWK with alg RS256 does not verify PS256, though both are RSA
    pinned = await started(
        write_jwks(tmp_path / "pinned.json", public_jwk(RSA_KEY, "r", alg="RS256"))
    )
    assert "does not fit" in refused(pinned.caller(f"Bearer {token(RSA_KEY, 'PS256', 'r')}"))
    accepted(pinned.caller(f"Bearer {token(RSA_KEY, 'RS256', 'r')}"))


@pytest.mark.parametrize(
    ("authorization", "expected"),
    [
        (None, "needs an OAuth access token"),
        ("", "needs an OAuth access token"),
        ("Bearer", "needs an OAuth access token"),
        ("Bearer   ", "needs an OAuth access token"),
        ("Basic YWxpY2U6c2VjcmV0", "not of the Bearer scheme"),
        ("Bearer not-a-jwt", "not a JWT"),
        ("Bearer a.b.c", "not a JWT"),
        ("Bearer " + "a" * (16 * 1024 + 1), "over 16384 characters"),
    ],
    ids=["none", "empty", "bearer", "bearer-spaces", "basic", "garbage", "not-base64", "oversize"],
)
async def test_missing_and_malformed_tokens_are_refused(
    callers: OAuthCallers, authorization: str | None, expected: str
) -> None:
    message = refused(callers.caller(authorization))
    assert expected in message
    assert "send 'Authorization: Bearer <token>'" in message or ISSUER in message


async def test_a_refusal_never_echoes_the_token(callers: OAuthCallers) -> None:
    now = int(time.time())
    for presented in (
        token(exp=now - 120),
        token(OTHER_RSA_KEY),
        token(scope="nothing-known"),
        token(kid="unknown"),
        token(iss="https://evil.example.com"),
        "x" * 20_000,
    ):
        message = refused(callers.caller(f"Bearer {presented}"))
        assert presented not in message
        assert presented.rsplit(".", 1)[-1] not in message


async def test_the_label_comes_from_the_label_claim(tmp_path: Path) -> None:
    callers = await started(
        write_jwks(tmp_path / "jwks.json", public_jwk(RSA_KEY, "rsa-1")), label_claim="client_id"
    )
    assert accepted(callers.caller(f"Bearer {token(client_id='agent-7')}")).label == "oauth:agent-7"
    assert "no usable client_id claim" in refused(callers.caller(f"Bearer {token()}"))
    two_lines = token(client_id="agent\nX-Forged: 1")
    assert "no usable client_id claim" in refused(callers.caller(f"Bearer {two_lines}"))


async def test_the_metadata_describes_the_protected_resource(callers: OAuthCallers) -> None:
    assert callers.metadata() == {
        "resource": RESOURCE,
        "authorization_servers": [ISSUER],
        "scopes_supported": ["tools:all", "tools:kv", "tools:read"],
        "bearer_methods_supported": ["header"],
        "resource_name": "llmworker",
    }


async def test_the_challenge_points_at_the_metadata(callers: OAuthCallers) -> None:
    url = "https://127.0.0.1:8443/.well-known/oauth-protected-resource/mcp"
    asked = f'Bearer resource_metadata="{url}", scope="tools:all tools:kv tools:read"'
    assert callers.challenge(None, url) == asked
    for authorization in (None, "Bearer", "Basic YWxpY2U6c2VjcmV0"):
        refusal = callers.caller(authorization)
        assert isinstance(refusal, ErrorStatus)
        assert callers.challenge(refusal, url) == asked
    expired = callers.caller(f"Bearer {token(exp=int(time.time()) - 120)}")
    assert isinstance(expired, ErrorStatus)
    assert callers.challenge(expired, url) == (
        f'Bearer resource_metadata="{url}", error="invalid_token", '
        f'error_description="the access token has expired; get a new token from {ISSUER}"'
    )


async def test_the_challenge_description_is_a_safe_quoted_string(callers: OAuthCallers) -> None:
    hostile = ErrorStatus.of(Reason.UNAUTHENTICATED, 'a "quoted" \\ back\r\nX-Evil: 1\x00 ü')
    value = callers.challenge(hostile, 'https://h/"x"')
    assert value.startswith('Bearer resource_metadata="https://h/\'x\'", error="invalid_token"')
    description = value.split('error_description="', 1)[1]
    assert description.endswith('"')
    inner = description[:-1]
    assert '"' not in inner
    assert "\\" not in inner
    assert all(" " <= character <= "~" for character in inner)
    assert inner.startswith("a 'quoted' / back??X-Evil: 1? ?")


async def test_a_jwks_url_is_fetched(jwks_server: JwksServer) -> None:
    callers = await started(jwks_server.url)
    accepted(callers.caller(f"Bearer {token()}"))
    assert jwks_server.requests == 1


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (500, b"{}", "HTTP Error 500"),
        (404, b"not found", "HTTP Error 404"),
        (200, b"<html>", "not JSON"),
        (200, b'{"keys": "none"}', "not a JWKS"),
        (200, b'{"keys": []}', "no usable signature key"),
    ],
)
async def test_a_jwks_url_that_fails_is_a_config_error(
    jwks_server: JwksServer, status: int, body: bytes, expected: str
) -> None:
    jwks_server.status, jwks_server.body = status, body
    with pytest.raises(ConfigError, match="--mcp-jwks") as raised:
        await started(jwks_server.url)
    assert expected in str(raised.value)


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ([{"kty": "oct", "k": "c2VjcmV0", "kid": "h"}], "private or secret key material"),
        ([{**public_jwk(RSA_KEY, "r"), "d": "AQAB"}], "private or secret key material"),
        ([public_jwk(RSA_KEY, "r", use="enc")], "no usable signature key"),
        ([public_jwk(RSA_KEY, "r", alg="HS256")], "no usable signature key"),
        ([{"kty": "RSA", "kid": "r", "n": "!!", "e": "AQAB"}], "no usable signature key"),
        ([{"kty": "EC", "crv": "P-521", "x": "AA", "y": "AA"}], "no usable signature key"),
    ],
)
async def test_a_jwks_without_usable_public_keys_is_a_config_error(
    tmp_path: Path, keys: list[dict[str, object]], expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected):
        await started(write_jwks(tmp_path / "jwks.json", *keys))


async def test_a_jwks_file_that_is_not_json_or_gone_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text("{")
    with pytest.raises(ConfigError, match=r"--mcp-jwks .*: not JSON"):
        await started(path)
    with pytest.raises(ConfigError, match=r"--mcp-jwks .*: cannot be read"):
        await started(tmp_path / "gone.json")


async def test_refresh_keys_picks_up_a_rotated_key(tmp_path: Path) -> None:
    path = write_jwks(tmp_path / "jwks.json", public_jwk(RSA_KEY, "rsa-1"))
    callers = await started(path)
    rotated = f"Bearer {token(EC_KEY, 'ES256', 'ec-2')}"
    assert "is not in the JWKS" in refused(callers.caller(rotated))
    write_jwks(path, public_jwk(RSA_KEY, "rsa-1"), public_jwk(EC_KEY, "ec-2"))
    await callers.refresh_keys()
    accepted(callers.caller(rotated))
    accepted(callers.caller(f"Bearer {token()}"))


async def test_a_jwks_that_cannot_be_refreshed_keeps_the_keys_in_use(
    jwks_server: JwksServer, caplog: pytest.LogCaptureFixture
) -> None:
    callers = await started(jwks_server.url)
    jwks_server.status = 503
    await callers.refresh_keys()
    assert "OAuth signing keys not refreshed" in caplog.text
    accepted(callers.caller(f"Bearer {token()}"))


async def test_an_unknown_key_id_reads_the_jwks_again_at_most_once_a_minute(
    jwks_server: JwksServer,
) -> None:
    callers = await started(jwks_server.url)
    jwks_server.serve(public_jwk(RSA_KEY, "rsa-1"), public_jwk(ED_KEY, "ed-2"))
    rotated = f"Bearer {token(ED_KEY, 'EdDSA', 'ed-2')}"
    assert "is not in the JWKS" in refused(callers.caller(rotated))  # and refreshes, not waiting

    async def until_accepted() -> Caller:
        while True:
            result = callers.caller(rotated)
            if isinstance(result, Caller):
                return result
            await asyncio.sleep(0.01)

    caller = await asyncio.wait_for(until_accepted(), timeout=5)
    assert caller.label == "oauth:alice"
    assert jwks_server.requests == 2
    for kid in ("ed-3", "ed-4", "ed-5"):
        refused(callers.caller(f"Bearer {token(ED_KEY, 'EdDSA', kid)}"))
    await asyncio.sleep(0.2)
    assert jwks_server.requests == 2


def test_an_unknown_key_id_outside_a_loop_is_refused_without_reading(tmp_path: Path) -> None:
    callers = asyncio.run(started(write_jwks(tmp_path / "jwks.json", public_jwk(RSA_KEY, "a"))))
    assert "is not in the JWKS" in refused(callers.caller(f"Bearer {token(kid='b')}"))


def write_scopes(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document))
    return path


def test_settings_come_from_the_flags(tmp_path: Path) -> None:
    jwks = write_jwks(tmp_path / "jwks.json", public_jwk(RSA_KEY, "rsa-1"))
    scopes = write_scopes(
        tmp_path / "scopes.json", {"scopes": {"tools:read": ["search_*", "get_*"]}}
    )
    settings = load_oauth_settings(ISSUER, str(jwks), scopes)
    assert settings == OAuthSettings(ISSUER, str(jwks), {"tools:read": ("search_*", "get_*")})
    full = write_scopes(
        tmp_path / "full.json",
        {
            "scopes": {"tools:all": ["*"]},
            "resource": "https://mcp.example.com/mcp",
            "label_claim": "client_id",
        },
    )
    loopback = load_oauth_settings("http://127.0.0.1:9000/realms/x", "https://a.example/jwks", full)
    assert loopback.resource == "https://mcp.example.com/mcp"
    assert loopback.label_claim == "client_id"
    assert dict(loopback.scopes) == {"tools:all": ("*",)}


@pytest.mark.parametrize(
    ("issuer", "jwks", "expected"),
    [
        (
            "auth.example.com",
            "",
            "--mcp-authorization-server auth.example.com: not an https:// URL",
        ),
        ("http://auth.example.com", "", "--mcp-authorization-server .*: plaintext http:// is"),
        ("https://auth.example.com/?tenant=1", "", "--mcp-authorization-server .*: it has a query"),
        (
            "https://auth.example.com/#x",
            "",
            "--mcp-authorization-server .*: a URL without fragment",
        ),
        ("https://u:p@auth.example.com", "", "--mcp-authorization-server .*: not an https:// URL"),
        ("https://auth.example.com:99999", "", "--mcp-authorization-server .*: not a URL"),
        (ISSUER, "http://keys.example.com/jwks", "--mcp-jwks .*: plaintext http:// is"),
        (ISSUER, "ftp://keys.example.com/jwks", "--mcp-jwks .*: not an https:// URL"),
        (ISSUER, "missing.json", "--mcp-jwks missing.json: no such file; give the path"),
    ],
)
def test_bad_urls_name_their_flag(tmp_path: Path, issuer: str, jwks: str, expected: str) -> None:
    scopes = write_scopes(tmp_path / "scopes.json", {"scopes": {"tools:all": ["*"]}})
    with pytest.raises(ConfigError, match=expected):
        load_oauth_settings(issuer, jwks or "https://auth.example.com/jwks", scopes)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ([], "map each OAuth scope to the tool globs it grants"),
        ({}, "map each OAuth scope to the tool globs it grants"),
        ({"scopes": {}}, "map each OAuth scope"),
        ({"scopes": {"a": ["*"]}, "audience": "x"}, r"unknown key\(s\) audience; the keys are"),
        ({"scopes": {"tools:all": "*"}}, "scope tools:all must grant a non-empty list"),
        ({"scopes": {"tools:all": []}}, "scope tools:all must grant a non-empty list"),
        ({"scopes": {"tools:all": [""]}}, "scope tools:all must grant a non-empty list"),
        ({"scopes": {"tools:all": [1]}}, "scope tools:all must grant a non-empty list"),
        ({"scopes": {"tools all": ["*"]}}, "'tools all' is not an OAuth scope"),
        ({"scopes": {'say"hi': ["*"]}}, "is not an OAuth scope"),
        ({"scopes": {"": ["*"]}}, "'' is not an OAuth scope"),
        ({"scopes": {"a": ["*"]}, "resource": 7}, "resource 7: not an https:// URL"),
        ({"scopes": {"a": ["*"]}, "resource": "http://mcp.example.com"}, "plaintext http://"),
        ({"scopes": {"a": ["*"]}, "label_claim": ""}, "label_claim must name a claim"),
    ],
)
def test_a_bad_scopes_file_names_its_flag(tmp_path: Path, document: object, expected: str) -> None:
    path = write_scopes(tmp_path / "scopes.json", document)
    with pytest.raises(ConfigError, match=expected) as raised:
        load_oauth_settings(ISSUER, "https://auth.example.com/jwks", path)
    assert str(raised.value).startswith(f"--mcp-oauth-scopes {path}: ")


def test_a_scopes_file_that_cannot_be_read_names_its_flag(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--mcp-oauth-scopes .*: cannot be read \(No such file"):
        load_oauth_settings(ISSUER, "https://auth.example.com/jwks", tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{'scopes': 1}")
    with pytest.raises(ConfigError, match=r"--mcp-oauth-scopes .*: not JSON"):
        load_oauth_settings(ISSUER, "https://auth.example.com/jwks", tmp_path / "bad.json")
