"""``search_tools``: SearchTools as a tool a model calls (``--search-tool``), so a model shown a
short list finds the rest by what they do. It ranks the tools its caller may use, as the RPC
does, and never lists itself."""

from __future__ import annotations

import json
from typing import Final, cast

from llmworker import JsonValue, ToolAnnotations, ToolError, ToolFactory, ToolMeta, ToolOutput
from llmworker._wire import ErrorStatus
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1.tool_pb2 import ToolDefinition

from ..rpc.auth import caller_scope
from .tool_search import MAX_QUERY_CHARS, ToolSearch

__all__ = ["SEARCH_TOOL_NAME", "search_tool_definition"]

SEARCH_TOOL_NAME: Final = "search_tools"
_MAX_LIMIT: Final = 20
_DEFAULT_LIMIT: Final = 5
_TOOL: Final = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "input_schema": {"type": "object"},
        "score": {"type": "number"},
    },
    "required": ["name", "description", "input_schema", "score"],
}
_META: Final = ToolMeta(
    SEARCH_TOOL_NAME,
    "Find tools by what they do. Describe the task in a few words (e.g. 'weather in a city'); "
    "the best matching tools come back with their descriptions and input schemas, best first. "
    "Call this when none of the tools you were given fits.",
    {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
                "description": "What the tool should do, in a few words",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": _MAX_LIMIT,
                "description": f"At most this many tools (default {_DEFAULT_LIMIT})",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    title="Search tools",
    annotations=ToolAnnotations(read_only=True, idempotent=True, open_world=False),
    output_schema={
        "type": "object",
        "properties": {"tools": {"type": "array", "items": _TOOL}},
        "required": ["tools"],
    },
)


def search_tool_definition(search: ToolSearch, callers_checked: bool) -> ToolFactory:
    """The built-in tool, searching with ``search``; ``callers_checked``: the server has
    ``--auth-tokens``, so a call whose caller is not known finds nothing."""
    return ToolFactory(_META, lambda: _SearchTool(search, callers_checked))


class _SearchTool:
    uses_current_call = False

    def __init__(self, search: ToolSearch, callers_checked: bool) -> None:
        self._search = search
        self._callers_checked = callers_checked

    async def execute(self, input_json: str) -> ToolOutput:
        query, limit = _arguments(input_json)
        scope = caller_scope()
        if scope is None and self._callers_checked:
            raise ToolError.Internal("search_tools ran for a caller whose scope is not known")
        answer = self._search.search(pb.SearchToolsRequest(query=query, limit=limit + 1), scope)
        if isinstance(answer, ErrorStatus):
            raise ToolError.InvalidArgument(answer.message)
        found = [
            _found(definition, score)
            for definition, score in zip(answer.definitions, answer.scores, strict=True)
            if definition.name != SEARCH_TOOL_NAME
        ][:limit]
        if not found:
            text = f"No tool matches {query!r}; try other words."
        else:
            text = "\n".join(
                f"{tool['name']}: {_first_line(tool['description'])}" for tool in found
            )
        return ToolOutput(text, {"tools": found})


def _first_line(description: JsonValue) -> str:
    lines = str(description).strip().splitlines()
    return lines[0] if lines else ""


def _found(definition: ToolDefinition, score: float) -> dict[str, JsonValue]:
    schema: JsonValue = json.loads(definition.input_schema_json or "{}")
    return {
        "name": definition.name,
        "title": definition.title,
        "description": definition.description,
        "input_schema": schema,
        "score": round(score, 4),
    }


def _arguments(input_json: str) -> tuple[str, int]:
    try:
        arguments: object = json.loads(input_json)
    except (json.JSONDecodeError, RecursionError) as error:
        raise ToolError.InvalidArgument(f"the input is not JSON ({error})") from None
    if not isinstance(arguments, dict):
        raise ToolError.InvalidArgument('give an object: {"query": "weather in a city"}')
    given = cast("dict[str, object]", arguments)
    query, limit = given.get("query"), given.get("limit", _DEFAULT_LIMIT)
    if not isinstance(query, str) or not query.strip():
        raise ToolError.InvalidArgument('query must be a few words, e.g. "weather in a city"')
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= _MAX_LIMIT:
        raise ToolError.InvalidArgument(f"limit must be an integer from 1 to {_MAX_LIMIT}")
    return query, limit
