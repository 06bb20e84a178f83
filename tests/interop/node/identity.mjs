// Checks provider identities from Node.js through @llmworker/sdk (its ToolRegistry service
// and typed errors) against a server's internal ToolRegistry started with --provider-tokens:
// node identity.mjs REGISTRY_TARGET ALPHA_TOKEN BRAVO_TOKEN PROVIDER
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
import { ToolRegistry, createClient, createServiceClient } from "@llmworker/sdk";
import { failer, failure, notTyped, rejection, show } from "./contract.mjs";

const [registryTarget, alpha, bravo, provider, ...extra] = process.argv.slice(2);
if (!registryTarget || !alpha || !bravo || !provider || extra.length) {
  console.error("usage: node identity.mjs REGISTRY_TARGET ALPHA_TOKEN BRAVO_TOKEN PROVIDER");
  process.exit(2);
}
const fail = failer("identity ");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// A tool name outside alpha's tools.
const OUTSIDE_GLOBS = "other_tool";
// How long a connection the server should not have opened gets to be accepted.
const DIAL_SETTLE_MS = 200;
const TIMEOUT_MS = 20000;
// The registry as each identity (null: no token) sees it.
const registries = new Map(
  [alpha, bravo, null].map((token) => [token, createServiceClient(ToolRegistry, registryTarget, { timeoutMs: TIMEOUT_MS, ...(token ? { token } : {}) })]),
);
const registry = (token) => registries.get(token);

// A ToolRegistry RPC that must succeed.
async function expectReply(check, method, request, token) {
  try {
    return await registry(token)[method](request);
  } catch (error) {
    return fail(check, `${method}: ${failure(error)}`);
  }
}

// A ToolRegistry RPC that must fail with code and reason (domain "llmworker"), its message
// holding `want` when given; returns the typed error.
async function expectRefused(check, method, request, token, codeName, reason, want) {
  const error = await rejection(registry(token)[method](request));
  if (!error) fail(check, `${method} succeeded, want ${codeName} / ${reason}`);
  const why = notTyped(error, codeName, reason);
  if (why) fail(check, `${method}: ${why}`);
  if (want !== undefined && !error.message.includes(want)) fail(check, `${method}: message ${show(error.message)} does not hold ${show(want)}`);
  return error;
}

// The definition of echo as the provider serves it (GetTool).
const echo = await (async () => {
  const client = createClient(provider, { timeoutMs: TIMEOUT_MS });
  try {
    return await client.getTool("echo");
  } catch (error) {
    return fail("provider", `GetTool echo at ${provider}: ${failure(error)}`);
  } finally {
    client.close();
  }
})();
const register = (definition, target = provider) => ({ definition, providerTarget: target });
const unregister = { name: "echo", providerTarget: provider };

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
await expectReply("owner registers", "registerTool", register(echo), alpha);
console.log("OK identity owner registers");

// 2. bravo registering the same definition at the same target is refused, naming the owner.
await expectRefused("take over", "registerTool", register(echo), bravo, "PERMISSION_DENIED", "PROVIDER_FORBIDDEN", "'alpha'");
console.log("OK identity another identity cannot take over");

// 3. bravo unregistering alpha's tool is refused, naming the owner.
await expectRefused("foreign unregister", "unregisterTool", unregister, bravo, "PERMISSION_DENIED", "PROVIDER_FORBIDDEN", "'alpha'");
console.log("OK identity another identity cannot unregister");

// 4. alpha registering a name outside its tools is refused, naming the tool.
{
  const check = "tool globs";
  const outside = register({ ...echo, name: OUTSIDE_GLOBS });
  const error = await expectRefused(check, "registerTool", outside, alpha, "PERMISSION_DENIED", "PROVIDER_FORBIDDEN", `'${OUTSIDE_GLOBS}'`);
  if (error.metadata.tool !== OUTSIDE_GLOBS) fail(check, `ErrorInfo metadata tool ${show(error.metadata.tool)}, want ${OUTSIDE_GLOBS}`);
  console.log("OK identity tool outside globs refused");
}

// 5. alpha naming a target outside its targets is refused, and nothing dials that target.
{
  const check = "target globs";
  await expectRefused(check, "registerTool", register(echo, elsewhere), alpha, "INVALID_ARGUMENT", "INVALID_REQUEST", elsewhere);
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
  await expectRefused("served definition", "registerTool", register(edited), alpha, "INVALID_ARGUMENT", "INVALID_REQUEST", "differ in description");
  console.log("OK identity served definition compared");
}

// 7. alpha, without may_lock, may not lock the registry.
await expectRefused("lock", "lockRegistry", {}, alpha, "PERMISSION_DENIED", "PROVIDER_FORBIDDEN", "may_lock");
console.log("OK identity lock needs may_lock");

// 8. Every ToolRegistry RPC without a token is refused.
{
  const check = "no token";
  await expectRefused(check, "registerTool", register(echo), null, "UNAUTHENTICATED", "UNAUTHENTICATED");
  await expectRefused(check, "unregisterTool", unregister, null, "UNAUTHENTICATED", "UNAUTHENTICATED");
  await expectRefused(check, "lockRegistry", {}, null, "UNAUTHENTICATED", "UNAUTHENTICATED");
  console.log("OK identity no token refused");
}

// 9. alpha removes its tool.
await expectReply("owner unregisters", "unregisterTool", unregister, alpha);
console.log("OK identity owner unregisters");
