// Checks the llmworker agent contract (annotations, call ids and metadata, approval batches)
// from Node.js against a `python -m llmworker_server --demo` server: node agent.mjs HOST:PORT
// Prints "OK agent <check>" per check; a mismatch prints "FAIL agent <check>: <why>" and exits 1.
import grpc from "@grpc/grpc-js";
import { detailsErrorInfo as errorInfo, toolService, trailerDetails } from "./contract.mjs";

const [target] = process.argv.slice(2);
if (!target) {
  console.error("usage: node agent.mjs HOST:PORT");
  process.exit(2);
}
// oneofs: true adds the name of the set member of each oneof (CallToolsResponse.outcome, and
// the synthetic oneofs of proto3 `optional` fields); longs: Number makes Timestamp.seconds a
// plain number.
const ToolService = toolService({ oneofs: true, longs: Number });

function fail(check, why) {
  console.log(`FAIL agent ${check}: ${why}`);
  process.exit(1);
}

const show = JSON.stringify;

// Each hint as true, false or null (unset). proto-loader omits an unset proto3 `optional`
// field even with defaults: true, and with oneofs: true sets its synthetic oneof
// `_<field>` to the field's name when the field is present (false included), so presence
// is `annotations._<field> === "<field>"`.
const HINTS = ["read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"];
function hints(annotations) {
  return Object.fromEntries(HINTS.map((h) => [h, annotations[`_${h}`] === h ? annotations[h] : null]));
}

// A flat string map as comparable text, independent of key order.
const entries = (map) => show(Object.entries(map ?? {}).sort());

const client = new ToolService(target, grpc.credentials.createInsecure());
const call = (method, request) =>
  new Promise((resolve, reject) =>
    client[method](request, { deadline: Date.now() + 20000 }, (error, reply) => (error ? reject(error) : resolve(reply))),
  );

// The reply of an RPC that must succeed.
async function expectReply(check, method, request) {
  try {
    return await call(method, request);
  } catch (error) {
    fail(check, `${method} ${show(request)} failed: ${grpc.status[error.code]} ${show(error.details)}`);
  }
}

// An RPC that must fail with this code and reason (domain "llmworker"); returns its message.
async function expectRpcError(check, method, request, code, reason) {
  let error = null;
  try {
    await call(method, request);
  } catch (caught) {
    error = caught;
  }
  const what = `${method} ${show(request)}`;
  if (!error) fail(check, `${what} succeeded, want ${grpc.status[code]} / ${reason}`);
  if (error.code !== code) fail(check, `${what}: ${grpc.status[error.code]} ${show(error.details)}, want ${grpc.status[code]}`);
  const info = errorInfo(trailerDetails(error));
  if (info?.domain !== "llmworker" || info.reason !== reason) fail(check, `${what}: ErrorInfo ${show(info)}, want llmworker / ${reason}`);
  return error.details;
}

// One CallResult against what it should be: {call_id, output?} for a success, plus
// {code, reason, message?} for an error.
function expectResult(check, result, want) {
  const id = want.call_id;
  if (result?.call_id !== id) fail(check, `result ${show(result?.call_id)}, want ${id}`);
  if (result.skipped) fail(check, `${id} was skipped: ${show(result.output)}`);
  if (result.is_error !== ("code" in want)) fail(check, `${id}: is_error ${result.is_error}, output ${show(result.output)}`);
  if ("output" in want && result.output !== want.output) fail(check, `${id}: output ${show(result.output)}, want ${show(want.output)}`);
  if (!("code" in want)) return;
  const { error } = result;
  if (error?.code !== want.code) fail(check, `${id}: error ${show(error)}, want code ${want.code}`);
  if ("message" in want && error.message !== want.message) fail(check, `${id}: error.message ${show(error.message)}, want ${show(want.message)}`);
  const info = errorInfo(error.details);
  if (info?.domain !== "llmworker" || info.reason !== want.reason) fail(check, `${id}: ErrorInfo ${show(info)}, want llmworker / ${want.reason}`);
}

// The outcome of a CallTools / ResumeBatch reply, which must be `kind`.
function expectOutcome(check, reply, kind) {
  if (reply.outcome !== kind) fail(check, `outcome ${reply.outcome}, want ${kind}: ${show(reply)}`);
  return reply[kind];
}

const parse = (check, what, text) => {
  try {
    return JSON.parse(text);
  } catch {
    fail(check, `${what} is not JSON: ${show(text)}`);
  }
};

// 1. Definitions: title, annotations (unset vs false), output schema, approval.
{
  const check = "listing";
  const { definitions } = await expectReply(check, "ListDefinitionsSorted", {});
  const byName = Object.fromEntries(definitions.map((d) => [d.name, d]));
  const want = {
    whoami: {
      title: "Who am I",
      requires_approval: false,
      hints: { read_only_hint: true, destructive_hint: null, idempotent_hint: true, open_world_hint: false },
    },
    kv_delete: {
      title: "Delete a key",
      requires_approval: true,
      hints: { read_only_hint: null, destructive_hint: true, idempotent_hint: true, open_world_hint: null },
    },
    echo: { title: "", requires_approval: false, hints: null },
  };
  for (const [name, w] of Object.entries(want)) {
    const d = byName[name];
    if (!d) fail(check, `no definition ${name}`);
    if (d.title !== w.title) fail(check, `${name} title ${show(d.title)}, want ${show(w.title)}`);
    if (d.requires_approval !== w.requires_approval) fail(check, `${name} requires_approval ${d.requires_approval}`);
    const got = d.annotations && hints(d.annotations);
    if (show(got) !== show(w.hints)) fail(check, `${name} annotations ${show(got)}, want ${show(w.hints)}`);
  }
  if (byName.echo.output_schema_json !== "") fail(check, `echo output_schema_json ${show(byName.echo.output_schema_json)}`);
  const schema = parse(check, "whoami output_schema_json", byName.whoami.output_schema_json);
  const props = Object.keys(schema?.properties ?? {});
  if (schema?.type !== "object" || !["call_id", "tool", "metadata", "seconds_left"].every((p) => props.includes(p))) {
    fail(check, `whoami output_schema_json ${byName.whoami.output_schema_json}`);
  }
  console.log("OK agent listing: titles, annotations, output schemas, approval");
}

// 2. CallTool passes the call id, metadata and deadline to the tool.
{
  const check = "call id and metadata";
  const metadata = { user: "ada", "tenant.id": "t-7" };
  const reply = await expectReply(check, "CallTool", { name: "whoami", input_json: "{}", call_id: "node-1", metadata });
  const seen = parse(check, "structured_output_json", reply.structured_output_json);
  if (seen?.call_id !== "node-1" || seen.tool !== "whoami") fail(check, `structured output ${reply.structured_output_json}`);
  if (entries(seen.metadata) !== entries(metadata)) fail(check, `metadata ${show(seen.metadata)}, want ${show(metadata)}`);
  // <= 21, not 20: gRPC rounds the 20 s deadline up a little on the wire.
  if (typeof seen.seconds_left !== "number" || !(seen.seconds_left > 0 && seen.seconds_left <= 21)) {
    fail(check, `seconds_left ${show(seen.seconds_left)}, want a number in (0, 21]`);
  }
  console.log("OK agent call id and metadata reach the tool");
}

// 3. CallTool refuses a tool that requires approval.
{
  const check = "approval required";
  const request = { name: "kv_delete", input_json: show({ key: "x" }) };
  const message = await expectRpcError(check, "CallTool", request, grpc.status.FAILED_PRECONDITION, "APPROVAL_REQUIRED");
  if (!message.includes("CallTools")) fail(check, `message ${show(message)} does not mention CallTools`);
  console.log("OK agent approval required for CallTool");
}

// 4. Metadata keys must be lowercase.
{
  const request = { name: "echo", input_json: show({ text: "hi" }), metadata: { User: "x" } };
  await expectRpcError("bad metadata", "CallTool", request, grpc.status.INVALID_ARGUMENT, "INVALID_REQUEST");
  console.log("OK agent bad metadata refused");
}

// 5. A batch without approvals completes, results in call order.
{
  const check = "batch completed";
  const calls = [
    { call_id: "a", name: "echo", input_json: show({ text: "one" }) },
    { call_id: "b", name: "echo", input_json: show({ text: "two" }) },
  ];
  const { results } = expectOutcome(check, await expectReply(check, "CallTools", { calls }), "completed");
  if (results.length !== 2) fail(check, `${results.length} results, want 2`);
  expectResult(check, results[0], { call_id: "a", output: "one" });
  expectResult(check, results[1], { call_id: "b", output: "two" });
  console.log("OK agent batch completed");
}

// 6. A batch with tools requiring approval pauses before running anything.
const pausedCheck = "batch paused";
for (const [key, value] of [["a", "1"], ["b", "2"]]) {
  const reply = await expectReply(pausedCheck, "CallTool", { name: "kv_set", input_json: show({ key, value }) });
  if (reply.output !== "ok") fail(pausedCheck, `kv_set ${key}: output ${show(reply.output)}, want "ok"`);
}
const batch = [
  { call_id: "c1", name: "echo", input_json: show({ text: "hi" }) },
  { call_id: "c2", name: "no_such_tool", input_json: "{}" },
  { call_id: "c3", name: "echo", input_json: "{}" },
  { call_id: "c4", name: "kv_delete", input_json: show({ key: "a" }) },
  { call_id: "c5", name: "kv_delete", input_json: show({ key: "b" }) },
  { call_id: "c6", name: "kv_delete", input_json: show({ key: "c" }) },
  { call_id: "c7", name: "whoami", input_json: "{}", metadata: { user: "ada" } },
];
const notFound = { call_id: "c2", code: grpc.status.NOT_FOUND, reason: "TOOL_NOT_FOUND" };
const paused = expectOutcome(pausedCheck, await expectReply(pausedCheck, "CallTools", { calls: batch }), "paused");
{
  const check = pausedCheck;
  if (!paused.resume_token) fail(check, "empty resume_token");
  if (!paused.reason) fail(check, "empty reason");
  if (paused.paused_call_id !== "c4") fail(check, `paused_call_id ${show(paused.paused_call_id)}, want c4`);
  const expires = paused.expire_time && paused.expire_time.seconds * 1000 + paused.expire_time.nanos / 1e6;
  if (!(expires > Date.now())) fail(check, `expire_time ${show(paused.expire_time)} is not in the future`);
  const pending = batch.filter((c) => c.call_id !== "c2");
  const got = paused.pending_calls.map((p) => [p.call_id, p.name, p.input_json, p.awaiting_approval]);
  const want = pending.map((c) => [c.call_id, c.name, c.input_json, c.name === "kv_delete"]);
  if (show(got) !== show(want)) fail(check, `pending_calls ${show(got)}, want ${show(want)}`);
  if (paused.results.length !== 1) fail(check, `results ${show(paused.results.map((r) => r.call_id))}, want [c2]`);
  expectResult(check, paused.results[0], { ...notFound, message: "Tool 'no_such_tool' not found" });
  console.log("OK agent batch paused for approval");
}

// 7. Resuming with approve, deny and an edited input runs the batch to completion.
const resume = {
  resume_token: paused.resume_token,
  decisions: [
    { call_id: "c4", approve: {} },
    { call_id: "c5", deny: { reason: "not this one" } },
    { call_id: "c6", approve_with_input: { input_json: show({ key: "b" }) } },
  ],
};
{
  const check = "batch resumed";
  const { results } = expectOutcome(check, await expectReply(check, "ResumeBatch", resume), "completed");
  const ids = results.map((r) => r.call_id);
  if (show(ids) !== show(batch.map((c) => c.call_id))) fail(check, `results ${show(ids)}, want c1..c7`);
  expectResult(check, results[0], { call_id: "c1", output: "hi" });
  expectResult(check, results[1], notFound);
  // The output is the text the model reads; the status message is CallTool's.
  expectResult(check, results[2], {
    call_id: "c3",
    output: "Invalid argument: text: Field required",
    code: grpc.status.INVALID_ARGUMENT,
    reason: "TOOL_INVALID_ARGUMENT",
    message: "Tool execution failed: Invalid argument: text: Field required",
  });
  expectResult(check, results[3], { call_id: "c4", output: "deleted" });
  expectResult(check, results[4], { call_id: "c5", code: grpc.status.PERMISSION_DENIED, reason: "CALL_DENIED" });
  if (!results[4].output.includes("not this one")) fail(check, `c5 output ${show(results[4].output)} lacks the denial reason`);
  expectResult(check, results[5], { call_id: "c6", output: "deleted" });
  expectResult(check, results[6], { call_id: "c7" });
  const seen = parse(check, "c7 structured_output_json", results[6].structured_output_json);
  if (seen?.call_id !== "c7" || entries(seen.metadata) !== entries({ user: "ada" })) {
    fail(check, `c7 structured output ${results[6].structured_output_json}`);
  }
  const kvGet = { name: "kv_get", input_json: show({ key: "b" }) };
  await expectRpcError(check, "CallTool", kvGet, grpc.status.UNKNOWN, "TOOL_EXECUTION_FAILED");
  console.log("OK agent batch resumed: approve, deny, edited input");
}

// 8. A resume token works once.
await expectRpcError("resume token", "ResumeBatch", resume, grpc.status.NOT_FOUND, "RESUME_TOKEN_UNKNOWN");
console.log("OK agent resume token single use");

// 9. Call ids are required and unique within a batch.
{
  const check = "duplicate call ids";
  const echo = (call_id) => ({ call_id, name: "echo", input_json: show({ text: "x" }) });
  for (const calls of [[echo("d"), echo("d")], [echo("")]]) {
    await expectRpcError(check, "CallTools", { calls }, grpc.status.INVALID_ARGUMENT, "INVALID_REQUEST");
  }
  console.log("OK agent duplicate call ids refused");
}
client.close();
