"""What a tool may ask the client that called it, and the answers: a form for the person
(``Elicit`` → ``Elicited``), a completion from the client's model (``Sample`` →
``Sampled``) and the client's workspace roots (``ListRoots`` → ``Roots``). MCP clients
answer them; a caller that cannot (gRPC, a direct call) gets ``ClientCannotAnswer``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, final

from .errors import ExecutionFailed
from .json_values import JsonValue

__all__ = [
    "Answer",
    "ClientCannotAnswer",
    "Elicit",
    "Elicited",
    "ListRoots",
    "LogLevel",
    "Question",
    "Root",
    "Roots",
    "Sample",
    "Sampled",
]

LogLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
"""The levels of a tool's log lines to the client (RFC 5424's, as MCP's)."""


@final
@dataclass(frozen=True, slots=True)
class Elicit:
    """Ask the person a form: ``schema`` is a flat JSON Schema object of strings, numbers,
    booleans and enums (MCP's ``requestedSchema``)."""

    message: str
    schema: Mapping[str, JsonValue]

    capability = "elicitation"


@final
@dataclass(frozen=True, slots=True)
class Sample:
    """Ask the client's model to answer ``prompt`` in at most ``max_tokens`` tokens."""

    prompt: str
    max_tokens: int = 256
    system_prompt: str | None = None

    capability = "sampling"


@final
@dataclass(frozen=True, slots=True)
class ListRoots:
    """Ask which roots (directories, repositories) the client works in."""

    capability = "roots"


Question: TypeAlias = Elicit | Sample | ListRoots


@final
@dataclass(frozen=True, slots=True)
class Elicited:
    """The person's answer: ``accept`` with the form's ``content``, ``decline`` or
    ``cancel`` (dismissed)."""

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, JsonValue] = field(default_factory=dict[str, JsonValue])

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


@final
@dataclass(frozen=True, slots=True)
class Sampled:
    """The client model's answer: its text, the model that wrote it and why it stopped."""

    text: str
    model: str = ""
    stop_reason: str | None = None


@final
@dataclass(frozen=True, slots=True)
class Root:
    uri: str
    name: str | None = None


@final
@dataclass(frozen=True, slots=True)
class Roots:
    roots: tuple[Root, ...]


Answer: TypeAlias = Elicited | Sampled | Roots


class ClientCannotAnswer(ExecutionFailed):
    """The caller cannot answer a question of this kind (``capability``: ``elicitation``,
    ``sampling`` or ``roots``); uncaught, it fails the call with its message."""

    def __init__(self, message: str, capability: str) -> None:
        super().__init__(message)
        self.capability = capability
