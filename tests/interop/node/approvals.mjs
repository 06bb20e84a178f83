// Checks caller-bound approvals from Node.js against a server with the demo tools and
// --auth-tokens: node approvals.mjs HOST:PORT OWNER_TOKEN OTHER_TOKEN APPROVER_TOKEN
// The three tokens have different labels and every tool in scope; only APPROVER_TOKEN has
// "approves" globs, matching the batches' tools (echo and kv_delete). A batch OWNER_TOKEN
// paused cannot be resumed with OTHER_TOKEN (PERMISSION_DENIED, RESUME_FORBIDDEN), which
// consumes nothing, so the owner resumes it with the same resume token; APPROVER_TOKEN resumes
// another of the owner's batches. Prints "OK approvals <check>" per check; a mismatch prints
// "FAIL approvals <check>: <why>" and exits 1; bad arguments exit 2.
import grpc from "@grpc/grpc-js";
import { detailsErrorInfo, toolService, trailerErrorInfo } from "./contract.mjs";

const [target, owner, other, approver, ...extra] = process.argv.slice(2);
if (!target || !owner || !other || !approver || extra.length) {
  console.error("usage: node approvals.mjs HOST:PORT OWNER_TOKEN OTHER_TOKEN APPROVER_TOKEN");
  process.exit(2);
}

function fail(check, why) {
  console.log(`FAIL approvals ${check}: ${why}`);
  process.exit(1);
}

const show = JSON.stringify;
const failure = (error) => `${grpc.status[error.code]} ${show(error.details)}`;
// oneofs: true names the set member of CallToolsResponse.outcome.
const ToolService = toolService({ oneofs: true });
const client = new ToolService(target, grpc.credentials.createInsecure());
const deadline = () => ({ deadline: Date.now() + 20000 });
function metadata(token) {
  const sent = new grpc.Metadata();
  sent.add("authorization", `Bearer ${token}`);
  return sent;
}
const call = (method, request, token) =>
  new Promise((resolve, reject) =>
    client[method](request, metadata(token), deadline(), (error, reply) => (error ? reject(error) : resolve(reply))),
  );

// The reply of an RPC that must succeed.
async function expectReply(check, method, request, token) {
  try {
    return await call(method, request, token);
  } catch (error) {
    return fail(check, `${method}: ${failure(error)}`);
  }
}

// Stores key with the owner's token, then sends the owner's batch of an echo and a kv_delete
// of key: paused at the kv_delete. Returns the ResumeBatch request approving it.
async function pause(check, key) {
  const set = await expectReply(check, "CallTool", { name: "kv_set", input_json: show({ key, value: "v" }) }, owner);
  if (set.output !== "ok") fail(check, `kv_set ${key}: output ${show(set.output)}, want "ok"`);
  const calls = [
    { call_id: "e", name: "echo", input_json: show({ text: "hi" }) },
    { call_id: "d", name: "kv_delete", input_json: show({ key }) },
  ];
  const reply = await expectReply(check, "CallTools", { calls }, owner);
  if (reply.outcome !== "paused" || !reply.paused.resume_token || reply.paused.paused_call_id !== "d") {
    fail(check, `CallTools as the owner: ${show(reply)}, want paused at d with a resume token`);
  }
  return { resume_token: reply.paused.resume_token, decisions: [{ call_id: "d", approve: {} }] };
}

// Resuming with token completes the batch `pause` sent: e "hi", d "deleted".
async function expectResumed(check, resume, token) {
  const reply = await expectReply(check, "ResumeBatch", resume, token);
  if (reply.outcome !== "completed") fail(check, `outcome ${reply.outcome}, want completed: ${show(reply)}`);
  const got = reply.completed.results.map((r) => [r.call_id, r.is_error, r.output]);
  const want = [["e", false, "hi"], ["d", false, "deleted"]];
  if (show(got) !== show(want)) {
    const info = reply.completed.results.map((r) => detailsErrorInfo(r.error?.details));
    fail(check, `results ${show(got)} (ErrorInfo ${show(info)}), want ${show(want)}`);
  }
}

// 1. The owner pauses a batch; another caller's ResumeBatch is refused.
const owned = await pause("other caller", "approvals-owned");
{
  const check = "other caller";
  let error = null;
  try {
    await call("ResumeBatch", owned, other);
  } catch (caught) {
    error = caught;
  }
  if (!error) fail(check, "ResumeBatch with the other token succeeded, want PERMISSION_DENIED / RESUME_FORBIDDEN");
  if (error.code !== grpc.status.PERMISSION_DENIED) fail(check, `ResumeBatch: ${failure(error)}, want PERMISSION_DENIED`);
  const info = trailerErrorInfo(error);
  if (info?.domain !== "llmworker" || info.reason !== "RESUME_FORBIDDEN") fail(check, `ResumeBatch: ErrorInfo ${show(info)}, want llmworker / RESUME_FORBIDDEN`);
  console.log("OK approvals another caller cannot resume");
}

// 2. The refused attempt consumed nothing: the owner resumes with the same resume token.
await expectResumed("owner", owned, owner);
console.log("OK approvals the owner resumes after a refused attempt");

// 3. The owner pauses another batch; the approver resumes it.
await expectResumed("approver", await pause("approver", "approvals-approved"), approver);
console.log("OK approvals an approver decides another caller's batch");
client.close();
