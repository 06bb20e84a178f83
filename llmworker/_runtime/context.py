"""What a tool knows about the call it is running: ``ToolContext`` and ``current_call()``.

A decorator tool receives it by declaring a parameter annotated ``ToolContext`` (any name;
it is not part of the input schema). A hand-written Tool reaches it during ``execute``
through ``current_call()`` (unless its class says ``uses_current_call = False``; the
decorator's tools without the parameter do, so their calls skip setting it):

>>> async def execute(self, input_json: str) -> str:
...     user = current_call().metadata.get("user", "anonymous")

A tool called by a client that answers questions (an MCP client) may ask it: a form for the
person, a completion from its model, its roots, and send it log lines:

>>> async def rename(self, context: ToolContext, path: str) -> str:
...     answer = await context.elicit("New name?", {"type": "object",
...         "properties": {"name": {"type": "string"}}, "required": ["name"]})
...     return f"renamed to {answer.content['name']}" if answer.accepted else "kept"

Over MCP's 2026-07-28 revision a question ends the round and the client calls again with
the answers, so the tool runs again from its start: ask before changing anything.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Final, TypeVar, final

from .._model.calls import NO_METADATA, CallMetadata
from .._model.errors import ToolError, WorkerError
from .._model.json_values import JsonValue
from .._model.questions import (
    Answer,
    ClientCannotAnswer,
    Elicit,
    Elicited,
    ListRoots,
    LogLevel,
    Question,
    Root,
    Roots,
    Sample,
    Sampled,
)
from .client_channel import CLIENT_CHANNEL
from .streaming import CallEvents, checked_progress

AnswerT = TypeVar("AnswerT", Elicited, Sampled, Roots)

__all__ = ["ToolContext", "current_call", "question_key"]


@final
class ToolContext:
    """The call a tool is running: its id, the tool's name, the caller's metadata and the
    deadline (``time.monotonic()`` seconds, or None when the caller set none)."""

    __slots__ = ("_events", "call_id", "deadline", "metadata", "tool_name")

    def __init__(
        self,
        call_id: str,
        tool_name: str,
        metadata: CallMetadata = NO_METADATA,
        deadline: float | None = None,
    ) -> None:
        self.call_id: str = call_id
        self.tool_name: str = tool_name
        self.metadata: CallMetadata = metadata
        self.deadline: float | None = deadline
        self._events: CallEvents | None = None

    def report_progress(
        self, progress: float, total: float | None = None, message: str = ""
    ) -> None:
        """Tell a streaming caller how far the call has come (``progress`` of ``total``;
        None: unknown). A no-op for a caller that does not stream. Callable from a sync
        tool's thread; the caller sees at most one progress per 50 ms, and the last one."""
        event = checked_progress(progress, total, message)
        if self._events is not None:
            self._events.progress(event)

    def can_ask(self, kind: type[Question]) -> bool:
        """Whether the caller can answer questions of ``kind`` (``Elicit``, ``Sample``,
        ``ListRoots``): an MCP client that declared the capability."""
        channel = CLIENT_CHANNEL.get()
        return channel is not None and channel.can_answer(kind.capability)

    async def ask(self, questions: Mapping[str, Question]) -> dict[str, Answer]:
        """Ask the caller several questions at once; the answers by the same keys.
        ``ClientCannotAnswer`` when it cannot answer one of them."""
        channel = CLIENT_CHANNEL.get()
        if channel is None:
            kind = next(iter(questions.values()), ListRoots()).capability
            raise ClientCannotAnswer(
                f"tool '{self.tool_name}' asked its caller a question ({kind}), and this "
                "caller cannot answer (it called over gRPC or directly); call it from an MCP "
                "client that declares that capability",
                kind,
            )
        answers = await channel.ask(questions)
        missing = [key for key in questions if key not in answers]
        if missing:
            raise ToolError.Internal(f"the client channel left {missing} unanswered")
        return {key: answers[key] for key in questions}

    async def elicit(
        self, message: str, schema: Mapping[str, JsonValue], *, key: str | None = None
    ) -> Elicited:
        """Ask the person to fill the form ``schema`` (a flat JSON Schema object)."""
        return await self._ask_one(key, Elicit(message, schema), Elicited)

    async def sample(
        self,
        prompt: str,
        *,
        max_tokens: int = 256,
        system_prompt: str | None = None,
        key: str | None = None,
    ) -> Sampled:
        """Ask the client's model to answer ``prompt``."""
        return await self._ask_one(key, Sample(prompt, max_tokens, system_prompt), Sampled)

    async def list_roots(self, *, key: str | None = None) -> tuple[Root, ...]:
        """The roots (directories, repositories) the client works in."""
        return (await self._ask_one(key, ListRoots(), Roots)).roots

    def log(self, level: LogLevel, message: str, data: JsonValue = None) -> None:
        """Send the caller a log line (an MCP client that asked for that level gets it;
        other callers none). Callable from a sync tool's thread."""
        channel = CLIENT_CHANNEL.get()
        if channel is not None:
            channel.log(level, message, data)

    async def _ask_one(self, key: str | None, question: Question, kind: type[AnswerT]) -> AnswerT:
        key = key or question_key(question)
        answer = (await self.ask({key: question}))[key]
        if not isinstance(answer, kind):
            raise ToolError.Internal(
                f"the client channel answered {type(answer).__name__} to {type(question).__name__}"
            )
        return answer

    def time_remaining(self) -> float | None:
        """Seconds left before the call's deadline (0 once passed), or None without one."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def __repr__(self) -> str:
        return (
            f"ToolContext(call_id={self.call_id!r}, tool_name={self.tool_name!r}, "
            f"metadata={self.metadata!r}, deadline={self.deadline!r})"
        )


def question_key(question: Question) -> str:
    """The key a question gets when the tool names none: the same question, the same key
    (so a tool that runs again finds its answer)."""
    if isinstance(question, Elicit):
        asked: JsonValue = {"elicit": question.message, "schema": question.schema}
    elif isinstance(question, Sample):
        asked = {"sample": question.prompt, "system": question.system_prompt}
    else:
        asked = "roots"
    try:
        text = json.dumps(asked, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise ToolError.Internal(f"a question that is not JSON: {error}") from None
    return "q" + hashlib.sha256(text.encode()).hexdigest()[:16]


def stream_progress(context: ToolContext, events: CallEvents) -> None:
    """Send ``context``'s progress to ``events``: done by whoever streams the call."""
    context._events = events  # pyright: ignore[reportPrivateUsage] - its own module


CURRENT_CALL: Final = ContextVar[ToolContext]("llmworker_current_call")


def current_call() -> ToolContext:
    """The context of the call the running tool executes; ``WorkerError`` outside a call."""
    try:
        return CURRENT_CALL.get()
    except LookupError:
        raise WorkerError(
            "current_call() is only available while a tool executes (inside Tool.execute "
            "called by a Worker, a ToolServerHandle or the server)"
        ) from None
