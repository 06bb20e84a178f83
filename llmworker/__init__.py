"""llmworker: tool execution for LLM agents.

Tools are registered through a ``Worker[Mutable]``, fixed by ``lock()``, and called in
batches through pre- and post-call hooks; a ``ToolServerHandle`` reaches the same tools from
anywhere in the application.

The gRPC clients (``RemoteToolServerHandle``, ``SyncRemoteToolServerHandle``, ``RemoteTool``,
``ToolRegistryClient``, ``ClientTls``) load on first use, so in-process use does not import
grpc.
"""

from typing import TYPE_CHECKING

from ._authoring.decorators import (
    BoundToolMethod,
    ToolMethod,
    definition_of,
    description,
    tool,
    tool_definitions,
    tool_registry,
)
from ._authoring.schema import SchemaStyle
from ._formats.adapters import (
    AnthropicToolResultBlock,
    AnthropicToolResultsMessage,
    GeminiFunctionResponse,
    GeminiFunctionResponsePart,
    GeminiFunctionResult,
    GeminiToolResultsContent,
    OpenAIChatToolMessage,
    OpenAIResponsesFunctionCallOutput,
    ToolResultsMessage,
    tool_calls_from,
    tool_results_message,
)
from ._formats.attachment_parts import (
    AnthropicImageBlock,
    AnthropicImageSource,
    AnthropicTextBlock,
    AnthropicToolResultContent,
)
from ._formats.definition_formats import DefinitionFormat, FormattedDefinitions
from ._model.attachments import Attachment, Audio, EmbeddedResource, Image, ResourceLink
from ._model.calls import CallMetadata, ToolCall, ToolResult
from ._model.decisions import Approve, ApproveWithInput, Decision, Deny
from ._model.errors import (
    RemoteServiceError,
    StrictSchemaError,
    ToolBatchAborted,
    ToolError,
    ToolRegistryError,
    ToolServerError,
    WorkerError,
    WorkerStateError,
)
from ._model.json_values import JsonObject, JsonValue, canonical_json
from ._model.outcomes import BatchOutcome, Completed, Paused, RemotePaused, ToolCallPaused
from ._model.questions import (
    Answer,
    ClientCannotAnswer,
    Elicit,
    Elicited,
    ListRoots,
    LogLevel,
    Question,
    Root,
    Roots,
    Sample,
    Sampled,
)
from ._model.tool import Tool, ToolDefinition, ToolFactory, ToolOutput
from ._model.tool_meta import ToolAnnotations, ToolMeta
from ._runtime.client_channel import ClientChannel, client_channel
from ._runtime.context import ToolContext, current_call
from ._runtime.hooks import (
    Abort,
    Continue,
    Pause,
    PostToolCallContext,
    PostToolCallHook,
    PostToolCallOutcome,
    PreToolCallHook,
    PreToolCallOutcome,
    Skip,
    ToolCallContext,
)
from ._runtime.streaming import OutputChunk, Progress, StreamEvent
from ._runtime.tool_server import DefinitionsSnapshot, ToolServer, ToolServerHandle
from ._runtime.worker import Locked, Mutable, Worker
from ._version import __version__ as __version__

if TYPE_CHECKING:
    from ._client.found_tools import FoundTools
    from ._client.registry_client import ToolRegistryClient
    from ._client.remote import RemoteToolServerHandle, SyncRemoteToolServerHandle
    from ._client.remote_tool import RemoteTool
    from ._wire.tls import ClientTls

_ON_FIRST_USE = {
    "ClientTls": "._wire.tls",
    "FoundTools": "._client.found_tools",
    "RemoteTool": "._client.remote_tool",
    "RemoteToolServerHandle": "._client.remote",
    "SyncRemoteToolServerHandle": "._client.remote",
    "ToolRegistryClient": "._client.registry_client",
}


def __getattr__(name: str) -> object:
    """The gRPC clients, imported (with grpc) when first asked for."""
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'llmworker' has no attribute {name!r}")
    import importlib

    value: object = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_ON_FIRST_USE})


__all__ = [
    "Abort",
    "Answer",
    "AnthropicImageBlock",
    "AnthropicImageSource",
    "AnthropicTextBlock",
    "AnthropicToolResultBlock",
    "AnthropicToolResultContent",
    "AnthropicToolResultsMessage",
    "Approve",
    "ApproveWithInput",
    "Attachment",
    "Audio",
    "BatchOutcome",
    "BoundToolMethod",
    "CallMetadata",
    "ClientCannotAnswer",
    "ClientChannel",
    "ClientTls",
    "Completed",
    "Continue",
    "Decision",
    "DefinitionFormat",
    "DefinitionsSnapshot",
    "Deny",
    "Elicit",
    "Elicited",
    "EmbeddedResource",
    "FormattedDefinitions",
    "FoundTools",
    "GeminiFunctionResponse",
    "GeminiFunctionResponsePart",
    "GeminiFunctionResult",
    "GeminiToolResultsContent",
    "Image",
    "JsonObject",
    "JsonValue",
    "ListRoots",
    "Locked",
    "LogLevel",
    "Mutable",
    "OpenAIChatToolMessage",
    "OpenAIResponsesFunctionCallOutput",
    "OutputChunk",
    "Pause",
    "Paused",
    "PostToolCallContext",
    "PostToolCallHook",
    "PostToolCallOutcome",
    "PreToolCallHook",
    "PreToolCallOutcome",
    "Progress",
    "Question",
    "RemotePaused",
    "RemoteServiceError",
    "RemoteTool",
    "RemoteToolServerHandle",
    "ResourceLink",
    "Root",
    "Roots",
    "Sample",
    "Sampled",
    "SchemaStyle",
    "Skip",
    "StreamEvent",
    "StrictSchemaError",
    "SyncRemoteToolServerHandle",
    "Tool",
    "ToolAnnotations",
    "ToolBatchAborted",
    "ToolCall",
    "ToolCallContext",
    "ToolCallPaused",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolFactory",
    "ToolMeta",
    "ToolMethod",
    "ToolOutput",
    "ToolRegistryClient",
    "ToolRegistryError",
    "ToolResult",
    "ToolResultsMessage",
    "ToolServer",
    "ToolServerError",
    "ToolServerHandle",
    "Worker",
    "WorkerError",
    "WorkerStateError",
    "canonical_json",
    "client_channel",
    "current_call",
    "definition_of",
    "description",
    "tool",
    "tool_calls_from",
    "tool_definitions",
    "tool_registry",
    "tool_results_message",
]
