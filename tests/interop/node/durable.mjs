// Checks paused batches in a store two server processes share from Node.js: node durable.mjs
// HOST:PORT_A HOST:PORT_B, two servers with the demo tools, the same --state and no
// --auth-tokens. A batch of one kv_delete paused on A is listed by B's ListPausedBatches
// (paged one batch at a time) with its pending call, and resumed on B with its resume token;
// A then refuses the used token (NOT_FOUND, RESUME_TOKEN_UNKNOWN). Another batch paused on A
// is denied on B by its batch_id (CALL_DENIED), and neither is listed afterwards. Prints
// "OK durable <check>" per check; a mismatch prints "FAIL durable <check>: <why>" and exits
// 1; bad arguments exit 2.
import grpc from "@grpc/grpc-js";
import { detailsErrorInfo, toolService, trailerErrorInfo } from "./contract.mjs";

const [targetA, targetB, ...extra] = process.argv.slice(2);
if (!targetA || !targetB || extra.length) {
  console.error("usage: node durable.mjs HOST:PORT_A HOST:PORT_B");
  process.exit(2);
}

function fail(check, why) {
  console.log(`FAIL durable ${check}: ${why}`);
  process.exit(1);
}

const show = JSON.stringify;
const failure = (error) => `${grpc.status[error.code]} ${show(error.details)}`;
// oneofs: true names the set member of CallToolsResponse.outcome; longs: Number makes
// Timestamp.seconds a plain number.
const ToolService = toolService({ oneofs: true, longs: Number });
const servers = {
  A: new ToolService(targetA, grpc.credentials.createInsecure()),
  B: new ToolService(targetB, grpc.credentials.createInsecure()),
};
const deadline = () => ({ deadline: Date.now() + 20000 });
const call = (server, method, request) =>
  new Promise((resolve, reject) =>
    servers[server][method](request, deadline(), (error, reply) => (error ? reject(error) : resolve(reply))),
  );

// The reply of an RPC that must succeed.
async function expectReply(check, server, method, request) {
  try {
    return await call(server, method, request);
  } catch (error) {
    return fail(check, `${method} on ${server}: ${failure(error)}`);
  }
}

// Unique to this run: Go and Node runs may share the servers.
const key = `durable-node-${process.pid}-${Date.now()}`;
const DENIAL = "not by id";
// Bounds the paging, so a next_page_token that never empties fails instead of looping.
const MAX_PAGES = 10000;

// A Timestamp ({seconds, nanos}) in nanoseconds, as a BigInt; null when unset.
const nanos = (time) => (time ? BigInt(time.seconds) * 1_000_000_000n + BigInt(time.nanos) : null);

// Why pending is not the kv_delete of k only, awaiting approval, or null when it is.
function notPendingDelete(pending, k) {
  const got = pending.map((p) => [p.call_id, p.name, p.input_json, p.awaiting_approval]);
  const want = [["d", "kv_delete", show({ key: k }), true]];
  return show(got) === show(want) ? null : `pending calls ${show(got)}, want ${show(want)}`;
}

// Sends A a batch of one kv_delete of k (which requires approval): paused at it, with a batch
// id, a resume token and an expiry, the call pending with its input. Returns the PausedBatch.
async function pauseDelete(check, k) {
  const calls = [{ call_id: "d", name: "kv_delete", input_json: show({ key: k }) }];
  const reply = await expectReply(check, "A", "CallTools", { calls });
  const paused = reply.paused;
  if (reply.outcome !== "paused" || !paused.resume_token || !paused.batch_id || paused.paused_call_id !== "d") {
    fail(check, `CallTools on A: ${show(reply)}, want paused at d with a resume token and a batch id`);
  }
  if (!paused.expire_time) fail(check, `paused batch ${paused.batch_id} without an expire_time`);
  const why = notPendingDelete(paused.pending_calls, k);
  if (why) fail(check, `paused batch ${paused.batch_id}: ${why}`);
  return paused;
}

// Every batch server's ListPausedBatches lists, one a page until next_page_token is empty,
// each once.
async function listAll(check, server) {
  const batches = [];
  const seen = new Set();
  let page_token = "";
  for (let pages = 0; pages < MAX_PAGES; pages++) {
    const page = await expectReply(check, server, "ListPausedBatches", { page_size: 1, page_token });
    if (page.batches.length > 1) fail(check, `ListPausedBatches on ${server} with page_size 1: ${page.batches.length} batches`);
    for (const batch of page.batches) {
      if (seen.has(batch.batch_id)) fail(check, `ListPausedBatches on ${server}: batch ${batch.batch_id} on two pages`);
      seen.add(batch.batch_id);
      batches.push(batch);
    }
    if (!page.next_page_token) return batches;
    page_token = page.next_page_token;
  }
  return fail(check, `ListPausedBatches on ${server}: a next_page_token after ${MAX_PAGES} pages`);
}

// 1. A pauses a batch of one kv_delete.
const paused = await pauseDelete("pause", key);
const resume = { resume_token: paused.resume_token, decisions: [{ call_id: "d", approve: {} }] };
console.log("OK durable paused on A");

// 2. B lists it, with its pending kv_delete, its reason, no caller (no --auth-tokens) and the
// expiry A gave, after its creation.
{
  const check = "list";
  const batches = await listAll(check, "B");
  const listed = batches.find((b) => b.batch_id === paused.batch_id);
  if (!listed) fail(check, `batch ${paused.batch_id} not among the ${batches.length} listed: ${show(batches.map((b) => b.batch_id))}`);
  const why = notPendingDelete(listed.pending_calls, key);
  if (why) fail(check, `listed batch ${listed.batch_id}: ${why}`);
  if (listed.reason !== paused.reason || listed.caller !== "") {
    fail(check, `listed batch ${listed.batch_id}: reason ${show(listed.reason)} caller ${show(listed.caller)}, want reason ${show(paused.reason)} (as paused) and no caller`);
  }
  const [created, expires] = [nanos(listed.create_time), nanos(listed.expire_time)];
  if (created === null || expires === null) {
    fail(check, `listed batch ${listed.batch_id}: create_time ${show(listed.create_time)} expire_time ${show(listed.expire_time)}, want both`);
  }
  if (created > expires) fail(check, `listed batch ${listed.batch_id}: create_time ${show(listed.create_time)} after expire_time ${show(listed.expire_time)}`);
  if (expires !== nanos(paused.expire_time)) {
    fail(check, `listed batch ${listed.batch_id}: expire_time ${show(listed.expire_time)}, the paused batch's ${show(paused.expire_time)}`);
  }
  console.log("OK durable listed on B");
}

// 3. B takes A's resume token, approving the kv_delete, and runs it on its own store (the
// demo key-value store is per process): B stores the key first, so "deleted".
{
  const check = "resume";
  const set = await expectReply(check, "B", "CallTool", { name: "kv_set", input_json: show({ key, value: "v" }) });
  if (set.output !== "ok") fail(check, `kv_set ${key} on B: output ${show(set.output)}, want "ok"`);
  const reply = await expectReply(check, "B", "ResumeBatch", resume);
  if (reply.outcome !== "completed") fail(check, `outcome ${reply.outcome}, want completed: ${show(reply)}`);
  const got = reply.completed.results.map((r) => [r.call_id, r.is_error, r.skipped, r.output]);
  const want = [["d", false, false, "deleted"]];
  if (show(got) !== show(want)) {
    const info = reply.completed.results.map((r) => detailsErrorInfo(r.error?.details));
    fail(check, `results ${show(got)} (ErrorInfo ${show(info)}), want ${show(want)}`);
  }
  console.log("OK durable resumed on B");
}

// 4. The token B used is used up on A too.
{
  const check = "second resume";
  let error = null;
  try {
    await call("A", "ResumeBatch", resume);
  } catch (caught) {
    error = caught;
  }
  if (!error) fail(check, "ResumeBatch on A with the used token succeeded, want NOT_FOUND / RESUME_TOKEN_UNKNOWN");
  if (error.code !== grpc.status.NOT_FOUND) fail(check, `ResumeBatch on A: ${failure(error)}, want NOT_FOUND`);
  const info = trailerErrorInfo(error);
  if (info?.domain !== "llmworker" || info.reason !== "RESUME_TOKEN_UNKNOWN") {
    fail(check, `ResumeBatch on A: ErrorInfo ${show(info)}, want llmworker / RESUME_TOKEN_UNKNOWN`);
  }
  console.log("OK durable second resume refused");
}

// 5. A pauses another batch; B denies its kv_delete by the batch's id, not its token. Then
// neither server lists it, nor the batch resumed before.
{
  const check = "batch id";
  const other = await pauseDelete(check, `${key}-denied`);
  const request = { batch_id: other.batch_id, decisions: [{ call_id: "d", deny: { reason: DENIAL } }] };
  const reply = await expectReply(check, "B", "ResumeBatch", request);
  if (reply.outcome !== "completed") fail(check, `outcome ${reply.outcome}, want completed: ${show(reply)}`);
  const results = reply.completed.results;
  if (show(results.map((r) => r.call_id)) !== show(["d"])) fail(check, `results ${show(results)}, want d only`);
  const [denied] = results;
  if (!denied.is_error || denied.error?.code !== grpc.status.PERMISSION_DENIED) {
    fail(check, `result d: is_error ${denied.is_error} error ${show(denied.error)}, want PERMISSION_DENIED`);
  }
  const info = detailsErrorInfo(denied.error.details);
  if (info?.domain !== "llmworker" || info.reason !== "CALL_DENIED") fail(check, `result d: ErrorInfo ${show(info)}, want llmworker / CALL_DENIED`);
  if (!denied.output.includes(DENIAL)) fail(check, `result d: output ${show(denied.output)} does not give the denial reason ${show(DENIAL)}`);
  const decided = [paused.batch_id, other.batch_id];
  for (const server of ["B", "A"]) {
    const still = (await listAll(check, server)).map((b) => b.batch_id).filter((id) => decided.includes(id));
    if (still.length) fail(check, `${server} still lists the decided batches ${show(still)}`);
  }
  console.log("OK durable decided by batch id");
}
for (const client of Object.values(servers)) client.close();
