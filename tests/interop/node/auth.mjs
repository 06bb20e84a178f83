// Checks caller tokens from Node.js through @llmworker/sdk against a server started with
// --auth-tokens:
// node auth.mjs HOST:PORT TOKEN TOOLS_CSV FORBIDDEN_TOOL
// TOKEN may call exactly the tools of TOOLS_CSV (echo among them) and not FORBIDDEN_TOOL.
// grpc.health.v1.Health/Check answers without a token; no token and an unknown token are
// refused (UNAUTHENTICATED); the listing with TOKEN shows its tools only, and its fingerprint
// answers unchanged; echo answers; CallTool and CallTools of FORBIDDEN_TOOL are refused
// (PERMISSION_DENIED, TOOL_FORBIDDEN, naming the tool). Prints "OK auth <check>" per check; a
// mismatch prints "FAIL auth <check>: <why>" and exits 1; bad arguments exit 2.
import { Health, ServingStatus, createClient, createServiceClient } from "@llmworker/sdk";
import { failer, failure, notTyped, rejection, show } from "./contract.mjs";

const USAGE = "usage: node auth.mjs HOST:PORT TOKEN TOOLS_CSV FORBIDDEN_TOOL";

function usage(why) {
  console.error(why ? `${USAGE}\n${why}` : USAGE);
  process.exit(2);
}

const [target, token, toolsCsv, forbidden, ...extra] = process.argv.slice(2);
if (!target || !token || !toolsCsv || !forbidden || extra.length) usage();
const tools = toolsCsv.split(",").sort();
if (tools.includes("")) usage(`TOOLS_CSV ${toolsCsv}: an empty name`);
if (!tools.includes("echo")) usage(`TOOLS_CSV ${toolsCsv}: echo must be among them`);
if (tools.includes(forbidden)) usage(`FORBIDDEN_TOOL ${forbidden} is among TOOLS_CSV`);

const fail = failer("auth ");
// A bearer token no --auth-tokens file of the tests holds.
const UNKNOWN_TOKEN = "not-a-known-token-at-all";
const TIMEOUT_MS = 20000;
const client = createClient(target, { token, timeoutMs: TIMEOUT_MS });
const anonymous = createClient(target, { timeoutMs: TIMEOUT_MS });
const stranger = createClient(target, { token: UNKNOWN_TOKEN, timeoutMs: TIMEOUT_MS });

// What must succeed.
async function expectReply(check, what, promise) {
  try {
    return await promise;
  } catch (error) {
    return fail(check, `${what}: ${failure(error)}`);
  }
}

// What must fail with code and reason (domain "llmworker"), its ErrorInfo metadata "tool"
// naming tool if given.
async function expectError(check, what, promise, codeName, reason, tool) {
  const error = await rejection(promise);
  if (!error) fail(check, `${what} succeeded`);
  const why = notTyped(error, codeName, reason);
  if (why) fail(check, `${what}: ${why}`);
  if (tool !== undefined && error.metadata.tool !== tool) fail(check, `${what}: ErrorInfo metadata tool ${show(error.metadata.tool)}, want ${show(tool)}`);
}

// 1. grpc.health.v1.Health/Check answers SERVING without a token (the SDK's generated
// Health service, on a connection without a token).
{
  const check = "health";
  const health = createServiceClient(Health, anonymous.transport);
  const reply = await expectReply(check, "Health/Check", health.check({ service: "" }));
  if (reply.status !== ServingStatus.SERVING) fail(check, `Health/Check answered ${ServingStatus[reply.status] ?? reply.status}, want SERVING`);
  console.log("OK auth health needs no token");
}

// 2. The listing without a token fails UNAUTHENTICATED.
await expectError("no token", "listDefinitions", anonymous.listDefinitions(), "UNAUTHENTICATED", "UNAUTHENTICATED");
console.log("OK auth no token refused");

// 3. The listing with a token the server does not know fails UNAUTHENTICATED.
await expectError("unknown token", "listDefinitions", stranger.listDefinitions(), "UNAUTHENTICATED", "UNAUTHENTICATED");
console.log("OK auth unknown token refused");

// 3b. A CallTool without a name and without a token fails UNAUTHENTICATED, not
// INVALID_ARGUMENT: the caller is checked before the request is read.
await expectError("invalid request", "callTool without a name", anonymous.callTool(""), "UNAUTHENTICATED", "UNAUTHENTICATED");
console.log("OK auth invalid request without a token refused");

// 4. With the token, the listing has exactly the tools it may call, sorted, and its fingerprint
// answers unchanged (through the generated client: the SDK's listing sends no fingerprint).
{
  const check = "listing";
  const listed = await expectReply(check, "listDefinitions", client.listDefinitions());
  const names = listed.tools.map((d) => d.name);
  if (show(names) !== show(tools)) fail(check, `names ${show(names)}, want ${show(tools)}`);
  if (!listed.fingerprint) fail(check, "no fingerprint");
  const again = await expectReply(
    check,
    `with known fingerprint ${listed.fingerprint}`,
    client.service.listDefinitionsSorted({ knownFingerprint: listed.fingerprint }, { timeoutMs: TIMEOUT_MS }),
  );
  if (!again.unchanged || again.definitions.length) {
    fail(check, `with known fingerprint ${listed.fingerprint}: unchanged=${again.unchanged} definitions=${again.definitions.length}`);
  }
  console.log("OK auth listing shows the token's tools");
}

// 5. With the token, echo answers.
{
  const reply = await expectReply("call", "echo", client.callTool("echo", { text: "auth" }));
  if (reply.output !== "auth") fail("call", `echo: output ${show(reply.output)}, want "auth"`);
  console.log("OK auth call allowed");
}

// 6. With the token, callTool of a tool outside its scope is refused, naming the tool.
await expectError("forbidden", `callTool ${forbidden}`, client.callTool(forbidden), "PERMISSION_DENIED", "TOOL_FORBIDDEN", forbidden);
console.log("OK auth forbidden tool refused");

// 7. With the token, callTools with an allowed and a forbidden call is refused.
{
  const calls = [
    { id: "a", name: "echo", input: { text: "x" } },
    { id: "b", name: forbidden, input: {} },
  ];
  await expectError("batch", `callTools echo, ${forbidden}`, client.callTools(calls), "PERMISSION_DENIED", "TOOL_FORBIDDEN", forbidden);
  console.log("OK auth batch with a forbidden call refused");
}
for (const one of [client, anonymous, stranger]) one.close();
