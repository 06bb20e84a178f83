// Balancing over replicas: round robin over the replicas whose health says SERVING, a replica
// leaving (stop: NOT_SERVING, then gone) and coming back, an unreachable one, retries only
// for read-only or idempotent tools, a dns:/// name, and close(). The replicas are
// TypeScript providers (ToolService and grpc.health.v1 Health) and servers made here.
import assert from "node:assert/strict";
import http2 from "node:http2";
import net from "node:net";
import { test } from "node:test";
import { connectNodeAdapter } from "@connectrpc/connect-node";

import {
  Code,
  ConnectError,
  HEALTH_SERVICE,
  Health,
  LlmworkerError,
  Provider,
  RETRY_POLICY,
  ServingStatus,
  ToolService,
  createClient,
  createServiceClient,
  defineTool,
  retryIsSafe,
} from "../dist/index.js";

/** A provider whose tool "who" answers label (not annotated: never retried). */
async function replica(label) {
  const who = defineTool({ name: "who", description: "Which replica", input: { type: "object" }, run: () => label });
  const provider = new Provider([who]);
  const address = await provider.serve();
  return { provider, address };
}

/** A server made here: ToolService's CallTool and listing from `tools`, and a Health whose
 * status `setStatus` changes (Watch follows). Resolves to {address, setStatus, calls, close}. */
async function server(tools, status = ServingStatus.SERVING) {
  const calls = [];
  let wake = () => {};
  const handler = connectNodeAdapter({
    routes(router) {
      router.service(Health, {
        async *watch(_request, context) {
          let sent;
          while (!context.signal.aborted) {
            if (status !== sent) yield { status: (sent = status) };
            await new Promise((resolve) => {
              wake = resolve;
              context.signal.addEventListener("abort", resolve, { once: true });
            });
          }
        },
      });
      router.service(ToolService, {
        listDefinitionsSorted: () => ({ definitions: tools.map((tool) => tool.definition), fingerprint: "f" }),
        callTool: (request) => {
          calls.push(request.name);
          const tool = tools.find((one) => one.definition.name === request.name);
          return tool.call(calls.filter((name) => name === request.name).length);
        },
      });
    },
  });
  const http = http2.createServer(handler);
  const sessions = new Set();
  http.on("session", (session) => sessions.add(session));
  await new Promise((resolve) => http.listen(0, "127.0.0.1", resolve));
  return {
    address: `127.0.0.1:${http.address().port}`,
    calls,
    setStatus(next) {
      status = next;
      wake();
    },
    close: () =>
      new Promise((resolve) => {
        http.close(resolve);
        for (const session of sessions) session.destroy();
      }),
  };
}

const labels = async (client, n) => {
  const seen = [];
  for (let i = 0; i < n; i++) seen.push((await client.callTool("who")).output);
  return seen;
};

test("the retry policy and health service are the Python client's", () => {
  assert.equal(HEALTH_SERVICE, "llmworker.v1.ToolService");
  assert.deepEqual(RETRY_POLICY.retryableStatusCodes, ["UNAVAILABLE"]);
  assert.equal(retryIsSafe({ annotations: { readOnlyHint: true } }), true);
  assert.equal(retryIsSafe({ annotations: { idempotentHint: true } }), true);
  assert.equal(retryIsSafe({ annotations: { idempotentHint: false, destructiveHint: true } }), false);
  assert.equal(retryIsSafe(undefined), false);
  assert.throws(() => createClient("ipv4:127.0.0.1:1,127.0.0.1:2"), /balancing: true/);
  assert.throws(() => createClient("ipv4:localhost:1", { balancing: true }), /no ipv4 address/);
  assert.throws(() => createClient("ipv4:127.0.0.1:1", { balancing: true, token: "two\nlines" }), /line break/);
});

test("round robin, and a replica that stops gets no more calls", async () => {
  const a = await replica("a");
  const b = await replica("b");
  const client = createClient(`ipv4:${a.address},${b.address}`, { balancing: true, timeoutMs: 5000 });
  try {
    // until both say SERVING (the first call waits for one), then they alternate
    const deadline = Date.now() + 5000;
    while (new Set(await labels(client, 2)).size < 2) assert.ok(Date.now() < deadline, "b never got a call");
    const seen = await labels(client, 6);
    for (let i = 1; i < seen.length; i++) assert.notEqual(seen[i], seen[i - 1], `not round robin: ${seen}`);
    // calls keep running while a stops, and none fails: its NOT_SERVING moves them to b
    // before it goes
    let stopping = true;
    const during = [];
    const running = (async () => {
      while (stopping) during.push((await client.callTool("who")).output);
    })();
    await a.provider.stop();
    stopping = false;
    await running;
    assert.deepEqual(await labels(client, 4), ["b", "b", "b", "b"]);
    assert.ok(during.length > 0);
  } finally {
    client.close();
    await b.provider.stop();
  }
});

test("NOT_SERVING takes a replica out until it says SERVING again", async () => {
  const a = await replica("a");
  const who = { definition: { name: "who" }, call: () => ({ output: "flip" }) };
  const flip = await server([who], ServingStatus.NOT_SERVING);
  const client = createClient(`ipv4:${a.address},${flip.address}`, { balancing: true, timeoutMs: 5000 });
  try {
    assert.deepEqual(await labels(client, 4), ["a", "a", "a", "a"]);
    flip.setStatus(ServingStatus.SERVING);
    const deadline = Date.now() + 5000;
    let seen = [];
    while (!seen.includes("flip") && Date.now() < deadline) seen = await labels(client, 2);
    assert.ok(seen.includes("flip"), "the replica back at SERVING gets calls again");
    flip.setStatus(ServingStatus.NOT_SERVING);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual(await labels(client, 4), ["a", "a", "a", "a"]);
  } finally {
    client.close();
    await a.provider.stop();
    await flip.close();
  }
});

test("an unreachable replica is skipped; with none serving, UNAVAILABLE names each", async () => {
  const gone = await replica("gone");
  await gone.provider.stop(); // its port: nothing listens there now
  const a = await replica("a");
  const client = createClient(`ipv4:${gone.address},${a.address}`, { balancing: true, timeoutMs: 5000 });
  try {
    assert.deepEqual(await labels(client, 3), ["a", "a", "a"]);
  } finally {
    client.close();
    await a.provider.stop();
  }
  const none = createClient(`ipv4:${gone.address}`, { balancing: true, timeoutMs: 5000 });
  try {
    await assert.rejects(none.callTool("who"), (error) => {
      assert.ok(error instanceof LlmworkerError);
      assert.equal(error.codeName, "UNAVAILABLE");
      assert.match(error.message, new RegExp(`${gone.address} unreachable`));
      return true;
    });
  } finally {
    none.close();
  }
});

test("UNAVAILABLE is retried for a read-only or idempotent tool only", async () => {
  // each tool fails UNAVAILABLE on its first two calls
  const flaky = (name, annotations) => ({
    definition: { name, annotations },
    call: (n) => {
      if (n <= 2) throw new ConnectError("try another replica", Code.Unavailable);
      return { output: `${name} ${n}` };
    },
  });
  const replicaServer = await server([flaky("safe", { readOnlyHint: true }), flaky("unsafe", { destructiveHint: true })]);
  const client = createClient(`ipv4:${replicaServer.address}`, { balancing: true, timeoutMs: 5000 });
  try {
    assert.equal((await client.callTool("safe")).output, "safe 3");
    await assert.rejects(client.callTool("unsafe"), (error) => error instanceof LlmworkerError && error.codeName === "UNAVAILABLE");
    assert.deepEqual(replicaServer.calls, ["safe", "safe", "safe", "unsafe"]);
  } finally {
    client.close();
    await replicaServer.close();
  }
});

test("dns:/// resolves every address of the name", async () => {
  const a = await replica("a");
  const port = a.address.split(":")[1];
  const client = createClient(`dns:///localhost:${port}`, { balancing: true, timeoutMs: 5000 });
  try {
    assert.deepEqual(await labels(client, 2), ["a", "a"]); // ::1, if localhost has it, is unreachable
  } finally {
    client.close();
    await a.provider.stop();
  }
  await assert.rejects(client.callTool("who"), (error) => error instanceof LlmworkerError && /closed/.test(error.message));
});

test("a call's deadline and signal bound it while the client learns the tools' annotations", async () => {
  // a replica that takes connections and never speaks HTTP/2: listing and health never answer
  const sockets = new Set();
  const silent = net.createServer((socket) => sockets.add(socket));
  await new Promise((resolve) => silent.listen(0, "127.0.0.1", resolve));
  const client = createClient(`ipv4:127.0.0.1:${silent.address().port}`, { balancing: true });
  try {
    const started = Date.now();
    await assert.rejects(client.callTool("who", {}, { timeoutMs: 300 }), (error) => error instanceof LlmworkerError && error.codeName === "DEADLINE_EXCEEDED");
    await assert.rejects(client.callTool("who", {}, { signal: AbortSignal.timeout(300) }), (error) => error instanceof LlmworkerError && error.codeName === "CANCELLED");
    assert.ok(Date.now() - started < 4000, "the calls waited for the listing's own 5 s bound");
  } finally {
    client.close();
    for (const socket of sockets) socket.destroy();
    silent.close();
  }
});

test("createServiceClient refuses a balancing target it could not close", () => {
  assert.throws(() => createServiceClient(Health, "ipv4:127.0.0.1:1,127.0.0.1:2", { balancing: true }), /createTransport/);
});
