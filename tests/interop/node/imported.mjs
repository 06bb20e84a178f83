// Calls, from Node.js through @llmworker/sdk, tools a server imported from an MCP server
// (tests/mcp_import's fixture, prefixed "sdk"): node imported.mjs HOST:PORT
// A structured result, progress then the result on CallToolStream, and an MCP isError result
// as UNKNOWN / TOOL_EXECUTION_FAILED carrying the MCP server's text. Prints
// "OK imported <check>" per check; a mismatch prints "FAIL imported <check>: <why>" and exits 1.
import { createClient } from "@llmworker/sdk";
import { failer, failure, notTyped, rejection, show } from "./contract.mjs";

const [target] = process.argv.slice(2);
if (!target) {
  console.error("usage: node imported.mjs HOST:PORT");
  process.exit(2);
}
const fail = failer("imported ");
const client = createClient(target, { timeoutMs: 20000 });

let check = "a structured result";
try {
  const weather = await client.callTool("sdk__weather", { city: "Oslo" });
  if (weather.structured?.city !== "Oslo" || weather.structured?.celsius !== 21.5) fail(check, show(weather.structured));
} catch (error) {
  fail(check, failure(error));
}
console.log(`OK imported ${check}`);

check = "progress then the result on CallToolStream";
const events = [];
try {
  for await (const event of client.callToolStream("sdk__slow", { steps: 3, delay: 0.05 })) events.push(event);
} catch (error) {
  fail(check, `after ${events.length} events: ${failure(error)}`);
}
const progress = events.filter((event) => event.kind === "progress").length;
const last = events.at(-1);
if (progress === 0 || last?.kind !== "result" || last.result.output !== "done after 3 steps") {
  fail(check, `${progress} progress events, then ${show(last)}`);
}
console.log(`OK imported ${check}`);

check = "an MCP error result is TOOL_EXECUTION_FAILED";
{
  const error = await rejection(client.callTool("sdk__fail", { reason: "disk full" }));
  if (!error) fail(check, "the call succeeded");
  const why = notTyped(error, "UNKNOWN", "TOOL_EXECUTION_FAILED");
  if (why) fail(check, why);
  if (!error.message.includes("disk full")) fail(check, `message ${show(error.message)}`);
}
console.log(`OK imported ${check}`);
client.close();
