// Checks number literals JSON does not have in a call's input_json from Node.js through
// @llmworker/sdk (rawJson sends them as written) against a server with the demo tools:
// node numbers.mjs HOST:PORT
// countdown with NaN, Infinity, -Infinity, 1e400 or -1e400 as its delay is refused
// INVALID_ARGUMENT / TOOL_INVALID_ARGUMENT naming $.delay by CallTool and CallToolStream, and
// inside a CallTools batch only that call (its echo completes); then the server still serves.
// Prints "OK numbers <check>" per check; a mismatch prints "FAIL numbers <check>: <why>" and
// exits 1.
import { createClient, rawJson, statusError } from "@llmworker/sdk";
import { failer, failure, notTyped, rejection, show } from "./contract.mjs";

const [target] = process.argv.slice(2);
if (!target) {
  console.error("usage: node numbers.mjs HOST:PORT");
  process.exit(2);
}
const fail = failer("numbers ");

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

const client = createClient(target, { timeoutMs: 20000 });

// A countdown of one step whose delay is literal, as the JSON text reads it: rawJson, since
// JSON.stringify cannot write these.
const countdownWith = (literal) => rawJson(`{"n": 1, "delay": ${literal}}`);

// The tool error naming the field, e.g. "$.delay: NaN is not JSON (JSON numbers are finite)".
const refusal = (literal, says) => `$.delay: ${literal} ${says}`;

// Why a typed error is not INVALID_ARGUMENT / TOOL_INVALID_ARGUMENT with a message and an
// ErrorInfo tool_error naming $.delay and saying what is wrong with literal, or null when it is.
function notRefused(error, literal, says) {
  const why = notTyped(error, "INVALID_ARGUMENT", "TOOL_INVALID_ARGUMENT");
  if (why) return why;
  const want = refusal(literal, says);
  if (!error.message.startsWith(TOOL_FAILED + INVALID_ARGUMENT + want)) {
    return `message ${show(error.message)}, want it to start ${show(TOOL_FAILED + INVALID_ARGUMENT + want)}`;
  }
  const metadata = error.metadata;
  if (!(metadata.tool_error ?? "").startsWith(want) || metadata.tool !== "countdown") {
    return `ErrorInfo metadata ${show(metadata)}, want tool countdown and a tool_error starting ${show(want)}`;
  }
  return null;
}

// 1. callTool: each literal as countdown's delay is refused before the tool runs.
for (const [literal, says] of NOT_JSON) {
  const error = await rejection(client.callTool("countdown", countdownWith(literal)));
  if (!error) fail(literal, "callTool succeeded, want INVALID_ARGUMENT / TOOL_INVALID_ARGUMENT");
  const why = notRefused(error, literal, says);
  if (why) fail(literal, why);
  console.log(`OK numbers ${literal} refused naming the field`);
}

// 2. callToolStream: the stream ends refused, with no event.
{
  const check = "stream";
  const events = [];
  const error = await rejection(
    (async () => {
      for await (const event of client.callToolStream("countdown", countdownWith("NaN"))) events.push(event);
    })(),
  );
  if (events.length) fail(check, `events ${show(events.map((e) => e.kind))} before the end, want none`);
  if (!error) fail(check, "the stream ended OK, want INVALID_ARGUMENT / TOOL_INVALID_ARGUMENT");
  const why = notRefused(error, "NaN", NOT_FINITE);
  if (why) fail(check, why);
  console.log("OK numbers stream refused");
}

// 3. callTools: the batch completes, echo's result fine, countdown's an error naming the field.
{
  const check = "batch";
  const calls = [
    { id: "echo", name: "echo", input: { text: "ok" } },
    { id: "nan", name: "countdown", input: countdownWith("NaN") },
  ];
  let outcome;
  try {
    outcome = await client.callTools(calls);
  } catch (error) {
    fail(check, `callTools failed: ${failure(error)}`);
  }
  const results = outcome.completed ?? [];
  const ids = results.map((r) => r.callId);
  if (show(ids) !== show(["echo", "nan"])) fail(check, `outcome ${show(outcome)}, want completed with results echo, nan`);
  const [echo, refused] = results;
  if (echo.isError || echo.skipped || echo.output !== "ok") fail(check, `result echo: ${show(echo)}, want output "ok"`);
  if (!refused.isError || !refused.error) fail(check, `result nan: ${show(refused)}, want isError with an error`);
  const why = notRefused(statusError(refused.error), "NaN", NOT_FINITE);
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
  const error = await rejection(client.callTool("validate_order", rawJson(order)));
  if (!error) fail(check, "callTool succeeded, want INVALID_ARGUMENT / TOOL_INVALID_ARGUMENT");
  const want = "$.order.lines[0].unit_price: Infinity " + NOT_FINITE;
  const why = notTyped(error, "INVALID_ARGUMENT", "TOOL_INVALID_ARGUMENT");
  if (why || !(error.metadata.tool_error ?? "").startsWith(want)) {
    fail(check, `${failure(error)} ${show(error.metadata)}, want TOOL_INVALID_ARGUMENT ${show(want)}`);
  }
  console.log("OK numbers a nested field refused naming its path");
}

// 5. A countdown with a finite delay after the refusals.
{
  const check = "serving";
  let reply;
  try {
    reply = await client.callTool("countdown", countdownWith("0"));
  } catch (error) {
    fail(check, `countdown with delay 0: ${failure(error)}`);
  }
  if (reply.output !== "1\n") fail(check, `countdown with delay 0: output ${show(reply.output)}, want "1\\n"`);
  console.log("OK numbers server still serves");
}
client.close();
