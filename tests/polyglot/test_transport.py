"""The Java and Rust clients over what a deployment adds: a caller token (--auth-tokens), TLS
verified against a CA, and mutual TLS (certificates made at test time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.grpc_support import serve
from tests.polyglot.support import (
    JAVA,
    RUST,
    TOKEN,
    PolyglotClient,
    assert_checks,
    caller_tokens,
    demo_worker,
)
from tests.tls_support import Pki

CLIENTS = pytest.mark.parametrize("client", [JAVA, RUST], ids=["java", "rust"])


@CLIENTS
async def test_a_client_sends_a_caller_token(client: PolyglotClient, tmp_path: Path) -> None:
    tokens = caller_tokens(tmp_path)
    async with serve(worker=demo_worker(), internal=False, auth_tokens=tokens) as served:
        output = await client.run("--target", served.target, "--token", TOKEN)
    assert_checks(
        output,
        [*client.checks, "token: every call carries it, a call without it is UNAUTHENTICATED"],
    )


@CLIENTS
async def test_a_client_verifies_the_server_over_tls(client: PolyglotClient, pki: Pki) -> None:
    async with serve(worker=demo_worker(), internal=False, tls=pki.server_files()) as served:
        output = await client.run("--target", served.target, "--ca", str(pki.ca.cert))
    assert_checks(output, [*client.checks, "tls: verified against the CA, plaintext refused"])


@CLIENTS
async def test_a_client_presents_a_client_certificate(client: PolyglotClient, pki: Pki) -> None:
    tls = pki.server_files(mutual=True)
    async with serve(worker=demo_worker(), internal=False, tls=tls) as served:
        output = await client.run(
            "--target", served.target, "--ca", str(pki.ca.cert),
            "--cert", str(pki.client.cert), "--key", str(pki.client.key),
        )  # fmt: skip
    assert_checks(
        output,
        [
            *client.checks,
            "tls: verified against the CA, plaintext refused",
            "mutual tls: a channel without the client certificate refused",
        ],
    )
