"""The client a call can ask: whoever serves a call from a client that answers questions
(the MCP front) installs a ``ClientChannel`` with ``client_channel()`` around it, and the
tool's ``ToolContext.ask`` / ``log`` reach it. Without one, asking raises
``ClientCannotAnswer`` and logging goes nowhere."""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Mapping
from contextvars import ContextVar
from typing import Final, Protocol

from .._model.json_values import JsonValue
from .._model.questions import Answer, LogLevel, Question

__all__ = ["CLIENT_CHANNEL", "ClientChannel", "client_channel"]


class ClientChannel(Protocol):
    """A client that may answer a running call's questions and read its log lines."""

    def can_answer(self, capability: str) -> bool:
        """Whether the client declared ``capability`` (``elicitation``, ``sampling``,
        ``roots``)."""
        ...

    async def ask(self, questions: Mapping[str, Question]) -> Mapping[str, Answer]:
        """The client's answers, by the questions' keys; ``ClientCannotAnswer`` for a
        kind it cannot answer."""
        ...

    def log(self, level: LogLevel, message: str, data: JsonValue) -> None:
        """Send a log line, if the client takes that level (never blocks)."""
        ...


CLIENT_CHANNEL: Final = ContextVar[ClientChannel | None]("llmworker_client_channel", default=None)


@contextlib.contextmanager
def client_channel(channel: ClientChannel) -> Generator[None]:
    """Let the calls made inside (in this task, and the tasks it starts) ask ``channel``."""
    token = CLIENT_CHANNEL.set(channel)
    try:
        yield
    finally:
        CLIENT_CHANNEL.reset(token)
