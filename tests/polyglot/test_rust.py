"""A Rust client (tonic, its code generated from proto/ by tonic-prost-build) sees the contract:
listing, a call, ErrorInfo, a batch's per-call status as tonic-types' Status, a caller token,
TLS and mutual TLS, calls balanced over two replicas, and tonic's deadline trap: its own timer
answers CANCELLED "Timeout expired", the server's deadline DEADLINE_EXCEEDED
(tests/polyglot/rust, docs/java-rust.md).

``make polyglot`` (part of ``make test``) builds it; a missing binary is a failure, never a
skip.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import cast

from tests.grpc_support import REPO, serve
from tests.polyglot.support import (
    TOKEN,
    assert_checks,
    caller_tokens,
    demo_worker,
    require_built,
    run,
)
from tests.tls_support import Pki

BINARY = REPO / "tests/polyglot/rust/target/debug/llmworker-polyglot"
CHECKS = [
    "list sorted definitions",
    "call echo",
    "unknown tool: ErrorInfo from StatusExt",
    "batch: a result and a per-call tonic_types::pb::Status",
]
# Only without a token and TLS: they take seconds, and test tonic rather than the transport.
DEADLINE_CHECKS = [
    'deadline: Request::set_timeout answers CANCELLED "Timeout expired" '
    "(or the server's DEADLINE_EXCEEDED)",
    'deadline: Endpoint::timeout answers CANCELLED "Timeout expired"',
    "deadline: the server's grpc-timeout deadline answers DEADLINE_EXCEEDED",
]


async def run_rust(*arguments: str) -> str:
    require_built(BINARY)
    return await run(str(BINARY), *arguments)


async def test_a_rust_client_sees_the_contract_and_the_deadline_trap() -> None:
    async with serve(worker=demo_worker(), internal=False) as served:
        output = await run_rust("--target", served.target)
        assert_checks(output, [*CHECKS, *DEADLINE_CHECKS])
        for _ in range(100):  # the cancelled countdowns end once their notes are written
            if served.app.tools.in_flight == 0:
                break
            await asyncio.sleep(0.02)
        assert served.app.tools.in_flight == 0


async def test_a_rust_client_sends_a_caller_token(tmp_path: Path) -> None:
    tokens = caller_tokens(tmp_path)
    async with serve(worker=demo_worker(), internal=False, auth_tokens=tokens) as served:
        output = await run_rust("--target", served.target, "--token", TOKEN)
    assert_checks(
        output, [*CHECKS, "token: every call carries it, a call without it is UNAUTHENTICATED"]
    )


async def test_a_rust_client_verifies_the_server_over_tls(pki: Pki) -> None:
    async with serve(worker=demo_worker(), internal=False, tls=pki.server_files()) as served:
        output = await run_rust("--target", served.target, "--ca", str(pki.ca.cert))
    assert_checks(output, [*CHECKS, "tls: verified against the CA, plaintext refused"])


async def test_a_rust_client_presents_a_client_certificate(pki: Pki) -> None:
    tls = pki.server_files(mutual=True)
    async with serve(worker=demo_worker(), internal=False, tls=tls) as served:
        output = await run_rust(
            "--target", served.target, "--ca", str(pki.ca.cert),
            "--cert", str(pki.client.cert), "--key", str(pki.client.key),
        )  # fmt: skip
    assert_checks(
        output,
        [
            *CHECKS,
            "tls: verified against the CA, plaintext refused",
            "mutual tls: a channel without the client certificate refused",
        ],
    )


async def test_a_rust_client_balances_calls_over_replicas() -> None:
    async with (
        serve(worker=demo_worker(), internal=False) as first,
        serve(worker=demo_worker(), internal=False) as second,
    ):
        output = await run_rust("--replicas", f"{first.target},{second.target}")
        assert_checks(output, ["balance: Channel::balance_list spreads calls over the replicas"])
        keys = [
            cast(
                "list[str]", json.loads(await served.app.registry.handle.call_tool("kv_list", "{}"))
            )
            for served in (first, second)
        ]
    assert all(keys), f"a replica got no call: {keys}"
    assert sorted(keys[0] + keys[1]) == sorted(f"balanced-{i}" for i in range(40))
