// Checks WatchDefinitions from Node.js against a server whose registry is open:
// node watch.mjs HOST:PORT REGISTRY_TARGET TOKEN
// REGISTRY_TARGET is the server's internal ToolRegistry (e.g. unix:/path.sock) and TOKEN its
// registry token. Three watches: plain (the first message is ListDefinitionsSorted's answer),
// with the current fingerprint (`unchanged`), and in OpenAI Chat format (definitions_json);
// a tool registered through RegisterTool then reaches all three, once, and so does the same
// tool leaving through UnregisterTool; call.cancel() ends them.
// Prints "OK watch <check>" per check; a mismatch prints "FAIL watch <check>: <why>" and
// exits 1.
import { createHash } from "node:crypto";
import grpc from "@grpc/grpc-js";
import { toolRegistry, toolService } from "./contract.mjs";

const [target, registryTarget, token] = process.argv.slice(2);
if (!target || !registryTarget || !token) {
  console.error("usage: node watch.mjs HOST:PORT REGISTRY_TARGET TOKEN");
  process.exit(2);
}
const ToolService = toolService();
const ToolRegistry = toolRegistry();

function fail(check, why) {
  console.log(`FAIL watch ${check}: ${why}`);
  process.exit(1);
}

const show = JSON.stringify;
const sha256 = (text) => createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const failure = (error) => `${grpc.status[error.code]} ${show(error.details)}`;
const names = (definitions) => definitions.map((d) => d.name);
const isSorted = (list) => list.every((item, i) => i === 0 || list[i - 1] < item);
// How long a watch may take to deliver a message: its first one, or the one a registration
// causes.
const WATCH_WAIT_MS = 10000;
// How long a watch must stay silent after the message of the last change.
const WATCH_QUIET_MS = 300;
const CHAT = "DEFINITION_FORMAT_OPENAI_CHAT";
// The provider_target the tool is registered (and unregistered) with; it is never called.
const PROVIDER = "127.0.0.1:1";

const client = new ToolService(target, grpc.credentials.createInsecure());
const registry = new ToolRegistry(registryTarget, grpc.credentials.createInsecure());
const deadline = () => ({ deadline: Date.now() + 20000 });
const call = (method, request) =>
  new Promise((resolve, reject) =>
    client[method](request, deadline(), (error, reply) => (error ? reject(error) : resolve(reply))),
  );

// A ToolRegistry call with the registry token.
const registryCall = (method, request) => {
  const metadata = new grpc.Metadata();
  metadata.add("authorization", `Bearer ${token}`);
  return new Promise((resolve, reject) =>
    registry[method](request, metadata, deadline(), (error, reply) => (error ? reject(error) : resolve(reply))),
  );
};

async function listing(check, request) {
  try {
    return await call("ListDefinitionsSorted", request);
  } catch (error) {
    fail(check, `ListDefinitionsSorted ${show(request)}: ${failure(error)}`);
  }
}

// An open watch: its call and the messages not yet taken; `ended` resolves to the error that
// ended the stream, or null when it ended with OK. The stream lives until cancelled (or for a
// minute at most).
function open(name, request) {
  const stream = client.WatchDefinitions(request, { deadline: Date.now() + 60000 });
  const opened = { name, stream, queue: [], wake: null, end: null };
  opened.ended = new Promise((resolve) => {
    stream.on("data", (message) => {
      opened.queue.push(message);
      opened.wake?.();
    });
    stream.on("error", (error) => resolve(error));
    stream.on("end", () => resolve(null));
  });
  opened.ended.then((error) => {
    opened.end = { error };
    opened.wake?.();
  });
  return opened;
}

// What `promise` resolves to, or "timeout" after ms (the timer cleared either way, so that it
// cannot hold the process).
async function within(promise, ms) {
  let timer;
  const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve("timeout"), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// The watch's next message within WATCH_WAIT_MS; fails the check otherwise.
async function next(check, opened) {
  const until = Date.now() + WATCH_WAIT_MS;
  for (;;) {
    if (opened.queue.length) return opened.queue.shift();
    const ended = opened.end;
    if (ended) fail(check, `the ${opened.name} watch ended: ${ended.error ? failure(ended.error) : "OK"}`);
    const left = until - Date.now();
    if (left <= 0) fail(check, `the ${opened.name} watch sent no message within ${WATCH_WAIT_MS} ms`);
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, left);
      opened.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    opened.wake = null;
  }
}

// A watch's full plain message is ListDefinitionsSorted's answer, field by field.
function sameListing(check, what, got, want) {
  if (got.unchanged || got.definitions_json !== "") fail(check, `${what}: unchanged=${got.unchanged} definitions_json ${got.definitions_json.length} chars, want a full plain listing`);
  if (!isSorted(names(got.definitions))) fail(check, `${what}: names ${show(names(got.definitions))} are not sorted`);
  if (!got.fingerprint || got.fingerprint !== want.fingerprint) fail(check, `${what}: fingerprint ${show(got.fingerprint)}, ListDefinitionsSorted says ${show(want.fingerprint)}`);
  if (show(got) !== show(want)) fail(check, `${what}: definitions ${show(names(got.definitions))} differ from ListDefinitionsSorted's ${show(names(want.definitions))}`);
}

// A formatted message: definitions_json is a JSON array of {"type":"function","function":{...}}
// entries, sorted by name, whose SHA-256 is the fingerprint. Returns the names.
function chatNames(check, what, message) {
  if (message.unchanged || message.definitions.length) fail(check, `${what}: unchanged=${message.unchanged} definitions=${message.definitions.length}, want definitions_json only`);
  let entries;
  try {
    entries = JSON.parse(message.definitions_json);
  } catch (error) {
    fail(check, `${what}: definitions_json ${show(message.definitions_json.slice(0, 80))} is not JSON: ${error.message}`);
  }
  if (!Array.isArray(entries)) fail(check, `${what}: definitions_json is ${show(message.definitions_json.slice(0, 80))}, want an array`);
  entries.forEach((entry, i) => {
    const fn = entry?.function;
    if (entry?.type !== "function" || typeof fn !== "object" || fn === null || typeof fn.name !== "string" || typeof fn.parameters !== "object") {
      fail(check, `${what}: entry ${i} is not {"type":"function","function":{"name","parameters",...}}: ${show(entry)}`);
    }
  });
  const listed = entries.map((entry) => entry.function.name);
  if (!isSorted(listed)) fail(check, `${what}: names ${show(listed)} are not sorted`);
  if (message.fingerprint !== sha256(message.definitions_json)) fail(check, `${what}: fingerprint ${show(message.fingerprint)} is not the SHA-256 of definitions_json`);
  return listed;
}

// The messages of a change (`after`, e.g. "registering node_watch_1"): the plain and
// known-fingerprint watches deliver `want`, ListDefinitionsSorted's answer, listing
// `wantNames`; the openai_chat watch the same names in OpenAI Chat format, as
// ListDefinitionsSorted formats them, with a fingerprint other than `chatWas`. Then no watch
// sends anything more. Returns the openai_chat fingerprint.
async function everyWatch(check, after, want, wantNames, chatWas) {
  for (const opened of [plain, known]) {
    const message = await next(check, opened);
    sameListing(check, `${opened.name} watch after ${after}`, message, want);
    if (show(names(message.definitions)) !== show(wantNames)) fail(check, `${opened.name} watch after ${after} lists ${show(names(message.definitions))}, want ${show(wantNames)}`);
  }
  const message = await next(check, chat);
  const listed = chatNames(check, `openai_chat watch after ${after}`, message);
  if (show(listed) !== show(wantNames)) fail(check, `openai_chat watch after ${after} lists ${show(listed)}, want ${show(wantNames)}`);
  const formatted = await listing(check, { format: CHAT });
  if (message.fingerprint === chatWas || show(message) !== show(formatted)) {
    fail(check, `openai_chat watch after ${after}: fingerprint ${show(message.fingerprint)} (was ${show(chatWas)}), ListDefinitionsSorted says ${show(formatted.fingerprint)}`);
  }
  // One message per change: nothing else is on its way.
  await sleep(WATCH_QUIET_MS);
  for (const opened of [plain, known, chat]) {
    if (opened.queue.length) fail(check, `${opened.name} watch sent another message after ${after}: ${show(opened.queue[0])}`);
  }
  return message.fingerprint;
}

// 1. A plain watch: its first message is the current state, as ListDefinitionsSorted answers.
const plain = open("plain", {});
let current;
{
  const check = "first";
  const message = await next(check, plain);
  const want = await listing(check, {});
  sameListing(check, "first message", message, want);
  if (!message.definitions.length) fail(check, "no definitions, want the server's tools");
  current = message;
  console.log("OK watch the first message is the current state, fingerprinted as ListDefinitionsSorted");
}

// 2. A watch given the current fingerprint starts with `unchanged`.
const known = open("known-fingerprint", { known_fingerprint: current.fingerprint });
{
  const check = "unchanged";
  const message = await next(check, known);
  if (!message.unchanged || message.fingerprint !== current.fingerprint || message.definitions.length || message.definitions_json !== "") {
    fail(check, `unchanged=${message.unchanged} fingerprint ${show(message.fingerprint)} definitions=${message.definitions.length} definitions_json ${message.definitions_json.length} chars, want true, ${show(current.fingerprint)}, 0, 0`);
  }
  console.log("OK watch unchanged for a known fingerprint");
}

// 3. A watch in OpenAI Chat format starts with ListDefinitionsSorted's bytes.
const chat = open("openai_chat", { format: CHAT });
let chatFingerprint;
{
  const check = "openai_chat";
  const message = await next(check, chat);
  const listed = chatNames(check, "first message", message);
  if (show(listed) !== show(names(current.definitions))) fail(check, `names ${show(listed)}, the plain watch listed ${show(names(current.definitions))}`);
  const want = await listing(check, { format: CHAT });
  if (show(message) !== show(want)) fail(check, `fingerprint ${show(message.fingerprint)} and ${message.definitions_json.length} chars, ListDefinitionsSorted says ${show(want.fingerprint)} and ${want.definitions_json.length} chars`);
  chatFingerprint = message.fingerprint;
  console.log("OK watch openai_chat definitions_json");
}

// 4. A tool registered through the internal ToolRegistry reaches every watch, once.
const tool = { name: `node_watch_${process.pid}` };
{
  const check = "registration";
  const request = {
    definition: {
      name: tool.name,
      description: "A tool the Node watch check registers; never called.",
      input_schema_json: show({ properties: { text: { type: "string" } }, required: ["text"], type: "object" }),
    },
    provider_target: PROVIDER,
  };
  let registered;
  try {
    registered = await registryCall("RegisterTool", request);
  } catch (error) {
    fail(check, `register ${tool.name}: ${failure(error)}`);
  }
  if (!registered.fingerprint || registered.fingerprint === current.fingerprint) fail(check, `RegisterTool fingerprint ${show(registered.fingerprint)}, want a new one (was ${show(current.fingerprint)})`);
  const want = await listing(check, {});
  if (want.fingerprint !== registered.fingerprint) fail(check, `ListDefinitionsSorted fingerprint ${show(want.fingerprint)}, RegisterTool said ${show(registered.fingerprint)}`);
  const wantNames = [...names(current.definitions), tool.name].sort();
  tool.chatFingerprint = await everyWatch(check, `registering ${tool.name}`, want, wantNames, chatFingerprint);
  tool.fingerprint = registered.fingerprint;
  console.log("OK watch a registration reaches every watch");
}

// 5. The same tool unregistered (same name and provider_target) leaves every watch, once.
{
  const check = "departure";
  let removed;
  try {
    removed = await registryCall("UnregisterTool", { name: tool.name, provider_target: PROVIDER });
  } catch (error) {
    fail(check, `unregister ${tool.name}: ${failure(error)}`);
  }
  if (!removed.fingerprint || removed.fingerprint === tool.fingerprint) fail(check, `UnregisterTool fingerprint ${show(removed.fingerprint)}, want a new one (was ${show(tool.fingerprint)})`);
  const want = await listing(check, {});
  if (want.fingerprint !== removed.fingerprint) fail(check, `ListDefinitionsSorted fingerprint ${show(want.fingerprint)}, UnregisterTool said ${show(removed.fingerprint)}`);
  if (names(want.definitions).includes(tool.name)) fail(check, `ListDefinitionsSorted still lists ${tool.name} after UnregisterTool`);
  await everyWatch(check, `unregistering ${tool.name}`, want, names(current.definitions), tool.chatFingerprint);
  console.log("OK watch a tool that leaves reaches every watch");
}

// 6. call.cancel() ends each watch with CANCELLED.
{
  const check = "cancel";
  for (const opened of [plain, known, chat]) {
    opened.stream.cancel();
    const ended = await within(opened.ended, WATCH_WAIT_MS);
    if (ended === "timeout") fail(check, `the ${opened.name} watch did not end within ${WATCH_WAIT_MS} ms of the cancel`);
    if (ended?.code !== grpc.status.CANCELLED) fail(check, `the ${opened.name} watch ended with ${ended ? failure(ended) : "OK"}, want CANCELLED`);
    if (opened.queue.length) fail(check, `the ${opened.name} watch sent ${show(opened.queue[0])} before the cancel took effect`);
  }
  console.log("OK watch cancelling ends the watches");
}
client.close();
registry.close();
