"""Attachments (images, audio, resources beside a result's text) to and from the wire."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .._model.attachments import Attachment, Audio, EmbeddedResource, Image, ResourceLink
from ..v1 import tool_service_pb2 as pb

__all__ = ["attachment_messages", "attachments_from", "attachments_size"]


def attachment_messages(attachments: Sequence[Attachment]) -> list[pb.Attachment]:
    """``attachments`` as the messages a response carries."""
    return [_message(attachment) for attachment in attachments]


def attachments_size(attachments: Sequence[Attachment]) -> int:
    """About how many bytes ``attachments`` take in a response (their data and texts)."""
    size = 0
    for attachment in attachments:
        match attachment:
            case Image() | Audio():
                size += len(attachment.data) + len(attachment.mime_type) + 16
            case ResourceLink():
                parts = (attachment.uri, attachment.name, attachment.mime_type)
                size += sum(len(part) * 4 for part in (*parts, attachment.description)) + 16
            case EmbeddedResource():
                contents = len(attachment.blob or b"") + len(attachment.text or "") * 4
                size += contents + len(attachment.uri) * 4 + len(attachment.mime_type) + 16
    return size


def attachments_from(messages: Iterable[pb.Attachment]) -> tuple[Attachment, ...]:
    """The attachments a response carries; ``ValueError`` names one that is not valid."""
    return tuple(_attachment(message) for message in messages)


def _message(attachment: Attachment) -> pb.Attachment:
    match attachment:
        case Image():
            return pb.Attachment(
                image=pb.Media(data=attachment.data, mime_type=attachment.mime_type)
            )
        case Audio():
            return pb.Attachment(
                audio=pb.Media(data=attachment.data, mime_type=attachment.mime_type)
            )
        case ResourceLink():
            link = pb.ResourceLink(
                uri=attachment.uri,
                name=attachment.name,
                mime_type=attachment.mime_type,
                description=attachment.description,
            )
            return pb.Attachment(resource_link=link)
        case EmbeddedResource():
            resource = pb.EmbeddedResource(uri=attachment.uri, mime_type=attachment.mime_type)
            if attachment.text is not None:
                resource.text = attachment.text
            else:
                resource.blob = attachment.blob or b""
            return pb.Attachment(resource=resource)


def _attachment(message: pb.Attachment) -> Attachment:
    kind = message.WhichOneof("kind")
    if kind == "image":
        return Image(message.image.data, message.image.mime_type)
    if kind == "audio":
        return Audio(message.audio.data, message.audio.mime_type)
    if kind == "resource_link":
        link = message.resource_link
        return ResourceLink(link.uri, link.name, link.mime_type, link.description)
    if kind == "resource":
        resource = message.resource
        if resource.WhichOneof("contents") == "text":
            return EmbeddedResource(resource.uri, text=resource.text, mime_type=resource.mime_type)
        return EmbeddedResource(resource.uri, blob=resource.blob, mime_type=resource.mime_type)
    raise ValueError("an attachment holds nothing (a newer peer's kind?); update llmworker")
