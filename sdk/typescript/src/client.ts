// The client of one llmworker server: calls, streams, batches with decisions, listings in
// provider formats, search and watch, each failure the typed error of its reason.
import { create } from "@bufbuild/protobuf";
import { type Client, type Interceptor, createClient as connectClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

import type { Attachment, CallDecision, CallResult, PausedBatch, ToolProgress } from "./gen/llmworker/v1/tool_service_pb.js";
import {
  CallDecisionSchema,
  CallToolRequestSchema,
  type CallToolResponse,
  DefinitionFormat,
  type ListDefinitionsSortedResponse,
  ToolService,
} from "./gen/llmworker/v1/tool_service_pb.js";
import type { ToolDefinition } from "./gen/llmworker/v1/tool_pb.js";
import { fromError } from "./errors.js";

/** How to reach the server. */
export interface ClientOptions {
  /** A caller token of the server's --auth-tokens, sent as "authorization: Bearer". */
  token?: string;
  /** Connect over TLS, trusting these PEM certificates (default: the system's), and with
   * cert and key, mutual TLS. Without any of the three the connection is plaintext. */
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  /** A deadline for every call, in milliseconds (none by default). */
  timeoutMs?: number;
}

/** A call's output: the text the model reads, the structured result (parsed JSON; undefined
 * when the tool has none) and the attachments. */
export interface ToolResult {
  output: string;
  structured?: unknown;
  attachments: Attachment[];
}

/** What a call carries beside its input. */
export interface CallOptions {
  callId?: string;
  metadata?: Record<string, string>;
  signal?: AbortSignal;
}

/** One event of a streamed call: progress, a chunk of output, or (last) the result. */
export type StreamEvent =
  | { kind: "progress"; progress: ToolProgress }
  | { kind: "chunk"; text: string }
  | { kind: "result"; result: ToolResult };

/** One call of a batch. */
export interface Call {
  id: string;
  name: string;
  input?: unknown;
  metadata?: Record<string, string>;
}

/** How a batch ended: every result in call order, or the pause and how to go on. */
export type Outcome = { completed: CallResult[]; paused?: undefined } | { completed?: undefined; paused: PausedBatch };

/** The server's tool set, sorted by name, with its fingerprint. */
export interface Definitions {
  tools: ToolDefinition[];
  fingerprint: string;
}

/** A tool SearchTools found, with its score (higher is better, within one search). */
export interface Found {
  tool: ToolDefinition;
  score: number;
}

/** Let the call run as it is. */
export function approve(callId: string): CallDecision {
  return create(CallDecisionSchema, { callId, decision: { case: "approve", value: {} } });
}

/** Refuse the call; reason reaches the model as the call's error. */
export function deny(callId: string, reason: string): CallDecision {
  return create(CallDecisionSchema, { callId, decision: { case: "deny", value: { reason } } });
}

/** Let the call run with input instead of the model's. */
export function approveWithInput(callId: string, input: unknown): CallDecision {
  const inputJson = JSON.stringify(input);
  return create(CallDecisionSchema, { callId, decision: { case: "approveWithInput", value: { inputJson } } });
}

function resultOf(response: CallToolResponse): ToolResult {
  const result: ToolResult = { output: response.output, attachments: response.attachments };
  if (response.structuredOutputJson) result.structured = JSON.parse(response.structuredOutputJson);
  return result;
}

function outcomeOf(outcome: { case: "completed"; value: { results: CallResult[] } } | { case: "paused"; value: PausedBatch } | { case: undefined; value?: undefined }): Outcome {
  if (outcome.case === "paused") return { paused: outcome.value };
  return { completed: outcome.case === "completed" ? outcome.value.results : [] };
}

/** Rethrows what a call threw as the typed error of its reason. */
async function typed<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    throw fromError(error);
  }
}

/** A client of the server at target ("127.0.0.1:50051"); plaintext unless options.ca. */
export function createClient(target: string, options: ClientOptions = {}): LlmworkerClient {
  return new LlmworkerClient(target, options);
}

export class LlmworkerClient {
  readonly #service: Client<typeof ToolService>;
  readonly #timeoutMs: number | undefined;

  constructor(target: string, options: ClientOptions = {}) {
    if (options.token !== undefined && /[\r\n]/.test(options.token)) {
      throw new TypeError("the token holds a line break; give the token alone");
    }
    const interceptors: Interceptor[] = [];
    const token = options.token;
    if (token) {
      interceptors.push((next) => (request) => {
        request.header.set("authorization", `Bearer ${token}`);
        return next(request);
      });
    }
    const secure = options.ca !== undefined || options.cert !== undefined || options.key !== undefined;
    const transport = createGrpcTransport({
      baseUrl: `${secure ? "https" : "http"}://${target}`,
      interceptors,
      nodeOptions: secure ? { ca: options.ca, cert: options.cert, key: options.key } : {},
    });
    this.#service = connectClient(ToolService, transport);
    this.#timeoutMs = options.timeoutMs;
  }

  /** The generated client, for what this class does not wrap. */
  get service(): Client<typeof ToolService> {
    return this.#service;
  }

  /** Run the tool name with input (sent as JSON) and give its result; a failure throws the
   * class of its reason (ToolNotFound, ToolInvalidArgument…). */
  async callTool(name: string, input: unknown = {}, options: CallOptions = {}): Promise<ToolResult> {
    const request = this.#request(name, input, options);
    const response = await typed(this.#service.callTool(request, this.#call(options.signal)));
    return resultOf(response);
  }

  /** Run the tool name as CallToolStream: its progress and output chunks as they come, then
   * its result. Leaving the loop early cancels the call. */
  async *callToolStream(name: string, input: unknown = {}, options: CallOptions = {}): AsyncGenerator<StreamEvent> {
    const abort = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, abort.signal]) : abort.signal;
    try {
      for await (const event of this.#service.callToolStream(this.#request(name, input, options), this.#call(signal))) {
        const which = event.event;
        if (which.case === "progress") yield { kind: "progress", progress: which.value };
        else if (which.case === "outputChunk") yield { kind: "chunk", text: which.value.text };
        else if (which.case === "result") yield { kind: "result", result: resultOf(which.value) };
      }
    } catch (error) {
      throw fromError(error);
    } finally {
      abort.abort();
    }
  }

  /** Run calls as one batch through the server's hooks and approvals: a call of a tool that
   * requires approval pauses the batch until resume decides it. */
  async callTools(calls: Call[]): Promise<Outcome> {
    const request = { calls: calls.map((call) => this.#request(call.name, call.input ?? {}, { callId: call.id, metadata: call.metadata })) };
    const response = await typed(this.#service.callTools(request, this.#call()));
    return outcomeOf(response.outcome);
  }

  /** Go on with a paused batch (its resumeToken) after decisions (approve, deny,
   * approveWithInput). */
  async resume(resumeToken: string, decisions: CallDecision[]): Promise<Outcome> {
    const response = await typed(this.#service.resumeBatch({ resumeToken, decisions }, this.#call()));
    return outcomeOf(response.outcome);
  }

  /** Run the tool calls of a model's output in a provider's format as one batch: the results
   * as the message to send back in that format (parsed JSON), or the pause. */
  async runProviderToolCalls(format: DefinitionFormat, modelOutput: unknown): Promise<{ message: unknown } | { paused: PausedBatch }> {
    const request = { format, modelOutputJson: JSON.stringify(modelOutput) };
    const response = await typed(this.#service.runProviderToolCalls(request, this.#call()));
    if (response.outcome.case === "paused") return { paused: response.outcome.value };
    return { message: JSON.parse(response.outcome.value ?? "null") };
  }

  /** The tools this client may use. */
  async listDefinitions(): Promise<Definitions> {
    const response = await typed(this.#service.listDefinitionsSorted({}, this.#call()));
    return definitionsOf(response);
  }

  /** The same tools as a provider's request field takes them (the parsed "tools" array). */
  async listDefinitionsIn(format: DefinitionFormat, anthropicCacheControl = false): Promise<unknown[]> {
    const request = { format, anthropicCacheControl };
    const response = await typed(this.#service.listDefinitionsSorted(request, this.#call()));
    return JSON.parse(response.definitionsJson) as unknown[];
  }

  /** The tools this client may use ranked against a few words, the best limit (1-100). */
  async searchTools(query: string, limit = 10): Promise<Found[]> {
    const response = await typed(this.#service.searchTools({ query, limit }, this.#call()));
    return response.definitions.map((tool, i) => ({ tool, score: response.scores[i] ?? 0 }));
  }

  /** The tool set now and again after every change, until signal aborts or the loop stops. */
  async *watchDefinitions(signal?: AbortSignal): AsyncGenerator<Definitions> {
    const abort = new AbortController();
    try {
      const options = { signal: signal ? AbortSignal.any([signal, abort.signal]) : abort.signal };
      for await (const response of this.#service.watchDefinitions({}, options)) {
        if (!response.unchanged) yield definitionsOf(response);
      }
    } catch (error) {
      throw fromError(error);
    } finally {
      abort.abort();
    }
  }

  #request(name: string, input: unknown, options: CallOptions) {
    return create(CallToolRequestSchema, {
      name,
      inputJson: JSON.stringify(input),
      callId: options.callId ?? "",
      metadata: options.metadata ?? {},
    });
  }

  #call(signal?: AbortSignal) {
    return { signal, timeoutMs: this.#timeoutMs };
  }
}

function definitionsOf(response: ListDefinitionsSortedResponse): Definitions {
  return { tools: response.definitions, fingerprint: response.fingerprint };
}
