"""The SQLite store under cancellation and contention: an RPC cancelled at any point of a
transaction leaves the connection usable and the file unlocked for other processes."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from llmworker import Mutable, Paused, ToolCall, Worker, tool, tool_definitions, tool_registry
from llmworker_server.state.held import HeldBatch
from llmworker_server.state.sqlite import SqliteStore
from llmworker_server.state.store import SavedBatches


@tool_registry
class Gated:
    @tool(requires_approval=True)
    async def remove(self, key: str) -> str:
        """Remove ``key`` after approval."""
        return f"removed {key}"


async def a_store(path: Path) -> tuple[SqliteStore, Paused]:
    worker: Worker[Mutable] = Worker()
    worker.register_tools(tool_definitions(Gated()))
    paused = await worker.call_tools([ToolCall("r", "remove", '{"key": "k"}')])
    assert isinstance(paused, Paused)
    store = SqliteStore(path, 600.0, 10_000, SavedBatches(worker.save_paused, worker.load_paused))
    await store.open()
    return store, paused


async def test_transactions_cancelled_at_every_step_leave_the_store_usable(tmp_path: Path) -> None:
    store, paused = await a_store(tmp_path / "state.db")
    try:
        for step in range(60):
            operation = (
                store.hold(paused, {"r": "remove"}, 10, form=None, owner="", resumed=False,
                           replaces=None)
                if step % 3 == 0
                else store.page(None, 10) if step % 3 == 1 else store.refresh()
            )  # fmt: skip
            task = asyncio.ensure_future(operation)
            for _ in range(step % 7):  # cancel at a different await each time
                await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        held = await store.hold(
            paused, {"r": "remove"}, 10, form=None, owner="", resumed=False, replaces=None
        )
        assert held is not None
        token, record = held
        found = await store.find(token)
        assert isinstance(found, HeldBatch)
        assert found.batch_id == record.batch_id
        assert await store.claim(record.batch_id, ["r"])
        await store.finish(record.batch_id)
        # another process (a plain connection here) can still write: no transaction was
        # left open holding the file's write lock
        with sqlite3.connect(tmp_path / "state.db", timeout=1) as other:
            other.execute("BEGIN IMMEDIATE")
            other.execute("DELETE FROM paused_batches WHERE state = 'done'")
    finally:
        await store.close()


async def a_store_unopened(path: Path) -> SqliteStore:
    worker: Worker[Mutable] = Worker()
    worker.register_tools(tool_definitions(Gated()))
    return SqliteStore(path, 600.0, 10, SavedBatches(worker.save_paused, worker.load_paused))


async def test_opening_waits_out_a_write_lock_on_a_file_not_yet_in_wal(tmp_path: Path) -> None:
    # Another process (here a plain connection) holds a write lock on the new file before it
    # is in WAL mode: switching to WAL answers "locked" at once, and the store waits it out.
    path = tmp_path / "state.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE other_program (x)")
    releasing = asyncio.get_running_loop().call_later(0.3, other.execute, "COMMIT")
    store = await a_store_unopened(path)
    try:
        await store.open()
        assert store.count == 0
    finally:
        releasing.cancel()
        other.close()
        await store.close()
