// Checks CallToolStream from Node.js through @llmworker/sdk (callToolStream) against a
// `python -m llmworker_server --demo` server:
// node stream.mjs HOST:PORT
// The demo countdown's progress and chunks in order then its result, a tool that does not
// stream (its result only), CallTool's errors, and aborting the call's signal cancelling the tool.
// Prints "OK stream <check>" per check; a mismatch prints "FAIL stream <check>: <why>" and
// exits 1.
import { LlmworkerError, createClient } from "@llmworker/sdk";
import { failer, failure, notTyped, rejection, show } from "./contract.mjs";

const [target] = process.argv.slice(2);
if (!target) {
  console.error("usage: node stream.mjs HOST:PORT");
  process.exit(2);
}
const fail = failer("stream ");
const kinds = (events) => events.map((e) => e.kind);
// How long the cancellation check waits for the countdown's note; a countdown that was not
// cancelled runs for 100 s and more before it could end.
const CANCEL_NOTE_WAIT_MS = 10000;
const client = createClient(target, { timeoutMs: 20000 });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A started stream: its abort, the events read so far, and `ended`, which resolves to the
// typed error that ended it, or null when it ended with OK.
function open(name, input, options = {}) {
  const abort = new AbortController();
  const opened = { abort, events: [], wake: () => {} };
  opened.ended = (async () => {
    try {
      for await (const event of client.callToolStream(name, input, { ...options, signal: abort.signal })) {
        opened.events.push(event);
        opened.wake();
      }
      return null;
    } catch (error) {
      return error;
    } finally {
      opened.wake();
    }
  })();
  return opened;
}

// A whole stream: {events, error}.
async function readAll(name, input, options) {
  const opened = open(name, input, options);
  const error = await opened.ended;
  return { events: opened.events, error };
}

// Resolves once the stream has sent n events (true), or ended before (false).
async function atLeast(opened, n) {
  let ended = false;
  opened.ended.then(() => (ended = true));
  while (opened.events.length < n && !ended) await new Promise((resolve) => (opened.wake = resolve));
  return opened.events.length >= n;
}

// 1. countdown n=3: chunks "3\n", "2\n", "1\n" in order (possibly merged), progress strictly
// increasing with total 3 and the message of its step, never ahead of the chunks of the steps
// before it, the last progress 3, and the result, once and last.
{
  const check = "countdown";
  const n = 3;
  const want = "3\n2\n1\n";
  const { events, error } = await readAll("countdown", { n, delay: 0.06 }, { callId: "node-countdown" });
  if (error) fail(check, `after ${events.length} events ${show(kinds(events))}: ${failure(error)}`);
  let text = "";
  let last = null;
  let results = 0;
  events.forEach((event, i) => {
    if (event.kind === "chunk") {
      text += event.text;
      if (!want.startsWith(text)) fail(check, `event ${i}: chunks so far ${show(text)} are not a prefix of ${show(want)}`);
    } else if (event.kind === "progress") {
      const p = event.progress;
      // total is a proto3 optional: undefined when the tool gave none
      if (p.total !== n) fail(check, `event ${i}: progress ${show(p)} without total ${n}`);
      if (last && !(p.progress > last.progress)) fail(check, `event ${i}: progress ${p.progress} after ${last.progress}, want increasing`);
      if (!Number.isInteger(p.progress) || p.progress < 1 || p.progress > n) fail(check, `event ${i}: progress ${p.progress}, want a step 1..${n}`);
      const message = `${n - p.progress + 1} to go`;
      if (p.message !== message) fail(check, `event ${i}: progress ${p.progress} message ${show(p.message)}, want ${show(message)}`);
      // Step k is reported after the chunks of steps 1..k-1 were yielded.
      const lines = text.split("\n").length - 1;
      if (lines < p.progress - 1) fail(check, `event ${i}: progress ${p.progress} before the chunks of the steps before it (${lines} lines so far)`);
      last = p;
    } else if (event.kind === "result") {
      results += 1;
      if (i !== events.length - 1) fail(check, `event ${i}: result before the events ${show(kinds(events.slice(i + 1)))}`);
      if (event.result.output !== want) fail(check, `result output ${show(event.result.output)}, want ${show(want)}`);
    } else {
      fail(check, `event ${i}: an event of no kind: ${show(event)}`);
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
  const { events, error } = await readAll("echo", { text: "x" });
  if (error) fail(check, `after ${events.length} events ${show(kinds(events))}: ${failure(error)}`);
  if (events.length !== 1 || events[0].kind !== "result" || events[0].result.output !== "x") {
    fail(check, `events ${show(events)}, want one result with output "x"`);
  }
  console.log("OK stream a tool that does not stream sends its result only");
}

// 3. An unknown tool and invalid arguments end the stream, before any event, with the code,
// reason, ErrorInfo metadata and message callTool fails with.
{
  const check = "errors";
  const cases = [
    ["unknown tool", "no_such_tool", {}, "NOT_FOUND", "TOOL_NOT_FOUND"],
    ["countdown n=0", "countdown", { n: 0 }, "INVALID_ARGUMENT", "TOOL_INVALID_ARGUMENT"],
  ];
  for (const [what, name, input, codeName, reason] of cases) {
    const { events, error } = await readAll(name, input);
    if (events.length) fail(check, `${what}: events ${show(kinds(events))} before the failure, want none`);
    if (!error) fail(check, `${what}: the stream succeeded, want ${codeName} / ${reason}`);
    const why = notTyped(error, codeName, reason);
    if (why) fail(check, `${what}: ${why}`);
    const unary = await rejection(client.callTool(name, input));
    if (!unary) fail(check, `${what}: callTool succeeded`);
    if (error.code !== unary.code || error.message !== unary.message) fail(check, `${what}: stream ${failure(error)}, callTool ${failure(unary)}`);
    const comparable = (e) => show({ reason: e.reason, metadata: Object.entries(e.metadata).sort() });
    if (comparable(error) !== comparable(unary)) fail(check, `${what}: stream ErrorInfo ${comparable(error)}, callTool ErrorInfo ${comparable(unary)}`);
  }
  console.log("OK stream errors: CallTool's status and ErrorInfo");
}

// 4. Aborting the call's signal mid-stream cancels the tool: the countdown writes its note.
{
  const check = "cancel";
  const callId = `node-cancel-${process.pid}`;
  const note = { key: `countdown.${callId}` };
  const opened = open("countdown", { n: 10000, delay: 0.01 }, { callId });
  if (!(await atLeast(opened, 2))) {
    const error = await opened.ended;
    fail(check, `the stream ended after ${opened.events.length} events: ${error ? failure(error) : "OK"}`);
  }
  const running = await rejection(client.callTool("kv_get", note));
  if (!running || notTyped(running, "UNKNOWN", "TOOL_EXECUTION_FAILED")) {
    fail(check, `kv_get countdown.${callId} while the countdown runs: ${running ? failure(running) : "succeeded"}, want UNKNOWN / TOOL_EXECUTION_FAILED`);
  }
  opened.abort.abort();
  const ended = await opened.ended;
  if (!(ended instanceof LlmworkerError) || ended.codeName !== "CANCELLED") fail(check, `the cancelled stream ended with ${ended ? failure(ended) : "OK"}, want CANCELLED`);
  const until = Date.now() + CANCEL_NOTE_WAIT_MS;
  for (;;) {
    try {
      const reply = await client.callTool("kv_get", note);
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
