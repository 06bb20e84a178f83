"""A Rust client (tonic, its code generated from proto/ by tonic-prost-build) sees the contract:
listing, a call, ErrorInfo, a batch's per-call status as tonic-types' Status, calls balanced
over two replicas, and tonic's deadline trap: its own timer answers CANCELLED "Timeout
expired", the server's deadline DEADLINE_EXCEEDED (tests/polyglot/rust, docs/java-rust.md);
test_transport.py runs it with a caller token and TLS.

``make polyglot`` (part of ``make test``) builds it; a missing binary is a failure, never a
skip.
"""

from __future__ import annotations

import asyncio
import json
from typing import cast

from tests.grpc_support import serve
from tests.polyglot.support import RUST, assert_checks, demo_worker

# Only without a token and TLS: they take seconds, and test tonic rather than the transport.
DEADLINE_CHECKS = [
    'deadline: Request::set_timeout answers CANCELLED "Timeout expired" '
    "(or the server's DEADLINE_EXCEEDED)",
    'deadline: Endpoint::timeout answers CANCELLED "Timeout expired"',
    "deadline: the server's grpc-timeout deadline answers DEADLINE_EXCEEDED",
]


async def test_a_rust_client_sees_the_contract_and_the_deadline_trap() -> None:
    async with serve(worker=demo_worker(), internal=False) as served:
        output = await RUST.run("--target", served.target)
        assert_checks(output, [*RUST.checks, *DEADLINE_CHECKS])
        for _ in range(100):  # the cancelled countdowns end once their notes are written
            if served.app.tools.in_flight == 0:
                break
            await asyncio.sleep(0.02)
        assert served.app.tools.in_flight == 0


async def test_a_rust_client_balances_calls_over_replicas() -> None:
    async with (
        serve(worker=demo_worker(), internal=False) as first,
        serve(worker=demo_worker(), internal=False) as second,
    ):
        output = await RUST.run("--replicas", f"{first.target},{second.target}")
        assert_checks(output, ["balance: Channel::balance_list spreads calls over the replicas"])
        keys = [
            cast(
                "list[str]", json.loads(await served.app.registry.handle.call_tool("kv_list", "{}"))
            )
            for served in (first, second)
        ]
    assert all(keys), f"a replica got no call: {keys}"
    assert sorted(keys[0] + keys[1]) == sorted(f"balanced-{i}" for i in range(40))
