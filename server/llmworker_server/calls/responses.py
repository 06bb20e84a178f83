"""A tool's result as the response carrying it, within the message limit and as Unicode;
what the server cannot send becomes the tool's internal error."""

from __future__ import annotations

from llmworker import ToolError, ToolOutput, ToolServerError, canonical_json
from llmworker._wire import attachment_messages, attachments_size, shorten
from llmworker.v1 import tool_service_pb2 as pb

__all__ = ["CallResponses", "tool_internal"]


class CallResponses:
    """Builds the responses of one server's calls, whose results may take ``max_output_bytes``."""

    def __init__(self, max_output_bytes: int) -> None:
        self._max_output_bytes = max_output_bytes
        self.surely_fits = max_output_bytes // 4
        """Characters that fit the limit even at 4 bytes each: one comparison per call."""

    def response_of(self, name: str, output: str | ToolOutput) -> pb.CallToolResponse:
        """The response carrying a result; ``ToolServerError`` (the tool's internal error)
        when it is too large or not Unicode."""
        if isinstance(output, str):
            text, structured = output, ""
        else:
            text, structured = _parts(name, output)
            if output.attachments:
                return self._with_attachments(name, text, structured, output)
        if len(text) + len(structured) > self.surely_fits:
            self._check_size(name, text + structured)
        try:
            if not structured:
                return pb.CallToolResponse(output=text)
            return pb.CallToolResponse(output=text, structured_output_json=structured)
        except UnicodeEncodeError as error:
            failure = _not_unicode(name, error)
            raise failure from failure.__cause__

    def _with_attachments(
        self, name: str, text: str, structured: str, output: ToolOutput
    ) -> pb.CallToolResponse:
        """A response with the images, audio and resources beside the text, all within
        the limit."""
        extra = attachments_size(output.attachments)
        if len(text) + len(structured) + extra // 4 > self.surely_fits:
            self._check_size(name, text + structured, extra)
        try:
            return pb.CallToolResponse(
                output=text,
                structured_output_json=structured,
                attachments=attachment_messages(output.attachments),
            )
        except UnicodeEncodeError as error:
            failure = _not_unicode(name, error)
            raise failure from failure.__cause__

    def _check_size(self, name: str, output: str, attached: int = 0) -> None:
        size, limit = len(output.encode(errors="replace")) + attached, self._max_output_bytes
        if size > limit:
            raise tool_internal(
                f"the result of '{shorten(name)}' is {size} bytes, over the {limit} a response "
                "may carry (--max-message-bytes); return less, or raise the limit on the "
                "server and its clients"
            )


def tool_internal(message: str) -> ToolServerError:
    """A result the server cannot send, reported as the tool's internal error."""
    internal = ToolError.Internal(message)
    error = ToolServerError.ToolExecution(str(internal))
    error.__cause__ = internal
    return error


def _parts(name: str, output: ToolOutput) -> tuple[str, str]:
    if output.structured is None:
        return output.text, ""
    try:
        return output.text, canonical_json(output.structured).decode()
    except (TypeError, ValueError) as error:
        failure = tool_internal(
            f"the structured result of '{shorten(name)}' is not JSON ({error}); return a JSON "
            "object"
        )
    raise failure from failure.__cause__  # the cause makes it the tool's internal error


def _not_unicode(name: str, error: UnicodeEncodeError) -> ToolServerError:
    return tool_internal(
        f"the result of '{shorten(name)}' is not valid Unicode text ({error.reason} at "
        f"character {error.start}); return text that encodes as UTF-8"
    )
