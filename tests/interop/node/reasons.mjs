// Provokes, from Node.js through @llmworker/sdk, the reasons the other checks do not reach,
// each as the SDK's typed error: node reasons.mjs TARGET REGISTRY_TARGET TOKEN
// TARGET is a server with the demo tools, --tool-timeout countdown=0.3 and
// --max-paused-batches 1; REGISTRY_TARGET its internal ToolRegistry and TOKEN the registry
// token. Checks, in order (the last locks the registry): DUPLICATE_NAME (registering
// "echo", which the server has), TOOL_TIMEOUT, PAUSED_BATCHES_FULL,
// DEFINITION_FORMAT_UNSUPPORTED (a TypeScript tool taking a map), PROVIDER_UNAVAILABLE (a
// TypeScript provider that stopped) and REGISTRY_LOCKED. Prints "OK reasons <check>" per
// check; a mismatch prints "FAIL reasons <check>: <why>" and exits 1; bad arguments exit 2.
import { DefinitionFormat, Provider, ToolRegistry, createClient, createServiceClient, defineTool, deny } from "@llmworker/sdk";
import { failer, failure, notTyped, rejection, show } from "./contract.mjs";

const [target, registryTarget, token, ...extra] = process.argv.slice(2);
if (!target || !registryTarget || !token || extra.length) {
  console.error("usage: node reasons.mjs TARGET REGISTRY_TARGET TOKEN");
  process.exit(2);
}
const fail = failer("reasons ");
const TIMEOUT_MS = 20000;
const client = createClient(target, { timeoutMs: TIMEOUT_MS });
const registry = createServiceClient(ToolRegistry, registryTarget, { token, timeoutMs: TIMEOUT_MS });

// The TypeScript tools: node_reverse, an echo (a name the server's own echo has) and
// node_tags, whose input is a map with free keys (no strict format can take it).
const text = { type: "object", properties: { text: { type: "string" } }, required: ["text"], additionalProperties: false };
const provider = new Provider([
  defineTool({ name: "node_reverse", description: "Reverse a text (a TypeScript tool)", input: text, run: ({ text }) => [...text].reverse().join("") }),
  defineTool({ name: "echo", description: "Send a text back (a TypeScript tool)", input: text, run: ({ text }) => text }),
  defineTool({
    name: "node_tags",
    description: "Count tags (a map of free keys)",
    input: { type: "object", properties: { tags: { type: "object", additionalProperties: { type: "string" } } }, required: ["tags"] },
    run: ({ tags }) => String(Object.keys(tags).length),
  }),
]);
const address = await provider.serve();

// The definition of name as the provider serves it, registered at the provider (no renewals).
async function register(name) {
  const served = createClient(address, { timeoutMs: TIMEOUT_MS });
  try {
    const definition = await served.getTool(name);
    return await registry.registerTool({ definition, providerTarget: address });
  } finally {
    served.close();
  }
}

// What promise must fail with: the SDK's typed error of reason, with codeName.
async function expectTyped(check, promise, codeName, reason) {
  const error = await rejection(promise);
  if (!error) fail(check, `succeeded, want ${codeName} / ${reason}`);
  const why = notTyped(error, codeName, reason);
  if (why) fail(check, why);
  return error;
}

async function expectReply(check, promise) {
  try {
    return await promise;
  } catch (error) {
    return fail(check, failure(error));
  }
}

const duplicate = "a name the server has refused (DUPLICATE_NAME)";
await expectTyped(duplicate, register("echo"), "ALREADY_EXISTS", "DUPLICATE_NAME");
console.log(`OK reasons ${duplicate}`);

const timeout = "a tool over its timeout (TOOL_TIMEOUT)";
await expectTyped(timeout, client.callTool("countdown", { n: 100, delay: 0.1 }), "DEADLINE_EXCEEDED", "TOOL_TIMEOUT");
console.log(`OK reasons ${timeout}`);

const full = "a pause over --max-paused-batches (PAUSED_BATCHES_FULL)";
const pause = (key) => client.callTools([{ id: "d", name: "kv_delete", input: { key } }]);
const first = await expectReply(full, pause("first"));
if (!first.paused) fail(full, `the first batch did not pause: ${show(first)}`);
await expectTyped(full, pause("second"), "RESOURCE_EXHAUSTED", "PAUSED_BATCHES_FULL");
await expectReply(full, client.resume(first.paused.resumeToken, [deny("d", "room for the next")]));
const again = await expectReply(full, pause("third"));
if (!again.paused) fail(full, `after a denial the batch did not pause: ${show(again)}`);
await expectReply(full, client.resume(again.paused.resumeToken, [deny("d", "done")]));
console.log(`OK reasons ${full}`);

const strict = "a schema a strict format cannot take (DEFINITION_FORMAT_UNSUPPORTED)";
await expectReply(strict, register("node_tags"));
const refused = await expectTyped(strict, client.listDefinitionsIn(DefinitionFormat.OPENAI_CHAT_STRICT), "FAILED_PRECONDITION", "DEFINITION_FORMAT_UNSUPPORTED");
if (!refused.message.includes("node_tags") || !refused.message.includes("tags")) fail(strict, `the message ${show(refused.message)} does not name node_tags and its map`);
const plain = await expectReply(strict, client.listDefinitionsIn(DefinitionFormat.OPENAI_CHAT));
if (!show(plain).includes('"node_tags"')) fail(strict, "the plain format does not list node_tags");
console.log(`OK reasons ${strict}`);

const gone = "a provider that went away (PROVIDER_UNAVAILABLE)";
await expectReply(gone, register("node_reverse"));
const reversed = await expectReply(gone, client.callTool("node_reverse", { text: "ab" }));
if (reversed.output !== "ba") fail(gone, `node_reverse before the provider stopped: ${show(reversed)}`);
await provider.stop(0); // gone at once; it never registered itself, so nothing unregisters
await expectTyped(gone, client.callTool("node_reverse", { text: "ab" }), "UNAVAILABLE", "PROVIDER_UNAVAILABLE");
console.log(`OK reasons ${gone}`);

const locked = "a registration after the lock (REGISTRY_LOCKED)";
await expectReply(locked, registry.lockRegistry({}));
await expectTyped(locked, registry.registerTool({ definition: { name: "node_late", description: "Too late", inputSchemaJson: '{"type":"object"}' }, providerTarget: address }), "FAILED_PRECONDITION", "REGISTRY_LOCKED");
console.log(`OK reasons ${locked}`);

client.close();
