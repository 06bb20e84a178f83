// How a client reaches a server: one connection to one address, or with balancing, one per
// replica (balancing.ts); and clients of the generated services over them.
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client, type Transport, createClient as connectClient } from "@connectrpc/connect";

import { BalancedTransport, type Retryable } from "./balancing.js";
import { type LlmworkerTransport, type TransportOptions, authorityOf, checkOptions, endpointTransport, parseTarget } from "./endpoint.js";

/** The SDK's transport to target, for a generated service's client (createServiceClient).
 * With balancing it balances as a client does, but retries only calls that never left (it
 * does not know which tools may run again). */
export function createTransport(target: string, options: TransportOptions = {}): LlmworkerTransport {
  return openTransport(target, options);
}

/** createTransport, and for a balancing client, which calls may be retried on UNAVAILABLE. */
export function openTransport(target: string, options: TransportOptions, retryable?: Retryable): LlmworkerTransport {
  checkOptions(options);
  const parsed = parseTarget(target);
  if (options.balancing) return new BalancedTransport(target, parsed, options, retryable);
  if (parsed.kind === "list") throw new TypeError(`target ${JSON.stringify(target)} names several addresses: give balancing: true`);
  const endpoint = parsed.kind === "dns" ? { authority: authorityOf(parsed.host, parsed.port) } : parsed.endpoint;
  const { transport, sessions } = endpointTransport(endpoint, options);
  let closed = false;
  const open = (): void => {
    if (closed) throw new ConnectError(`the client of ${target} is closed`, Code.Unavailable);
  };
  return {
    unary: (...args) => (open(), transport.unary(...args)),
    stream: (...args) => (open(), transport.stream(...args)),
    close: () => {
      closed = true;
      sessions.abort();
    },
  };
}

/** A client of a generated service (ToolRegistry, Health, ToolService itself) at target or
 * over a transport, for what LlmworkerClient does not wrap:
 *
 *     const registry = createServiceClient(ToolRegistry, "unix:///run/llmworker.sock", { token });
 *     await registry.lockRegistry({});
 *
 * Its failures are Connect's ConnectError; fromError gives the typed error of one. */
export function createServiceClient<S extends DescService>(service: S, target: string | Transport, options: TransportOptions = {}): Client<S> {
  if (typeof target === "string" && options.balancing) {
    // its health watches would keep the process alive, and a Connect client cannot close them
    throw new TypeError("balancing needs a transport you can close: give createTransport(target, { balancing: true }) here, and close() it when done");
  }
  return connectClient(service, typeof target === "string" ? createTransport(target, options) : target);
}
