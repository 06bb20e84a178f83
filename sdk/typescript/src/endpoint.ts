// Where a client connects: targets ("HOST:PORT", "dns:///HOST:PORT", "unix:PATH",
// "ipv4:A:P,B:P") and Connect's gRPC transport over one HTTP/2 connection to one address,
// with TLS, a caller token and a default deadline.
import net from "node:net";

import { Code, ConnectError, type Interceptor, type Transport } from "@connectrpc/connect";
import { Http2SessionManager, createGrpcTransport } from "@connectrpc/connect-node";

/** How to reach a server. */
export interface TransportOptions {
  /** A caller token of the server's --auth-tokens, sent as "authorization: Bearer". */
  token?: string;
  /** Connect over TLS, trusting these PEM certificates (default: the system's), and with
   * cert and key, mutual TLS. Without any of the three the connection is plaintext. */
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  /** A deadline for every call, in milliseconds (none by default). */
  timeoutMs?: number;
  /** Spread calls over every replica the target names ("ipv4:10.0.0.1:50051,10.0.0.2:50051",
   * or "dns:///tools.internal:50051": every address the name resolves to): round robin over
   * the replicas whose gRPC health check says SERVING, as the Go SDK's WithBalancing does. */
  balancing?: boolean;
}

/** A Connect transport the SDK made: close() ends its connections (and health checks). */
export interface LlmworkerTransport extends Transport {
  close(): void;
}

/** Where one connection goes: an authority ("127.0.0.1:50051", "[::1]:50051") or a Unix
 * socket, and the name TLS checks the certificate against. */
export interface Endpoint {
  authority: string;
  socket?: string;
  servername?: string;
}

/** What a target names: one endpoint, or (balancing) a list of them or a name to resolve. */
export type Target =
  | { kind: "endpoint"; endpoint: Endpoint }
  | { kind: "list"; endpoints: Endpoint[] }
  | { kind: "dns"; host: string; port: number };

function hostPort(text: string, target: string): { host: string; port: number } {
  const found = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const port = Number(found?.[3]);
  if (!found || !(port > 0 && port < 65536)) throw new TypeError(`target ${JSON.stringify(target)}: give HOST:PORT (${JSON.stringify(text)} is not)`);
  return { host: found[1] ?? found[2] ?? "", port };
}

/** The authority of host and port, an IPv6 address in brackets. */
export function authorityOf(host: string, port: number): string {
  return net.isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Reads a target: "HOST:PORT", "dns:///HOST:PORT", "unix:PATH" or "unix:///PATH", and
 * "ipv4:A:P,B:P" or "ipv6:[A]:P,[B]:P" (several addresses: for balancing). */
export function parseTarget(target: string): Target {
  if (target.startsWith("unix:")) {
    const socket = target.replace(/^unix:(\/\/)?/, "");
    if (!socket) throw new TypeError(`target ${JSON.stringify(target)}: give the socket's path`);
    return { kind: "endpoint", endpoint: { authority: "localhost", socket } };
  }
  const scheme = /^(ipv4|ipv6):(.*)$/.exec(target);
  if (scheme) {
    const endpoints = (scheme[2] ?? "").split(",").map((one) => {
      const { host, port } = hostPort(one, target);
      if (scheme[1] === "ipv4" ? !net.isIPv4(host) : !net.isIPv6(host)) throw new TypeError(`target ${JSON.stringify(target)}: ${host} is no ${scheme[1]} address`);
      return { authority: authorityOf(host, port) };
    });
    return endpoints.length === 1 && endpoints[0] ? { kind: "endpoint", endpoint: endpoints[0] } : { kind: "list", endpoints };
  }
  const { host, port } = hostPort(target.replace(/^dns:(\/\/[^/]*\/)?/, ""), target);
  if (net.isIP(host)) return { kind: "endpoint", endpoint: { authority: authorityOf(host, port) } };
  return { kind: "dns", host, port };
}

// Node's codes of a connection that could not be made or broke: refused, reset, unreachable,
// a TLS handshake or certificate that failed, an HTTP/2 session that died.
const CONNECTION = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOENT", "ENOTFOUND", "EAI_AGAIN"]);
const CONNECTION_PREFIX = /^(ERR_SSL_|ERR_TLS_|ERR_HTTP2_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_)/;

function connectionFailed(error: ConnectError): boolean {
  const seen = new Set<unknown>();
  for (let reason: unknown = error; reason instanceof Error && !seen.has(reason); reason = reason.cause) {
    seen.add(reason);
    const code = "code" in reason ? reason.code : undefined;
    if (typeof code === "string" && (CONNECTION.has(code) || CONNECTION_PREFIX.test(code))) return true;
  }
  return false;
}

/** A failure of the connection rather than an answer of the server, as gRPC reports it:
 * UNAVAILABLE. Connect reports a failed TLS handshake as INTERNAL, a reset connection as
 * ABORTED, and the streams of a session that died (plaintext to a TLS port, say) as
 * CANCELED, though the caller cancelled nothing. */
function asGrpcReports(error: unknown, signal: AbortSignal, sessions: Http2SessionManager): unknown {
  if (!(error instanceof ConnectError) || error.isWireError || error.code === Code.Unavailable || error.code === Code.DeadlineExceeded) return error;
  const sessionDied = error.code === Code.Canceled && !signal.aborted && ["closed", "error"].includes(sessions.state());
  if (!sessionDied && (error.code === Code.Canceled || !connectionFailed(error))) return error;
  return new ConnectError(error.rawMessage, Code.Unavailable, error.metadata, undefined, error);
}

/** The interceptor of asGrpcReports, for unary calls and for a stream's messages. */
function unavailableAsGrpcSays(sessions: Http2SessionManager): Interceptor {
  return (next) => async (request) => {
    let response;
    try {
      response = await next(request);
    } catch (error) {
      throw asGrpcReports(error, request.signal, sessions);
    }
    if (!response.stream) return response;
    const messages = response.message;
    return {
      ...response,
      message: (async function* () {
        try {
          yield* messages;
        } catch (error) {
          throw asGrpcReports(error, request.signal, sessions);
        }
      })(),
    };
  };
}

/** Refuses options no connection could use: a token with a line break. */
export function checkOptions(options: TransportOptions): void {
  if (options.token !== undefined && /[\r\n]/.test(options.token)) {
    throw new TypeError("the token holds a line break; give the token alone");
  }
}

// A balancing client's replicas ping their connections this often and give up on one whose
// ping is not answered in time, so a replica gone without a TCP reset is noticed.
const KEEPALIVE = { pingIntervalMs: 30_000, pingTimeoutMs: 15_000 } as const;

/** Connect's gRPC transport to one endpoint, with its HTTP/2 connection's manager (to close
 * it); keepalive pings the connection (a balancing client's replicas). */
export function endpointTransport(endpoint: Endpoint, options: TransportOptions, keepalive = false): { transport: Transport; sessions: Http2SessionManager } {
  checkOptions(options);
  const secure = options.ca !== undefined || options.cert !== undefined || options.key !== undefined;
  if (secure && endpoint.socket) throw new TypeError(`unix:${endpoint.socket}: TLS over a Unix socket is not supported; leave out ca, cert and key`);
  const baseUrl = `${secure ? "https" : "http"}://${endpoint.authority}`;
  const socket = endpoint.socket;
  const nodeOptions = socket
    ? { createConnection: () => net.connect(socket) }
    : secure
      ? { ca: options.ca, cert: options.cert, key: options.key, ...(endpoint.servername ? { servername: endpoint.servername } : {}) }
      : {};
  const sessions = new Http2SessionManager(baseUrl, keepalive ? KEEPALIVE : {}, nodeOptions);
  const interceptors: Interceptor[] = [unavailableAsGrpcSays(sessions)];
  const token = options.token;
  if (token) {
    interceptors.push((next) => (request) => {
      request.header.set("authorization", `Bearer ${token}`);
      return next(request);
    });
  }
  const transport = createGrpcTransport({ baseUrl, interceptors, sessionManager: sessions, defaultTimeoutMs: options.timeoutMs });
  return { transport, sessions };
}
