"""A Java client (grpc-java, its code generated from proto/ by Maven) sees the contract:
listing, a call, ErrorInfo, a deadline, a batch's per-call google.rpc.Status, the replicas'
service config, a caller token and TLS (tests/polyglot/java, docs/java-rust.md).

``make polyglot`` (part of ``make test``) builds it; a missing jar is a failure, never a skip.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

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

JAR = REPO / "tests/polyglot/java/target/llmworker-polyglot.jar"
CHECKS = [
    "google.rpc.Status from proto-google-common-protos",
    "list sorted definitions",
    "call echo",
    "unknown tool: ErrorInfo from StatusProto.fromThrowable",
    "deadline: DEADLINE_EXCEEDED, and the tool cancelled",
    "batch: a result and a per-call google.rpc.Status",
    "service config: round_robin, health checks, retries",
]


async def run_java(*arguments: str) -> str:
    require_built(JAR)
    return await run("java", "-jar", str(JAR), *arguments)


async def test_a_java_client_sees_the_contract() -> None:
    async with serve(worker=demo_worker(), internal=False) as served:
        output = await run_java("--target", served.target)
        assert_checks(output, CHECKS)
        for _ in range(100):  # the cancelled countdown ends once its note is written
            if served.app.tools.in_flight == 0:
                break
            await asyncio.sleep(0.02)
        assert served.app.tools.in_flight == 0


async def test_a_java_client_sends_a_caller_token(tmp_path: Path) -> None:
    tokens = caller_tokens(tmp_path)
    async with serve(worker=demo_worker(), internal=False, auth_tokens=tokens) as served:
        output = await run_java("--target", served.target, "--token", TOKEN)
    assert_checks(
        output, [*CHECKS, "token: every call carries it, a call without it is UNAUTHENTICATED"]
    )


async def test_a_java_client_verifies_the_server_over_tls(pki: Pki) -> None:
    async with serve(worker=demo_worker(), internal=False, tls=pki.server_files()) as served:
        output = await run_java("--target", served.target, "--ca", str(pki.ca.cert))
    assert_checks(output, [*CHECKS, "tls: verified against the CA, plaintext refused"])


async def test_a_java_client_presents_a_client_certificate(pki: Pki) -> None:
    tls = pki.server_files(mutual=True)
    async with serve(worker=demo_worker(), internal=False, tls=tls) as served:
        output = await run_java(
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
