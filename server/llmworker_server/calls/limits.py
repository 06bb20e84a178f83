"""What one call may take: timeouts, the in-flight limit, input and output sizes, batch size."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from llmworker._wire import ErrorStatus, Reason, shorten

__all__ = ["CallLimits"]


@dataclass(slots=True)
class CallLimits:
    """Timeouts (global and per tool, seconds; None for none), the in-flight call limit, the
    input size limits (global and per tool) and the output limit, in bytes of UTF-8, the
    calls a batch may hold and the definition watchers connected at once."""

    call_timeout: float | None
    tool_timeouts: Mapping[str, float]
    max_concurrent_calls: int
    max_input_bytes: int = 1024 * 1024
    tool_max_input_bytes: Mapping[str, int] = field(default_factory=dict[str, int])
    max_output_bytes: int = 4 * 1024 * 1024 - 16  # the message limit less the field's framing
    max_batch_calls: int = 128
    max_watchers: int = 10_000

    def server_timeout(self, tool: str, deadline_remaining: float | None) -> float | None:
        """The server's timeout for a call to ``tool`` when it ends the call before the
        client's deadline does; None when there is none or gRPC's deadline comes first."""
        timeout = self.tool_timeouts.get(tool, self.call_timeout)
        if timeout is None or (deadline_remaining is not None and deadline_remaining <= timeout):
            return None
        return timeout

    def limits_of(
        self, tool: str, deadline_remaining: float | None
    ) -> tuple[float | None, float | None]:
        """The client's deadline of a call to ``tool`` starting now (``time.monotonic()``;
        gRPC enforces it) and the server's timeout when that ends the call first (the
        library enforces it)."""
        deadline = None if deadline_remaining is None else time.monotonic() + deadline_remaining
        return deadline, self.server_timeout(tool, deadline_remaining)

    def input_too_large(self, tool: str, input_json: str) -> ErrorStatus | None:
        """The refusal of an input over the tool's limit, or None when it fits."""
        limit = self.tool_max_input_bytes.get(tool, self.max_input_bytes)
        if len(input_json) * 4 <= limit:  # UTF-8 takes at most 4 bytes a character
            return None
        size = len(input_json.encode())
        if size <= limit:
            return None
        return ErrorStatus.of(
            Reason.INVALID_REQUEST,
            f"input_json of the call to '{shorten(tool)}' is {size} bytes; this server takes "
            f"at most {limit} (--max-input-bytes, --tool-max-input-bytes); send less, or "
            "raise the limit",
            tool=shorten(tool),
        )
