// Checks a burst on one connection from Node.js through @llmworker/sdk against a server with
// the demo tools:
// node burst.mjs HOST:PORT SLOW BURST
// Holds SLOW countdowns in flight on one client (one HTTP/2 connection), then fires BURST
// echo calls at once on it: every answer must be OK or RESOURCE_EXHAUSTED /
// CONCURRENCY_LIMIT (admission), none gRPC's own stream refusal (REFUSED_STREAM: a bare
// UNAVAILABLE, which clients do not retry). Prints the answers counted, then "OK burst of BURST on one connection: only
// documented answers"; any other answer prints "FAIL burst ...: <counts>" and exits 1; bad
// arguments exit 2.
import { LlmworkerError, createClient } from "@llmworker/sdk";
import { show } from "./contract.mjs";

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
const client = createClient(target);

// An answer: OK, "CODE REASON" for an llmworker ErrorInfo, or the code and message of
// anything else.
function answer(error, reply) {
  if (!error) return reply.output === "x" ? "OK" : `OK with output ${show(reply.output)}`;
  if (!(error instanceof LlmworkerError)) return `not a typed error: ${String(error)}`;
  if (error.reason) return `${error.codeName} ${error.reason}`;
  return `${error.codeName} without ErrorInfo ${show(error.message)}`;
}

// The slow calls: each with its abort, and whether it ended (it must not, yet).
const stop = new AbortController();
let slowEnded = null;
for (let i = 0; i < slow; i++) {
  client.callTool("countdown", { n: 300, delay: 0.1 }, { signal: stop.signal }).then(
    (reply) => (slowEnded ??= answer(null, reply)),
    (error) => (slowEnded ??= answer(error)),
  );
}

function finish(line, code) {
  console.log(line);
  stop.abort();
  client.close();
  process.exit(code);
}

await new Promise((resolve) => setTimeout(resolve, SLOW_SETTLE_MS));
if (slowEnded !== null) finish(`FAIL burst: a slow countdown ended before the burst: ${slowEnded}`, 1);

const answers = await Promise.all(
  Array.from({ length: burst }, () =>
    client.callTool("echo", { text: "x" }, { timeoutMs: 20000 }).then(
      (reply) => answer(null, reply),
      (error) => answer(error),
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
