"""OAuth access tokens at a running MCP front (``--mcp-authorization-server``, ``--mcp-jwks``,
``--mcp-oauth-scopes``): the RFC 9728 metadata at both well-known paths, 401 challenges an
MCP client's discovery follows, scopes limiting what a caller lists and calls (official SDK
client, both revisions), sessions bound to their subject, OAuth beside ``--auth-tokens``,
and the flags' configuration errors. Keys and tokens are made here."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import ssl
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
)
from mcp.shared.auth import ProtectedResourceMetadata

from llmworker import Worker
from llmworker_server.app import ServerApp
from llmworker_server.cli import parse_args
from llmworker_server.config import ServerConfig
from llmworker_server.errors import ConfigError
from tests.grpc_support import Served, ServerProcess
from tests.server.test_mcp_front import (
    ACCEPT,
    INITIALIZE,
    REVISIONS,
    McpTools,
    caller_tokens,
    client_of,
    mcp_server,
    reason_of,
    text_of,
)
from tests.server.test_mcp_oauth import (
    EC_KEY,
    ISSUER,
    RSA_KEY,
    public_jwk,
    token,
    write_jwks,
    write_scopes,
)
from tests.tls_support import Pki

SCOPES = {"scopes": {"tools:read": ["echo"], "tools:all": ["*"]}}
LISTING: dict[str, object] = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def oauth_flags(tmp_path: Path) -> dict[str, object]:
    """The three settings, with a JWKS file of one RSA key (rsa-1)."""
    jwks = write_jwks(tmp_path / "jwks.json", public_jwk(RSA_KEY, "rsa-1"))
    return {
        "mcp_authorization_server": ISSUER,
        "mcp_jwks": str(jwks),
        "mcp_oauth_scopes": write_scopes(tmp_path / "scopes.json", SCOPES),
    }


@asynccontextmanager
async def oauth_server(
    tmp_path: Path, **overrides: object
) -> AsyncGenerator[tuple[Served, McpTools, str]]:
    async with mcp_server(**oauth_flags(tmp_path), **overrides) as served:
        yield served


def bearer(value: str) -> dict[str, str]:
    return {**ACCEPT, "authorization": f"Bearer {value}"}


async def test_the_metadata_is_served_where_an_sdk_client_looks_for_it(tmp_path: Path) -> None:
    async with oauth_server(tmp_path) as (_, _tools, url), httpx2.AsyncClient() as http:
        refused = await http.post(url, json=INITIALIZE, headers=ACCEPT)
        assert refused.status_code == 401
        base = url.removesuffix("/mcp")
        pointed = f"{base}/.well-known/oauth-protected-resource/mcp"  # RFC 9728 §3.1
        assert extract_resource_metadata_from_www_auth(refused) == pointed
        assert extract_scope_from_www_auth(refused) == "tools:all tools:read"
        for where in build_protected_resource_metadata_discovery_urls(pointed, url):
            answer = await http.get(where)
            assert answer.status_code == 200, where
            metadata = ProtectedResourceMetadata.model_validate_json(answer.content)
            assert str(metadata.resource) == url  # the default audience: the URL served
            assert [str(server).rstrip("/") for server in metadata.authorization_servers] == [
                ISSUER
            ]
            assert metadata.scopes_supported == ["tools:all", "tools:read"]
        assert (await http.post(pointed, json={})).status_code == 405
        assert (await http.get(f"{base}/.well-known/oauth-protected-resource/x")).status_code == 404


async def test_the_metadata_names_the_https_resource_under_tls(tmp_path: Path, pki: Pki) -> None:
    context = ssl.create_default_context(cafile=str(pki.ca.cert))
    async with (
        oauth_server(tmp_path, tls=pki.server_files()) as (served, _tools, _),
        httpx2.AsyncClient(verify=context) as http,
    ):
        url = f"https://127.0.0.1:{served.app.mcp_port}/mcp"
        refused = await http.post(url, json=INITIALIZE, headers=ACCEPT)
        pointed = f"https://127.0.0.1:{served.app.mcp_port}/.well-known/oauth-protected-resource"
        assert extract_resource_metadata_from_www_auth(refused) == f"{pointed}/mcp"
        assert (await http.get(f"{pointed}/mcp")).json()["resource"] == url
        accepted = token(aud=url, scope="tools:read")
        assert (await http.post(url, json=INITIALIZE, headers=bearer(accepted))).status_code == 200


async def test_an_expired_or_foreign_token_is_401_invalid_token(tmp_path: Path) -> None:
    async with oauth_server(tmp_path) as (_, _tools, url), httpx2.AsyncClient() as http:
        cases = {
            "has expired": token(aud=url, exp=1_000_000),
            "is for another resource": token(aud="https://other.example.com/mcp"),
            "is not a JWT": "not-a-jwt",
            "is not in the JWKS": token(EC_KEY, "ES256", "ec-9", aud=url),
        }
        for why, presented in cases.items():
            refused = await http.post(url, json=INITIALIZE, headers=bearer(presented))
            assert refused.status_code == 401, why
            challenge = refused.headers["www-authenticate"]
            assert challenge.startswith('Bearer resource_metadata="http://127.0.0.1:')
            assert 'error="invalid_token"' in challenge
            assert why in challenge
            assert why in refused.json()["error"]
            assert refused.json()["reason"] == "UNAUTHENTICATED"
            assert presented not in challenge + refused.text  # never echoed


@pytest.mark.parametrize("mode", REVISIONS)
async def test_a_tokens_scopes_limit_what_it_lists_and_calls(mode: str, tmp_path: Path) -> None:
    async with oauth_server(tmp_path) as (_, tools, url):
        reader = token(aud=url, scope="tools:read", sub="alice")
        async with client_of(url, mode, reader) as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == ["echo"]
            assert text_of(await client.call_tool("echo", {"text": "hi"})) == "hi"
            forbidden = await client.call_tool("weather", {"city": "Oslo"})
            assert forbidden.is_error
            assert reason_of(forbidden) == "TOOL_FORBIDDEN"
            assert "'oauth:alice' may not use tool 'weather'" in text_of(forbidden)
        everything = token(aud=url, scope="tools:read tools:all", sub="bob")
        async with client_of(url, mode, everything) as client:
            assert len((await client.list_tools()).tools) == 6
            weather = await client.call_tool("weather", {"city": "Oslo"})
            assert weather.structured_content == {"city": "Oslo", "celsius": 21}
    assert tools.ran == ["echo", "weather"]


async def test_a_session_is_its_subject_s_and_no_other_token_s(tmp_path: Path) -> None:
    async with oauth_server(tmp_path) as (_, _tools, url), httpx2.AsyncClient(timeout=30) as http:
        alice, bob = (token(aud=url, scope="tools:all", sub=name) for name in ("alice", "bob"))
        opened = await http.post(url, json=INITIALIZE, headers=bearer(alice))
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        stolen = await http.post(url, json=LISTING, headers={**bearer(bob), **session})
        assert stolen.status_code == 404  # as if the session did not exist
        renewed = token(aud=url, scope="tools:all", sub="alice", jti="another token")
        own = await http.post(url, json=LISTING, headers={**bearer(renewed), **session})
        assert own.status_code == 200  # the subject's, whichever of its tokens


async def test_with_auth_tokens_too_a_jwt_goes_to_oauth_and_others_to_the_file(
    tmp_path: Path,
) -> None:
    tokens = caller_tokens(tmp_path / "tokens.json")
    async with oauth_server(tmp_path, auth_tokens=tokens) as (_, _tools, url):
        async with client_of(url, "2026-07-28", "narrow-token-0123456789") as narrow:
            assert [tool.name for tool in (await narrow.list_tools()).tools] == ["echo"]
        async with client_of(url, "legacy", token(aud=url, scope="tools:all")) as oauth:
            assert len((await oauth.list_tools()).tools) == 6
        async with httpx2.AsyncClient() as http:
            unknown = await http.post(url, json=INITIALIZE, headers=bearer("unknown-token"))
            assert unknown.status_code == 401
            assert "--auth-tokens" in unknown.json()["error"]
            assert 'error="invalid_token"' in unknown.headers["www-authenticate"]
            missing = await http.post(url, json=INITIALIZE, headers=ACCEPT)
            assert "resource_metadata=" in missing.headers["www-authenticate"]
            assert "error=" not in missing.headers["www-authenticate"]


async def test_a_rotated_key_is_read_from_the_jwks_again(tmp_path: Path) -> None:
    async with oauth_server(tmp_path) as (_, _tools, url), httpx2.AsyncClient() as http:
        write_jwks(tmp_path / "jwks.json", public_jwk(RSA_KEY, "rsa-1"), public_jwk(EC_KEY, "ec-2"))
        rotated = token(EC_KEY, "ES256", "ec-2", aud=url, scope="tools:all")
        first = await http.post(url, json=INITIALIZE, headers=bearer(rotated))
        assert first.status_code == 401  # refused at once; the JWKS is read in the background
        assert "retry in a minute" in first.json()["error"]
        status = first.status_code
        for _ in range(500):
            status = (await http.post(url, json=INITIALIZE, headers=bearer(rotated))).status_code
            if status == 200:
                break
            await asyncio.sleep(0.01)
        assert status == 200


def oauth_config(tmp_path: Path, jwks: str | None = None) -> ServerConfig:
    flags = oauth_flags(tmp_path)
    return ServerConfig(
        port=0,
        log_level="WARNING",
        mcp_address="127.0.0.1:0",
        mcp_authorization_server=ISSUER,
        mcp_jwks=jwks or str(flags["mcp_jwks"]),
        mcp_oauth_scopes=tmp_path / "scopes.json",
    )


def test_the_three_flags_go_together_and_need_the_mcp_address(tmp_path: Path) -> None:
    config = oauth_config(tmp_path)
    config.check()
    partial = {
        "--mcp-authorization-server": dataclasses.replace(config, mcp_authorization_server=None),
        "--mcp-jwks": dataclasses.replace(config, mcp_jwks=None),
        "--mcp-oauth-scopes": dataclasses.replace(config, mcp_oauth_scopes=None),
    }
    for missing, without in partial.items():
        with pytest.raises(ConfigError, match=f"without {missing}: .* add {missing}"):
            without.check()
    with pytest.raises(ConfigError, match="add --mcp-address HOST:PORT"):
        dataclasses.replace(config, mcp_address=None).check()


def test_the_flags_parse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scopes = write_scopes(tmp_path / "scopes.json", SCOPES)
    oauth = [
        "--mcp-authorization-server", ISSUER,
        "--mcp-jwks", "https://auth.example.com/jwks",
        "--mcp-oauth-scopes", str(scopes),
    ]  # fmt: skip
    config = parse_args(["--mcp-address", "127.0.0.1:8765", *oauth])
    assert config.mcp_oauth() == (ISSUER, "https://auth.example.com/jwks", scopes)
    with pytest.raises(SystemExit):
        parse_args(["--mcp-address", "127.0.0.1:8765", *oauth[:4]])
    assert "without --mcp-oauth-scopes" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(oauth)
    assert "add --mcp-address" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("jwks", "expected"),
    [
        ("missing.json", r"--mcp-jwks .*missing\.json: no such file"),
        ("scopes.json", r"--mcp-jwks .*scopes\.json: not a JWKS"),
    ],
)
async def test_a_jwks_that_cannot_be_used_fails_the_start(
    tmp_path: Path, jwks: str, expected: str
) -> None:
    app = ServerApp(oauth_config(tmp_path, str(tmp_path / jwks)), Worker())
    try:
        with pytest.raises(ConfigError, match=expected):
            await app.start()
    finally:
        await app.stop(grace=0)


async def test_the_server_process_exits_when_its_jwks_cannot_be_used(tmp_path: Path) -> None:
    scopes = write_scopes(tmp_path / "scopes.json", SCOPES)
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": []}))
    server = ServerProcess(
        [
            "--demo", "--no-internal", "--port", "0", "--mcp-address", "127.0.0.1:0",
            "--mcp-authorization-server", ISSUER,
            "--mcp-jwks", str(tmp_path / "jwks.json"),
            "--mcp-oauth-scopes", str(scopes),
        ]
    )  # fmt: skip
    code = await asyncio.to_thread(server.process.wait, 60)
    assert code == 1
    await asyncio.to_thread(server.stop)
    assert "--mcp-jwks" in server.output
    assert "no usable signature key" in server.output
