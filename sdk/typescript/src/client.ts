// The client of one llmworker server (or, balancing, of its replicas): calls, streams,
// batches with decisions, listings in provider formats, search and watch, each failure the
// typed error of its reason.
import { create } from "@bufbuild/protobuf";
import { Code, type Client, type Transport, createClient as connectClient } from "@connectrpc/connect";

import type { Attachment, CallDecision, CallResult, PausedBatch, PausedBatchSummary, ToolProgress } from "./gen/llmworker/v1/tool_service_pb.js";
import {
  CallDecisionSchema,
  CallToolRequestSchema,
  type CallToolResponse,
  type CallToolsResponse,
  DefinitionFormat,
  type ListDefinitionsSortedResponse,
  ToolService,
} from "./gen/llmworker/v1/tool_service_pb.js";
import type { ToolDefinition } from "./gen/llmworker/v1/tool_pb.js";
import { retryIsSafe } from "./balancing.js";
import type { LlmworkerTransport, TransportOptions } from "./endpoint.js";
import { LlmworkerError, fromError } from "./errors.js";
import { openTransport } from "./transport.js";

/** How to reach the server: TLS, a token, a deadline for every call, balancing. */
export type ClientOptions = TransportOptions;

/** JSON text sent as it is, neither parsed nor serialized again: a model's arguments string,
 * or a literal JSON.stringify cannot write (the server refuses NaN, for one). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** An input given as JSON text (see RawJson). */
export function rawJson(text: string): RawJson {
  return new RawJson(text);
}

function jsonOf(input: unknown): string {
  return input instanceof RawJson ? input.text : JSON.stringify(input);
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
  /** This call's deadline in milliseconds, instead of the client's timeoutMs. */
  timeoutMs?: number;
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

/** How a batch ended: every result in call order (and for a batch that came in a
 * provider's format, runProviderToolCalls, the results as the message to send back in it,
 * parsed), or the pause and how to go on. */
export type Outcome =
  | { completed: CallResult[]; message?: unknown; paused?: undefined }
  | { completed?: undefined; message?: undefined; paused: PausedBatch };

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

/** Let the call run with input (sent as JSON, or a RawJson as it is) instead of the
 * model's. */
export function approveWithInput(callId: string, input: unknown): CallDecision {
  const inputJson = jsonOf(input);
  return create(CallDecisionSchema, { callId, decision: { case: "approveWithInput", value: { inputJson } } });
}

function resultOf(response: CallToolResponse): ToolResult {
  const result: ToolResult = { output: response.output, attachments: response.attachments };
  if (response.structuredOutputJson) result.structured = JSON.parse(response.structuredOutputJson);
  return result;
}

function outcomeOf(outcome: CallToolsResponse["outcome"]): Outcome {
  if (outcome.case === "paused") return { paused: outcome.value };
  if (outcome.case !== "completed") {
    throw new LlmworkerError(Code.Internal, "", "the server's answer has neither completed results nor a pause: is it an llmworker server?", {}, undefined);
  }
  const { results, resultsMessageJson } = outcome.value;
  return resultsMessageJson ? { completed: results, message: JSON.parse(resultsMessageJson) } : { completed: results };
}

/** Rethrows what a call threw as the typed error of its reason. */
async function typed<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    throw fromError(error);
  }
}

/** A client of the server at target ("127.0.0.1:50051", "unix:///run/llmworker.sock"), or
 * with balancing: true, of every replica it names ("dns:///tools.internal:50051",
 * "ipv4:10.0.0.1:50051,10.0.0.2:50051"); plaintext unless options.ca, cert or key. */
export function createClient(target: string, options: ClientOptions = {}): LlmworkerClient {
  return new LlmworkerClient(target, options);
}

// How often, at most, a balancing client lists the tools to learn whether an unknown one
// may be retried.
const LEARN_INTERVAL_MS = 1000;
// The longest that listing may take (a replica that accepts connections and never answers).
const LEARN_TIMEOUT_MS = 5000;

export class LlmworkerClient {
  readonly #transport: LlmworkerTransport;
  readonly #service: Client<typeof ToolService>;
  readonly #timeoutMs: number | undefined;
  readonly #balancing: boolean;
  // balancing: whether a call of each tool may be retried, from the last listing
  #retrySafe = new Map<string, boolean>();
  #learnedAt = 0;
  #learning: Promise<void> | undefined;

  constructor(target: string, options: ClientOptions = {}) {
    this.#balancing = options.balancing ?? false;
    const retryable = (method: unknown, input: unknown): boolean =>
      method === ToolService.method.callTool && this.#retrySafe.get((input as { name?: string }).name ?? "") === true;
    this.#transport = openTransport(target, options, retryable);
    this.#service = connectClient(ToolService, this.#transport);
    this.#timeoutMs = options.timeoutMs;
  }

  /** The generated client, for what this class does not wrap. */
  get service(): Client<typeof ToolService> {
    return this.#service;
  }

  /** The transport under it (with balancing, over every replica), for a client of another
   * service on the same connections: createServiceClient(Health, client.transport). */
  get transport(): Transport {
    return this.#transport;
  }

  /** Close the connections (and with balancing, stop the health checks); calls fail from
   * now on. A balancing client must be closed for its process to exit. */
  close(): void {
    this.#transport.close();
  }

  /** Run the tool name with input (sent as JSON, or a RawJson as it is) and give its result;
   * a failure throws the class of its reason (ToolNotFound, ToolInvalidArgument…). With
   * balancing, a call of a tool annotated read-only or idempotent that fails UNAVAILABLE is
   * tried again on another replica. */
  async callTool(name: string, input: unknown = {}, options: CallOptions = {}): Promise<ToolResult> {
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const deadline = timeoutMs !== undefined && timeoutMs > 0 ? Date.now() + timeoutMs : undefined;
    await this.#learn(name, options.signal, deadline);
    const request = this.#request(name, input, options);
    // the call gets what is left of its deadline after learning (at least 1 ms: 0 is none)
    const left = deadline === undefined ? timeoutMs : Math.max(1, deadline - Date.now());
    const response = await typed(this.#service.callTool(request, this.#call(options.signal, left)));
    return resultOf(response);
  }

  /** Run the tool name as CallToolStream: its progress and output chunks as they come, then
   * its result. Leaving the loop early cancels the call. */
  async *callToolStream(name: string, input: unknown = {}, options: CallOptions = {}): AsyncGenerator<StreamEvent> {
    const abort = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, abort.signal]) : abort.signal;
    try {
      for await (const event of this.#service.callToolStream(this.#request(name, input, options), this.#call(signal, options.timeoutMs))) {
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

  /** The definition of the tool name (GetTool). */
  async getTool(name: string): Promise<ToolDefinition> {
    const response = await typed(this.#service.getTool({ name }, this.#call()));
    if (!response.definition) throw new Error(`GetTool ${name} answered no definition`);
    return response.definition;
  }

  /** Run calls as one batch through the server's hooks and approvals: a call of a tool that
   * requires approval pauses the batch until resume decides it. A call's failure is in its
   * result (statusError(result.error) gives its typed error). */
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

  /** Go on with a paused batch pausedBatches found, by its id instead of its token: allowed
   * to the caller that paused it and to approvers whose globs match. */
  async decide(batchId: string, decisions: CallDecision[]): Promise<Outcome> {
    const response = await typed(this.#service.resumeBatch({ batchId, decisions }, this.#call()));
    return outcomeOf(response.outcome);
  }

  /** The paused batches this client may decide, oldest first, fetched pageSize at a time
   * (0: the server's default, 50), on any replica of a shared store. */
  async *pausedBatches(pageSize = 0): AsyncGenerator<PausedBatchSummary> {
    let pageToken = "";
    do {
      const page = await typed(this.#service.listPausedBatches({ pageSize, pageToken }, this.#call()));
      yield* page.batches;
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  /** Run the tool calls of a model's output in a provider's format as one batch: the results
   * as the message to send back in that format (parsed JSON), or the pause. */
  async runProviderToolCalls(format: DefinitionFormat, modelOutput: unknown): Promise<{ message: unknown } | { paused: PausedBatch }> {
    const request = { format, modelOutputJson: jsonOf(modelOutput) };
    const response = await typed(this.#service.runProviderToolCalls(request, this.#call()));
    if (response.outcome.case === "paused") return { paused: response.outcome.value };
    return { message: JSON.parse(response.outcome.value ?? "null") };
  }

  /** The tools this client may use. */
  async listDefinitions(): Promise<Definitions> {
    const response = await typed(this.#service.listDefinitionsSorted({}, this.#call()));
    return this.#definitionsOf(response);
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
      // timeoutMs 0: a watch has no deadline, whatever the client's timeoutMs
      const options = { signal: signal ? AbortSignal.any([signal, abort.signal]) : abort.signal, timeoutMs: 0 };
      for await (const response of this.#service.watchDefinitions({}, options)) {
        if (!response.unchanged) yield this.#definitionsOf(response);
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
      inputJson: jsonOf(input),
      callId: options.callId ?? "",
      metadata: options.metadata ?? {},
    });
  }

  #call(signal?: AbortSignal, timeoutMs?: number) {
    return { signal, timeoutMs: timeoutMs ?? this.#timeoutMs };
  }

  #definitionsOf(response: ListDefinitionsSortedResponse): Definitions {
    if (this.#balancing) {
      this.#retrySafe = new Map(response.definitions.map((tool) => [tool.name, retryIsSafe(tool)]));
      this.#learnedAt = Date.now();
    }
    return { tools: response.definitions, fingerprint: response.fingerprint };
  }

  /** Balancing: learn from a listing whether the tool name may be retried, unless known (or
   * listed within the last second). The listing is shared by the calls that wait for it,
   * and bounded; each waits no longer than its own deadline or signal. A failed or late
   * listing leaves the call unretried. */
  async #learn(name: string, signal: AbortSignal | undefined, deadline: number | undefined): Promise<void> {
    if (!this.#balancing || this.#retrySafe.has(name) || Date.now() - this.#learnedAt < LEARN_INTERVAL_MS) return;
    this.#learning ??= this.#service
      .listDefinitionsSorted({}, { timeoutMs: LEARN_TIMEOUT_MS })
      .then((response) => void this.#definitionsOf(response))
      .catch(() => {})
      .finally(() => {
        this.#learnedAt = Date.now();
        this.#learning = undefined;
      });
    let timer: NodeJS.Timeout | undefined;
    let aborted: (() => void) | undefined;
    try {
      await Promise.race([
        this.#learning,
        new Promise<void>((resolve) => {
          if (deadline !== undefined) timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
          aborted = resolve;
          signal?.addEventListener("abort", aborted, { once: true });
        }),
      ]);
    } finally {
      clearTimeout(timer);
      if (aborted) signal?.removeEventListener("abort", aborted);
    }
  }
}
