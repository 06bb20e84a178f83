// @llmworker/sdk: the TypeScript client of an llmworker server.
export * from "./client.js";
export * from "./errors.js";
export * from "./provider.js";
export { HEALTH_SERVICE, RETRY_POLICY, retryIsSafe } from "./balancing.js";
export type { LlmworkerTransport, TransportOptions } from "./endpoint.js";
export { createServiceClient, createTransport } from "./transport.js";
// Connect's codes and error, the same classes the SDK's errors and clients use
export { Code, ConnectError } from "@connectrpc/connect";
export type { Client, Transport } from "@connectrpc/connect";
// The generated services, for createServiceClient: the internal registry, and gRPC health
export { DefinitionFormat, ToolService } from "./gen/llmworker/v1/tool_service_pb.js";
export { ToolRegistry } from "./gen/llmworker/v1/tool_registry_pb.js";
export { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "./gen/grpc/health/v1/health_pb.js";
export type {
  Attachment,
  CallDecision,
  CallResult,
  CallToolEvent,
  ListDefinitionsSortedResponse,
  PausedBatch,
  PausedBatchSummary,
  PendingCall,
  ToolProgress,
} from "./gen/llmworker/v1/tool_service_pb.js";
export type { ToolAnnotations, ToolDefinition } from "./gen/llmworker/v1/tool_pb.js";
export type { Status } from "./gen/google/rpc/status_pb.js";
