"""llmworker: tool execution for LLM agents.

Tools are registered through a ``Worker[Mutable]``, fixed by ``lock()``, and called in
batches through pre- and post-call hooks; a ``ToolServerHandle`` reaches the same tools from
anywhere in the application.
"""

from ._adapters import tool_calls_from, tool_results_message
from ._batch import BatchOutcome, Completed, Paused
from ._context import CallMetadata, ToolContext, current_call
from ._decisions import Approve, ApproveWithInput, Decision, Deny
from ._decorators import (
    BoundToolMethod,
    ToolMethod,
    definition_of,
    description,
    tool,
    tool_definitions,
    tool_registry,
)
from ._errors import (
    ToolBatchAborted,
    ToolCallPaused,
    ToolError,
    ToolRegistryError,
    ToolServerError,
    WorkerError,
    WorkerStateError,
)
from ._formats import DefinitionFormat, FormattedDefinitions
from ._hooks import (
    Abort,
    Continue,
    Pause,
    PostToolCallContext,
    PostToolCallHook,
    PostToolCallOutcome,
    PreToolCallHook,
    PreToolCallOutcome,
    Skip,
    ToolCall,
    ToolCallContext,
    ToolResult,
)
from ._json import JsonObject, JsonValue, canonical_json
from ._registry_client import ToolRegistryClient
from ._remote import RemoteToolServerHandle, SyncRemoteToolServerHandle
from ._remote_tool import RemoteTool
from ._schema import SchemaStyle
from ._status import RemoteServiceError
from ._streaming import OutputChunk, Progress, StreamEvent
from ._strict import StrictSchemaError
from ._tls import ClientTls
from ._tool import Tool, ToolDefinition, ToolFactory, ToolOutput
from ._tool_meta import ToolAnnotations, ToolMeta
from ._tool_server import DefinitionsSnapshot, ToolServer, ToolServerHandle
from ._version import __version__ as __version__
from ._worker import Locked, Mutable, Worker

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
