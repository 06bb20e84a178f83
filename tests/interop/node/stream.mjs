// Checks CallToolStream from Node.js against a `python -m llmworker_server --demo` server:
// node stream.mjs HOST:PORT
// The demo countdown's progress and chunks in order then its result, a tool that does not
// stream (its result only), CallTool's errors, and call.cancel() cancelling the tool.
// Prints "OK stream <check>" per check; a mismatch prints "FAIL stream <check>: <why>" and
// exits 1.
import grpc from "@grpc/grpc-js";
import { trailerErrorInfo as errorInfo, toolService } from "./contract.mjs";

const [target] = process.argv.slice(2);
if (!target) {
  console.error("usage: node stream.mjs HOST:PORT");
  process.exit(2);
}
// oneofs: true names the set member of CallToolEvent.event, and sets the synthetic oneof
// `_total` of ToolProgress's proto3 `optional` total to "total" when the total is present.
const ToolService = toolService({ oneofs: true });

function fail(check, why) {
  console.log(`FAIL stream ${check}: ${why}`);
  process.exit(1);
}

const show = JSON.stringify;
const kinds = (events) => events.map((e) => e.event);
// How long the cancellation check waits for the countdown's note; a countdown that was not
// cancelled runs for 100 s and more before it could end.
const CANCEL_NOTE_WAIT_MS = 10000;

const client = new ToolService(target, grpc.credentials.createInsecure());
const deadline = () => ({ deadline: Date.now() + 20000 });
const call = (method, request) =>
  new Promise((resolve, reject) =>
    client[method](request, deadline(), (error, reply) => (error ? reject(error) : resolve(reply))),
  );

// A started stream: its call, the events read so far, and `ended`, which resolves to the
// error that ended it, or null when it ended with OK. grpc-js emits a failure's "error"
// before "end", so the first of the two says how the stream ended.
function open(request) {
  const stream = client.CallToolStream(request, deadline());
  const events = [];
  const ended = new Promise((resolve) => {
    stream.on("data", (event) => events.push(event));
    stream.on("error", (error) => resolve(error));
    stream.on("end", () => resolve(null));
  });
  return { stream, events, ended };
}

// A whole stream: {events, error}.
async function readAll(request) {
  const opened = open(request);
  const error = await opened.ended;
  return { events: opened.events, error };
}

// Resolves once the stream has sent n events (true), or ended before (false).
function atLeast(opened, n) {
  return new Promise((resolve) => {
    const check = () => opened.events.length >= n && resolve(true);
    opened.stream.on("data", check);
    check();
    opened.ended.then(() => resolve(opened.events.length >= n));
  });
}

const failure = (error) => `${grpc.status[error.code]} ${show(error.details)}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// 1. countdown n=3: chunks "3\n", "2\n", "1\n" in order (possibly merged), progress strictly
// increasing with total 3 and the message of its step, never ahead of the chunks of the steps
// before it, the last progress 3, and the result, once and last.
{
  const check = "countdown";
  const n = 3;
  const want = "3\n2\n1\n";
  const { events, error } = await readAll({ name: "countdown", input_json: show({ n, delay: 0.06 }), call_id: "node-countdown" });
  if (error) fail(check, `after ${events.length} events ${show(kinds(events))}: ${failure(error)}`);
  let text = "";
  let last = null;
  let results = 0;
  events.forEach((event, i) => {
    if (event.event === "output_chunk") {
      text += event.output_chunk.text;
      if (!want.startsWith(text)) fail(check, `event ${i}: chunks so far ${show(text)} are not a prefix of ${show(want)}`);
    } else if (event.event === "progress") {
      const p = event.progress;
      if (p._total !== "total" || p.total !== n) fail(check, `event ${i}: progress ${show(p)} without total ${n}`);
      if (last && !(p.progress > last.progress)) fail(check, `event ${i}: progress ${p.progress} after ${last.progress}, want increasing`);
      if (!Number.isInteger(p.progress) || p.progress < 1 || p.progress > n) fail(check, `event ${i}: progress ${p.progress}, want a step 1..${n}`);
      const message = `${n - p.progress + 1} to go`;
      if (p.message !== message) fail(check, `event ${i}: progress ${p.progress} message ${show(p.message)}, want ${show(message)}`);
      // Step k is reported after the chunks of steps 1..k-1 were yielded.
      const lines = text.split("\n").length - 1;
      if (lines < p.progress - 1) fail(check, `event ${i}: progress ${p.progress} before the chunks of the steps before it (${lines} lines so far)`);
      last = p;
    } else if (event.event === "result") {
      results += 1;
      if (i !== events.length - 1) fail(check, `event ${i}: result before the events ${show(kinds(events.slice(i + 1)))}`);
      if (event.result.output !== want) fail(check, `result output ${show(event.result.output)}, want ${show(want)}`);
    } else {
      fail(check, `event ${i}: no event set: ${show(event)}`);
    }
  });
  if (results !== 1) fail(check, `${results} results in ${show(kinds(events))}, want one, last`);
  if (text !== want) fail(check, `chunks joined ${show(text)}, want ${show(want)} (events ${show(kinds(events))})`);
  if (!last) fail(check, `no progress event in ${show(kinds(events))}`);
  if (last.progress !== n) fail(check, `last progress ${last.progress}, want ${n} (the last report always arrives)`);
  console.log("OK stream countdown: progress and chunks in order, then the result");
}

// 2. A tool that does not stream: one event, the result.
{
  const check = "plain tool";
  const { events, error } = await readAll({ name: "echo", input_json: show({ text: "x" }) });
  if (error) fail(check, `after ${events.length} events ${show(kinds(events))}: ${failure(error)}`);
  if (events.length !== 1 || events[0].event !== "result" || events[0].result.output !== "x") {
    fail(check, `events ${show(events)}, want one result with output "x"`);
  }
  console.log("OK stream a tool that does not stream sends its result only");
}

// 3. An unknown tool and invalid arguments end the stream, before any event, with the code,
// ErrorInfo and message CallTool fails with.
{
  const check = "errors";
  const cases = [
    ["unknown tool", { name: "no_such_tool", input_json: "{}" }, grpc.status.NOT_FOUND, "TOOL_NOT_FOUND"],
    ["countdown n=0", { name: "countdown", input_json: show({ n: 0 }) }, grpc.status.INVALID_ARGUMENT, "TOOL_INVALID_ARGUMENT"],
  ];
  for (const [what, request, code, reason] of cases) {
    const { events, error } = await readAll(request);
    if (events.length) fail(check, `${what}: events ${show(kinds(events))} before the failure, want none`);
    if (!error) fail(check, `${what}: the stream succeeded, want ${grpc.status[code]} / ${reason}`);
    if (error.code !== code) fail(check, `${what}: ${failure(error)}, want ${grpc.status[code]}`);
    const info = errorInfo(error);
    if (info?.domain !== "llmworker" || info.reason !== reason) fail(check, `${what}: ErrorInfo ${show(info)}, want llmworker / ${reason}`);
    let unary = null;
    try {
      await call("CallTool", request);
    } catch (caught) {
      unary = caught;
    }
    if (!unary) fail(check, `${what}: CallTool succeeded`);
    if (error.code !== unary.code || error.details !== unary.details) fail(check, `${what}: stream ${failure(error)}, CallTool ${failure(unary)}`);
    const unaryInfo = errorInfo(unary);
    const comparable = (i) => show({ domain: i?.domain, reason: i?.reason, metadata: Object.entries(i?.metadata ?? {}).sort() });
    if (comparable(info) !== comparable(unaryInfo)) fail(check, `${what}: stream ErrorInfo ${comparable(info)}, CallTool ErrorInfo ${comparable(unaryInfo)}`);
  }
  console.log("OK stream errors: CallTool's status and ErrorInfo");
}

// 4. call.cancel() mid-stream cancels the tool: the countdown writes its note.
{
  const check = "cancel";
  const callId = `node-cancel-${process.pid}`;
  const note = { name: "kv_get", input_json: show({ key: `countdown.${callId}` }) };
  const opened = open({ name: "countdown", input_json: show({ n: 10000, delay: 0.01 }), call_id: callId });
  if (!(await atLeast(opened, 2))) {
    const error = await opened.ended;
    fail(check, `the stream ended after ${opened.events.length} events: ${error ? failure(error) : "OK"}`);
  }
  let running = null;
  try {
    await call("CallTool", note);
  } catch (caught) {
    running = caught;
  }
  if (running?.code !== grpc.status.UNKNOWN || errorInfo(running)?.reason !== "TOOL_EXECUTION_FAILED") {
    fail(check, `kv_get countdown.${callId} while the countdown runs: ${running ? failure(running) : "succeeded"}, want UNKNOWN / TOOL_EXECUTION_FAILED`);
  }
  opened.stream.cancel();
  const ended = await opened.ended;
  if (ended?.code !== grpc.status.CANCELLED) fail(check, `the cancelled stream ended with ${ended ? failure(ended) : "OK"}, want CANCELLED`);
  const until = Date.now() + CANCEL_NOTE_WAIT_MS;
  for (;;) {
    try {
      const reply = await call("CallTool", note);
      if (reply.output !== "cancelled") fail(check, `countdown.${callId} is ${show(reply.output)}, want "cancelled"`);
      break;
    } catch (error) {
      if (Date.now() > until) fail(check, `countdown.${callId} not set ${CANCEL_NOTE_WAIT_MS} ms after the cancel: ${failure(error)}`);
      await sleep(20);
    }
  }
  console.log("OK stream cancelling the stream cancels the tool");
}
client.close();
