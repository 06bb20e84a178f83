// Tools written in TypeScript, served to llmworker registries: each tool takes a zod schema
// (z.toJSONSchema gives its input schema) or a plain JSON Schema, and the provider serves
// ToolService (GetTool, CallTool, CallToolStream) and grpc.health.v1.Health over gRPC,
// registers the tools with registries, renews them, and unregisters them when it stops.
import http2 from "node:http2";
import net from "node:net";

import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient as connectClient } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";

import { type ToolDefinition, ToolDefinitionSchema } from "./gen/llmworker/v1/tool_pb.js";
import { ToolRegistry } from "./gen/llmworker/v1/tool_registry_pb.js";
import { type CallToolEvent, type CallToolResponse, ToolService } from "./gen/llmworker/v1/tool_service_pb.js";
import { DOMAIN, encodeErrorInfo, fromError } from "./errors.js";
import { ServingHealth } from "./health.js";
import { createTransport } from "./transport.js";

/** A zod schema (v4), or anything with the same two methods. */
export interface SchemaLike<T> {
  safeParse(input: unknown): { success: true; data: T } | { success: false; error: { message: string } };
  toJSONSchema(options?: { io?: "input" | "output" }): Record<string, unknown>;
}

/** What a tool knows of the call it runs. */
export interface ToolCall {
  callId: string;
  metadata: Record<string, string>;
  signal: AbortSignal;
  /** Tell a streaming caller how far the call has come (a no-op for one that does not stream). */
  reportProgress(progress: number, total?: number, message?: string): void;
}

/** A tool's result: its text, or a structured value (sent as JSON, text too). */
export type ToolOutput = string | { structured: Record<string, unknown>; text?: string };

export interface ToolSpec<In> {
  name: string;
  description: string;
  /** A zod schema of the arguments, or a plain JSON Schema object (then run gets the parsed
   * JSON as it came). */
  input: SchemaLike<In> | Record<string, unknown>;
  run(input: In, call: ToolCall): Promise<ToolOutput> | ToolOutput;
  title?: string;
  readOnly?: boolean;
  destructive?: boolean;
  idempotent?: boolean;
  requiresApproval?: boolean;
}

/** An error a tool throws when the model's arguments are wrong: the caller gets
 * TOOL_INVALID_ARGUMENT with its message. Any other error is TOOL_EXECUTION_FAILED. */
export class InvalidArgument extends Error {}

interface Tool {
  definition: ToolDefinition;
  run(inputJson: string, call: ToolCall): Promise<CallToolResponse>;
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

function isSchema<In>(input: ToolSpec<In>["input"]): input is SchemaLike<In> {
  return typeof input.safeParse === "function" && typeof input.toJSONSchema === "function";
}

/** A tool of a Provider. */
export function defineTool<In>(spec: ToolSpec<In>): Tool {
  if (!NAME.test(spec.name)) throw new TypeError(`tool name ${JSON.stringify(spec.name)}: use 1-64 of A-Z a-z 0-9 _ -`);
  // the input side: a field with a default is optional to the model
  const schema = isSchema(spec.input) ? spec.input.toJSONSchema({ io: "input" }) : { ...spec.input };
  delete schema.$schema;
  const hints = { readOnlyHint: spec.readOnly, destructiveHint: spec.destructive, idempotentHint: spec.idempotent };
  const definition = create(ToolDefinitionSchema, {
    name: spec.name,
    description: spec.description,
    title: spec.title ?? "",
    inputSchemaJson: JSON.stringify(schema),
    requiresApproval: spec.requiresApproval ?? false,
    annotations: Object.values(hints).some((hint) => hint !== undefined) ? hints : undefined,
  });
  return {
    definition,
    async run(inputJson, call) {
      let input: unknown;
      try {
        input = JSON.parse(inputJson || "{}");
      } catch {
        throw toolError(spec.name, new InvalidArgument("the input is not JSON"));
      }
      if (isSchema(spec.input)) {
        const parsed = spec.input.safeParse(input);
        if (!parsed.success) throw toolError(spec.name, new InvalidArgument(parsed.error.message));
        input = parsed.data;
      }
      let output: ToolOutput;
      try {
        output = await spec.run(input as In, call);
      } catch (error) {
        throw toolError(spec.name, error);
      }
      if (typeof output === "string") return { $typeName: "llmworker.v1.CallToolResponse", output, structuredOutputJson: "", attachments: [] };
      const structured = JSON.stringify(output.structured);
      return { $typeName: "llmworker.v1.CallToolResponse", output: output.text ?? structured, structuredOutputJson: structured, attachments: [] };
    },
  };
}

/** The error llmworker's servers send for a tool's error, so a registry rebuilds the same
 * failure for its callers (the ErrorInfo detail rides in the status, as Go's provider does). */
function toolError(tool: string, error: unknown): ConnectError {
  if (error instanceof ConnectError && hasErrorInfo(error)) return error;
  const invalid = error instanceof InvalidArgument;
  const message = error instanceof Error ? error.message : String(error);
  const code = invalid ? Code.InvalidArgument : Code.Unknown;
  const kind = invalid ? "Invalid argument" : "Execution failed";
  const failure = new ConnectError(`Tool execution failed: ${kind}: ${message}`, code);
  const reason = invalid ? "TOOL_INVALID_ARGUMENT" : "TOOL_EXECUTION_FAILED";
  const value = encodeErrorInfo({ reason, domain: DOMAIN, metadata: { tool, tool_error: message } });
  failure.details.push({ type: "google.rpc.ErrorInfo", value });
  return failure;
}


function hasErrorInfo(error: ConnectError): boolean {
  return error.details.some((detail) => "type" in detail && detail.type === "google.rpc.ErrorInfo");
}

/** Options of Provider.register. */
export interface RegisterOptions {
  /** The registry's token (the server's $LLMWORKER_TOKEN, or a --provider-tokens identity's). */
  token?: string;
  /** Register again this often (default 4 s, half the server's default --provider-lease). */
  renewMs?: number;
  /** The address the registry calls the tools at (default: where serve listens). */
  address?: string;
}

interface Registration {
  target: string;
  client: ReturnType<typeof connectClient<typeof ToolRegistry>>;
  headers: Record<string, string>;
  address: string;
  timer: NodeJS.Timeout | undefined;
  renewing: Promise<void> | undefined;
}

/** Serves tools and keeps them registered with registries. */
export class Provider {
  readonly #tools = new Map<string, Tool>();
  #server: http2.Http2Server | undefined;
  readonly #sessions = new Set<http2.ServerHttp2Session>();
  #address = "";
  #stopped = false;
  readonly #registrations: Registration[] = [];
  readonly #health = new ServingHealth();

  constructor(tools: Tool[]) {
    for (const tool of tools) {
      if (this.#tools.has(tool.definition.name)) throw new TypeError(`tool ${tool.definition.name} is defined twice`);
      this.#tools.set(tool.definition.name, tool);
    }
  }

  /** Serve on host:port (port 0: a free one); resolves to the address ("127.0.0.1:PORT").
   * Besides the tools, grpc.health.v1.Health answers SERVING for "" and
   * llmworker.v1.ToolService, and NOT_SERVING once stop() begins. */
  async serve(port = 0, host = "127.0.0.1"): Promise<string> {
    const tools = this.#tools;
    const health = this.#health;
    const find = (name: string): Tool => {
      const tool = tools.get(name);
      if (!tool) throw new ConnectError(`Tool '${name}' not found`, Code.NotFound);
      return tool;
    };
    const handler = connectNodeAdapter({
      routes(router) {
        health.routes(router);
        router.service(ToolService, {
          getTool(request) {
            return { definition: find(request.name).definition };
          },
          callTool(request, context) {
            return find(request.name).run(request.inputJson, callOf(request.callId, request.metadata, context.signal, () => {}));
          },
          async *callToolStream(request, context) {
            const tool = find(request.name);
            const events: CallToolEvent[] = [];
            let wake = (): void => {};
            const report = (progress: number, total?: number, message?: string): void => {
              events.push({ $typeName: "llmworker.v1.CallToolEvent", event: { case: "progress", value: { $typeName: "llmworker.v1.ToolProgress", progress, total, message: message ?? "" } } });
              wake();
            };
            let finished = false;
            const running = tool.run(request.inputJson, callOf(request.callId, request.metadata, context.signal, report)).finally(() => {
              finished = true;
              wake();
            });
            running.catch(() => {}); // awaited below; this keeps it from counting as unhandled
            while (!finished || events.length > 0) {
              const next = events.shift();
              if (next) {
                yield next;
              } else {
                await new Promise<void>((resolve) => (wake = resolve));
              }
            }
            yield { $typeName: "llmworker.v1.CallToolEvent", event: { case: "result", value: await running } };
          },
        });
      },
    });
    const server = http2.createServer(handler);
    server.on("session", (session) => {
      this.#sessions.add(session);
      session.once("close", () => this.#sessions.delete(session));
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => resolve());
    });
    this.#server = server;
    const bound = server.address() as net.AddressInfo;
    this.#address = `${host}:${bound.port}`;
    return this.#address;
  }

  /** Register every tool with the registry at target ("unix:///run/…sock" or "HOST:PORT")
   * once, then again every renewal until stop; the first failure throws its typed error. */
  async register(target: string, options: RegisterOptions = {}): Promise<void> {
    const address = options.address ?? this.#address;
    if (!address) throw new Error("nothing to register yet: call serve first, or give address");
    const transport = createTransport(target);
    const headers: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
    const registration = {
      target,
      client: connectClient(ToolRegistry, transport),
      headers,
      address,
    };
    const every = options.renewMs ?? 4000;
    if (!(every > 0)) throw new RangeError(`renewMs ${every}: renew every positive number of milliseconds`);
    try {
      await this.#registerAll(registration);
    } catch (error) {
      await this.#unregisterAll(registration); // what was accepted before the refusal goes again
      throw error;
    }
    if (this.#stopped) {
      await this.#unregisterAll(registration);
      throw new Error(`stopped while registering with ${target}`);
    }
    const entry: Registration = { ...registration, timer: undefined, renewing: undefined };
    let failing = "";
    const renew = (): void => {
      entry.timer = setTimeout(() => {
        entry.renewing = this.#registerAll(registration).then(
          () => {
            failing = "";
          },
          (error: unknown) => {
            const why = String(error);
            if (why !== failing) console.error(`llmworker provider: ${why}; retrying every ${every} ms`);
            failing = why;
          },
        ).finally(() => {
          entry.renewing = undefined;
          if (!this.#stopped) renew();
        });
      }, every);
      entry.timer.unref();
    };
    renew();
    this.#registrations.push(entry);
  }

  async #registerAll(registration: Omit<Registration, "timer" | "renewing">): Promise<void> {
    for (const tool of this.#tools.values()) {
      try {
        await registration.client.registerTool({ definition: tool.definition, providerTarget: registration.address }, { headers: registration.headers, timeoutMs: 10_000 });
      } catch (error) {
        throw fromError(error);
      }
    }
  }

  async #unregisterAll(registration: Omit<Registration, "timer" | "renewing">): Promise<void> {
    for (const name of this.#tools.keys()) {
      await registration.client.unregisterTool({ name, providerTarget: registration.address }, { headers: registration.headers, timeoutMs: 5000 }).catch(() => {});
    }
  }

  /** Report NOT_SERVING, unregister the tools from every registry, then stop serving: calls
   * still running get graceMs (default 5 s) before their connections are closed. */
  async stop(graceMs = 5000): Promise<void> {
    this.#stopped = true;
    this.#health.stopServing();
    for (const registration of this.#registrations.splice(0)) {
      clearTimeout(registration.timer);
      await registration.renewing; // a renewal in flight lands before the unregistering
      await this.#unregisterAll(registration);
    }
    const server = this.#server;
    this.#server = undefined;
    this.#health.endWatches();
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const session of this.#sessions) session.close(); // no new streams; open ones finish
    const grace = setTimeout(() => {
      for (const session of this.#sessions) session.destroy();
    }, graceMs);
    await closed;
    clearTimeout(grace);
  }
}

function callOf(callId: string, metadata: Record<string, string>, signal: AbortSignal, report: ToolCall["reportProgress"]): ToolCall {
  return { callId, metadata, signal, reportProgress: report };
}
