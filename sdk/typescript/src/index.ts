// @llmworker/sdk: the TypeScript client of an llmworker server.
export * from "./client.js";
export * from "./errors.js";
export * from "./provider.js";
export { DefinitionFormat } from "./gen/llmworker/v1/tool_service_pb.js";
export type {
  Attachment,
  CallDecision,
  CallResult,
  PausedBatch,
  PendingCall,
  ToolProgress,
} from "./gen/llmworker/v1/tool_service_pb.js";
export type { ToolAnnotations, ToolDefinition } from "./gen/llmworker/v1/tool_pb.js";
