// Checks SearchTools from Node.js against a server with the demo tools:
// node search.mjs HOST:PORT
// The tool a query means comes first (scores best first), a word matches the words it begins,
// a provider format lists the same tools in the same order, bad requests are refused
// INVALID_ARGUMENT / INVALID_REQUEST (and the server goes on serving), and words no tool has
// find nothing. Prints "OK search <check>" per check; a mismatch prints
// "FAIL search <check>: <why>" and exits 1.
import grpc from "@grpc/grpc-js";
import { toolService, trailerErrorInfo } from "./contract.mjs";

const [target] = process.argv.slice(2);
if (!target) {
  console.error("usage: node search.mjs HOST:PORT");
  process.exit(2);
}
const ToolService = toolService({ enums: String });
const client = new ToolService(target, grpc.credentials.createInsecure());
const deadline = () => ({ deadline: Date.now() + 20000 });
const rpc = (request) =>
  new Promise((resolve, reject) =>
    client.SearchTools(request, deadline(), (error, reply) => (error ? reject(error) : resolve(reply))),
  );

function fail(check, why) {
  console.log(`FAIL search ${check}: ${why}`);
  process.exit(1);
}

// The names found, after checking the scores: one per definition, best first.
async function search(check, request) {
  const reply = await rpc(request);
  const scores = reply.scores;
  if (scores.length !== reply.definitions.length) fail(check, `${scores.length} scores for ${reply.definitions.length} definitions`);
  if (scores.some((score, i) => i > 0 && score > scores[i - 1])) fail(check, `scores not best first: ${scores}`);
  return { names: reply.definitions.map((definition) => definition.name), reply };
}

let check = "the tool a query means comes first";
for (const [query, tool] of [
  ["calculate an arithmetic expression", "calculate"],
  ["delete a key", "kv_delete"],
]) {
  const { names } = await search(check, { query, limit: 3 });
  if (names[0] !== tool || names.length > 3) fail(check, `${query} found ${names}, want ${tool} first`);
}
console.log(`OK search ${check}`);

check = "a word matches the words it begins";
if (!(await search(check, { query: "calc" })).names.includes("calculate")) fail(check, "calc did not find calculate");
console.log(`OK search ${check}`);

check = "a provider format in the same order";
const formatted = await search(check, { query: "key value", limit: 4, format: "DEFINITION_FORMAT_OPENAI_CHAT" });
const entries = JSON.parse(formatted.reply.definitions_json);
if (!entries.every((entry) => entry.type === "function")) fail(check, formatted.reply.definitions_json);
const order = entries.map((entry) => entry.function.name);
if (formatted.names.length === 0 || JSON.stringify(order) !== JSON.stringify(formatted.names)) {
  fail(check, `formatted ${order}, definitions ${formatted.names}`);
}
console.log(`OK search ${check}`);

check = "bad requests refused naming the field";
for (const [request, field] of [
  [{ query: "" }, "query"],
  [{ query: "key", limit: 101 }, "limit"],
]) {
  let error = null;
  try {
    await rpc(request);
  } catch (caught) {
    error = caught;
  }
  if (error === null) fail(check, `${JSON.stringify(request)} answered`);
  const info = trailerErrorInfo(error);
  if (error.code !== grpc.status.INVALID_ARGUMENT || info?.reason !== "INVALID_REQUEST" || !error.details.startsWith(`${field} `)) {
    fail(check, `${JSON.stringify(request)}: ${grpc.status[error.code]} ${info?.reason} ${error.details}`);
  }
}
if ((await search(check, { query: "echo" })).names[0] !== "echo") fail(check, "echo not found after the refusals");
console.log(`OK search ${check}`);

check = "words no tool has find nothing";
const none = await search(check, { query: "zzzzqqqq nothing matches" });
if (none.names.length !== 0) fail(check, `found ${none.names}`);
console.log(`OK search ${check}`);

client.close();
