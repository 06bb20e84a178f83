// Checks number literals JSON does not have in a call's input_json from Node.js against a
// server with the demo tools: node numbers.mjs HOST:PORT
// countdown with NaN, Infinity, -Infinity, 1e400 or -1e400 as its delay is refused
// INVALID_ARGUMENT / TOOL_INVALID_ARGUMENT naming $.delay by CallTool and CallToolStream, and
// inside a CallTools batch only that call (its echo completes); then the server still serves.
// Prints "OK numbers <check>" per check; a mismatch prints "FAIL numbers <check>: <why>" and
// exits 1.
import grpc from "@grpc/grpc-js";
import { detailsErrorInfo, toolService, trailerDetails } from "./contract.mjs";

const [target] = process.argv.slice(2);
if (!target) {
  console.error("usage: node numbers.mjs HOST:PORT");
  process.exit(2);
}
// oneofs: true names the set member of CallToolsResponse.outcome.
const ToolService = toolService({ oneofs: true });

function fail(check, why) {
  console.log(`FAIL numbers ${check}: ${why}`);
  process.exit(1);
}

const show = JSON.stringify;
const failure = (error) => `${grpc.status[error.code]} ${show(error.details)}`;

// What the server says of a literal JSON does not have: NaN and the infinities, and a number
// a 64-bit float reads as infinity. JSON.stringify cannot write these, so the input is text.
const NOT_FINITE = "is not JSON (JSON numbers are finite)";
const OUT_OF_RANGE = "is out of the range of a 64-bit float";
const NOT_JSON = [
  ["NaN", NOT_FINITE],
  ["Infinity", NOT_FINITE],
  ["-Infinity", NOT_FINITE],
  ["1e400", OUT_OF_RANGE],
  ["-1e400", OUT_OF_RANGE],
];
// The tool error of a TOOL_INVALID_ARGUMENT in a CallResult's output starts INVALID_ARGUMENT;
// CallTool's status message has TOOL_FAILED before it.
const INVALID_ARGUMENT = "Invalid argument: ";
const TOOL_FAILED = "Tool execution failed: ";

const client = new ToolService(target, grpc.credentials.createInsecure());
const deadline = () => ({ deadline: Date.now() + 20000 });
const call = (method, request) =>
  new Promise((resolve, reject) =>
    client[method](request, deadline(), (error, reply) => (error ? reject(error) : resolve(reply))),
  );

// A countdown of one step whose delay is literal, as the JSON text reads it.
const countdownWith = (literal, callId = "") => ({
  call_id: callId,
  name: "countdown",
  input_json: `{"n": 1, "delay": ${literal}}`,
});

// The tool error naming the field, e.g. "$.delay: NaN is not JSON (JSON numbers are finite)".
const refusal = (literal, says) => `$.delay: ${literal} ${says}`;

// Why a google.rpc.Status ({code, message, details}) is not INVALID_ARGUMENT /
// TOOL_INVALID_ARGUMENT with a message and an ErrorInfo tool_error naming $.delay and saying
// what is wrong with literal, or null when it is.
function notRefused(status, literal, says) {
  if (status.code !== grpc.status.INVALID_ARGUMENT) {
    return `${grpc.status[status.code]} ${show(status.message)}, want INVALID_ARGUMENT`;
  }
  const info = detailsErrorInfo(status.details);
  if (info?.domain !== "llmworker" || info.reason !== "TOOL_INVALID_ARGUMENT") {
    return `ErrorInfo ${show(info)}, want llmworker / TOOL_INVALID_ARGUMENT`;
  }
  const want = refusal(literal, says);
  if (!status.message.startsWith(TOOL_FAILED + INVALID_ARGUMENT + want)) {
    return `message ${show(status.message)}, want it to start ${show(TOOL_FAILED + INVALID_ARGUMENT + want)}`;
  }
  const metadata = info.metadata ?? {};
  if (!(metadata.tool_error ?? "").startsWith(want) || metadata.tool !== "countdown") {
    return `ErrorInfo metadata ${show(metadata)}, want tool countdown and a tool_error starting ${show(want)}`;
  }
  return null;
}

// The google.rpc.Status of a failed RPC.
const statusOf = (error) => ({ code: error.code, message: error.details, details: trailerDetails(error) });

// 1. CallTool: each literal as countdown's delay is refused before the tool runs.
for (const [literal, says] of NOT_JSON) {
  let error = null;
  try {
    await call("CallTool", countdownWith(literal));
  } catch (caught) {
    error = caught;
  }
  if (!error) fail(literal, "CallTool succeeded, want INVALID_ARGUMENT / TOOL_INVALID_ARGUMENT");
  const why = notRefused(statusOf(error), literal, says);
  if (why) fail(literal, why);
  console.log(`OK numbers ${literal} refused naming the field`);
}

// 2. CallToolStream: the stream ends refused, with no event.
{
  const check = "stream";
  const stream = client.CallToolStream(countdownWith("NaN"), deadline());
  const events = [];
  // grpc-js emits a failure's "error" before "end", so the first of the two says how it ended.
  const error = await new Promise((resolve) => {
    stream.on("data", (event) => events.push(event));
    stream.on("error", (caught) => resolve(caught));
    stream.on("end", () => resolve(null));
  });
  if (events.length) fail(check, `events ${show(events.map((e) => e.event))} before the end, want none`);
  if (!error) fail(check, "the stream ended OK, want INVALID_ARGUMENT / TOOL_INVALID_ARGUMENT");
  const why = notRefused(statusOf(error), "NaN", NOT_FINITE);
  if (why) fail(check, why);
  console.log("OK numbers stream refused");
}

// 3. CallTools: the batch completes, echo's result fine, countdown's an error naming the field.
{
  const check = "batch";
  const calls = [{ call_id: "echo", name: "echo", input_json: show({ text: "ok" }) }, countdownWith("NaN", "nan")];
  let reply;
  try {
    reply = await call("CallTools", { calls });
  } catch (error) {
    fail(check, `CallTools failed: ${failure(error)}`);
  }
  const results = reply.outcome === "completed" ? reply.completed.results : [];
  const ids = results.map((r) => r.call_id);
  if (show(ids) !== show(["echo", "nan"])) fail(check, `outcome ${show(reply)}, want completed with results echo, nan`);
  const [echo, refused] = results;
  if (echo.is_error || echo.skipped || echo.output !== "ok") fail(check, `result echo: ${show(echo)}, want output "ok"`);
  if (!refused.is_error || !refused.error) fail(check, `result nan: ${show(refused)}, want is_error with an error`);
  const why = notRefused(refused.error, "NaN", NOT_FINITE);
  if (why) fail(check, `result nan: ${why}`);
  const want = INVALID_ARGUMENT + refusal("NaN", NOT_FINITE);
  if (!refused.output.startsWith(want)) fail(check, `result nan: output ${show(refused.output)}, want it to start ${show(want)}`);
  console.log("OK numbers batch refuses only that call");
}

// 4. Infinity deep in a pydantic model's field (validate_order's unit_price, before: INTERNAL).
{
  const check = "nested";
  const order = '{"order": {"customer": "c", "ship_to": {"street": "s", "city": "c", ' +
    '"postcode": "1234"}, "lines": [{"sku": "a", "quantity": 1, "unit_price": Infinity}]}}';
  let error = null;
  try {
    await call("CallTool", { name: "validate_order", input_json: order });
  } catch (caught) {
    error = caught;
  }
  if (!error) fail(check, "CallTool succeeded, want INVALID_ARGUMENT / TOOL_INVALID_ARGUMENT");
  const status = statusOf(error);
  const info = detailsErrorInfo(status.details);
  const want = "$.order.lines[0].unit_price: Infinity " + NOT_FINITE;
  if (status.code !== grpc.status.INVALID_ARGUMENT || info?.reason !== "TOOL_INVALID_ARGUMENT" ||
      !(info.metadata?.tool_error ?? "").startsWith(want)) {
    fail(check, `${grpc.status[status.code]} ${show(info)} ${show(status.message)}, want TOOL_INVALID_ARGUMENT ${show(want)}`);
  }
  console.log("OK numbers a nested field refused naming its path");
}

// 5. A countdown with a finite delay after the refusals.
{
  const check = "serving";
  let reply;
  try {
    reply = await call("CallTool", countdownWith("0"));
  } catch (error) {
    fail(check, `countdown with delay 0: ${failure(error)}`);
  }
  if (reply.output !== "1\n") fail(check, `countdown with delay 0: output ${show(reply.output)}, want "1\\n"`);
  console.log("OK numbers server still serves");
}
client.close();
