"""A tool's questions (``ToolContext.ask``) and log lines (``ToolContext.log``) over MCP.

Revision 2025-11-25 asks while the call runs: each question is a request to the client on
the call's stream (``elicitation/create``, ``sampling/createMessage``, ``roots/list``), and
log lines are ``notifications/message`` at the session's ``logging/setLevel`` and above.

Revision 2026-07-28 has no requests from the server: a question the request does not
answer yet ends the round with an ``InputRequiredResult`` naming every unanswered one, and
the client calls again with ``inputResponses`` and the ``requestState`` it got (sealed by
the SDK's ``RequestStateBoundary``: bound to the tool, its arguments and the caller). The
tool runs again from its start, and finds the answers of every round so far. Log lines go
out only at the ``_meta`` log level the request asked for.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Mapping
from typing import Any, Final, get_args

import mcp_types as types
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel, ValidationError

from llmworker import (
    Answer,
    ClientCannotAnswer,
    Elicit,
    Elicited,
    JsonValue,
    ListRoots,
    LogLevel,
    Question,
    Root,
    Roots,
    Sample,
    Sampled,
    ToolError,
)
from llmworker._wire import shorten

__all__ = ["LogLevels", "RoundChannel", "SessionChannel", "answer_of", "request_of"]

_log = logging.getLogger("llmworker.server.mcp")
Context = ServerRequestContext[Any, Any]

ASK_SECONDS: Final = 300.0
"""How long a question waits for the client's answer (2025-11-25)."""
_MAX_UNSENT_LOGS: Final = 64
_FLUSH_SECONDS: Final = 2.0
_LEVELS: Final[tuple[str, ...]] = get_args(LogLevel)
STATE_VERSION: Final = 1


class LogLevels:
    """The ``logging/setLevel`` of each 2025-11-25 session, by ``Mcp-Session-Id`` (the
    most recent sessions only, as many as the front keeps)."""

    def __init__(self, limit: int) -> None:
        self._levels: dict[str, str] = {}
        self._limit = limit

    def set(self, session: str, level: str) -> None:
        self._levels.pop(session, None)
        self._levels[session] = level
        while len(self._levels) > self._limit:
            del self._levels[next(iter(self._levels))]

    def allowed(self, session: str | None) -> frozenset[str]:
        level = self._levels.get(session or "", "debug")
        return frozenset(_LEVELS[_LEVELS.index(level) :])


class _Channel:
    """What both revisions share: the client's capabilities and the log lines."""

    def __init__(self, ctx: Context, tool: str, levels: frozenset[str]) -> None:
        self._ctx = ctx
        self._tool = tool
        self._levels = levels
        self._loop = asyncio.get_running_loop()
        self._unsent: set[asyncio.Task[None]] = set()

    def can_answer(self, capability: str) -> bool:
        declared = self._ctx.session.client_capabilities
        if declared is None:
            return False
        if capability == "elicitation":
            form = declared.elicitation
            # an empty capability means form mode (2025-06-18); url-only clients show no form
            return form is not None and (form.form is not None or form.url is None)
        if capability == "sampling":
            return declared.sampling is not None
        return capability == "roots" and declared.roots is not None

    def log(self, level: LogLevel, message: str, data: JsonValue) -> None:
        if level not in self._levels:
            return
        payload: JsonValue = message if data is None else {"message": message, "data": data}
        try:
            in_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            in_loop = False
        if in_loop:
            self._send_log(level, payload)
        else:  # a sync tool's thread
            self._loop.call_soon_threadsafe(self._send_log, level, payload)

    async def flush(self) -> None:
        """Wait (briefly) for the log lines still on their way, so they precede the result."""
        if self._unsent:
            await asyncio.wait(set(self._unsent), timeout=_FLUSH_SECONDS)

    def _send_log(self, level: LogLevel, payload: JsonValue) -> None:
        if len(self._unsent) >= _MAX_UNSENT_LOGS:
            return  # a client that does not read: lines are dropped, never queued unbounded
        notification = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(
                level=level,
                data=payload,
                logger=self._tool,
            )
        )
        send = self._ctx.session.send_notification(notification, self._ctx.request_id)
        task = asyncio.ensure_future(_quietly(send))
        self._unsent.add(task)
        task.add_done_callback(self._unsent.discard)


class SessionChannel(_Channel):
    """Revision 2025-11-25: questions are requests to the client on the call's stream."""

    async def ask(self, questions: Mapping[str, Question]) -> Mapping[str, Answer]:
        answers: dict[str, Answer] = {}
        for key, question in questions.items():
            if not self.can_answer(question.capability):
                raise _cannot_answer(self._tool, question)
            answers[key] = await self._asked(question)
        return answers

    async def _asked(self, question: Question) -> Answer:
        request = request_of(question)
        metadata = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        try:
            raw = await self._ctx.session.send_request(
                request,  # pyright: ignore[reportArgumentType] - a ServerRequest member
                _RESULT_TYPES[type(question)],
                request_read_timeout_seconds=ASK_SECONDS,
                metadata=metadata,
            )
        except (MCPError, ValidationError, TimeoutError) as error:
            raise ToolError.ExecutionFailed(
                f"the client did not answer the {question.capability} question of tool "
                f"'{shorten(self._tool)}' ({shorten(str(error), 300)}); call it again"
            ) from None
        answer = answer_of(question, raw.model_dump(by_alias=True, mode="json"))
        if answer is None:
            raise ToolError.ExecutionFailed(
                f"the client's answer to the {question.capability} question of tool "
                f"'{shorten(self._tool)}' has no text or roots this server can read"
            )
        return answer


class RoundChannel(_Channel):
    """Revision 2026-07-28: answers come with the request (``inputResponses``, and the
    ``requestState`` of earlier rounds); an unanswered question ends the round."""

    def __init__(
        self,
        ctx: Context,
        tool: str,
        responses: Mapping[str, JsonValue],
        earlier: Mapping[str, JsonValue],
    ) -> None:
        super().__init__(ctx, tool, allowed_log_levels(ctx.protocol_version, ctx.meta))
        self._responses = responses
        self._earlier = earlier
        self.answered: dict[str, JsonValue] = {}
        """Every answer the tool used, for the next round's state."""
        self.pending: dict[str, Question] = {}
        self.missing: str | None = None
        """The capability a question needed that the client did not declare."""

    async def ask(self, questions: Mapping[str, Question]) -> Mapping[str, Answer]:
        answers: dict[str, Answer] = {}
        pending: dict[str, Question] = {}
        for key, question in questions.items():
            for raw in (self._responses.get(key), self._earlier.get(key)):
                answer = None if raw is None else answer_of(question, raw)
                if answer is not None:
                    answers[key], self.answered[key] = answer, raw
                    break
            else:
                if not self.can_answer(question.capability):
                    self.missing = question.capability
                    raise _cannot_answer(self._tool, question)
                pending[key] = question
        if pending:
            self.pending = pending
            raise ToolError.ExecutionFailed(
                f"tool '{shorten(self._tool)}' waits for the client's answers to {sorted(pending)}"
            )
        return answers

    def input_required(self) -> types.InputRequiredResult:
        """The round's end: the questions, and the answers so far as the next state."""
        state = json.dumps({"v": STATE_VERSION, "answers": self.answered}, separators=(",", ":"))
        requests = {key: request_of(question) for key, question in self.pending.items()}
        return types.InputRequiredResult(input_requests=requests, request_state=state)


def earlier_answers(state: str | None) -> dict[str, JsonValue]:
    """The answers of earlier rounds in a ``requestState`` this front sealed (verified by
    the boundary before it reaches here)."""
    if state is None:
        return {}
    try:
        record = json.loads(state)
        answers = record["answers"] if record.get("v") == STATE_VERSION else None
    except (ValueError, TypeError, KeyError, AttributeError):
        answers = None
    if not isinstance(answers, dict):
        raise MCPError(types.INVALID_PARAMS, "Invalid or expired requestState")
    return answers  # pyright: ignore[reportUnknownVariableType] - JSON


def request_of(question: Question) -> types.InputRequest:
    """The MCP request that asks ``question``."""
    if isinstance(question, Elicit):
        return types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=question.message, requested_schema=dict(question.schema)
            )
        )
    if isinstance(question, Sample):
        message = types.SamplingMessage(
            role="user", content=types.TextContent(type="text", text=question.prompt)
        )
        return types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[message],
                max_tokens=question.max_tokens,
                system_prompt=question.system_prompt,
            )
        )
    return types.ListRootsRequest()


def answer_of(question: Question, raw: JsonValue) -> Answer | None:
    """The client's answer ``raw`` to ``question``, or None when it is not one."""
    try:
        if isinstance(question, Elicit):
            elicited = types.ElicitResult.model_validate(raw)
            content: dict[str, JsonValue] = dict(elicited.content or {})
            return Elicited(elicited.action, content)
        if isinstance(question, Sample):
            sampled = types.CreateMessageResult.model_validate(raw)
            block = sampled.content
            text = block.text if isinstance(block, types.TextContent) else ""
            return Sampled(text, sampled.model, sampled.stop_reason)
        listed = types.ListRootsResult.model_validate(raw)
        return Roots(tuple(Root(str(root.uri), root.name) for root in listed.roots))
    except ValidationError:
        return None


_RESULT_TYPES: Final[dict[type[Question], type[BaseModel]]] = {
    Elicit: types.ElicitResult,
    Sample: types.CreateMessageResult,
    ListRoots: types.ListRootsResult,
}


def _cannot_answer(tool: str, question: Question) -> ClientCannotAnswer:
    return ClientCannotAnswer(
        f"tool '{shorten(tool)}' needs to ask the client a question ({question.capability}), "
        f"and this client did not declare the '{question.capability}' capability; call it "
        "from a client that declares it",
        question.capability,
    )


async def _quietly(send: Awaitable[None]) -> None:
    try:
        await send
    except Exception as error:  # a client gone: the call goes on
        _log.debug("log line not delivered: %s", error)
