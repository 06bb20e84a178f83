// The TypeScript SDK against llmworker's demo server: calls and typed errors, streams,
// batches with approval (and by id, typed per call, in provider formats), listings, search,
// watch, and TLS with tokens.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import {
  ApprovalRequired,
  CallDenied,
  Code,
  DefinitionFormat,
  Health,
  InvalidRequest,
  LlmworkerError,
  ResumeTokenUnknown,
  ServingStatus,
  ToolForbidden,
  ToolInvalidArgument,
  ToolNotFound,
  Unauthenticated,
  ERROR_CLASSES,
  approve,
  createClient,
  createServiceClient,
  deny,
  rawJson,
  statusError,
} from "../dist/index.js";
import { startServer } from "./server.mjs";

let plain;
let secure;
const directory = mkdtempSync(path.join(tmpdir(), "llmworker-ts-sdk-"));
const token = "ts-sdk-test-token-0123456789";

before(async () => {
  plain = await startServer(["--no-internal"]);
  // a CA and a certificate for 127.0.0.1, made now with openssl; a token allowed echo only
  const file = (name) => path.join(directory, name);
  const openssl = (...args) => execFileSync("openssl", args, { stdio: "ignore" });
  openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
    "-subj", "/CN=ts sdk test CA", "-keyout", file("ca.key"), "-out", file("ca.pem"));
  openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
    "-keyout", file("server.key"), "-out", file("server.csr"));
  writeFileSync(file("san.cnf"), "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  openssl("x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"),
    "-CAcreateserial", "-days", "1", "-extfile", file("san.cnf"), "-out", file("server.pem"));
  writeFileSync(file("tokens.json"), JSON.stringify({ tokens: [{ token, tools: ["echo"], label: "ts-sdk" }] }), { mode: 0o600 });
  secure = await startServer(["--no-internal", "--tls-cert", file("server.pem"), "--tls-key", file("server.key"),
    "--auth-tokens", file("tokens.json")]);
});

after(async () => {
  await plain?.stop();
  await secure?.stop();
  rmSync(directory, { recursive: true, force: true });
});

test("a call gives text and structured output", async () => {
  const client = createClient(plain.address);
  assert.equal((await client.callTool("echo", { text: "hi" })).output, "hi");
  const who = await client.callTool("whoami", {}, { callId: "ts-1", metadata: { user: "ada" } });
  assert.equal(who.structured.call_id, "ts-1");
  assert.deepEqual(who.structured.metadata, { user: "ada" });
});

test("each failure is the class of its reason", async () => {
  const client = createClient(plain.address);
  await assert.rejects(client.callTool("no_such_tool"), (error) => {
    assert.ok(error instanceof ToolNotFound && error instanceof LlmworkerError);
    assert.equal(error.codeName, "NOT_FOUND");
    assert.equal(error.metadata.tool, "no_such_tool");
    return true;
  });
  await assert.rejects(client.callTool("countdown", { n: 0 }), ToolInvalidArgument);
  await assert.rejects(client.callTool("kv_delete", { key: "k" }), ApprovalRequired);
  await assert.rejects(client.searchTools("", 3), (error) => error instanceof InvalidRequest && /query/.test(error.message));
  assert.equal(Object.keys(ERROR_CLASSES).length, 26);
});

test("a stream yields progress, chunks, then the result", async () => {
  const client = createClient(plain.address);
  const kinds = [];
  let text = "";
  let result;
  for await (const event of client.callToolStream("countdown", { n: 3, delay: 0.05 })) {
    kinds.push(event.kind);
    if (event.kind === "chunk") text += event.text;
    if (event.kind === "result") result = event.result;
  }
  assert.ok(kinds.includes("progress"));
  assert.equal(text, "3\n2\n1\n");
  assert.equal(result.output, "3\n2\n1\n");
  assert.equal(kinds.at(-1), "result");
  await assert.rejects(async () => {
    for await (const _ of client.callToolStream("no_such_tool")) {
      // nothing arrives
    }
  }, ToolNotFound);
});

test("a batch pauses for approval and resumes once", async () => {
  const client = createClient(plain.address);
  await client.callTool("kv_set", { key: "ts-key", value: "v" });
  const paused = await client.callTools([
    { id: "read", name: "kv_get", input: { key: "ts-key" } },
    { id: "delete", name: "kv_delete", input: { key: "ts-key" } },
  ]);
  assert.ok(paused.paused);
  assert.deepEqual(paused.paused.pendingCalls.map((call) => [call.callId, call.awaitingApproval]), [["read", false], ["delete", true]]);
  const done = await client.resume(paused.paused.resumeToken, [approve("delete")]);
  assert.equal(done.completed[0].output, "v");
  assert.equal(done.completed[1].isError, false);
  await assert.rejects(client.resume(paused.paused.resumeToken, [approve("delete")]), ResumeTokenUnknown);
});

test("listings, search and watch", async () => {
  const client = createClient(plain.address);
  const definitions = await client.listDefinitions();
  const names = definitions.tools.map((tool) => tool.name);
  assert.deepEqual(names, [...names].sort());
  assert.equal(definitions.fingerprint.length, 64);
  const anthropic = await client.listDefinitionsIn(DefinitionFormat.ANTHROPIC);
  assert.deepEqual(anthropic.map((entry) => entry.name), names);
  const found = await client.searchTools("delete a key", 3);
  assert.equal(found[0].tool.name, "kv_delete");
  assert.ok(found[0].score > 0);
  for await (const watched of client.watchDefinitions()) {
    assert.equal(watched.fingerprint, definitions.fingerprint);
    break; // the first is the set now; leaving the loop ends the watch
  }
});

test("TLS with a CA, and tokens", async () => {
  const ca = readFileSync(path.join(directory, "ca.pem"));
  const client = createClient(secure.address, { ca, token });
  assert.equal((await client.callTool("echo", { text: "tls" })).output, "tls");
  await assert.rejects(client.callTool("calculate", { expression: "1" }), ToolForbidden);
  await assert.rejects(createClient(secure.address, { ca }).callTool("echo", { text: "x" }), Unauthenticated);
  // plaintext to the TLS port: the connection fails, UNAVAILABLE as gRPC says (Connect alone
  // reports the stream its dying session cancelled as CANCELED)
  await assert.rejects(createClient(secure.address, { token, timeoutMs: 5000 }).callTool("echo", { text: "x" }), (error) => {
    assert.ok(error instanceof LlmworkerError);
    assert.equal(error.reason, "");
    assert.equal(error.codeName, "UNAVAILABLE");
    return true;
  });
  assert.throws(() => createClient(secure.address, { token: "two\nlines" }), TypeError);
});

test("raw JSON input, a call's own deadline, CANCELLED, and GetTool", async () => {
  const client = createClient(plain.address, { timeoutMs: 20000 });
  await assert.rejects(client.callTool("countdown", rawJson('{"n": 1, "delay": NaN}')), (error) => {
    assert.ok(error instanceof ToolInvalidArgument);
    assert.match(error.metadata.tool_error, /^\$\.delay: NaN is not JSON/);
    return true;
  });
  assert.equal((await client.callTool("echo", rawJson('{"text": "as written"}'))).output, "as written");
  await assert.rejects(client.callTool("countdown", { n: 100, delay: 0.1 }, { timeoutMs: 200 }), (error) => {
    assert.ok(error instanceof LlmworkerError);
    assert.equal(error.codeName, "DEADLINE_EXCEEDED");
    return true;
  });
  const abort = new AbortController();
  const cancelled = client.callTool("countdown", { n: 100, delay: 0.1 }, { signal: abort.signal });
  setTimeout(() => abort.abort(), 100);
  await assert.rejects(cancelled, (error) => error instanceof LlmworkerError && error.codeName === "CANCELLED" && error.code === Code.Canceled);
  const echo = await client.getTool("echo");
  assert.equal(echo.name, "echo");
  await assert.rejects(client.getTool("no_such_tool"), ToolNotFound);
  assert.equal((await createServiceClient(Health, client.transport).check({ service: "" })).status, ServingStatus.SERVING);
  client.close();
  await assert.rejects(client.callTool("echo", { text: "x" }), (error) => error.codeName === "UNAVAILABLE" && /closed/.test(error.message));
});

test("a batch's per-call failures are typed, and batches are found and decided by id", async () => {
  const client = createClient(plain.address);
  const outcome = await client.callTools([{ id: "x", name: "no_such_tool" }, { id: "e", name: "echo", input: { text: "e" } }]);
  const [failed, ok] = outcome.completed;
  const error = statusError(failed.error);
  assert.ok(error instanceof ToolNotFound);
  assert.equal(error.codeName, "NOT_FOUND");
  assert.equal(error.metadata.tool, "no_such_tool");
  assert.equal(statusError(ok.error), undefined);
  await client.callTool("kv_set", { key: "by-id", value: "v" });
  const paused = await client.callTools([{ id: "d", name: "kv_delete", input: { key: "by-id" } }]);
  const listed = [];
  for await (const batch of client.pausedBatches(1)) listed.push(batch.batchId);
  assert.ok(listed.includes(paused.paused.batchId), `${paused.paused.batchId} not among ${listed}`);
  const denied = await client.decide(paused.paused.batchId, [deny("d", "no")]);
  assert.ok(statusError(denied.completed[0].error) instanceof CallDenied);
  assert.equal((await client.callTool("kv_get", { key: "by-id" })).output, "v");
});

test("a provider-format batch resumed gives its message in that format", async () => {
  const client = createClient(plain.address);
  await client.callTool("kv_set", { key: "fmt", value: "1" });
  const modelOutput = { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "kv_delete", input: { key: "fmt" } }] };
  const answered = await client.runProviderToolCalls(DefinitionFormat.ANTHROPIC, modelOutput);
  assert.ok("paused" in answered);
  const done = await client.resume(answered.paused.resumeToken, [approve("t1")]);
  assert.deepEqual(done.message, { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "deleted" }] });
  const plainBatch = await client.callTools([{ id: "e", name: "echo", input: { text: "e" } }]);
  assert.equal(plainBatch.message, undefined);
});
