"""A tool that requires approval, called over MCP: the person is asked through the client
(an elicitation form, revision 2025-11-25), then the call runs as an approved batch, or is
denied, as ResumeBatch would decide it. A client that cannot be asked gets
``APPROVAL_REQUIRED``, and no call runs."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from llmworker import (
    Approve,
    ApproveWithInput,
    Completed,
    Decision,
    Deny,
    JsonValue,
    ToolCall,
    ToolResult,
    Worker,
)
from llmworker._wire import ErrorStatus, Reason, shorten

__all__ = ["APPROVAL_FORM", "answered_decision", "approval_question", "can_elicit", "decided_call"]

Context = ServerRequestContext[Any, Any]

APPROVAL_FORM: Final[dict[str, JsonValue]] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "enum": ["approve", "deny"],
            "description": "Run the call, or refuse it",
        },
        "input_json": {
            "type": "string",
            "title": "Input (JSON)",
            "description": "Change the call's input before it runs; leave empty to keep it",
        },
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "Why the call is denied (the model reads it)",
        },
    },
    "required": ["decision"],
}
"""The form the person fills: approve or deny, an edited input, a reason."""

APPROVAL_WAIT_SECONDS: Final = 300.0
"""How long a call waits for the person's answer; the call holds its slot meanwhile."""


async def decided_call(
    ctx: Context, worker: Worker[Any], call: ToolCall
) -> ToolResult | ErrorStatus:
    """Ask for a decision on ``call`` and run it as decided: its result (a denial is an
    error result, as in a batch), or why it could not be asked or did not run."""
    if not can_elicit(ctx):
        return cannot_ask(call.name)
    try:
        async with asyncio.timeout(APPROVAL_WAIT_SECONDS):
            answer = await ctx.session.elicit_form(
                approval_question(call.name, call.input_json),
                APPROVAL_FORM,
                related_request_id=ctx.request_id,
            )
    except TimeoutError:
        return ErrorStatus.of(
            Reason.APPROVAL_REQUIRED,
            f"nobody answered the approval of '{shorten(call.name)}' within "
            f"{APPROVAL_WAIT_SECONDS:g} s; nothing ran: call it again when someone can "
            "decide, or send it with CallTools over gRPC, where a paused batch waits for days",
            tool=shorten(call.name),
        )
    except (MCPError, ValidationError) as error:
        return ErrorStatus.of(
            Reason.APPROVAL_REQUIRED,
            f"the client could not ask for the approval of '{shorten(call.name)}' "
            f"({shorten(str(error), 300)}); nothing ran: use a client that supports form "
            "elicitation, or send the call with CallTools over gRPC",
            tool=shorten(call.name),
        )
    decision = answered_decision(answer)
    if isinstance(decision, Deny):  # nothing was held: nothing to end
        return ErrorStatus.of(Reason.CALL_DENIED, f"{decision.reason}; it did not run")
    if isinstance(decision, ErrorStatus):
        return decision
    paused = await worker.call_tools([call])
    if isinstance(paused, Completed):  # a pre-hook skipped or answered it
        return paused.results[0]
    outcome = await worker.resume(paused, {call.id: decision})
    if not isinstance(outcome, Completed):
        return ErrorStatus.of(
            Reason.APPROVAL_REQUIRED,
            f"a pre-tool-call hook paused the call of '{shorten(call.name)}' again after its "
            f"approval ({shorten(outcome.reason, 300)}); send it with CallTools over gRPC, "
            "where a batch pauses and resumes",
        )
    return outcome.results[0]


def approval_question(name: str, input_json: str) -> str:
    """The question the approval form asks about a call of ``name``."""
    return f"Approve the call of '{shorten(name)}' with the input {shorten(input_json, 2000)}?"


def can_elicit(ctx: Context) -> bool:
    """Whether the client declared form elicitation (in its session on 2025-11-25, in the
    request's ``_meta`` on 2026-07-28)."""
    capabilities = ctx.session.client_capabilities
    if capabilities is None:
        return False
    elicitation = capabilities.elicitation
    # an empty capability means form mode (2025-06-18); url-only clients cannot show a form
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def cannot_ask(name: str) -> ErrorStatus:
    return ErrorStatus.of(
        Reason.APPROVAL_REQUIRED,
        f"tool '{shorten(name)}' requires approval, and this client cannot be asked for it "
        "(it declared no form elicitation capability); nothing ran: connect with a client "
        "that supports elicitation, or send the call with CallTools over gRPC",
        tool=shorten(name),
    )


def answered_decision(answer: types.ElicitResult) -> Decision | ErrorStatus:
    """The decision the person's answer holds (a decline or a dismissal is a denial), or
    why the edited input cannot be used."""
    content = answer.content or {}
    if answer.action != "accept" or content.get("decision") != "approve":
        reason = content.get("reason")
        said = f": {shorten(reason, 300)}" if isinstance(reason, str) and reason else ""
        how = "denied" if answer.action != "cancel" else "dismissed the question about"
        return Deny(f"the person {how} the call{said}")
    edited = content.get("input_json")
    if not isinstance(edited, str) or not edited.strip():
        return Approve()
    try:
        json.loads(edited)
    except ValueError as error:
        return ErrorStatus.of(
            Reason.INVALID_REQUEST,
            f"the edited input is not JSON ({shorten(str(error), 200)}); nothing ran: "
            "call again and enter a JSON object, or leave the input empty",
        )
    return ApproveWithInput(edited)
