// Calls, from Node.js, tools a server imported from an MCP server (tests/mcp_import's fixture,
// prefixed "sdk"): node imported.mjs HOST:PORT
// A structured result, progress then the result on CallToolStream, and an MCP isError result
// as UNKNOWN / TOOL_EXECUTION_FAILED carrying the MCP server's text. Prints
// "OK imported <check>" per check; a mismatch prints "FAIL imported <check>: <why>" and exits 1.
import grpc from "@grpc/grpc-js";
import { toolService, trailerErrorInfo } from "./contract.mjs";

const [target] = process.argv.slice(2);
if (!target) {
  console.error("usage: node imported.mjs HOST:PORT");
  process.exit(2);
}
const ToolService = toolService({ oneofs: true });
const client = new ToolService(target, grpc.credentials.createInsecure());
const deadline = () => ({ deadline: Date.now() + 20000 });
const callTool = (request) =>
  new Promise((resolve, reject) =>
    client.CallTool(request, deadline(), (error, reply) => (error ? reject(error) : resolve(reply))),
  );

function fail(check, why) {
  console.log(`FAIL imported ${check}: ${why}`);
  process.exit(1);
}

let check = "a structured result";
const weather = await callTool({ name: "sdk__weather", input_json: JSON.stringify({ city: "Oslo" }) });
const structured = JSON.parse(weather.structured_output_json || "null");
if (structured?.city !== "Oslo" || structured?.celsius !== 21.5) fail(check, weather.structured_output_json);
console.log(`OK imported ${check}`);

check = "progress then the result on CallToolStream";
const events = await new Promise((resolve, reject) => {
  const seen = [];
  const stream = client.CallToolStream({ name: "sdk__slow", input_json: JSON.stringify({ steps: 3, delay: 0.05 }) }, deadline());
  stream.on("data", (event) => seen.push(event));
  stream.on("error", reject);
  stream.on("end", () => resolve(seen));
});
const progress = events.filter((event) => event.event === "progress").length;
const last = events.at(-1);
if (progress === 0 || last?.event !== "result" || last.result.output !== "done after 3 steps") {
  fail(check, `${progress} progress events, then ${JSON.stringify(last)}`);
}
console.log(`OK imported ${check}`);

check = "an MCP error result is TOOL_EXECUTION_FAILED";
try {
  await callTool({ name: "sdk__fail", input_json: JSON.stringify({ reason: "disk full" }) });
  fail(check, "the call succeeded");
} catch (error) {
  const info = trailerErrorInfo(error);
  if (error.code !== grpc.status.UNKNOWN || info?.reason !== "TOOL_EXECUTION_FAILED") {
    fail(check, `${grpc.status[error.code]} ${info?.reason}`);
  }
  if (!error.details.includes("disk full")) fail(check, `message ${JSON.stringify(error.details)}`);
}
console.log(`OK imported ${check}`);
