"""Definitions in the shapes provider APIs take: OpenAI Chat and Responses, Anthropic, Gemini.

``ToolServerHandle.definitions_for(format)`` gives the JSON array exactly as the provider's
request field takes it, sorted by name and canonical (byte-identical whatever the
registration order, so a provider's prompt cache hits), with its SHA-256, built once per
registry change:

>>> request["tools"] = json.loads(handle.definitions_for(DefinitionFormat.OPENAI_CHAT_STRICT).json)
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, cast, final

from .._model.json_values import JsonValue, canonical_json
from .._model.tool_meta import ToolMeta
from .strict import ANTHROPIC, OPENAI, check_anthropic_request, strict_schema

__all__ = ["DefinitionFormat", "FormattedDefinitions", "format_definitions"]

_GEMINI_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")


class DefinitionFormat(enum.Enum):
    """A provider's tool-definition shape; ``*_STRICT`` applies its strict-mode rules."""

    OPENAI_CHAT = "openai_chat"
    OPENAI_CHAT_STRICT = "openai_chat_strict"
    OPENAI_RESPONSES = "openai_responses"
    OPENAI_RESPONSES_STRICT = "openai_responses_strict"
    ANTHROPIC = "anthropic"
    ANTHROPIC_STRICT = "anthropic_strict"
    GEMINI = "gemini"

    @property
    def strict(self) -> bool:
        return self.name.endswith("_STRICT")


@final
@dataclass(frozen=True, slots=True)
class FormattedDefinitions:
    """The definitions in one format: ``json`` is the array for the provider's ``tools``
    field as canonical UTF-8 JSON, ``fingerprint`` its SHA-256 in hex."""

    format: DefinitionFormat
    json: bytes
    fingerprint: str


def format_definitions(
    metas: Sequence[ToolMeta],
    form: DefinitionFormat,
    *,
    cache_last: bool = False,
    deferred: Callable[[str], bool] | None = None,
) -> FormattedDefinitions:
    """``metas`` (sorted by name) in ``form``. In the Anthropic formats, a tool ``deferred``
    says yes to gets ``defer_loading: true`` (the model sees it only once a tool search finds
    it), and ``cache_last`` marks the last tool not deferred ``cache_control: ephemeral``
    (the list becomes one cache prefix). Raises ``StrictSchemaError`` for a schema a strict
    format cannot take and ``ValueError`` for a name the provider refuses, naming the tool."""
    entries = [_entry(meta, form) for meta in metas]
    anthropic = form in (DefinitionFormat.ANTHROPIC, DefinitionFormat.ANTHROPIC_STRICT)
    if deferred is not None and anthropic:
        for meta, entry in zip(metas, entries, strict=True):
            if deferred(meta.name):
                entry["defer_loading"] = True
    if form is DefinitionFormat.ANTHROPIC_STRICT:
        check_anthropic_request(
            [
                (meta.name, cast("dict[str, JsonValue]", entry["input_schema"]))
                for meta, entry in zip(metas, entries, strict=True)
            ]
        )
    loaded = [entry for entry in entries if "defer_loading" not in entry]
    if cache_last and loaded and anthropic:  # the prefix the model sees: no deferred tool
        loaded[-1]["cache_control"] = {"type": "ephemeral"}
    body: JsonValue = (
        [{"functionDeclarations": entries}] if form is DefinitionFormat.GEMINI else entries
    )
    encoded = canonical_json(body)
    return FormattedDefinitions(form, encoded, hashlib.sha256(encoded).hexdigest())


def _entry(meta: ToolMeta, form: DefinitionFormat) -> dict[str, JsonValue]:
    schema: JsonValue = meta.input_schema
    if form is DefinitionFormat.ANTHROPIC_STRICT:
        schema = strict_schema(meta.input_schema, meta.name, ANTHROPIC)
    elif form.strict:
        schema = strict_schema(meta.input_schema, meta.name, OPENAI)
    match form:
        case DefinitionFormat.OPENAI_CHAT | DefinitionFormat.OPENAI_CHAT_STRICT:
            function: dict[str, JsonValue] = {
                "name": meta.name,
                "description": meta.description,
                "parameters": schema,
            }
            if form.strict:
                function["strict"] = True
            return {"type": "function", "function": function}
        case DefinitionFormat.OPENAI_RESPONSES | DefinitionFormat.OPENAI_RESPONSES_STRICT:
            return {
                "type": "function",
                "name": meta.name,
                "description": meta.description,
                "parameters": schema,
                "strict": form.strict,  # explicit: the Responses API defaults to true
            }
        case DefinitionFormat.ANTHROPIC | DefinitionFormat.ANTHROPIC_STRICT:
            entry: dict[str, JsonValue] = {
                "name": meta.name,
                "description": meta.description,
                "input_schema": schema,
            }
            if form.strict:
                entry["strict"] = True
            return entry
        case DefinitionFormat.GEMINI:
            if not _GEMINI_NAME.fullmatch(meta.name):
                raise ValueError(
                    f"tool '{meta.name}': Gemini takes names that start with a letter or '_' "
                    "(then letters, digits, '_', '.', ':' or '-', at most 64); rename the tool"
                )
            return {
                "name": meta.name,
                "description": meta.description,
                "parametersJsonSchema": schema,
            }
