"""The results message as mypy --strict and pyright strict see it: each format's own shape,
and Gemini's ``calls`` required."""

from __future__ import annotations

from pathlib import Path

from tests.typecheck import mypy_errors, pyright_errors

# A conversation kept as mappings (or objects) takes each format's message as it is; a list
# of dicts takes a copy (a TypedDict is a Mapping, not a dict, to both checkers).
TYPICAL_USE = """\
from collections.abc import Mapping
from llmworker import (
    AnthropicToolResultsMessage,
    DefinitionFormat,
    ToolCall,
    ToolResult,
    ToolResultsMessage,
    tool_results_message,
)

results = [ToolResult("1", "done")]
calls = [ToolCall("1", "echo", "{}")]
messages: list[Mapping[str, object]] = [{"role": "user", "content": "hi"}]
messages.extend(tool_results_message(DefinitionFormat.OPENAI_CHAT, results))
messages.extend(tool_results_message(DefinitionFormat.OPENAI_RESPONSES_STRICT, results))
messages.append(tool_results_message(DefinitionFormat.ANTHROPIC, results))
messages.append(tool_results_message(DefinitionFormat.GEMINI, results, calls))
plain: list[dict[str, object]] = [{"role": "user", "content": "hi"}]
plain.extend(dict(m) for m in tool_results_message(DefinitionFormat.OPENAI_CHAT_STRICT, results))
plain.append(dict(tool_results_message(DefinitionFormat.ANTHROPIC_STRICT, results)))
anything: list[object] = [*tool_results_message(DefinitionFormat.OPENAI_RESPONSES, results)]
answer: AnthropicToolResultsMessage = tool_results_message(DefinitionFormat.ANTHROPIC, results)
use_ids: list[str] = [block["tool_use_id"] for block in answer["content"]]
chat_ids = [m["tool_call_id"] for m in tool_results_message(DefinitionFormat.OPENAI_CHAT, results)]
gemini = tool_results_message(DefinitionFormat.GEMINI, results, calls)
names: list[str] = [part["functionResponse"]["name"] for part in gemini["parts"]]
texts: list[str] = chat_ids + names + use_ids


def any_format(form: DefinitionFormat) -> ToolResultsMessage:
    return tool_results_message(form, results, calls)
"""

GEMINI_WITHOUT_CALLS = """\
from llmworker import DefinitionFormat, ToolResult, tool_results_message

results = [ToolResult("1", "done")]
tool_results_message(DefinitionFormat.GEMINI, results)

def any_format(form: DefinitionFormat) -> None:
    tool_results_message(form, results)
"""


def test_both_checkers_accept_each_formats_message_where_a_conversation_takes_it(
    tmp_path: Path,
) -> None:
    assert mypy_errors(tmp_path, TYPICAL_USE) == []
    assert pyright_errors(tmp_path, TYPICAL_USE) == []


def test_both_checkers_reject_gemini_results_without_their_calls(tmp_path: Path) -> None:
    # Gemini answers by tool name; a format known only at run time may be Gemini.
    no_variant = (
        'No overload variant of "tool_results_message" matches argument types '
        '"DefinitionFormat", "list[ToolResult]"  [call-overload]'
    )
    assert mypy_errors(tmp_path, GEMINI_WITHOUT_CALLS) == [f"4: {no_variant}", f"7: {no_variant}"]
    errors = pyright_errors(tmp_path, GEMINI_WITHOUT_CALLS)
    no_overload = 'reportCallIssue: No overloads for "tool_results_message" match'
    assert [error for error in errors if no_overload in error] == [
        f"4: {no_overload} the provided arguments",
        f"7: {no_overload} the provided arguments",
    ]
    # ...each with the closest overload's complaint about the format, on the same lines.
    assert sorted(error.split(":")[0] for error in errors) == ["4", "4", "7", "7"]
