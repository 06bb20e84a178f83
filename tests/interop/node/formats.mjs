// Checks the provider-formatted definitions of ListDefinitionsSorted from Node.js against a
// `python -m llmworker_server --demo` server: node formats.mjs HOST:PORT DIR
// DIR holds the bytes Python produced in-process for the same tools: openai_chat_strict.json
// (DEFINITION_FORMAT_OPENAI_CHAT_STRICT) and anthropic.json (DEFINITION_FORMAT_ANTHROPIC with
// cache_control on the last tool).
// It then runs model output in a provider's JSON through RunProviderToolCalls (OpenAI Chat
// answered at once; Anthropic paused for approval and finished by ResumeBatch; no format
// refused).
// Prints "OK formats <check>" per check; a mismatch prints "FAIL formats <check>: <why>" and
// exits 1.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import grpc from "@grpc/grpc-js";
import { toolService, trailerErrorInfo as errorInfo } from "./contract.mjs";

const [target, dir] = process.argv.slice(2);
if (!target || !dir) {
  console.error("usage: node formats.mjs HOST:PORT DIR");
  process.exit(2);
}
// Without `enums: String` a reply's enum fields are numbers; a request's enum field takes
// the value's name ("DEFINITION_FORMAT_ANTHROPIC") or its number, and a number the .proto
// does not define (99) is encoded as it is, so the server sees an unknown format. oneofs: true
// adds the name of the set member of each oneof (RunProviderToolCallsResponse.outcome,
// CallToolsResponse.outcome).
const ToolService = toolService({ oneofs: true });

function fail(check, why) {
  console.log(`FAIL formats ${check}: ${why}`);
  process.exit(1);
}

const show = JSON.stringify;
const sha256 = (text) => createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");
// A long text as its length and ends, for messages.
const brief = (text) => (text.length <= 120 ? show(text) : `${show(text.slice(0, 60))}...${show(text.slice(-40))} (${text.length} chars)`);

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

// The expected bytes Python wrote, as UTF-8 text (a BOM or invalid UTF-8 would not round-trip).
function expected(check, name) {
  const file = path.join(dir, name);
  let bytes;
  try {
    bytes = fs.readFileSync(file);
  } catch (error) {
    fail(check, `cannot read ${file}: ${error.message}`);
  }
  const text = bytes.toString("utf8");
  if (!Buffer.from(text, "utf8").equals(bytes)) fail(check, `${file} is not valid UTF-8`);
  if (text.length === 0) fail(check, `${file} is empty`);
  return text;
}

// A formatted listing: the exact bytes Python produced, no llmworker definitions, and the
// fingerprint of exactly those bytes. Returns the reply and the parsed array.
async function formatted(check, request, file) {
  const want = expected(check, file);
  const reply = await expectReply(check, "ListDefinitionsSorted", request);
  const got = reply.definitions_json;
  if (reply.unchanged) fail(check, "unchanged is true without a known_fingerprint");
  if (reply.definitions.length !== 0) fail(check, `${reply.definitions.length} llmworker definitions, want none with a format`);
  if (!Buffer.from(got, "utf8").equals(Buffer.from(want, "utf8"))) {
    let i = 0;
    while (i < got.length && got[i] === want[i]) i++;
    fail(check, `definitions_json ${brief(got)} differs from ${file} ${brief(want)} at char ${i}: ${show(got.slice(i, i + 40))} vs ${show(want.slice(i, i + 40))}`);
  }
  const digest = sha256(got);
  if (reply.fingerprint !== digest) fail(check, `fingerprint ${show(reply.fingerprint)}, SHA-256 of definitions_json is ${digest}`);
  let tools;
  try {
    tools = JSON.parse(got);
  } catch (error) {
    fail(check, `definitions_json is not JSON (${error.message}): ${brief(got)}`);
  }
  if (!Array.isArray(tools) || tools.length === 0) fail(check, `definitions_json is not a non-empty array: ${brief(got)}`);
  return { reply, tools };
}

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const keys = (object) => show(Object.keys(object).sort());

// 1a. OpenAI Chat Completions, strict.
const strictCheck = "openai_chat_strict";
const strict = await formatted(strictCheck, { format: "DEFINITION_FORMAT_OPENAI_CHAT_STRICT" }, "openai_chat_strict.json");
{
  const check = strictCheck;
  const names = [];
  for (const [i, tool] of strict.tools.entries()) {
    const where = `entry ${i}`;
    if (!isObject(tool) || keys(tool) !== show(["function", "type"]) || tool.type !== "function") {
      fail(check, `${where} ${brief(show(tool))} is not {"type":"function","function":{...}}`);
    }
    const fn = tool.function;
    if (!isObject(fn) || typeof fn.name !== "string" || !fn.name) fail(check, `${where}: function ${brief(show(fn))} has no name`);
    if (typeof fn.description !== "string") fail(check, `${fn.name}: description ${show(fn.description)}`);
    if (fn.strict !== true) fail(check, `${fn.name}: strict ${show(fn.strict)}, want true`);
    if (!isObject(fn.parameters)) fail(check, `${fn.name}: parameters ${show(fn.parameters)} is not an object`);
    if (fn.parameters.additionalProperties !== false) {
      fail(check, `${fn.name}: parameters.additionalProperties ${show(fn.parameters.additionalProperties)}, want false`);
    }
    names.push(fn.name);
  }
  if (names.join() !== [...names].sort().join()) fail(check, `names ${names} are not sorted`);
  console.log(`OK formats ${check}`);
}

// 1b. Anthropic Messages, with cache_control on the last tool.
{
  const check = "anthropic";
  const request = { format: "DEFINITION_FORMAT_ANTHROPIC", anthropic_cache_control: true };
  const { reply, tools } = await formatted(check, request, "anthropic.json");
  if (reply.fingerprint === strict.reply.fingerprint) fail(check, "fingerprint equals the OpenAI format's");
  const names = [];
  for (const [i, tool] of tools.entries()) {
    const last = i === tools.length - 1;
    if (!isObject(tool) || typeof tool.name !== "string" || !tool.name) fail(check, `entry ${i} ${brief(show(tool))} has no name`);
    if (typeof tool.description !== "string") fail(check, `${tool.name}: description ${show(tool.description)}`);
    if (!isObject(tool.input_schema)) fail(check, `${tool.name}: input_schema ${show(tool.input_schema)} is not an object`);
    const want = ["description", "input_schema", "name", ...(last ? ["cache_control"] : [])].sort();
    if (keys(tool) !== show(want)) fail(check, `${tool.name}: keys ${keys(tool)}, want ${show(want)}`);
    if (last && show(tool.cache_control) !== show({ type: "ephemeral" })) {
      fail(check, `${tool.name} (last): cache_control ${show(tool.cache_control)}, want {"type":"ephemeral"}`);
    }
    names.push(tool.name);
  }
  if (names.join() !== [...names].sort().join()) fail(check, `names ${names} are not sorted`);
  console.log(`OK formats ${check}`);
}

// 2. A known fingerprint of the format: unchanged, nothing sent.
{
  const check = "unchanged";
  const request = { format: "DEFINITION_FORMAT_OPENAI_CHAT_STRICT", known_fingerprint: strict.reply.fingerprint };
  const reply = await expectReply(check, "ListDefinitionsSorted", request);
  if (reply.unchanged !== true) fail(check, `unchanged ${show(reply.unchanged)}, want true`);
  if (reply.definitions_json !== "") fail(check, `definitions_json ${brief(reply.definitions_json)}, want empty`);
  if (reply.definitions.length !== 0) fail(check, `${reply.definitions.length} llmworker definitions, want none`);
  console.log("OK formats unchanged for a known fingerprint");
}

// 3. A format number the server does not know.
{
  const check = "unknown format";
  const request = { format: 99 };
  // Make sure the number itself goes on the wire (field 2, varint 99), not a default.
  const wire = ToolService.service.ListDefinitionsSorted.requestSerialize(request);
  if (!wire.equals(Buffer.from([0x10, 99]))) fail(check, `proto-loader encodes ${show(request)} as ${wire.toString("hex")}, want 1063`);
  let error = null;
  try {
    await call("ListDefinitionsSorted", request);
  } catch (caught) {
    error = caught;
  }
  if (!error) fail(check, "ListDefinitionsSorted with format 99 succeeded, want INVALID_ARGUMENT / INVALID_REQUEST");
  if (error.code !== grpc.status.INVALID_ARGUMENT) fail(check, `${grpc.status[error.code]} ${show(error.details)}, want INVALID_ARGUMENT`);
  const info = errorInfo(error);
  if (info?.domain !== "llmworker" || info.reason !== "INVALID_REQUEST") fail(check, `ErrorInfo ${show(info)}, want llmworker / INVALID_REQUEST`);
  console.log("OK formats unknown format refused");
}

// The outcome of a RunProviderToolCalls / ResumeBatch reply, which must be `kind`.
function expectOutcome(check, reply, kind) {
  if (reply.outcome !== kind) fail(check, `outcome ${reply.outcome}, want ${kind}: ${show(reply)}`);
  return reply[kind];
}

// 4a. OpenAI Chat: an assistant message with a known and an unknown tool call, answered at
// once with the {"role":"tool"} messages (the unknown tool's as its error text).
{
  const check = "provider openai_chat";
  const modelOutput = {
    role: "assistant",
    tool_calls: [
      { id: "call_1", type: "function", function: { name: "echo", arguments: '{"text": "hi"}' } },
      { id: "call_2", type: "function", function: { name: "no_such_tool", arguments: "{}" } },
    ],
  };
  const request = { format: "DEFINITION_FORMAT_OPENAI_CHAT", model_output_json: show(modelOutput) };
  const got = expectOutcome(check, await expectReply(check, "RunProviderToolCalls", request), "results_message_json");
  const want =
    '[{"content":"hi","role":"tool","tool_call_id":"call_1"},' +
    '{"content":"Tool \'no_such_tool\' not found","role":"tool","tool_call_id":"call_2"}]';
  if (got !== want) fail(check, `results_message_json ${show(got)}, want ${show(want)}`);
  console.log("OK formats provider tool calls answered in openai_chat");
}

// 4b. Anthropic: an assistant message whose second tool_use needs approval pauses; approving
// it in ResumeBatch completes with the user message of tool_result blocks.
{
  const check = "provider anthropic";
  const set = await expectReply(check, "CallTool", { name: "kv_set", input_json: show({ key: "fa", value: "1" }) });
  if (set.output !== "ok") fail(check, `kv_set fa: output ${show(set.output)}, want "ok"`);
  const modelOutput = {
    role: "assistant",
    content: [
      { type: "tool_use", id: "toolu_1", name: "echo", input: { text: "x" } },
      { type: "tool_use", id: "toolu_2", name: "kv_delete", input: { key: "fa" } },
    ],
  };
  const request = { format: "DEFINITION_FORMAT_ANTHROPIC", model_output_json: show(modelOutput) };
  const paused = expectOutcome(check, await expectReply(check, "RunProviderToolCalls", request), "paused");
  if (!paused.resume_token) fail(check, "empty resume_token");
  const pending = paused.pending_calls.map((p) => [p.call_id, p.awaiting_approval]);
  const wantPending = [["toolu_1", false], ["toolu_2", true]];
  if (show(pending) !== show(wantPending)) fail(check, `pending_calls (call_id, awaiting_approval) ${show(pending)}, want ${show(wantPending)}`);
  const resume = { resume_token: paused.resume_token, decisions: [{ call_id: "toolu_2", approve: {} }] };
  const completed = expectOutcome(check, await expectReply(check, "ResumeBatch", resume), "completed");
  const want =
    '{"content":[{"content":"x","tool_use_id":"toolu_1","type":"tool_result"},' +
    '{"content":"deleted","tool_use_id":"toolu_2","type":"tool_result"}],"role":"user"}';
  if (completed.results_message_json !== want) {
    fail(check, `completed.results_message_json ${show(completed.results_message_json)}, want ${show(want)}`);
  }
  console.log("OK formats provider tool calls paused and resumed in anthropic");
}

// 4c. Model output without a format.
{
  const check = "provider no format";
  let error = null;
  try {
    await call("RunProviderToolCalls", { model_output_json: "{}" });
  } catch (caught) {
    error = caught;
  }
  if (!error) fail(check, "RunProviderToolCalls without a format succeeded, want INVALID_ARGUMENT / INVALID_REQUEST");
  if (error.code !== grpc.status.INVALID_ARGUMENT) fail(check, `${grpc.status[error.code]} ${show(error.details)}, want INVALID_ARGUMENT`);
  const info = errorInfo(error);
  if (info?.domain !== "llmworker" || info.reason !== "INVALID_REQUEST") fail(check, `ErrorInfo ${show(info)}, want llmworker / INVALID_REQUEST`);
  console.log("OK formats provider output without a format refused");
}
client.close();
