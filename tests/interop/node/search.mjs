// Checks SearchTools from Node.js through @llmworker/sdk against a server with the demo tools:
// node search.mjs HOST:PORT
// The tool a query means comes first (scores best first), a word matches the words it begins,
// a provider format lists the same tools in the same order, bad requests are refused
// INVALID_ARGUMENT / INVALID_REQUEST (and the server goes on serving), and words no tool has
// find nothing. Prints "OK search <check>" per check; a mismatch prints
// "FAIL search <check>: <why>" and exits 1.
import { DefinitionFormat, createClient } from "@llmworker/sdk";
import { failer, failure, notTyped, rejection, show } from "./contract.mjs";

const [target] = process.argv.slice(2);
if (!target) {
  console.error("usage: node search.mjs HOST:PORT");
  process.exit(2);
}
const fail = failer("search ");
const TIMEOUT_MS = 20000;
const client = createClient(target, { timeoutMs: TIMEOUT_MS });

// The names found, after checking the scores: one per definition, best first.
async function search(check, query, limit) {
  let found;
  try {
    found = await client.searchTools(query, limit);
  } catch (error) {
    fail(check, `${show(query)}: ${failure(error)}`);
  }
  const scores = found.map((one) => one.score);
  if (scores.some((score, i) => typeof score !== "number" || (i > 0 && score > scores[i - 1]))) fail(check, `scores not best first: ${scores}`);
  return found.map((one) => one.tool.name);
}

let check = "the tool a query means comes first";
for (const [query, tool] of [
  ["calculate an arithmetic expression", "calculate"],
  ["delete a key", "kv_delete"],
]) {
  const names = await search(check, query, 3);
  if (names[0] !== tool || names.length > 3) fail(check, `${query} found ${names}, want ${tool} first`);
}
console.log(`OK search ${check}`);

check = "a word matches the words it begins";
if (!(await search(check, "calc")).includes("calculate")) fail(check, "calc did not find calculate");
console.log(`OK search ${check}`);

// The SDK's searchTools has no format: the generated client sends one.
check = "a provider format in the same order";
{
  const request = { query: "key value", limit: 4, format: DefinitionFormat.OPENAI_CHAT };
  let reply;
  try {
    reply = await client.service.searchTools(request, { timeoutMs: TIMEOUT_MS });
  } catch (error) {
    fail(check, failure(error));
  }
  if (reply.scores.length !== reply.definitions.length) fail(check, `${reply.scores.length} scores for ${reply.definitions.length} definitions`);
  const names = reply.definitions.map((definition) => definition.name);
  const entries = JSON.parse(reply.definitionsJson);
  if (!entries.every((entry) => entry.type === "function")) fail(check, reply.definitionsJson);
  const order = entries.map((entry) => entry.function.name);
  if (names.length === 0 || show(order) !== show(names)) fail(check, `formatted ${order}, definitions ${names}`);
  if (show(await search(check, request.query, request.limit)) !== show(names)) fail(check, "searchTools found other tools than the formatted search");
}
console.log(`OK search ${check}`);

check = "bad requests refused naming the field";
for (const [query, limit, field] of [
  ["", 10, "query"],
  ["key", 101, "limit"],
]) {
  const error = await rejection(client.searchTools(query, limit));
  if (error === null) fail(check, `${show({ query, limit })} answered`);
  const why = notTyped(error, "INVALID_ARGUMENT", "INVALID_REQUEST");
  if (why || !error.message.startsWith(`${field} `)) fail(check, `${show({ query, limit })}: ${why ?? failure(error)}`);
}
if ((await search(check, "echo"))[0] !== "echo") fail(check, "echo not found after the refusals");
console.log(`OK search ${check}`);

check = "words no tool has find nothing";
const none = await search(check, "zzzzqqqq nothing matches");
if (none.length !== 0) fail(check, `found ${none}`);
console.log(`OK search ${check}`);
client.close();
