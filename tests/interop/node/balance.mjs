// Calls over several replicas with gRPC's own load balancing, from Node.js:
//   node balance.mjs --target ipv4:HOST:P1,HOST:P2,... [--seconds 4] [--concurrency 8]
// whoami (read-only, idempotent) goes through a channel that retries UNAVAILABLE, echo (not
// annotated) through one that does not: the service configs of llmworker._client.balancing. Prints
// one JSON line: per tool, retrying, calls, ok, failed by status code.
//
// grpc-js (1.14) reads loadBalancingConfig (round_robin) and methodConfig.retryPolicy (retries
// are on unless the channel option grpc.enable_retries is 0), but has no client-side health
// checking: it ignores healthCheckConfig, so a replica reporting NOT_SERVING keeps getting
// calls until its connection closes (GOAWAY at the end of its drain, or a lost connection).
import { parseArgs } from "node:util";
import grpc from "@grpc/grpc-js";
import { toolService } from "./contract.mjs";

// llmworker._client.balancing's SERVICE_CONFIG and RETRYING_SERVICE_CONFIG, byte for byte.
const SERVICE_CONFIG = '{"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {"serviceName": "llmworker.v1.ToolService"}}';
const RETRYING_SERVICE_CONFIG = '{"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {"serviceName": "llmworker.v1.ToolService"}, "methodConfig": [{"name": [{"service": "llmworker.v1.ToolService"}], "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}';
const CALL_TIMEOUT_MS = 5000;
const LIST_TIMEOUT_MS = 10000;
const TOOLS = [
  { name: "whoami", input: "{}" },
  { name: "echo", input: '{"text":"x"}' },
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

const ToolService = toolService();
const dial = (config) =>
  new ToolService(values.target, grpc.credentials.createInsecure(), { "grpc.service_config": config });
const plain = dial(SERVICE_CONFIG);
const retrying = dial(RETRYING_SERVICE_CONFIG);
const call = (client, method, request, timeoutMs) =>
  new Promise((resolve, reject) =>
    client[method](request, { deadline: Date.now() + timeoutMs }, (error, reply) =>
      error ? reject(error) : resolve(reply),
    ),
  );

// llmworker._client.balancing.retry_is_safe: annotated idempotent or read-only.
const retryIsSafe = (definition) =>
  definition.annotations?.idempotent_hint === true || definition.annotations?.read_only_hint === true;

let listed;
try {
  listed = await call(plain, "ListDefinitionsSorted", {}, LIST_TIMEOUT_MS);
} catch (error) {
  console.log(`FAIL balance: list: ${grpc.status[error.code]}: ${error.details}`);
  process.exit(1);
}
const clients = {};
const tallies = {};
for (const tool of TOOLS) {
  const definition = listed.definitions.find((d) => d.name === tool.name);
  if (!definition) {
    console.log(`FAIL balance: the server lists no tool "${tool.name}" (is it --demo?)`);
    process.exit(1);
  }
  clients[tool.name] = retryIsSafe(definition) ? retrying : plain;
  tallies[tool.name] = { retrying: clients[tool.name] === retrying, calls: 0, ok: 0, failed: {} };
}

const end = Date.now() + seconds * 1000;
async function loop() {
  while (Date.now() < end) {
    for (const tool of TOOLS) {
      const counts = tallies[tool.name];
      counts.calls++;
      try {
        await call(clients[tool.name], "CallTool", { name: tool.name, input_json: tool.input }, CALL_TIMEOUT_MS);
        counts.ok++;
      } catch (error) {
        const code = grpc.status[error.code] ?? String(error.code);
        counts.failed[code] = (counts.failed[code] ?? 0) + 1;
      }
    }
  }
}
await Promise.all(Array.from({ length: concurrency }, loop));
plain.close();
retrying.close();
console.log(JSON.stringify(Object.fromEntries(Object.entries(tallies).sort())));
