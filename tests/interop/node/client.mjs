// Checks the llmworker gRPC contract from Node.js: node client.mjs TARGET FINGERPRINT
// Prints "OK <check>" per check; a mismatch prints "FAIL <check>: <why>" and exits 1.
import grpc from "@grpc/grpc-js";
import { toolService, trailerErrorInfo as errorInfo } from "./contract.mjs";

const [target, fingerprint] = process.argv.slice(2);
const ToolService = toolService();

function fail(check, why) {
  console.log(`FAIL ${check}: ${why}`);
  process.exit(1);
}

const client = new ToolService(target, grpc.credentials.createInsecure());
const call = (method, request, deadlineMs = 20000) =>
  new Promise((resolve, reject) =>
    client[method](request, { deadline: Date.now() + deadlineMs }, (error, reply) =>
      error ? reject(error) : resolve(reply),
    ),
  );

async function expectError(check, request, code, reason, message) {
  try {
    await call("CallTool", request);
  } catch (error) {
    const info = errorInfo(error);
    if (error.code !== code) fail(check, `code ${error.code}, want ${code} (${error.details})`);
    if (error.details !== message) fail(check, `message ${JSON.stringify(error.details)}, want ${JSON.stringify(message)}`);
    if (!info || info.domain !== "llmworker" || info.reason !== reason) fail(check, `ErrorInfo ${JSON.stringify(info)}, want ${reason}`);
    console.log(`OK ${check} (${grpc.status[code]}, ${info.reason})`);
    return;
  }
  fail(check, "the call succeeded");
}

const listed = await call("ListDefinitionsSorted", {});
const names = listed.definitions.map((d) => d.name);
if (names.length === 0 || names.join() !== [...names].sort().join()) fail("list", `names ${names} are not sorted`);
if (listed.fingerprint !== fingerprint) fail("list", `fingerprint ${listed.fingerprint}, Python computed ${fingerprint}`);
console.log(`OK list ${names.length} sorted definitions, fingerprint ${listed.fingerprint.slice(0, 12)}`);

const again = await call("ListDefinitionsSorted", { known_fingerprint: fingerprint });
if (!again.unchanged || again.definitions.length !== 0) fail("list unchanged", JSON.stringify(again));
console.log("OK list unchanged for a known fingerprint");

const reply = await call("CallTool", { name: "echo", input_json: JSON.stringify({ text: "from node ✓" }) });
if (reply.output !== "from node ✓") fail("call echo", JSON.stringify(reply));
console.log("OK call echo");

await expectError("unknown tool", { name: "nope", input_json: "{}" }, grpc.status.NOT_FOUND, "TOOL_NOT_FOUND", "Tool 'nope' not found");
await expectError(
  "invalid arguments",
  { name: "echo", input_json: "[]" },
  grpc.status.INVALID_ARGUMENT,
  "TOOL_INVALID_ARGUMENT",
  "Tool execution failed: Invalid argument: arguments must be a JSON object, got an array",
);

const started = Date.now();
try {
  await call("CallTool", { name: "sleep", input_json: '{"seconds": 30}' }, 300);
  fail("deadline", "the call succeeded");
} catch (error) {
  const elapsed = Date.now() - started;
  if (error.code !== grpc.status.DEADLINE_EXCEEDED || elapsed > 5000) fail("deadline", `code ${error.code} after ${elapsed} ms`);
  console.log(`OK deadline honoured (DEADLINE_EXCEEDED after ${elapsed} ms)`);
}
client.close();
