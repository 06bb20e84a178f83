// Checks the llmworker gRPC contract from Node.js through @llmworker/sdk:
// node client.mjs TARGET FINGERPRINT
// Prints "OK <check>" per check; a mismatch prints "FAIL <check>: <why>" and exits 1.
import { LlmworkerError, ToolNotFound, createClient, rawJson, statusError } from "@llmworker/sdk";
import { failer, failure, notTyped, rejection, show } from "./contract.mjs";

const [target, fingerprint] = process.argv.slice(2);
const fail = failer("");
const client = createClient(target, { timeoutMs: 20000 });

async function expectError(check, name, inputJson, codeName, reason, message) {
  const error = await rejection(client.callTool(name, rawJson(inputJson)));
  if (!error) fail(check, "the call succeeded");
  const why = notTyped(error, codeName, reason);
  if (why) fail(check, why);
  if (error.message !== message) fail(check, `message ${show(error.message)}, want ${show(message)}`);
  console.log(`OK ${check} (${error.codeName}, ${error.reason})`);
  return error;
}

const listed = await client.listDefinitions();
const names = listed.tools.map((d) => d.name);
if (names.length === 0 || names.join() !== [...names].sort().join()) fail("list", `names ${names} are not sorted`);
if (listed.fingerprint !== fingerprint) fail("list", `fingerprint ${listed.fingerprint}, Python computed ${fingerprint}`);
for (const d of listed.tools) {
  if (typeof JSON.parse(d.inputSchemaJson) !== "object") fail("list", `${d.name}: input schema ${d.inputSchemaJson}`);
}
console.log(`OK list ${names.length} sorted definitions, fingerprint ${listed.fingerprint.slice(0, 12)}`);

// The SDK's listing has no known fingerprint: its generated client sends one.
const again = await client.service.listDefinitionsSorted({ knownFingerprint: fingerprint }, { timeoutMs: 20000 });
if (!again.unchanged || again.definitions.length !== 0) fail("list unchanged", show(again));
console.log("OK list unchanged for a known fingerprint");

const reply = await client.callTool("echo", { text: "from node ✓" });
if (reply.output !== "from node ✓") fail("call echo", show(reply));
console.log("OK call echo");

const notFound = await expectError("unknown tool", "nope", "{}", "NOT_FOUND", "TOOL_NOT_FOUND", "Tool 'nope' not found");
await expectError(
  "invalid arguments",
  "echo",
  "[]",
  "INVALID_ARGUMENT",
  "TOOL_INVALID_ARGUMENT",
  "Tool execution failed: Invalid argument: arguments must be a JSON object, got an array",
);

// The error the SDK typed came from the grpc-status-details-bin trailer (a google.rpc.Status
// with an ErrorInfo detail); its code and message must be the grpc-status and grpc-message
// trailers' too.
{
  const check = "status trailer";
  const wire = notFound.cause;
  const trailers = wire?.metadata;
  if (!trailers?.get("grpc-status-details-bin")) fail(check, "no grpc-status-details-bin trailer");
  if (!wire.details.some((d) => d.type === "google.rpc.ErrorInfo")) fail(check, `details ${show(wire.details.map((d) => d.type))}, want a google.rpc.ErrorInfo`);
  const code = Number(trailers.get("grpc-status"));
  const message = decodeURIComponent(trailers.get("grpc-message") ?? "");
  if (code !== notFound.code || message !== notFound.message) {
    fail(check, `grpc-status ${code} grpc-message ${show(message)}, the google.rpc.Status says ${notFound.code} ${show(notFound.message)}`);
  }
  console.log("OK status trailer: google.rpc.Status agrees with grpc-status and grpc-message");
}

// A batch: one result, and a per-call google.rpc.Status the SDK types as the call's error.
{
  const check = "batch";
  const batch = await client.callTools([
    { id: "ts-1", name: "echo", input: { text: "one" } },
    { id: "ts-2", name: "nope", input: {} },
  ]);
  const [ok, failed] = batch.completed ?? fail(check, `not completed: ${show(batch)}`);
  if (ok?.callId !== "ts-1" || ok.output !== "one" || ok.isError || statusError(ok.error)) fail(check, `first ${show(ok)}`);
  const error = statusError(failed?.error);
  if (failed?.callId !== "ts-2" || !failed.isError || !(error instanceof ToolNotFound) || error.codeName !== "NOT_FOUND") {
    fail(check, `second ${show(failed)}: ${failure(error)}`);
  }
  console.log("OK batch: a result and a per-call google.rpc.Status");
}

const started = Date.now();
const late = await rejection(client.callTool("sleep", { seconds: 30 }, { timeoutMs: 300 }));
const elapsed = Date.now() - started;
if (!(late instanceof LlmworkerError) || late.codeName !== "DEADLINE_EXCEEDED" || late.reason !== "" || elapsed > 5000) {
  fail("deadline", `${late ? failure(late) : "the call succeeded"} after ${elapsed} ms`);
}
console.log(`OK deadline honoured (DEADLINE_EXCEEDED after ${elapsed} ms)`);
client.close();
