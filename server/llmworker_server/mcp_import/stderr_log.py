"""What a launched MCP server writes to its stderr, line by line into the server's log."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Final, TextIO

from llmworker._wire import printable

__all__ = ["StderrLog"]

_log = logging.getLogger("llmworker.server.mcp_import.stderr")
_MAX_LINE: Final = 4096


class StderrLog:
    """A pipe whose write end (``writer``) becomes the launched command's stderr; each
    line read from it is logged as ``mcp server NAME: LINE`` (cut to 4096 characters)."""

    def __init__(self, server: str) -> None:
        self._server = server
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._reader = os.fdopen(read_fd, "rb")
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._relay())

    async def stop(self) -> None:
        self.writer.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._reader.close()

    async def _relay(self) -> None:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(limit=_MAX_LINE)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), self._reader
        )
        try:
            while True:
                try:
                    line = await stream.readuntil(b"\n")
                except asyncio.IncompleteReadError as ending:
                    line = ending.partial
                except asyncio.LimitOverrunError as long:
                    line = await stream.readexactly(long.consumed)
                if not line:
                    return
                text = line.decode("utf-8", "replace").rstrip("\r\n")
                if text:
                    _log.info("mcp server %s: %s", self._server, printable(text, _MAX_LINE))
        finally:
            transport.close()
