"""What a result carries beside its text: images, audio, links to resources and resources'
contents (MCP's content blocks beyond text)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, final

from .text import shorten

__all__ = ["Attachment", "Audio", "EmbeddedResource", "Image", "ResourceLink"]


def _check_media(kind: str, data: object, mime_type: object) -> None:
    if not isinstance(data, bytes):
        raise TypeError(f"an {kind} attachment's data is bytes, not {type(data).__name__}")
    if not isinstance(mime_type, str) or not mime_type.startswith(f"{kind}/"):
        raise ValueError(
            f"an {kind} attachment needs a {kind}/* MIME type, not {shorten(str(mime_type), 80)!r} "
            f"(e.g. {'image/png' if kind == 'image' else 'audio/wav'})"
        )
    if not data:
        raise ValueError(f"an {kind} attachment needs its bytes; pass the file's contents")


def _check_texts(*values: object) -> None:
    for value in values:
        if not isinstance(value, str):
            raise TypeError(
                f"an attachment's URI, name and types are str, not {type(value).__name__}"
            )


def _check_blob(blob: object) -> None:
    if blob is not None and not isinstance(blob, bytes):
        raise TypeError(f"an embedded resource's blob is bytes, not {type(blob).__name__}")


@final
@dataclass(frozen=True, slots=True)
class Image:
    """An image: its bytes and MIME type (``image/png``, ``image/jpeg``, …)."""

    data: bytes
    mime_type: str

    def __post_init__(self) -> None:
        _check_media("image", self.data, self.mime_type)


@final
@dataclass(frozen=True, slots=True)
class Audio:
    """A sound: its bytes and MIME type (``audio/wav``, ``audio/mpeg``, …)."""

    data: bytes
    mime_type: str

    def __post_init__(self) -> None:
        _check_media("audio", self.data, self.mime_type)


@final
@dataclass(frozen=True, slots=True)
class ResourceLink:
    """A link to a resource the client may fetch: its URI, and optionally a name, a MIME
    type and a description."""

    uri: str
    name: str = ""
    mime_type: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        _check_texts(self.uri, self.name, self.mime_type, self.description)
        if not self.uri:
            raise ValueError("a resource link needs a URI (e.g. file:///tmp/report.pdf)")


@final
@dataclass(frozen=True, slots=True)
class EmbeddedResource:
    """A resource's contents, sent along: its URI and either ``text`` or ``blob`` bytes."""

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime_type: str = ""

    def __post_init__(self) -> None:
        _check_texts(self.uri, self.mime_type, "" if self.text is None else self.text)
        _check_blob(self.blob)
        if not self.uri:
            raise ValueError("an embedded resource needs a URI (e.g. test://report)")
        if (self.text is None) == (self.blob is None):
            raise ValueError(
                f"the embedded resource {shorten(self.uri, 80)!r} needs text or blob, one "
                "of the two"
            )


Attachment: TypeAlias = Image | Audio | ResourceLink | EmbeddedResource
"""One block a result carries beside its text."""
