// Checks paused batches in a store two server processes share from Node.js through
// @llmworker/sdk: node durable.mjs
// HOST:PORT_A HOST:PORT_B, two servers with the demo tools, the same --state and no
// --auth-tokens. A batch of one kv_delete paused on A is listed by B's ListPausedBatches
// (paged one batch at a time) with its pending call, and resumed on B with its resume token;
// A then refuses the used token (NOT_FOUND, RESUME_TOKEN_UNKNOWN). Another batch paused on A
// is denied on B by its batch id (decide: CALL_DENIED), and neither is listed afterwards. Prints
// "OK durable <check>" per check; a mismatch prints "FAIL durable <check>: <why>" and exits
// 1; bad arguments exit 2.
import { approve, createClient, deny, statusError } from "@llmworker/sdk";
import { failer, failure, notTyped, rejection, show } from "./contract.mjs";

const [targetA, targetB, ...extra] = process.argv.slice(2);
if (!targetA || !targetB || extra.length) {
  console.error("usage: node durable.mjs HOST:PORT_A HOST:PORT_B");
  process.exit(2);
}
const fail = failer("durable ");
const TIMEOUT_MS = 20000;
const servers = {
  A: createClient(targetA, { timeoutMs: TIMEOUT_MS }),
  B: createClient(targetB, { timeoutMs: TIMEOUT_MS }),
};

// What must succeed.
async function expectReply(check, what, promise) {
  try {
    return await promise;
  } catch (error) {
    return fail(check, `${what}: ${failure(error)}`);
  }
}

// Unique to this run: Go and Node runs may share the servers.
const key = `durable-node-${process.pid}-${Date.now()}`;
const DENIAL = "not by id";
// Bounds the paging, so a next_page_token that never empties fails instead of looping.
const MAX_PAGES = 10000;

// A Timestamp ({seconds: BigInt, nanos}) in nanoseconds, as a BigInt; null when unset.
const nanos = (time) => (time ? time.seconds * 1_000_000_000n + BigInt(time.nanos) : null);

// Why pending is not the kv_delete of k only, awaiting approval, or null when it is.
function notPendingDelete(pending, k) {
  const got = pending.map((p) => [p.callId, p.name, p.inputJson, p.awaitingApproval]);
  const want = [["d", "kv_delete", show({ key: k }), true]];
  return show(got) === show(want) ? null : `pending calls ${show(got)}, want ${show(want)}`;
}

// Sends A a batch of one kv_delete of k (which requires approval): paused at it, with a batch
// id, a resume token and an expiry, the call pending with its input. Returns the PausedBatch.
async function pauseDelete(check, k) {
  const outcome = await expectReply(check, "callTools on A", servers.A.callTools([{ id: "d", name: "kv_delete", input: { key: k } }]));
  const paused = outcome.paused;
  if (!paused?.resumeToken || !paused.batchId || paused.pausedCallId !== "d") {
    fail(check, `callTools on A: ${show(outcome)}, want paused at d with a resume token and a batch id`);
  }
  if (!paused.expireTime) fail(check, `paused batch ${paused.batchId} without an expireTime`);
  const why = notPendingDelete(paused.pendingCalls, k);
  if (why) fail(check, `paused batch ${paused.batchId}: ${why}`);
  return paused;
}

// Every batch a server's ListPausedBatches lists, one a page (the generated client's
// page_size 1) until next_page_token is empty, each once; and the SDK's pausedBatches must
// yield the same batches.
async function listAll(check, server) {
  const batches = [];
  const seen = new Set();
  let pageToken = "";
  for (let pages = 0; ; pages++) {
    if (pages === MAX_PAGES) fail(check, `ListPausedBatches on ${server}: a next_page_token after ${MAX_PAGES} pages`);
    const request = { pageSize: 1, pageToken };
    const page = await expectReply(check, `ListPausedBatches on ${server}`, servers[server].service.listPausedBatches(request, { timeoutMs: TIMEOUT_MS }));
    if (page.batches.length > 1) fail(check, `ListPausedBatches on ${server} with page_size 1: ${page.batches.length} batches`);
    for (const batch of page.batches) {
      if (seen.has(batch.batchId)) fail(check, `ListPausedBatches on ${server}: batch ${batch.batchId} on two pages`);
      seen.add(batch.batchId);
      batches.push(batch);
    }
    if (!page.nextPageToken) break;
    pageToken = page.nextPageToken;
  }
  const yielded = [];
  try {
    for await (const batch of servers[server].pausedBatches(2)) yielded.push(batch.batchId);
  } catch (error) {
    fail(check, `pausedBatches on ${server}: ${failure(error)}`);
  }
  if (show(yielded) !== show(batches.map((b) => b.batchId))) {
    fail(check, `pausedBatches on ${server} yielded ${show(yielded)}, the pages listed ${show(batches.map((b) => b.batchId))}`);
  }
  return batches;
}

// 1. A pauses a batch of one kv_delete.
const paused = await pauseDelete("pause", key);
console.log("OK durable paused on A");

// 2. B lists it, with its pending kv_delete, its reason, no caller (no --auth-tokens) and the
// expiry A gave, after its creation.
{
  const check = "list";
  const batches = await listAll(check, "B");
  const listed = batches.find((b) => b.batchId === paused.batchId);
  if (!listed) fail(check, `batch ${paused.batchId} not among the ${batches.length} listed: ${show(batches.map((b) => b.batchId))}`);
  const why = notPendingDelete(listed.pendingCalls, key);
  if (why) fail(check, `listed batch ${listed.batchId}: ${why}`);
  if (listed.reason !== paused.reason || listed.caller !== "") {
    fail(check, `listed batch ${listed.batchId}: reason ${show(listed.reason)} caller ${show(listed.caller)}, want reason ${show(paused.reason)} (as paused) and no caller`);
  }
  const [created, expires] = [nanos(listed.createTime), nanos(listed.expireTime)];
  if (created === null || expires === null) {
    fail(check, `listed batch ${listed.batchId}: createTime ${show(listed.createTime)} expireTime ${show(listed.expireTime)}, want both`);
  }
  if (created > expires) fail(check, `listed batch ${listed.batchId}: createTime ${show(listed.createTime)} after expireTime ${show(listed.expireTime)}`);
  if (expires !== nanos(paused.expireTime)) {
    fail(check, `listed batch ${listed.batchId}: expireTime ${show(listed.expireTime)}, the paused batch's ${show(paused.expireTime)}`);
  }
  console.log("OK durable listed on B");
}

// 3. B takes A's resume token, approving the kv_delete, and runs it on its own store (the
// demo key-value store is per process): B stores the key first, so "deleted".
{
  const check = "resume";
  const set = await expectReply(check, `kv_set ${key} on B`, servers.B.callTool("kv_set", { key, value: "v" }));
  if (set.output !== "ok") fail(check, `kv_set ${key} on B: output ${show(set.output)}, want "ok"`);
  const outcome = await expectReply(check, "resume on B", servers.B.resume(paused.resumeToken, [approve("d")]));
  if (!outcome.completed) fail(check, `outcome ${show(outcome)}, want completed`);
  const got = outcome.completed.map((r) => [r.callId, r.isError, r.skipped, r.output]);
  const want = [["d", false, false, "deleted"]];
  if (show(got) !== show(want)) {
    const errors = outcome.completed.map((r) => (r.error ? failure(statusError(r.error)) : null));
    fail(check, `results ${show(got)} (errors ${show(errors)}), want ${show(want)}`);
  }
  console.log("OK durable resumed on B");
}

// 4. The token B used is used up on A too.
{
  const check = "second resume";
  const error = await rejection(servers.A.resume(paused.resumeToken, [approve("d")]));
  if (!error) fail(check, "resume on A with the used token succeeded, want NOT_FOUND / RESUME_TOKEN_UNKNOWN");
  const why = notTyped(error, "NOT_FOUND", "RESUME_TOKEN_UNKNOWN");
  if (why) fail(check, `resume on A: ${why}`);
  console.log("OK durable second resume refused");
}

// 5. A pauses another batch; B denies its kv_delete by the batch's id, not its token. Then
// neither server lists it, nor the batch resumed before.
{
  const check = "batch id";
  const other = await pauseDelete(check, `${key}-denied`);
  const outcome = await expectReply(check, "decide on B", servers.B.decide(other.batchId, [deny("d", DENIAL)]));
  if (!outcome.completed) fail(check, `outcome ${show(outcome)}, want completed`);
  const results = outcome.completed;
  if (show(results.map((r) => r.callId)) !== show(["d"])) fail(check, `results ${show(results)}, want d only`);
  const [denied] = results;
  if (!denied.isError) fail(check, `result d: ${show(denied)}, want an error`);
  const why = notTyped(statusError(denied.error), "PERMISSION_DENIED", "CALL_DENIED");
  if (why) fail(check, `result d: ${why}`);
  if (!denied.output.includes(DENIAL)) fail(check, `result d: output ${show(denied.output)} does not give the denial reason ${show(DENIAL)}`);
  const decided = [paused.batchId, other.batchId];
  for (const server of ["B", "A"]) {
    const still = (await listAll(check, server)).map((b) => b.batchId).filter((id) => decided.includes(id));
    if (still.length) fail(check, `${server} still lists the decided batches ${show(still)}`);
  }
  console.log("OK durable decided by batch id");
}
for (const client of Object.values(servers)) client.close();
