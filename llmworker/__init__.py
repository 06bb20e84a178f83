"""llmworker: tool execution for LLM agents.

Tools are registered through a ``Worker[Mutable]``, fixed by ``lock()``, and called in
batches through pre- and post-call hooks; a ``ToolServerHandle`` reaches the same tools from
anywhere in the application.
"""

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
from ._client.registry_client import ToolRegistryClient
from ._client.remote import RemoteToolServerHandle, SyncRemoteToolServerHandle
from ._client.remote_tool import RemoteTool
from ._formats.adapters import tool_calls_from, tool_results_message
from ._formats.definition_formats import DefinitionFormat, FormattedDefinitions
from ._model.calls import CallMetadata, ToolCall, ToolResult
from ._model.decisions import Approve, ApproveWithInput, Decision, Deny
from ._model.errors import (
    RemoteServiceError,
    StrictSchemaError,
    ToolBatchAborted,
    ToolCallPaused,
    ToolError,
    ToolRegistryError,
    ToolServerError,
    WorkerError,
    WorkerStateError,
)
from ._model.json_values import JsonObject, JsonValue, canonical_json
from ._model.outcomes import BatchOutcome, Completed, Paused
from ._model.tool import Tool, ToolDefinition, ToolFactory, ToolOutput
from ._model.tool_meta import ToolAnnotations, ToolMeta
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
from ._wire.tls import ClientTls

__all__ = [
    "Abort",
    "Approve",
    "ApproveWithInput",
    "BatchOutcome",
    "BoundToolMethod",
    "CallMetadata",
    "ClientTls",
    "Completed",
    "Continue",
    "Decision",
    "DefinitionFormat",
    "DefinitionsSnapshot",
    "Deny",
    "FormattedDefinitions",
    "JsonObject",
    "JsonValue",
    "Locked",
    "Mutable",
    "OutputChunk",
    "Pause",
    "Paused",
    "PostToolCallContext",
    "PostToolCallHook",
    "PostToolCallOutcome",
    "PreToolCallHook",
    "PreToolCallOutcome",
    "Progress",
    "RemoteServiceError",
    "RemoteTool",
    "RemoteToolServerHandle",
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
    "ToolServer",
    "ToolServerError",
    "ToolServerHandle",
    "Worker",
    "WorkerError",
    "WorkerStateError",
    "canonical_json",
    "current_call",
    "definition_of",
    "description",
    "tool",
    "tool_calls_from",
    "tool_definitions",
    "tool_registry",
    "tool_results_message",
]
