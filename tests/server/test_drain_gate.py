"""The drain gate's quiet window: a call still on its way to the gate when the event loop was
starved is waited for, so the listeners do not close on calls gRPC already accepted."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from llmworker_server.rpc.drain import DrainGate


def _after_turns(turns: int, action: Callable[[], None]) -> None:
    """Run ``action`` ``turns`` event-loop turns from now (a call handed over takes a few)."""
    loop = asyncio.get_running_loop()
    if turns == 0:
        action()
    else:
        loop.call_soon(_after_turns, turns - 1, action)


async def test_a_starved_loop_does_not_count_as_quiet() -> None:
    gate = DrainGate()
    gate.close()
    held: list[asyncio.Task[bool]] = []

    def arrive() -> None:
        held.append(asyncio.ensure_future(gate.hold()))

    def starve() -> None:
        time.sleep(0.3)  # the process got no CPU: calls pile up in gRPC's queue
        _after_turns(3, arrive)  # one of them reaches the gate a few turns later

    asyncio.get_running_loop().call_later(0.01, starve)
    await gate.wait_quiet(0.05, cap=2.0)
    assert gate.held == 1, "wait_quiet returned before the queued call reached the gate"
    gate.release(run=True)
    assert await held[0] is True


async def test_a_quiet_gate_is_left_after_the_quiet_window() -> None:
    gate = DrainGate()
    gate.close()
    started = time.monotonic()
    await gate.wait_quiet(0.05, cap=2.0)
    assert 0.04 <= time.monotonic() - started < 1.5


async def test_arrivals_that_never_stop_end_at_the_cap() -> None:
    gate = DrainGate()
    gate.close()
    stop = asyncio.Event()

    async def keep_arriving() -> None:
        while not stop.is_set():
            held = asyncio.ensure_future(gate.hold())
            await asyncio.sleep(0.01)
            held.cancel()

    feeder = asyncio.ensure_future(keep_arriving())
    started = time.monotonic()
    await gate.wait_quiet(0.05, cap=0.3)
    stop.set()
    await feeder
    assert 0.25 <= time.monotonic() - started < 1.5
