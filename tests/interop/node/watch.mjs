// Checks WatchDefinitions from Node.js through @llmworker/sdk against a server whose registry
// is open:
// node watch.mjs HOST:PORT REGISTRY_TARGET TOKEN
// REGISTRY_TARGET is the server's internal ToolRegistry (e.g. unix:/path.sock) and TOKEN its
// registry token. Three watches: plain (the SDK's watchDefinitions: the first message is
// ListDefinitionsSorted's answer), with the current fingerprint (`unchanged`), and in OpenAI
// Chat format (definitions_json), both through the SDK's generated client;
// a tool registered through RegisterTool then reaches all three, once, and so does the same
// tool leaving through UnregisterTool (the SDK's ToolRegistry service); aborting ends them.
// Prints "OK watch <check>" per check; a mismatch prints "FAIL watch <check>: <why>" and
// exits 1.
import { createHash } from "node:crypto";
import { DefinitionFormat, LlmworkerError, ToolRegistry, createClient, createServiceClient, fromError } from "@llmworker/sdk";
import { failer, failure, show } from "./contract.mjs";

const [target, registryTarget, token] = process.argv.slice(2);
if (!target || !registryTarget || !token) {
  console.error("usage: node watch.mjs HOST:PORT REGISTRY_TARGET TOKEN");
  process.exit(2);
}
const fail = failer("watch ");
const sha256 = (text) => createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const names = (definitions) => definitions.map((d) => d.name);
const isSorted = (list) => list.every((item, i) => i === 0 || list[i - 1] < item);
// How long a watch may take to deliver a message: its first one, or the one a registration
// causes.
const WATCH_WAIT_MS = 10000;
// How long a watch must stay silent after the message of the last change.
const WATCH_QUIET_MS = 300;
const TIMEOUT_MS = 20000;
const CHAT = DefinitionFormat.OPENAI_CHAT;
// The provider_target the tool is registered (and unregistered) with; it is never called.
const PROVIDER = "127.0.0.1:1";

const client = createClient(target, { timeoutMs: TIMEOUT_MS });
const registry = createServiceClient(ToolRegistry, registryTarget, { token, timeoutMs: TIMEOUT_MS });

// ListDefinitionsSorted through the generated client: the whole response, to compare with a
// watch's messages.
async function listing(check, request) {
  try {
    return await client.service.listDefinitionsSorted(request, { timeoutMs: TIMEOUT_MS });
  } catch (error) {
    return fail(check, `ListDefinitionsSorted ${show(request)}: ${failure(fromError(error))}`);
  }
}

// An open watch, reading `messages` (an async iterable ended by `abort`): the messages not yet
// taken; `ended` resolves to the typed error that ended it, or null when it ended with OK.
function open(name, abort, messages) {
  const opened = { name, abort, queue: [], wake: null, end: null };
  opened.ended = (async () => {
    try {
      for await (const message of messages) {
        opened.queue.push(message);
        opened.wake?.();
      }
      return null;
    } catch (error) {
      return fromError(error);
    }
  })();
  opened.ended.then((error) => {
    opened.end = { error };
    opened.wake?.();
  });
  return opened;
}

// The plain watch: the SDK's watchDefinitions ({tools, fingerprint} per change).
function openPlain() {
  const abort = new AbortController();
  return open("plain", abort, client.watchDefinitions(abort.signal));
}

// A watch the SDK does not wrap (a known fingerprint, a format): the generated client's, no
// deadline.
function openRaw(name, request) {
  const abort = new AbortController();
  return open(name, abort, client.service.watchDefinitions(request, { signal: abort.signal, timeoutMs: 0 }));
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

// The plain watch's message ({tools, fingerprint}) is ListDefinitionsSorted's answer.
function samePlain(check, what, got, want) {
  if (want.unchanged || want.definitionsJson !== "") fail(check, `${what}: ListDefinitionsSorted answered unchanged=${want.unchanged}, want a full plain listing`);
  if (!isSorted(names(got.tools))) fail(check, `${what}: names ${show(names(got.tools))} are not sorted`);
  if (!got.fingerprint || got.fingerprint !== want.fingerprint) fail(check, `${what}: fingerprint ${show(got.fingerprint)}, ListDefinitionsSorted says ${show(want.fingerprint)}`);
  if (show(got.tools) !== show(want.definitions)) fail(check, `${what}: definitions ${show(names(got.tools))} differ from ListDefinitionsSorted's ${show(names(want.definitions))}`);
}

// A watch's full plain response is ListDefinitionsSorted's answer, field by field.
function sameListing(check, what, got, want) {
  if (got.unchanged || got.definitionsJson !== "") fail(check, `${what}: unchanged=${got.unchanged} definitionsJson ${got.definitionsJson.length} chars, want a full plain listing`);
  if (!isSorted(names(got.definitions))) fail(check, `${what}: names ${show(names(got.definitions))} are not sorted`);
  if (!got.fingerprint || got.fingerprint !== want.fingerprint) fail(check, `${what}: fingerprint ${show(got.fingerprint)}, ListDefinitionsSorted says ${show(want.fingerprint)}`);
  if (show(got) !== show(want)) fail(check, `${what}: definitions ${show(names(got.definitions))} differ from ListDefinitionsSorted's ${show(names(want.definitions))}`);
}

// A formatted message: definitionsJson is a JSON array of {"type":"function","function":{...}}
// entries, sorted by name, whose SHA-256 is the fingerprint. Returns the names.
function chatNames(check, what, message) {
  if (message.unchanged || message.definitions.length) fail(check, `${what}: unchanged=${message.unchanged} definitions=${message.definitions.length}, want definitionsJson only`);
  let entries;
  try {
    entries = JSON.parse(message.definitionsJson);
  } catch (error) {
    fail(check, `${what}: definitionsJson ${show(message.definitionsJson.slice(0, 80))} is not JSON: ${error.message}`);
  }
  if (!Array.isArray(entries)) fail(check, `${what}: definitionsJson is ${show(message.definitionsJson.slice(0, 80))}, want an array`);
  entries.forEach((entry, i) => {
    const fn = entry?.function;
    if (entry?.type !== "function" || typeof fn !== "object" || fn === null || typeof fn.name !== "string" || typeof fn.parameters !== "object") {
      fail(check, `${what}: entry ${i} is not {"type":"function","function":{"name","parameters",...}}: ${show(entry)}`);
    }
  });
  const listed = entries.map((entry) => entry.function.name);
  if (!isSorted(listed)) fail(check, `${what}: names ${show(listed)} are not sorted`);
  if (message.fingerprint !== sha256(message.definitionsJson)) fail(check, `${what}: fingerprint ${show(message.fingerprint)} is not the SHA-256 of definitionsJson`);
  return listed;
}

// The messages of a change (`after`, e.g. "registering node_watch_1"): the plain and
// known-fingerprint watches deliver `want`, ListDefinitionsSorted's answer, listing
// `wantNames`; the openai_chat watch the same names in OpenAI Chat format, as
// ListDefinitionsSorted formats them, with a fingerprint other than `chatWas`. Then no watch
// sends anything more. Returns the openai_chat fingerprint.
async function everyWatch(check, after, want, wantNames, chatWas) {
  const message = await next(check, plain);
  samePlain(check, `plain watch after ${after}`, message, want);
  if (show(names(message.tools)) !== show(wantNames)) fail(check, `plain watch after ${after} lists ${show(names(message.tools))}, want ${show(wantNames)}`);
  const response = await next(check, known);
  sameListing(check, `${known.name} watch after ${after}`, response, want);
  if (show(names(response.definitions)) !== show(wantNames)) fail(check, `${known.name} watch after ${after} lists ${show(names(response.definitions))}, want ${show(wantNames)}`);
  const formattedMessage = await next(check, chat);
  const listed = chatNames(check, `openai_chat watch after ${after}`, formattedMessage);
  if (show(listed) !== show(wantNames)) fail(check, `openai_chat watch after ${after} lists ${show(listed)}, want ${show(wantNames)}`);
  const formatted = await listing(check, { format: CHAT });
  if (formattedMessage.fingerprint === chatWas || show(formattedMessage) !== show(formatted)) {
    fail(check, `openai_chat watch after ${after}: fingerprint ${show(formattedMessage.fingerprint)} (was ${show(chatWas)}), ListDefinitionsSorted says ${show(formatted.fingerprint)}`);
  }
  // One message per change: nothing else is on its way.
  await sleep(WATCH_QUIET_MS);
  for (const opened of [plain, known, chat]) {
    if (opened.queue.length) fail(check, `${opened.name} watch sent another message after ${after}: ${show(opened.queue[0])}`);
  }
  return formattedMessage.fingerprint;
}

// 1. A plain watch: its first message is the current state, as ListDefinitionsSorted answers.
const plain = openPlain();
let current;
{
  const check = "first";
  const message = await next(check, plain);
  const want = await listing(check, {});
  samePlain(check, "first message", message, want);
  if (!message.tools.length) fail(check, "no definitions, want the server's tools");
  current = want;
  console.log("OK watch the first message is the current state, fingerprinted as ListDefinitionsSorted");
}

// 2. A watch given the current fingerprint starts with `unchanged`.
const known = openRaw("known-fingerprint", { knownFingerprint: current.fingerprint });
{
  const check = "unchanged";
  const message = await next(check, known);
  if (!message.unchanged || message.fingerprint !== current.fingerprint || message.definitions.length || message.definitionsJson !== "") {
    fail(check, `unchanged=${message.unchanged} fingerprint ${show(message.fingerprint)} definitions=${message.definitions.length} definitionsJson ${message.definitionsJson.length} chars, want true, ${show(current.fingerprint)}, 0, 0`);
  }
  console.log("OK watch unchanged for a known fingerprint");
}

// 3. A watch in OpenAI Chat format starts with ListDefinitionsSorted's bytes.
const chat = openRaw("openai_chat", { format: CHAT });
let chatFingerprint;
{
  const check = "openai_chat";
  const message = await next(check, chat);
  const listed = chatNames(check, "first message", message);
  if (show(listed) !== show(names(current.definitions))) fail(check, `names ${show(listed)}, the plain watch listed ${show(names(current.definitions))}`);
  const want = await listing(check, { format: CHAT });
  if (show(message) !== show(want)) fail(check, `fingerprint ${show(message.fingerprint)} and ${message.definitionsJson.length} chars, ListDefinitionsSorted says ${show(want.fingerprint)} and ${want.definitionsJson.length} chars`);
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
      inputSchemaJson: show({ properties: { text: { type: "string" } }, required: ["text"], type: "object" }),
    },
    providerTarget: PROVIDER,
  };
  let registered;
  try {
    registered = await registry.registerTool(request);
  } catch (error) {
    fail(check, `register ${tool.name}: ${failure(fromError(error))}`);
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
    removed = await registry.unregisterTool({ name: tool.name, providerTarget: PROVIDER });
  } catch (error) {
    fail(check, `unregister ${tool.name}: ${failure(fromError(error))}`);
  }
  if (!removed.fingerprint || removed.fingerprint === tool.fingerprint) fail(check, `UnregisterTool fingerprint ${show(removed.fingerprint)}, want a new one (was ${show(tool.fingerprint)})`);
  const want = await listing(check, {});
  if (want.fingerprint !== removed.fingerprint) fail(check, `ListDefinitionsSorted fingerprint ${show(want.fingerprint)}, UnregisterTool said ${show(removed.fingerprint)}`);
  if (names(want.definitions).includes(tool.name)) fail(check, `ListDefinitionsSorted still lists ${tool.name} after UnregisterTool`);
  await everyWatch(check, `unregistering ${tool.name}`, want, names(current.definitions), tool.chatFingerprint);
  console.log("OK watch a tool that leaves reaches every watch");
}

// 6. Aborting ends each watch with CANCELLED.
{
  const check = "cancel";
  for (const opened of [plain, known, chat]) {
    opened.abort.abort();
    const ended = await within(opened.ended, WATCH_WAIT_MS);
    if (ended === "timeout") fail(check, `the ${opened.name} watch did not end within ${WATCH_WAIT_MS} ms of the abort`);
    if (!(ended instanceof LlmworkerError) || ended.codeName !== "CANCELLED") fail(check, `the ${opened.name} watch ended with ${ended ? failure(ended) : "OK"}, want CANCELLED`);
    if (opened.queue.length) fail(check, `the ${opened.name} watch sent ${show(opened.queue[0])} before the abort took effect`);
  }
  console.log("OK watch cancelling ends the watches");
}
client.close();
