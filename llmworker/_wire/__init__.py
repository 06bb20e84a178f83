"""The wire layer: what crosses gRPC, shared by the library's clients and the server.

What lives here: errors as ``google.rpc.Status`` with ``ErrorInfo`` (``Reason``, ``CODES``,
``ErrorStatus``, the metadata keys), proto messages to and from library values, channels
with TLS, the caller token, and the table of RPCs with ``bind``. It also re-exports the few
lower-layer helpers every status and log line needs (safe text, empty call metadata,
formatted listings).

Who may import it: ``llmworker._client`` and ``llmworker_server``. It is the one internal
layer the server may import, and only through this package's names (an import-linter
contract in ``make test`` checks that). Its names are not public API: applications use
``llmworker``'s names. Importing it imports grpc.
"""

from .._formats.definition_formats import format_definitions
from .._model.calls import NO_METADATA
from .._model.text import message_of, printable, shorten
from .attachments import attachment_messages, attachments_from, attachments_size
from .caller_token import bearer_metadata, caller_token_interceptors, with_metadata
from .messages import (
    definition_format,
    definition_message,
    definitions_response,
    format_number,
    meta_from_message,
)
from .status import (
    ABORT_CALL_KEY,
    ABORT_REASON_KEY,
    CODES,
    DETAILS_KEY,
    ErrorStatus,
    Reason,
    status_of,
)
from .stubs import GET_TOOL, bind
from .tls import aio_channel, sync_channel, with_tls_hint

__all__ = [
    "ABORT_CALL_KEY",
    "ABORT_REASON_KEY",
    "CODES",
    "DETAILS_KEY",
    "GET_TOOL",
    "NO_METADATA",
    "ErrorStatus",
    "Reason",
    "aio_channel",
    "attachment_messages",
    "attachments_from",
    "attachments_size",
    "bearer_metadata",
    "bind",
    "caller_token_interceptors",
    "definition_format",
    "definition_message",
    "definitions_response",
    "format_definitions",
    "format_number",
    "message_of",
    "meta_from_message",
    "printable",
    "shorten",
    "status_of",
    "sync_channel",
    "with_metadata",
    "with_tls_hint",
]
