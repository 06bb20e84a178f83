// Balancing over replicas, as gRPC's round_robin with client-side health checking and the
// retry policy of llmworker's Python client (llmworker/_client/balancing.py): one Connect
// transport per address, each watching grpc.health.v1.Health for llmworker.v1.ToolService;
// a call goes to the next replica that says SERVING, and a call of a tool annotated
// read-only or idempotent that fails with UNAVAILABLE is tried again with backoff. Any other
// call might have run on the replica that went away, so it fails and the caller decides.
import { lookup } from "node:dns/promises";

import type { DescMessage, DescMethodStreaming, DescMethodUnary, MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues, type StreamResponse, type Transport, type UnaryResponse, createClient } from "@connectrpc/connect";
import type { Http2SessionManager } from "@connectrpc/connect-node";

import { Health, HealthCheckResponse_ServingStatus } from "./gen/grpc/health/v1/health_pb.js";
import type { ToolDefinition } from "./gen/llmworker/v1/tool_pb.js";
import type { Endpoint, LlmworkerTransport, Target, TransportOptions } from "./endpoint.js";
import { authorityOf, endpointTransport } from "./endpoint.js";

/** The service whose health a balancing client watches on each replica. */
export const HEALTH_SERVICE = "llmworker.v1.ToolService";

/** The retry policy of a call that may run again, as the retryPolicy of the service config
 * llmworker's Python client uses (RETRYING_SERVICE_CONFIG): at most 5 attempts, the n-th
 * retry after a random pause of up to min(0.05 s × 2^(n-1), 1 s), on UNAVAILABLE only. */
export const RETRY_POLICY = {
  maxAttempts: 5,
  initialBackoff: "0.05s",
  maxBackoff: "1s",
  backoffMultiplier: 2,
  retryableStatusCodes: ["UNAVAILABLE"],
} as const;

/** Whether a call of the tool definition describes may run again after UNAVAILABLE: it is
 * annotated idempotent or read-only (an unknown tool: no). */
export function retryIsSafe(definition: ToolDefinition | undefined): boolean {
  const hints = definition?.annotations;
  return hints?.idempotentHint === true || hints?.readOnlyHint === true;
}

/** Whether a call (method and request) may be retried on UNAVAILABLE. */
export type Retryable = (method: DescMethodUnary, input: unknown) => boolean;

const seconds = (text: string): number => Number(text.replace(/s$/, "")) * 1000;
const INITIAL_BACKOFF_MS = seconds(RETRY_POLICY.initialBackoff);
const MAX_BACKOFF_MS = seconds(RETRY_POLICY.maxBackoff);
// Reconnecting a health watch: gRPC's connection backoff (1 s, ×1.6, ±20 %), up to 30 s.
const WATCH_BACKOFF_MS = 1000;
const WATCH_BACKOFF_MAX_MS = 30_000;
// A name is resolved again after a replica became unreachable, at most this often.
const RESOLVE_INTERVAL_MS = 30_000;
// A replica whose address left the name keeps its connection this long for its calls.
const DROPPED_GRACE_MS = 60_000;
// Node's codes of a connection that never opened: a call that failed so was never sent.
const NEVER_CONNECTED = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "ENOENT"]);

// UNAVAILABLE, whether the server said so or the connection failed or broke (the endpoint's
// transport reports those as gRPC does: UNAVAILABLE).
function isUnavailable(error: unknown): boolean {
  return error instanceof ConnectError && error.code === Code.Unavailable;
}

function neverSent(error: unknown): boolean {
  if (!(error instanceof ConnectError) || error.isWireError) return false;
  const seen = new Set<unknown>();
  for (let reason: unknown = error; reason instanceof Error && !seen.has(reason); reason = reason.cause) {
    seen.add(reason);
    if ("code" in reason && typeof reason.code === "string" && NEVER_CONNECTED.has(reason.code)) return true;
  }
  return false;
}

type State = "connecting" | "serving" | "not serving" | "unreachable";

/** One replica: its transport and connection, and what its health watch last said. */
class Replica {
  state: State = "connecting";
  why = "not checked yet";
  readonly transport: Transport;
  readonly #sessions: Http2SessionManager;
  readonly #stop = new AbortController();
  readonly #changed: () => void;
  #watching = false;
  #reopenedAt = 0;

  constructor(
    readonly authority: string,
    endpoint: Endpoint,
    options: TransportOptions,
    changed: () => void,
  ) {
    ({ transport: this.transport, sessions: this.#sessions } = endpointTransport(endpoint, options, true));
    this.#changed = changed;
  }

  /** Start (or restart, after the replica answered UNIMPLEMENTED) the health watch. */
  watch(): void {
    if (this.#watching || this.#stop.signal.aborted) return;
    this.#watching = true;
    void this.#watch().finally(() => (this.#watching = false));
  }

  /** A call failed as if the replica were gone: a replica without health checking is
   * checked again (one with it learns from its own watch). */
  suspect(): void {
    if (!this.#watching && !this.#stop.signal.aborted) {
      this.#set("connecting", "a call failed UNAVAILABLE");
      this.watch();
    }
  }

  /** Stop watching; with calls too, close the connection (and the calls on it). */
  close(calls: boolean): void {
    this.#stop.abort();
    if (calls) this.#sessions.abort();
    this.#set("unreachable", "closed");
  }

  /** The state and why; unchanged, the transport hears of it only when again (a watch that
   * failed once more: the name may have moved). */
  #set(state: State, why: string, again = false): void {
    if (this.state === state && this.why === why && !again) return;
    this.state = state;
    this.why = why;
    this.#changed();
  }

  async #watch(): Promise<void> {
    const health = createClient(Health, this.transport);
    const signal = this.#stop.signal;
    let backoff = WATCH_BACKOFF_MS;
    while (!signal.aborted) {
      let answered = false;
      try {
        // timeoutMs 0: no deadline, whatever the client's timeoutMs
        for await (const reply of health.watch({ service: HEALTH_SERVICE }, { signal, timeoutMs: 0 })) {
          answered = true;
          backoff = WATCH_BACKOFF_MS;
          const serving = reply.status === HealthCheckResponse_ServingStatus.SERVING;
          this.#set(serving ? "serving" : "not serving", HealthCheckResponse_ServingStatus[reply.status] ?? String(reply.status));
        }
        if (!signal.aborted) this.#set("connecting", "the health watch ended");
      } catch (error) {
        if (signal.aborted) return;
        const failure = ConnectError.from(error);
        if (failure.code === Code.Unimplemented) {
          // as gRPC does: a server without health checking is taken as serving
          this.#set("serving", "no health service");
          return;
        }
        this.#set(answered ? "connecting" : "unreachable", failure.rawMessage || Code[failure.code], true);
      }
      // a watch that had answered is started again at once, unless it did so a moment ago
      if (answered && Date.now() - this.#reopenedAt > WATCH_BACKOFF_MS) {
        this.#reopenedAt = Date.now();
        continue;
      }
      const pause = backoff * (0.8 + 0.4 * Math.random());
      backoff = Math.min(backoff * 1.6, WATCH_BACKOFF_MAX_MS);
      await sleep(pause, signal).catch(() => {}); // close() ends the pause, and the loop
    }
  }
}

/** A pause of ms that an abort of signal ends early (and rejects). */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const aborted = (): void => {
      clearTimeout(timer);
      reject(ConnectError.from(signal?.reason ?? new Error("aborted"), Code.Canceled));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", aborted);
      resolve();
    }, ms);
    if (signal?.aborted) aborted();
    else signal?.addEventListener("abort", aborted, { once: true });
  });
}

/** A transport over every replica of a target (see the module's comment). */
export class BalancedTransport implements LlmworkerTransport {
  readonly #target: string;
  readonly #parsed: Target;
  readonly #options: TransportOptions;
  readonly #retryable: Retryable;
  #replicas: Replica[] = [];
  // replicas whose address left the name: closed after a grace, or by close()
  readonly #dropped = new Set<Replica>();
  readonly #closing = new AbortController();
  #resolveTimer: NodeJS.Timeout | undefined;
  #next = 0;
  #started: Promise<void> | undefined;
  #resolvedAt = 0;
  #resolving: Promise<void> | undefined;
  #closed = false;
  #change!: Promise<void>;
  #wake!: () => void;

  constructor(target: string, parsed: Target, options: TransportOptions, retryable: Retryable = () => false) {
    this.#target = target;
    this.#parsed = parsed;
    this.#options = options;
    this.#retryable = retryable;
    this.#renew();
  }

  async unary<I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    header: HeadersInit | undefined,
    input: MessageInitShape<I>,
    contextValues?: ContextValues,
  ): Promise<UnaryResponse<I, O>> {
    const deadline = this.#deadline(timeoutMs);
    const safe = this.#retryable(method as unknown as DescMethodUnary, input);
    let attempts = 0;
    let backoff = INITIAL_BACKOFF_MS;
    let transparent = true;
    const pause = async (error: unknown): Promise<void> => {
      const ms = Math.random() * backoff;
      backoff = Math.min(backoff * RETRY_POLICY.backoffMultiplier, MAX_BACKOFF_MS);
      if (deadline !== undefined && Date.now() + ms >= deadline) throw error;
      // close() ends the pause too
      await sleep(ms, signal ? AbortSignal.any([signal, this.#closing.signal]) : this.#closing.signal);
    };
    for (;;) {
      let replica: Replica;
      try {
        replica = await this.#pick(signal, deadline);
      } catch (error) {
        // no replica serving for a moment: the call was not sent, so any call waits and
        // tries again, as many times as a safe one would
        if (this.#closed || !isUnavailable(error) || ++attempts >= RETRY_POLICY.maxAttempts) throw error;
        await pause(error);
        continue;
      }
      try {
        return await replica.transport.unary(method, signal, this.#left(deadline), header, input, contextValues);
      } catch (error) {
        if (signal?.aborted || !isUnavailable(error)) throw error;
        replica.suspect();
        // a call that never reached a replica is tried once more, whatever the tool (as
        // gRPC's transparent retries)
        if (transparent && neverSent(error)) {
          transparent = false;
          continue;
        }
        attempts += 1;
        if (!safe || attempts >= RETRY_POLICY.maxAttempts) throw error;
        await pause(error);
      }
    }
  }

  async stream<I extends DescMessage, O extends DescMessage>(
    method: DescMethodStreaming<I, O>,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    header: HeadersInit | undefined,
    input: AsyncIterable<MessageInitShape<I>>,
    contextValues?: ContextValues,
  ): Promise<StreamResponse<I, O>> {
    const deadline = this.#deadline(timeoutMs);
    const replica = await this.#pick(signal, deadline);
    try {
      return await replica.transport.stream(method, signal, this.#left(deadline), header, input, contextValues);
    } catch (error) {
      if (isUnavailable(error)) replica.suspect();
      throw error;
    }
  }

  /** Stop the health checks and close every connection; calls fail from now on. */
  close(): void {
    this.#closed = true;
    this.#closing.abort();
    clearTimeout(this.#resolveTimer);
    for (const replica of [...this.#replicas, ...this.#dropped]) replica.close(true);
    this.#dropped.clear();
    this.#wake();
  }

  #deadline(timeoutMs: number | undefined): number | undefined {
    const ms = timeoutMs ?? this.#options.timeoutMs;
    return ms !== undefined && ms > 0 ? Date.now() + ms : undefined;
  }

  #left(deadline: number | undefined): number | undefined {
    if (deadline === undefined) return 0; // 0: no deadline (not the transport's default)
    const left = deadline - Date.now();
    if (left <= 0) throw new ConnectError("the deadline passed", Code.DeadlineExceeded);
    return left;
  }

  #renew(): void {
    this.#change = new Promise((resolve) => (this.#wake = resolve));
  }

  #changed(): void {
    if (this.#closed) return this.#wake();
    const wake = this.#wake;
    this.#renew();
    wake();
    if (this.#replicas.some((replica) => replica.state === "unreachable")) this.#resolveSoon();
  }

  /** A dns: target's name resolved again now, or when RESOLVE_INTERVAL_MS has passed since
   * the last time (a replica may have moved: a rollout gives it a new address). */
  #resolveSoon(): void {
    if (this.#parsed.kind !== "dns" || this.#closed || this.#resolving || this.#resolveTimer) return;
    const wait = this.#resolvedAt + RESOLVE_INTERVAL_MS - Date.now();
    if (wait > 0) {
      this.#resolveTimer = setTimeout(() => {
        this.#resolveTimer = undefined;
        this.#resolveSoon();
      }, wait);
      this.#resolveTimer.unref();
      return;
    }
    this.#resolving = this.#resolve()
      .catch(() => {})
      .finally(() => (this.#resolving = undefined));
  }

  /** The replicas of the target: its addresses, or those its name resolves to now; a
   * replica whose address is gone stops being watched (its calls finish). */
  async #resolve(): Promise<void> {
    let endpoints: Endpoint[];
    const parsed = this.#parsed;
    if (parsed.kind === "dns") {
      this.#resolvedAt = Date.now();
      const found = await lookup(parsed.host, { all: true });
      endpoints = found.map(({ address }) => ({ authority: authorityOf(address, parsed.port), servername: parsed.host }));
    } else {
      endpoints = parsed.kind === "list" ? parsed.endpoints : [parsed.endpoint];
    }
    if (this.#closed) return;
    const wanted = new Set(endpoints.map((endpoint) => endpoint.authority));
    const kept = this.#replicas.filter((replica) => wanted.has(replica.authority));
    for (const replica of this.#replicas) if (!wanted.has(replica.authority)) this.#drop(replica);
    for (const endpoint of endpoints) {
      if (kept.some((replica) => replica.authority === endpoint.authority)) continue;
      const replica = new Replica(endpoint.authority, endpoint, this.#options, () => this.#changed());
      kept.push(replica);
      replica.watch();
    }
    this.#replicas = kept;
    this.#changed();
  }

  /** Stop watching replica, whose address left the name; its calls have DROPPED_GRACE_MS to
   * finish before its connection closes. */
  #drop(replica: Replica): void {
    replica.close(false);
    this.#dropped.add(replica);
    setTimeout(() => {
      this.#dropped.delete(replica);
      replica.close(true);
    }, DROPPED_GRACE_MS).unref();
  }

  /** The next replica that says SERVING; while none does and some are still connecting,
   * wait (until the deadline); when none can, UNAVAILABLE naming each one's state. */
  async #pick(signal: AbortSignal | undefined, deadline: number | undefined): Promise<Replica> {
    this.#started ??= this.#resolve().catch((error: unknown) => {
      this.#started = undefined; // resolved again by the next call
      throw new ConnectError(`${this.#target}: ${error instanceof Error ? error.message : String(error)}`, Code.Unavailable);
    });
    await this.#started;
    for (;;) {
      if (this.#closed) throw new ConnectError(`the client of ${this.#target} is closed`, Code.Unavailable);
      if (signal?.aborted) throw ConnectError.from(signal.reason, Code.Canceled);
      const serving = this.#replicas.filter((replica) => replica.state === "serving");
      if (serving.length > 0) {
        this.#next = (this.#next + 1) % serving.length;
        return serving[this.#next] as Replica;
      }
      if (!this.#replicas.some((replica) => replica.state === "connecting")) {
        this.#resolveSoon(); // the name may have moved
        const states = this.#replicas.map((replica) => `${replica.authority} ${replica.state} (${replica.why})`).join(", ");
        throw new ConnectError(`no replica of ${this.#target} is serving: ${states || "the name has no address"}`, Code.Unavailable);
      }
      const wait = deadline === undefined ? undefined : deadline - Date.now();
      if (wait !== undefined && wait <= 0) throw new ConnectError(`the deadline passed while no replica of ${this.#target} was serving yet`, Code.DeadlineExceeded);
      await this.#waitForChange(signal, wait);
    }
  }

  async #waitForChange(signal: AbortSignal | undefined, ms: number | undefined): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    let aborted: (() => void) | undefined;
    try {
      await Promise.race([
        this.#change,
        new Promise<void>((resolve) => {
          if (ms !== undefined) timer = setTimeout(resolve, ms);
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
