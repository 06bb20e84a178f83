// The TypeScript SDK against llmworker's demo server: calls and typed errors, streams,
// batches with approval, listings, search, watch, and TLS with tokens.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import {
  ApprovalRequired,
  DefinitionFormat,
  InvalidRequest,
  LlmworkerError,
  ResumeTokenUnknown,
  ToolForbidden,
  ToolInvalidArgument,
  ToolNotFound,
  Unauthenticated,
  ERROR_CLASSES,
  approve,
  createClient,
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
  await assert.rejects(createClient(secure.address, { token, timeoutMs: 5000 }).callTool("echo", { text: "x" }), (error) => {
    assert.ok(error instanceof LlmworkerError);
    assert.equal(error.reason, "");
    return true;
  });
  assert.throws(() => createClient(secure.address, { token: "two\nlines" }), TypeError);
});
