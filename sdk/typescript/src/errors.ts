// Failures the server explains: one class per reason of the README's table, built from the
// status's google.rpc.ErrorInfo; the ConnectError stays reachable as `cause`.
import { Code, ConnectError } from "@connectrpc/connect";
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";

import type { Status } from "./gen/google/rpc/status_pb.js";

/** The ErrorInfo domain of every status the server sends. */
export const DOMAIN = "llmworker";

/** A failed call as the server explained it: the gRPC code, the reason from the README's
 * table (empty for a status without an llmworker ErrorInfo: a proxy's, or this client's own
 * deadline), the message (what went wrong and what to do) and the ErrorInfo metadata. */
export class LlmworkerError extends Error {
  readonly code: Code;
  readonly reason: string;
  readonly metadata: Readonly<Record<string, string>>;

  constructor(code: Code, reason: string, message: string, metadata: Record<string, string>, cause: unknown) {
    super(message, { cause });
    this.name = new.target.name;
    this.code = code;
    this.reason = reason;
    this.metadata = metadata;
  }

  /** The gRPC status code's name, e.g. "NOT_FOUND" (gRPC spells Connect's Canceled
   * CANCELLED). */
  get codeName(): string {
    if (this.code === Code.Canceled) return "CANCELLED";
    return (Code[this.code] ?? String(this.code)).replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
  }
}

export class ToolNotFound extends LlmworkerError {}
export class ToolInvalidArgument extends LlmworkerError {}
export class ToolExecutionFailed extends LlmworkerError {}
export class ToolInternal extends LlmworkerError {}
export class InvalidRequest extends LlmworkerError {}
export class ToolTimeout extends LlmworkerError {}
export class ConcurrencyLimit extends LlmworkerError {}
export class ProviderUnavailable extends LlmworkerError {}
export class HookAborted extends LlmworkerError {}
export class Unauthenticated extends LlmworkerError {}
export class RegistryLocked extends LlmworkerError {}
export class DuplicateName extends LlmworkerError {}
export class RegistryFull extends LlmworkerError {}
export class ShuttingDown extends LlmworkerError {}
export class ApprovalRequired extends LlmworkerError {}
export class CallDenied extends LlmworkerError {}
export class ResumeTokenUnknown extends LlmworkerError {}
export class PausedBatchesFull extends LlmworkerError {}
export class DefinitionFormatUnsupported extends LlmworkerError {}
export class ToolForbidden extends LlmworkerError {}
export class BatchPausedElsewhere extends LlmworkerError {}
export class ResumeForbidden extends LlmworkerError {}
export class ProviderForbidden extends LlmworkerError {}
export class BatchInterrupted extends LlmworkerError {}
export class StateUnavailable extends LlmworkerError {}
export class BatchUnresumable extends LlmworkerError {}

type ErrorClass = new (...args: ConstructorParameters<typeof LlmworkerError>) => LlmworkerError;

/** The class of each reason. */
export const ERROR_CLASSES: Readonly<Record<string, ErrorClass>> = {
  TOOL_NOT_FOUND: ToolNotFound,
  TOOL_INVALID_ARGUMENT: ToolInvalidArgument,
  TOOL_EXECUTION_FAILED: ToolExecutionFailed,
  TOOL_INTERNAL: ToolInternal,
  INVALID_REQUEST: InvalidRequest,
  TOOL_TIMEOUT: ToolTimeout,
  CONCURRENCY_LIMIT: ConcurrencyLimit,
  PROVIDER_UNAVAILABLE: ProviderUnavailable,
  HOOK_ABORTED: HookAborted,
  UNAUTHENTICATED: Unauthenticated,
  REGISTRY_LOCKED: RegistryLocked,
  DUPLICATE_NAME: DuplicateName,
  REGISTRY_FULL: RegistryFull,
  SHUTTING_DOWN: ShuttingDown,
  APPROVAL_REQUIRED: ApprovalRequired,
  CALL_DENIED: CallDenied,
  RESUME_TOKEN_UNKNOWN: ResumeTokenUnknown,
  PAUSED_BATCHES_FULL: PausedBatchesFull,
  DEFINITION_FORMAT_UNSUPPORTED: DefinitionFormatUnsupported,
  TOOL_FORBIDDEN: ToolForbidden,
  BATCH_PAUSED_ELSEWHERE: BatchPausedElsewhere,
  RESUME_FORBIDDEN: ResumeForbidden,
  PROVIDER_FORBIDDEN: ProviderForbidden,
  BATCH_INTERRUPTED: BatchInterrupted,
  STATE_UNAVAILABLE: StateUnavailable,
  BATCH_UNRESUMABLE: BatchUnresumable,
};

export interface ErrorInfo {
  reason: string;
  domain: string;
  metadata: Record<string, string>;
}

/** The wire bytes of google.rpc.ErrorInfo (its proto is not among this package's). */
export function encodeErrorInfo(info: ErrorInfo): Uint8Array {
  const writer = new BinaryWriter();
  writer.tag(1, WireType.LengthDelimited).string(info.reason);
  writer.tag(2, WireType.LengthDelimited).string(info.domain);
  for (const [key, value] of Object.entries(info.metadata)) {
    writer.tag(3, WireType.LengthDelimited).fork();
    writer.tag(1, WireType.LengthDelimited).string(key);
    writer.tag(2, WireType.LengthDelimited).string(value);
    writer.join();
  }
  return writer.finish();
}

/** google.rpc.ErrorInfo from its wire bytes (reason = 1, domain = 2, metadata = 3). */
function decodeErrorInfo(bytes: Uint8Array): ErrorInfo {
  const reader = new BinaryReader(bytes);
  const info: ErrorInfo = { reason: "", domain: "", metadata: Object.create(null) as Record<string, string> };
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1) info.reason = reader.string();
    else if (field === 2) info.domain = reader.string();
    else if (field === 3) {
      const entry = new BinaryReader(reader.bytes());
      let key = "";
      let value = "";
      while (entry.pos < entry.len) {
        const [entryField, entryWire] = entry.tag();
        if (entryField === 1) key = entry.string();
        else if (entryField === 2) value = entry.string();
        else entry.skip(entryWire);
      }
      info.metadata[key] = value;
    } else reader.skip(wireType);
  }
  return info;
}

/** The typed error of a failed call (an LlmworkerError with an empty reason when the status
 * has no llmworker ErrorInfo); anything that is no ConnectError is returned as it is. */
export function fromError(error: unknown): unknown {
  if (!(error instanceof ConnectError) || error instanceof LlmworkerError) return error;
  let info: ErrorInfo = { reason: "", domain: "", metadata: {} };
  for (const detail of error.details) {
    if ("type" in detail && detail.type === "google.rpc.ErrorInfo") {
      const decoded = decodeErrorInfo(detail.value);
      if (decoded.domain === DOMAIN) {
        info = decoded;
        break;
      }
    }
  }
  const Class = Object.hasOwn(ERROR_CLASSES, info.reason) ? (ERROR_CLASSES[info.reason] ?? LlmworkerError) : LlmworkerError;
  return new Class(error.code, info.reason, error.rawMessage, info.metadata, error);
}

/** The typed error of a google.rpc.Status: a batch's per-call failure (CallResult.error), as
 * fromError gives an RPC's. Undefined for no status or an OK one. */
export function statusError(status: Status | undefined): LlmworkerError | undefined {
  if (!status || status.code === 0) return undefined;
  const failure = new ConnectError(status.message, status.code as Code);
  for (const detail of status.details) {
    failure.details.push({ type: detail.typeUrl.slice(detail.typeUrl.lastIndexOf("/") + 1), value: detail.value });
  }
  return fromError(failure) as LlmworkerError;
}
