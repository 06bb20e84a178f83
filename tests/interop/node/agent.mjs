// Checks the llmworker agent contract (annotations, call ids and metadata, approval batches)
// from Node.js through @llmworker/sdk against a `python -m llmworker_server --demo` server:
// node agent.mjs HOST:PORT
// Prints "OK agent <check>" per check; a mismatch prints "FAIL agent <check>: <why>" and exits 1.
import { approve, approveWithInput, createClient, deny, statusError } from "@llmworker/sdk";
import { failer, failure, notTyped, rejection, show } from "./contract.mjs";

const [target] = process.argv.slice(2);
if (!target) {
  console.error("usage: node agent.mjs HOST:PORT");
  process.exit(2);
}
const fail = failer("agent ");
const client = createClient(target, { timeoutMs: 20000 });

// Each hint as true, false or null (unset): a proto3 `optional` field the server left unset
// is undefined in the SDK's messages, and false when set to false.
const HINTS = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"];
const hints = (annotations) => Object.fromEntries(HINTS.map((h) => [h, annotations[h] ?? null]));

// A flat string map as comparable text, independent of key order.
const entries = (map) => show(Object.entries(map ?? {}).sort());

// What must succeed.
async function expectReply(check, what, promise) {
  try {
    return await promise;
  } catch (error) {
    return fail(check, `${what} failed: ${failure(error)}`);
  }
}

// What must fail with this gRPC code and reason (domain "llmworker"); returns its message.
async function expectRpcError(check, what, promise, codeName, reason) {
  const error = await rejection(promise);
  if (!error) fail(check, `${what} succeeded, want ${codeName} / ${reason}`);
  const why = notTyped(error, codeName, reason);
  if (why) fail(check, `${what}: ${why}`);
  return error.message;
}

// One CallResult against what it should be: {callId, output?} for a success, plus
// {code, reason, message?} for an error (its google.rpc.Status, typed by statusError).
function expectResult(check, result, want) {
  const id = want.callId;
  if (result?.callId !== id) fail(check, `result ${show(result?.callId)}, want ${id}`);
  if (result.skipped) fail(check, `${id} was skipped: ${show(result.output)}`);
  if (result.isError !== "code" in want) fail(check, `${id}: isError ${result.isError}, output ${show(result.output)}`);
  if ("output" in want && result.output !== want.output) fail(check, `${id}: output ${show(result.output)}, want ${show(want.output)}`);
  const error = statusError(result.error);
  if (!("code" in want)) {
    if (error) fail(check, `${id}: an error ${failure(error)} with a result`);
    return;
  }
  if (!error) fail(check, `${id}: no error status, want ${want.code}`);
  const why = notTyped(error, want.code, want.reason);
  if (why) fail(check, `${id}: ${why}`);
  if ("message" in want && error.message !== want.message) fail(check, `${id}: error message ${show(error.message)}, want ${show(want.message)}`);
}

// The outcome of callTools / resume, which must be `kind`.
function expectOutcome(check, outcome, kind) {
  if (!outcome[kind]) fail(check, `outcome ${show(outcome)}, want ${kind}`);
  return outcome[kind];
}

const parse = (check, what, text) => {
  try {
    return JSON.parse(text);
  } catch {
    return fail(check, `${what} is not JSON: ${show(text)}`);
  }
};

// 1. Definitions: title, annotations (unset vs false), output schema, approval.
{
  const check = "listing";
  const { tools } = await expectReply(check, "listDefinitions", client.listDefinitions());
  const byName = Object.fromEntries(tools.map((d) => [d.name, d]));
  const want = {
    whoami: {
      title: "Who am I",
      requiresApproval: false,
      hints: { readOnlyHint: true, destructiveHint: null, idempotentHint: true, openWorldHint: false },
    },
    kv_delete: {
      title: "Delete a key",
      requiresApproval: true,
      hints: { readOnlyHint: null, destructiveHint: true, idempotentHint: true, openWorldHint: null },
    },
    echo: { title: "", requiresApproval: false, hints: null },
  };
  for (const [name, w] of Object.entries(want)) {
    const d = byName[name];
    if (!d) fail(check, `no definition ${name}`);
    if (d.title !== w.title) fail(check, `${name} title ${show(d.title)}, want ${show(w.title)}`);
    if (d.requiresApproval !== w.requiresApproval) fail(check, `${name} requiresApproval ${d.requiresApproval}`);
    const got = d.annotations ? hints(d.annotations) : null;
    if (show(got) !== show(w.hints)) fail(check, `${name} annotations ${show(got)}, want ${show(w.hints)}`);
  }
  if (byName.echo.outputSchemaJson !== "") fail(check, `echo outputSchemaJson ${show(byName.echo.outputSchemaJson)}`);
  const schema = parse(check, "whoami outputSchemaJson", byName.whoami.outputSchemaJson);
  const props = Object.keys(schema?.properties ?? {});
  if (schema?.type !== "object" || !["call_id", "tool", "metadata", "seconds_left"].every((p) => props.includes(p))) {
    fail(check, `whoami outputSchemaJson ${byName.whoami.outputSchemaJson}`);
  }
  console.log("OK agent listing: titles, annotations, output schemas, approval");
}

// 2. callTool passes the call id, metadata and deadline to the tool.
{
  const check = "call id and metadata";
  const metadata = { user: "ada", "tenant.id": "t-7" };
  const reply = await expectReply(check, "whoami", client.callTool("whoami", {}, { callId: "node-1", metadata }));
  const seen = reply.structured;
  if (seen?.call_id !== "node-1" || seen.tool !== "whoami") fail(check, `structured output ${show(seen)}`);
  if (entries(seen.metadata) !== entries(metadata)) fail(check, `metadata ${show(seen.metadata)}, want ${show(metadata)}`);
  // <= 21, not 20: gRPC rounds the 20 s deadline up a little on the wire.
  if (typeof seen.seconds_left !== "number" || !(seen.seconds_left > 0 && seen.seconds_left <= 21)) {
    fail(check, `seconds_left ${show(seen.seconds_left)}, want a number in (0, 21]`);
  }
  console.log("OK agent call id and metadata reach the tool");
}

// 3. callTool refuses a tool that requires approval.
{
  const check = "approval required";
  const message = await expectRpcError(check, "callTool kv_delete", client.callTool("kv_delete", { key: "x" }), "FAILED_PRECONDITION", "APPROVAL_REQUIRED");
  if (!message.includes("CallTools")) fail(check, `message ${show(message)} does not mention CallTools`);
  console.log("OK agent approval required for CallTool");
}

// 4. Metadata keys must be lowercase.
{
  const call = client.callTool("echo", { text: "hi" }, { metadata: { User: "x" } });
  await expectRpcError("bad metadata", "callTool echo with metadata User", call, "INVALID_ARGUMENT", "INVALID_REQUEST");
  console.log("OK agent bad metadata refused");
}

// 5. A batch without approvals completes, results in call order.
{
  const check = "batch completed";
  const calls = [
    { id: "a", name: "echo", input: { text: "one" } },
    { id: "b", name: "echo", input: { text: "two" } },
  ];
  const results = expectOutcome(check, await expectReply(check, "callTools", client.callTools(calls)), "completed");
  if (results.length !== 2) fail(check, `${results.length} results, want 2`);
  expectResult(check, results[0], { callId: "a", output: "one" });
  expectResult(check, results[1], { callId: "b", output: "two" });
  console.log("OK agent batch completed");
}

// 6. A batch with tools requiring approval pauses before running anything.
const pausedCheck = "batch paused";
for (const [key, value] of [["a", "1"], ["b", "2"]]) {
  const reply = await expectReply(pausedCheck, `kv_set ${key}`, client.callTool("kv_set", { key, value }));
  if (reply.output !== "ok") fail(pausedCheck, `kv_set ${key}: output ${show(reply.output)}, want "ok"`);
}
const batch = [
  { id: "c1", name: "echo", input: { text: "hi" } },
  { id: "c2", name: "no_such_tool", input: {} },
  { id: "c3", name: "echo", input: {} },
  { id: "c4", name: "kv_delete", input: { key: "a" } },
  { id: "c5", name: "kv_delete", input: { key: "b" } },
  { id: "c6", name: "kv_delete", input: { key: "c" } },
  { id: "c7", name: "whoami", input: {}, metadata: { user: "ada" } },
];
const notFound = { callId: "c2", code: "NOT_FOUND", reason: "TOOL_NOT_FOUND" };
const paused = expectOutcome(pausedCheck, await expectReply(pausedCheck, "callTools", client.callTools(batch)), "paused");
{
  const check = pausedCheck;
  if (!paused.resumeToken) fail(check, "empty resumeToken");
  if (!paused.reason) fail(check, "empty reason");
  if (paused.pausedCallId !== "c4") fail(check, `pausedCallId ${show(paused.pausedCallId)}, want c4`);
  const expires = paused.expireTime && Number(paused.expireTime.seconds) * 1000 + paused.expireTime.nanos / 1e6;
  if (!(expires > Date.now())) fail(check, `expireTime ${show(paused.expireTime)} is not in the future`);
  const pending = batch.filter((c) => c.id !== "c2");
  const got = paused.pendingCalls.map((p) => [p.callId, p.name, p.inputJson, p.awaitingApproval]);
  const want = pending.map((c) => [c.id, c.name, JSON.stringify(c.input), c.name === "kv_delete"]);
  if (show(got) !== show(want)) fail(check, `pendingCalls ${show(got)}, want ${show(want)}`);
  if (paused.results.length !== 1) fail(check, `results ${show(paused.results.map((r) => r.callId))}, want [c2]`);
  expectResult(check, paused.results[0], { ...notFound, message: "Tool 'no_such_tool' not found" });
  console.log("OK agent batch paused for approval");
}

// 7. Resuming with approve, deny and an edited input runs the batch to completion.
const decisions = [approve("c4"), deny("c5", "not this one"), approveWithInput("c6", { key: "b" })];
{
  const check = "batch resumed";
  const resumed = await expectReply(check, "resume", client.resume(paused.resumeToken, decisions));
  const results = expectOutcome(check, resumed, "completed");
  const ids = results.map((r) => r.callId);
  if (show(ids) !== show(batch.map((c) => c.id))) fail(check, `results ${show(ids)}, want c1..c7`);
  expectResult(check, results[0], { callId: "c1", output: "hi" });
  expectResult(check, results[1], notFound);
  // The output is the text the model reads; the status message is CallTool's.
  expectResult(check, results[2], {
    callId: "c3",
    output: "Invalid argument: text: Field required",
    code: "INVALID_ARGUMENT",
    reason: "TOOL_INVALID_ARGUMENT",
    message: "Tool execution failed: Invalid argument: text: Field required",
  });
  expectResult(check, results[3], { callId: "c4", output: "deleted" });
  expectResult(check, results[4], { callId: "c5", code: "PERMISSION_DENIED", reason: "CALL_DENIED" });
  if (!results[4].output.includes("not this one")) fail(check, `c5 output ${show(results[4].output)} lacks the denial reason`);
  expectResult(check, results[5], { callId: "c6", output: "deleted" });
  expectResult(check, results[6], { callId: "c7" });
  const seen = parse(check, "c7 structuredOutputJson", results[6].structuredOutputJson);
  if (seen?.call_id !== "c7" || entries(seen.metadata) !== entries({ user: "ada" })) {
    fail(check, `c7 structured output ${results[6].structuredOutputJson}`);
  }
  await expectRpcError(check, "kv_get b", client.callTool("kv_get", { key: "b" }), "UNKNOWN", "TOOL_EXECUTION_FAILED");
  console.log("OK agent batch resumed: approve, deny, edited input");
}

// 8. A resume token works once.
await expectRpcError("resume token", "resume again", client.resume(paused.resumeToken, decisions), "NOT_FOUND", "RESUME_TOKEN_UNKNOWN");
console.log("OK agent resume token single use");

// 9. Call ids are required and unique within a batch.
{
  const check = "duplicate call ids";
  const echo = (id) => ({ id, name: "echo", input: { text: "x" } });
  for (const calls of [[echo("d"), echo("d")], [echo("")]]) {
    await expectRpcError(check, `callTools ${show(calls.map((c) => c.id))}`, client.callTools(calls), "INVALID_ARGUMENT", "INVALID_REQUEST");
  }
  console.log("OK agent duplicate call ids refused");
}
client.close();
