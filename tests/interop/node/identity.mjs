// Checks provider identities from Node.js against a server's internal ToolRegistry started
// with --provider-tokens: node identity.mjs REGISTRY_TARGET ALPHA_TOKEN BRAVO_TOKEN PROVIDER
// PROVIDER is a 127.0.0.1:PORT target serving llmworker.v1.ToolService with the tool "echo"
// (and GetTool); ALPHA_TOKEN's identity may register "echo" at "127.0.0.1:*" and may not
// lock, BRAVO_TOKEN's anything anywhere. The owner (alpha) registers echo and unregisters it;
// another identity can neither take it over nor unregister it (PROVIDER_FORBIDDEN, naming the
// owner); a tool outside alpha's globs is PROVIDER_FORBIDDEN, a target outside them
// INVALID_REQUEST before anything dials it, a definition other than the served one
// INVALID_REQUEST, LockRegistry without may_lock PROVIDER_FORBIDDEN, and every RPC without a
// token UNAUTHENTICATED. Prints "OK identity <check>" per check; a mismatch prints
// "FAIL identity <check>: <why>" and exits 1; bad arguments exit 2.
import net from "node:net";
import grpc from "@grpc/grpc-js";
import { trailerErrorInfo as errorInfo, toolRegistry, toolService } from "./contract.mjs";

const [registryTarget, alpha, bravo, provider, ...extra] = process.argv.slice(2);
if (!registryTarget || !alpha || !bravo || !provider || extra.length) {
  console.error("usage: node identity.mjs REGISTRY_TARGET ALPHA_TOKEN BRAVO_TOKEN PROVIDER");
  process.exit(2);
}

function fail(check, why) {
  console.log(`FAIL identity ${check}: ${why}`);
  process.exit(1);
}

const show = JSON.stringify;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const failure = (error) => `${grpc.status[error.code]} ${show(error.details)}`;
// A tool name outside alpha's tools.
const OUTSIDE_GLOBS = "other_tool";
// How long a connection the server should not have opened gets to be accepted.
const DIAL_SETTLE_MS = 200;
const deadline = () => ({ deadline: Date.now() + 20000 });
const ToolRegistry = toolRegistry();
const registry = new ToolRegistry(registryTarget, grpc.credentials.createInsecure());
const ToolService = toolService();

// Metadata sending `token` as "authorization: Bearer <token>"; none for null.
function metadata(token) {
  const sent = new grpc.Metadata();
  if (token !== null) sent.add("authorization", `Bearer ${token}`);
  return sent;
}
const registryCall = (method, request, token) =>
  new Promise((resolve, reject) =>
    registry[method](request, metadata(token), deadline(), (error, reply) => (error ? reject(error) : resolve(reply))),
  );

// The reply of a ToolRegistry RPC that must succeed.
async function expectReply(check, method, request, token) {
  try {
    return await registryCall(method, request, token);
  } catch (error) {
    return fail(check, `${method}: ${failure(error)}`);
  }
}

// A ToolRegistry RPC that must fail with code and reason (domain "llmworker"), its message
// holding `want` when given.
async function expectRefused(check, method, request, token, code, reason, want) {
  let error = null;
  try {
    await registryCall(method, request, token);
  } catch (caught) {
    error = caught;
  }
  if (!error) fail(check, `${method} succeeded, want ${grpc.status[code]} / ${reason}`);
  if (error.code !== code) fail(check, `${method}: ${failure(error)}, want ${grpc.status[code]}`);
  const info = errorInfo(error);
  if (info?.domain !== "llmworker" || info.reason !== reason) fail(check, `${method}: ErrorInfo ${show(info)}, want llmworker / ${reason}`);
  if (want !== undefined && !error.details.includes(want)) fail(check, `${method}: message ${show(error.details)} does not hold ${show(want)}`);
  return info;
}

// The definition of echo as the provider serves it.
const echo = await new Promise((resolve) => {
  const client = new ToolService(provider, grpc.credentials.createInsecure());
  client.GetTool({ name: "echo" }, deadline(), (error, reply) => {
    client.close();
    if (error) fail("provider", `GetTool echo at ${provider}: ${failure(error)}`);
    resolve(reply.definition);
  });
});
const register = (definition, target = provider) => ({ definition, provider_target: target });
const unregister = { name: "echo", provider_target: provider };

// Listening on 127.0.0.2 to see whether the server dials a target it must refuse; where
// 127.0.0.2 cannot be bound, a target there on the provider's port, and no dial count.
let dials = 0;
const untouched = await new Promise((resolve) => {
  const server = net.createServer((socket) => {
    dials += 1;
    socket.destroy();
  });
  server.once("error", () => resolve(null));
  server.listen(0, "127.0.0.2", () => resolve(server));
});
const elsewhere = untouched ? `127.0.0.2:${untouched.address().port}` : `127.0.0.2:${provider.split(":").pop()}`;

// 1. alpha registers echo at the provider.
await expectReply("owner registers", "RegisterTool", register(echo), alpha);
console.log("OK identity owner registers");

// 2. bravo registering the same definition at the same target is refused, naming the owner.
await expectRefused("take over", "RegisterTool", register(echo), bravo, grpc.status.PERMISSION_DENIED, "PROVIDER_FORBIDDEN", "'alpha'");
console.log("OK identity another identity cannot take over");

// 3. bravo unregistering alpha's tool is refused, naming the owner.
await expectRefused("foreign unregister", "UnregisterTool", unregister, bravo, grpc.status.PERMISSION_DENIED, "PROVIDER_FORBIDDEN", "'alpha'");
console.log("OK identity another identity cannot unregister");

// 4. alpha registering a name outside its tools is refused, naming the tool.
{
  const check = "tool globs";
  const info = await expectRefused(
    check,
    "RegisterTool",
    register({ ...echo, name: OUTSIDE_GLOBS }),
    alpha,
    grpc.status.PERMISSION_DENIED,
    "PROVIDER_FORBIDDEN",
    `'${OUTSIDE_GLOBS}'`,
  );
  if (info.metadata?.tool !== OUTSIDE_GLOBS) fail(check, `ErrorInfo metadata tool ${show(info.metadata?.tool)}, want ${OUTSIDE_GLOBS}`);
  console.log("OK identity tool outside globs refused");
}

// 5. alpha naming a target outside its targets is refused, and nothing dials that target.
{
  const check = "target globs";
  await expectRefused(check, "RegisterTool", register(echo, elsewhere), alpha, grpc.status.INVALID_ARGUMENT, "INVALID_REQUEST", elsewhere);
  if (untouched) {
    await sleep(DIAL_SETTLE_MS);
    untouched.close();
    if (dials !== 0) fail(check, `the server dialled ${elsewhere} ${dials} times, want none`);
  }
  console.log("OK identity target outside globs refused before dial");
}

// 6. A definition that differs from the one the provider serves is refused.
{
  const edited = { ...echo, description: `${echo.description} (edited)` };
  await expectRefused("served definition", "RegisterTool", register(edited), alpha, grpc.status.INVALID_ARGUMENT, "INVALID_REQUEST", "differ in description");
  console.log("OK identity served definition compared");
}

// 7. alpha, without may_lock, may not lock the registry.
await expectRefused("lock", "LockRegistry", {}, alpha, grpc.status.PERMISSION_DENIED, "PROVIDER_FORBIDDEN", "may_lock");
console.log("OK identity lock needs may_lock");

// 8. Every ToolRegistry RPC without a token is refused.
{
  const check = "no token";
  const code = grpc.status.UNAUTHENTICATED;
  await expectRefused(check, "RegisterTool", register(echo), null, code, "UNAUTHENTICATED");
  await expectRefused(check, "UnregisterTool", unregister, null, code, "UNAUTHENTICATED");
  await expectRefused(check, "LockRegistry", {}, null, code, "UNAUTHENTICATED");
  console.log("OK identity no token refused");
}

// 9. alpha removes its tool.
await expectReply("owner unregisters", "UnregisterTool", unregister, alpha);
console.log("OK identity owner unregisters");
registry.close();
