// Calls over several replicas with @llmworker/sdk's balancing, from Node.js:
//   node balance.mjs --target ipv4:HOST:P1,HOST:P2,... [--seconds 4] [--concurrency 8]
// One balancing client: round robin over the replicas whose grpc.health.v1 health says
// SERVING, and a call of whoami (read-only, idempotent) that fails UNAVAILABLE tried again
// with the backoff of llmworker._client.balancing's RETRYING_SERVICE_CONFIG; echo (not
// annotated) is never retried. Prints one JSON line: per tool, retrying (the SDK's
// retryIsSafe of its definition), calls, ok, failed by status code.
import { parseArgs } from "node:util";
import { LlmworkerError, createClient, retryIsSafe } from "@llmworker/sdk";
import { failure } from "./contract.mjs";

const CALL_TIMEOUT_MS = 5000;
const TOOLS = [
  { name: "whoami", input: {} },
  { name: "echo", input: { text: "x" } },
];

const { values } = parseArgs({
  options: {
    target: { type: "string" },
    seconds: { type: "string", default: "4" },
    concurrency: { type: "string", default: "8" },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
if (!values.target || !(seconds > 0) || !Number.isInteger(concurrency) || concurrency < 1) {
  console.error("usage: node balance.mjs --target ipv4:HOST:P1,HOST:P2,... [--seconds 4] [--concurrency 8]");
  process.exit(2);
}

const client = createClient(values.target, { balancing: true, timeoutMs: CALL_TIMEOUT_MS });
let listed;
try {
  listed = await client.listDefinitions();
} catch (error) {
  console.log(`FAIL balance: list: ${failure(error)}`);
  process.exit(1);
}
const tallies = {};
for (const tool of TOOLS) {
  const definition = listed.tools.find((d) => d.name === tool.name);
  if (!definition) {
    console.log(`FAIL balance: the server lists no tool "${tool.name}" (is it --demo?)`);
    process.exit(1);
  }
  tallies[tool.name] = { retrying: retryIsSafe(definition), calls: 0, ok: 0, failed: {} };
}

const end = Date.now() + seconds * 1000;
async function loop() {
  while (Date.now() < end) {
    for (const tool of TOOLS) {
      const counts = tallies[tool.name];
      counts.calls++;
      try {
        await client.callTool(tool.name, tool.input);
        counts.ok++;
      } catch (error) {
        const code = error instanceof LlmworkerError ? error.codeName : String(error);
        counts.failed[code] = (counts.failed[code] ?? 0) + 1;
      }
    }
  }
}
await Promise.all(Array.from({ length: concurrency }, loop));
client.close();
console.log(JSON.stringify(Object.fromEntries(Object.entries(tallies).sort())));
