"""A Java client (grpc-java, its code generated from proto/ by Maven) sees the contract:
listing, a call, ErrorInfo, a deadline, a batch's per-call google.rpc.Status and the
replicas' service config (tests/polyglot/java, docs/java-rust.md); test_transport.py runs it
with a caller token and TLS.

``make polyglot`` (part of ``make test``) builds it; a missing jar is a failure, never a skip.
"""

from __future__ import annotations

import asyncio

from tests.grpc_support import serve
from tests.polyglot.support import JAVA, assert_checks, demo_worker


async def test_a_java_client_sees_the_contract() -> None:
    async with serve(worker=demo_worker(), internal=False) as served:
        output = await JAVA.run("--target", served.target)
        assert_checks(output, list(JAVA.checks))
        for _ in range(100):  # the cancelled countdown ends once its note is written
            if served.app.tools.in_flight == 0:
                break
            await asyncio.sleep(0.02)
        assert served.app.tools.in_flight == 0
