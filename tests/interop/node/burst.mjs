// Checks a burst on one connection from Node.js against a server with the demo tools:
// node burst.mjs HOST:PORT SLOW BURST
// Holds SLOW countdowns in flight on one client (one channel), then fires BURST echo calls at
// once on it: every answer must be OK or RESOURCE_EXHAUSTED / CONCURRENCY_LIMIT (admission),
// none gRPC's own stream refusal (REFUSED_STREAM: a bare UNAVAILABLE, which clients do not
// retry). Prints the answers counted, then "OK burst of BURST on one connection: only
// documented answers"; any other answer prints "FAIL burst ...: <counts>" and exits 1; bad
// arguments exit 2.
import grpc from "@grpc/grpc-js";
import { trailerErrorInfo as errorInfo, toolService } from "./contract.mjs";

const USAGE = "usage: node burst.mjs HOST:PORT SLOW BURST";
const [target, slowArg, burstArg, ...extra] = process.argv.slice(2);
const slow = Number(slowArg);
const burst = Number(burstArg);
if (!target || !Number.isInteger(slow) || slow < 0 || !Number.isInteger(burst) || burst < 1 || extra.length) {
  console.error(USAGE);
  process.exit(2);
}

// How long the slow calls get to reach the server's tools before the burst.
const SLOW_SETTLE_MS = 1000;
const REFUSED_BY_ADMISSION = "RESOURCE_EXHAUSTED CONCURRENCY_LIMIT";
const show = JSON.stringify;
const ToolService = toolService();
const client = new ToolService(target, grpc.credentials.createInsecure());

// The slow calls: each a grpc-js call to cancel, and whether it ended (it must not, yet).
const slowCalls = [];
let slowEnded = null;
for (let i = 0; i < slow; i++) {
  slowCalls.push(
    client.CallTool({ name: "countdown", input_json: show({ n: 300, delay: 0.1 }) }, (error) => {
      slowEnded ??= error ? `${grpc.status[error.code]} ${show(error.details)}` : "OK";
    }),
  );
}

function finish(line, code) {
  console.log(line);
  for (const call of slowCalls) call.cancel();
  client.close();
  process.exit(code);
}

await new Promise((resolve) => setTimeout(resolve, SLOW_SETTLE_MS));
if (slowEnded !== null) finish(`FAIL burst: a slow countdown ended before the burst: ${slowEnded}`, 1);

// An echo's answer: OK, "CODE REASON" for an llmworker ErrorInfo, or the code, ErrorInfo and
// message of anything else.
function answer(error, reply) {
  if (!error) return reply.output === "x" ? "OK" : `OK with output ${show(reply.output)}`;
  const code = grpc.status[error.code];
  const info = errorInfo(error);
  if (info?.domain === "llmworker") return `${code} ${info.reason}`;
  if (info) return `${code} ${info.domain}/${info.reason} ${show(error.details)}`;
  return `${code} without ErrorInfo ${show(error.details)}`;
}

const echo = { name: "echo", input_json: show({ text: "x" }) };
const answers = await Promise.all(
  Array.from(
    { length: burst },
    () =>
      new Promise((resolve) =>
        client.CallTool(echo, { deadline: Date.now() + 20000 }, (error, reply) => resolve(answer(error, reply))),
      ),
  ),
);
const counts = new Map();
for (const one of answers) counts.set(one, (counts.get(one) ?? 0) + 1);
const tally = [...counts.keys()]
  .sort()
  .map((one) => `${one}=${counts.get(one)}`)
  .join(", ");
console.log(`burst answers: ${tally}`);
const documented = [...counts.keys()].every((one) => one === "OK" || one === REFUSED_BY_ADMISSION);
if (!documented) finish(`FAIL burst of ${burst} on one connection: ${tally}`, 1);
finish(`OK burst of ${burst} on one connection: only documented answers`, 0);
