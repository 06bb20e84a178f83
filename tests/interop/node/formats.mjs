// Checks the provider-formatted definitions of ListDefinitionsSorted from Node.js through
// @llmworker/sdk against a `python -m llmworker_server --demo` server:
// node formats.mjs HOST:PORT DIR
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
import { DefinitionFormat, approve, createClient } from "@llmworker/sdk";
import { failer, failure, notTyped, rejection, show } from "./contract.mjs";

const [target, dir] = process.argv.slice(2);
if (!target || !dir) {
  console.error("usage: node formats.mjs HOST:PORT DIR");
  process.exit(2);
}
const fail = failer("formats ");
const TIMEOUT_MS = 20000;
const client = createClient(target, { timeoutMs: TIMEOUT_MS });
const sha256 = (text) => createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");
// A long text as its length and ends, for messages.
const brief = (text) => (text.length <= 120 ? show(text) : `${show(text.slice(0, 60))}...${show(text.slice(-40))} (${text.length} chars)`);

// What must succeed.
async function expectReply(check, what, promise) {
  try {
    return await promise;
  } catch (error) {
    return fail(check, `${what} failed: ${failure(error)}`);
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

// A formatted listing, through the generated client (the bytes as sent): the exact bytes
// Python produced, no llmworker definitions, and the fingerprint of exactly those bytes; and
// the SDK's listDefinitionsIn gives the same tools. Returns the reply and the parsed array.
async function formatted(check, request, file) {
  const want = expected(check, file);
  const reply = await expectReply(check, `ListDefinitionsSorted ${show(request)}`, client.service.listDefinitionsSorted(request, { timeoutMs: TIMEOUT_MS }));
  const got = reply.definitionsJson;
  if (reply.unchanged) fail(check, "unchanged is true without a known_fingerprint");
  if (reply.definitions.length !== 0) fail(check, `${reply.definitions.length} llmworker definitions, want none with a format`);
  if (!Buffer.from(got, "utf8").equals(Buffer.from(want, "utf8"))) {
    let i = 0;
    while (i < got.length && got[i] === want[i]) i++;
    fail(check, `definitionsJson ${brief(got)} differs from ${file} ${brief(want)} at char ${i}: ${show(got.slice(i, i + 40))} vs ${show(want.slice(i, i + 40))}`);
  }
  const digest = sha256(got);
  if (reply.fingerprint !== digest) fail(check, `fingerprint ${show(reply.fingerprint)}, SHA-256 of definitionsJson is ${digest}`);
  let tools;
  try {
    tools = JSON.parse(got);
  } catch (error) {
    fail(check, `definitionsJson is not JSON (${error.message}): ${brief(got)}`);
  }
  if (!Array.isArray(tools) || tools.length === 0) fail(check, `definitionsJson is not a non-empty array: ${brief(got)}`);
  const sdk = await expectReply(check, "listDefinitionsIn", client.listDefinitionsIn(request.format, request.anthropicCacheControl ?? false));
  if (show(sdk) !== show(tools)) fail(check, `listDefinitionsIn gave ${brief(show(sdk))}, the listing ${brief(got)}`);
  return { reply, tools };
}

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const keys = (object) => show(Object.keys(object).sort());

// 1a. OpenAI Chat Completions, strict.
const strictCheck = "openai_chat_strict";
const strict = await formatted(strictCheck, { format: DefinitionFormat.OPENAI_CHAT_STRICT }, "openai_chat_strict.json");
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
  const request = { format: DefinitionFormat.ANTHROPIC, anthropicCacheControl: true };
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
  const request = { format: DefinitionFormat.OPENAI_CHAT_STRICT, knownFingerprint: strict.reply.fingerprint };
  const reply = await expectReply(check, "ListDefinitionsSorted", client.service.listDefinitionsSorted(request, { timeoutMs: TIMEOUT_MS }));
  if (reply.unchanged !== true) fail(check, `unchanged ${show(reply.unchanged)}, want true`);
  if (reply.definitionsJson !== "") fail(check, `definitionsJson ${brief(reply.definitionsJson)}, want empty`);
  if (reply.definitions.length !== 0) fail(check, `${reply.definitions.length} llmworker definitions, want none`);
  console.log("OK formats unchanged for a known fingerprint");
}

// 3. A format number the server does not know: the SDK sends 99 as it is (proto3 enums are
// open), and the server refuses it naming the number; had 99 not reached the wire, the
// server would have read DEFINITION_FORMAT_UNSPECIFIED and answered the plain listing.
{
  const check = "unknown format";
  const error = await rejection(client.listDefinitionsIn(99));
  if (!error) fail(check, "listDefinitionsIn(99) succeeded, want INVALID_ARGUMENT / INVALID_REQUEST");
  const why = notTyped(error, "INVALID_ARGUMENT", "INVALID_REQUEST");
  if (why) fail(check, why);
  if (!/\b99\b/.test(error.message)) fail(check, `message ${show(error.message)} does not name the format 99`);
  console.log("OK formats unknown format refused");
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
  const answered = await expectReply(check, "runProviderToolCalls", client.runProviderToolCalls(DefinitionFormat.OPENAI_CHAT, modelOutput));
  if (!("message" in answered)) fail(check, `paused: ${show(answered)}, want the results message`);
  // The server's results_message_json is compact JSON: parsed and written again, the same text.
  const want =
    '[{"content":"hi","role":"tool","tool_call_id":"call_1"},' +
    '{"content":"Tool \'no_such_tool\' not found","role":"tool","tool_call_id":"call_2"}]';
  if (show(answered.message) !== want) fail(check, `results message ${show(answered.message)}, want ${want}`);
  console.log("OK formats provider tool calls answered in openai_chat");
}

// 4b. Anthropic: an assistant message whose second tool_use needs approval pauses; approving
// it in resume completes with the user message of tool_result blocks.
{
  const check = "provider anthropic";
  const set = await expectReply(check, "kv_set fa", client.callTool("kv_set", { key: "fa", value: "1" }));
  if (set.output !== "ok") fail(check, `kv_set fa: output ${show(set.output)}, want "ok"`);
  const modelOutput = {
    role: "assistant",
    content: [
      { type: "tool_use", id: "toolu_1", name: "echo", input: { text: "x" } },
      { type: "tool_use", id: "toolu_2", name: "kv_delete", input: { key: "fa" } },
    ],
  };
  const answered = await expectReply(check, "runProviderToolCalls", client.runProviderToolCalls(DefinitionFormat.ANTHROPIC, modelOutput));
  if (!("paused" in answered)) fail(check, `answered ${show(answered)}, want paused`);
  const { paused } = answered;
  if (!paused.resumeToken) fail(check, "empty resumeToken");
  const pending = paused.pendingCalls.map((p) => [p.callId, p.awaitingApproval]);
  const wantPending = [["toolu_1", false], ["toolu_2", true]];
  if (show(pending) !== show(wantPending)) fail(check, `pendingCalls (callId, awaitingApproval) ${show(pending)}, want ${show(wantPending)}`);
  const outcome = await expectReply(check, "resume", client.resume(paused.resumeToken, [approve("toolu_2")]));
  if (!outcome.completed) fail(check, `outcome ${show(outcome)}, want completed`);
  const want =
    '{"content":[{"content":"x","tool_use_id":"toolu_1","type":"tool_result"},' +
    '{"content":"deleted","tool_use_id":"toolu_2","type":"tool_result"}],"role":"user"}';
  if (show(outcome.message) !== want) fail(check, `the completed batch's message ${show(outcome.message)}, want ${want}`);
  console.log("OK formats provider tool calls paused and resumed in anthropic");
}

// 4c. Model output without a format.
{
  const check = "provider no format";
  const error = await rejection(client.runProviderToolCalls(DefinitionFormat.UNSPECIFIED, {}));
  if (!error) fail(check, "runProviderToolCalls without a format succeeded, want INVALID_ARGUMENT / INVALID_REQUEST");
  const why = notTyped(error, "INVALID_ARGUMENT", "INVALID_REQUEST");
  if (why) fail(check, why);
  console.log("OK formats provider output without a format refused");
}
client.close();
