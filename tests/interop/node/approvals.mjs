// Checks caller-bound approvals from Node.js through @llmworker/sdk against a server with the
// demo tools and --auth-tokens: node approvals.mjs HOST:PORT OWNER_TOKEN OTHER_TOKEN APPROVER_TOKEN
// The three tokens have different labels and every tool in scope; only APPROVER_TOKEN has
// "approves" globs, matching the batches' tools (echo and kv_delete). A batch OWNER_TOKEN
// paused cannot be resumed with OTHER_TOKEN (PERMISSION_DENIED, RESUME_FORBIDDEN), which
// consumes nothing, so the owner resumes it with the same resume token; APPROVER_TOKEN resumes
// another of the owner's batches. Prints "OK approvals <check>" per check; a mismatch prints
// "FAIL approvals <check>: <why>" and exits 1; bad arguments exit 2.
import { approve, createClient, statusError } from "@llmworker/sdk";
import { failer, failure, notTyped, rejection, show } from "./contract.mjs";

const [target, owner, other, approver, ...extra] = process.argv.slice(2);
if (!target || !owner || !other || !approver || extra.length) {
  console.error("usage: node approvals.mjs HOST:PORT OWNER_TOKEN OTHER_TOKEN APPROVER_TOKEN");
  process.exit(2);
}
const fail = failer("approvals ");
// One client per caller, each sending its token.
const clients = Object.fromEntries(
  Object.entries({ owner, other, approver }).map(([who, token]) => [who, createClient(target, { token, timeoutMs: 20000 })]),
);

// What must succeed.
async function expectReply(check, what, promise) {
  try {
    return await promise;
  } catch (error) {
    return fail(check, `${what}: ${failure(error)}`);
  }
}

// Stores key with the owner's token, then sends the owner's batch of an echo and a kv_delete
// of key: paused at the kv_delete. Returns its resume token.
async function pause(check, key) {
  const set = await expectReply(check, `kv_set ${key}`, clients.owner.callTool("kv_set", { key, value: "v" }));
  if (set.output !== "ok") fail(check, `kv_set ${key}: output ${show(set.output)}, want "ok"`);
  const calls = [
    { id: "e", name: "echo", input: { text: "hi" } },
    { id: "d", name: "kv_delete", input: { key } },
  ];
  const outcome = await expectReply(check, "callTools", clients.owner.callTools(calls));
  if (!outcome.paused?.resumeToken || outcome.paused.pausedCallId !== "d") {
    fail(check, `callTools as the owner: ${show(outcome)}, want paused at d with a resume token`);
  }
  return outcome.paused.resumeToken;
}

// Resuming as `who` (approving d) completes the batch `pause` sent: e "hi", d "deleted".
async function expectResumed(check, resumeToken, who) {
  const outcome = await expectReply(check, `resume as ${who}`, clients[who].resume(resumeToken, [approve("d")]));
  if (!outcome.completed) fail(check, `outcome ${show(outcome)}, want completed`);
  const got = outcome.completed.map((r) => [r.callId, r.isError, r.output]);
  const want = [["e", false, "hi"], ["d", false, "deleted"]];
  if (show(got) !== show(want)) {
    const errors = outcome.completed.map((r) => (r.error ? failure(statusError(r.error)) : null));
    fail(check, `results ${show(got)} (errors ${show(errors)}), want ${show(want)}`);
  }
}

// 1. The owner pauses a batch; another caller's resume is refused.
const owned = await pause("other caller", "approvals-owned");
{
  const check = "other caller";
  const error = await rejection(clients.other.resume(owned, [approve("d")]));
  if (!error) fail(check, "resume with the other token succeeded, want PERMISSION_DENIED / RESUME_FORBIDDEN");
  const why = notTyped(error, "PERMISSION_DENIED", "RESUME_FORBIDDEN");
  if (why) fail(check, `resume: ${why}`);
  console.log("OK approvals another caller cannot resume");
}

// 2. The refused attempt consumed nothing: the owner resumes with the same resume token.
await expectResumed("owner", owned, "owner");
console.log("OK approvals the owner resumes after a refused attempt");

// 3. The owner pauses another batch; the approver resumes it.
await expectResumed("approver", await pause("approver", "approvals-approved"), "approver");
console.log("OK approvals an approver decides another caller's batch");
for (const client of Object.values(clients)) client.close();
