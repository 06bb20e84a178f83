"""The values a call is made of: ``ToolCall`` as the model produced it, ``ToolResult`` as the
model reads it, and ``CallMetadata``, the caller's per-call context."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final, final

from .attachments import Attachment
from .errors import ToolError, ToolServerError
from .json_values import JsonObject

__all__ = ["NO_METADATA", "CallMetadata", "ToolCall", "ToolResult"]


@final
class CallMetadata(Mapping[str, str]):
    """An immutable str -> str mapping of per-call context (user, conversation, a credential).

    Its repr shows the keys only: values may be secrets, so they never reach a log that way.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        self._items: dict[str, str] = dict(items) if items else {}
        for key, value in self._items.items():
            if not isinstance(key, str) or not isinstance(value, str):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise TypeError(
                    f"call metadata maps str to str; got {type(key).__name__} -> "
                    f"{type(value).__name__}"
                )

    @classmethod
    def of(cls, items: Mapping[str, str]) -> CallMetadata:
        """``items`` itself if it already is a CallMetadata, else a frozen copy."""
        return items if isinstance(items, CallMetadata) else cls(items)

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._items == dict(other)  # pyright: ignore[reportUnknownArgumentType]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __repr__(self) -> str:
        return f"CallMetadata(keys={sorted(self._items)!r})"


NO_METADATA: Final = CallMetadata()


@dataclass(slots=True, repr=False)
class ToolCall:
    """One tool call as the model produced it; ``input_json`` is its raw argument text.

    ``metadata`` is what the caller knows about the call (user, conversation, a credential):
    the tool reads it through ``ToolContext``; reprs show its keys only. ``timeout`` is how
    many seconds the call may run: past it, it is cancelled and answered with
    ``ToolServerError.ToolTimeout``. ``deadline`` is the ``time.monotonic()`` at which the
    caller stops waiting (it enforces that itself, as gRPC does); tools read the nearer of the
    two through ``ToolContext.time_remaining()``. None: no limit.
    """

    id: str
    name: str
    input_json: str
    metadata: Mapping[str, str] = field(default=NO_METADATA)
    deadline: float | None = None
    timeout: float | None = None

    def __repr__(self) -> str:
        deadline = "" if self.deadline is None else f", deadline={self.deadline!r}"
        deadline += "" if self.timeout is None else f", timeout={self.timeout!r}"
        metadata = f", metadata={CallMetadata.of(self.metadata)!r}" if self.metadata else ""
        return (
            f"ToolCall(id={self.id!r}, name={self.name!r}, input_json={self.input_json!r}"
            f"{metadata}{deadline})"
        )


@dataclass(slots=True)
class ToolResult:
    """The answer to the call ``call_id``, as text for the model.

    ``structured`` is the tool's structured result beside the text, when it has one;
    ``skipped`` says a pre-hook skipped the call; ``attachments`` are the images, audio and
    resources the tool returned beside the text. ``error`` keeps the exception behind an
    error result (not compared), so a transport can report the exact variant; ``content``
    is its text.
    """

    call_id: str
    content: str
    is_error: bool = False
    error: ToolError | ToolServerError | None = field(default=None, compare=False, repr=False)
    structured: JsonObject | None = None
    skipped: bool = False
    attachments: tuple[Attachment, ...] = ()
