// Checks caller tokens from Node.js against a server started with --auth-tokens:
// node auth.mjs HOST:PORT TOKEN TOOLS_CSV FORBIDDEN_TOOL
// TOKEN may call exactly the tools of TOOLS_CSV (echo among them) and not FORBIDDEN_TOOL.
// grpc.health.v1.Health/Check answers without a token; no token and an unknown token are
// refused (UNAUTHENTICATED); the listing with TOKEN shows its tools only, and its fingerprint
// answers unchanged; echo answers; CallTool and CallTools of FORBIDDEN_TOOL are refused
// (PERMISSION_DENIED, TOOL_FORBIDDEN, naming the tool). Prints "OK auth <check>" per check; a
// mismatch prints "FAIL auth <check>: <why>" and exits 1; bad arguments exit 2.
import grpc from "@grpc/grpc-js";
import { trailerErrorInfo as errorInfo, toolService } from "./contract.mjs";

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

function fail(check, why) {
  console.log(`FAIL auth ${check}: ${why}`);
  process.exit(1);
}

const show = JSON.stringify;
// A bearer token no --auth-tokens file of the tests holds.
const UNKNOWN_TOKEN = "not-a-known-token-at-all";
const ToolService = toolService();
const client = new ToolService(target, grpc.credentials.createInsecure());
const deadline = () => ({ deadline: Date.now() + 20000 });
// Metadata sending `bearer` as "authorization: Bearer <token>"; none for null.
function metadata(bearer) {
  const sent = new grpc.Metadata();
  if (bearer !== null) sent.add("authorization", `Bearer ${bearer}`);
  return sent;
}
const call = (method, request, bearer = token) =>
  new Promise((resolve, reject) =>
    client[method](request, metadata(bearer), deadline(), (error, reply) => (error ? reject(error) : resolve(reply))),
  );
const failure = (error) => `${grpc.status[error.code]} ${show(error.details)}`;

// The error a call that must fail failed with.
async function refusal(check, method, request, bearer = token) {
  try {
    await call(method, request, bearer);
  } catch (error) {
    return error;
  }
  return fail(check, `${method} succeeded`);
}

// Verifies an error's code and llmworker ErrorInfo reason (and its metadata "tool" if given).
function expectError(check, what, error, code, reason, tool) {
  if (error.code !== code) fail(check, `${what}: ${failure(error)}, want ${grpc.status[code]}`);
  const info = errorInfo(error);
  if (info?.domain !== "llmworker" || info.reason !== reason) fail(check, `${what}: ErrorInfo ${show(info)}, want llmworker / ${reason}`);
  if (tool !== undefined && info.metadata?.tool !== tool) fail(check, `${what}: ErrorInfo metadata tool ${show(info.metadata?.tool)}, want ${show(tool)}`);
}

// 1. grpc.health.v1.Health/Check answers SERVING without a token. Called generically: an
// empty HealthCheckRequest is no bytes; HealthCheckResponse is field 1, the status varint
// (SERVING = 1), so a SERVING reply is the bytes 08 01.
{
  const check = "health";
  let reply = null;
  try {
    reply = await new Promise((resolve, reject) =>
      client.makeUnaryRequest(
        "/grpc.health.v1.Health/Check",
        () => Buffer.alloc(0),
        (bytes) => bytes,
        {},
        new grpc.Metadata(),
        deadline(),
        (error, response) => (error ? reject(error) : resolve(response)),
      ),
    );
  } catch (error) {
    fail(check, `Health/Check: ${failure(error)}`);
  }
  if (!reply.equals(Buffer.from([0x08, 0x01]))) fail(check, `Health/Check answered the bytes ${reply.toString("hex") || "(none)"}, want 0801 (SERVING)`);
  console.log("OK auth health needs no token");
}

// 2. The listing without a token fails UNAUTHENTICATED.
{
  const check = "no token";
  const error = await refusal(check, "ListDefinitionsSorted", {}, null);
  expectError(check, "ListDefinitionsSorted", error, grpc.status.UNAUTHENTICATED, "UNAUTHENTICATED");
  console.log("OK auth no token refused");
}

// 3. The listing with a token the server does not know fails UNAUTHENTICATED.
{
  const check = "unknown token";
  const error = await refusal(check, "ListDefinitionsSorted", {}, UNKNOWN_TOKEN);
  expectError(check, "ListDefinitionsSorted", error, grpc.status.UNAUTHENTICATED, "UNAUTHENTICATED");
  console.log("OK auth unknown token refused");
}

// 3b. A CallTool without a name and without a token fails UNAUTHENTICATED, not
// INVALID_ARGUMENT: the caller is checked before the request is read.
{
  const check = "invalid request";
  const error = await refusal(check, "CallTool", { name: "" }, null);
  expectError(check, "CallTool", error, grpc.status.UNAUTHENTICATED, "UNAUTHENTICATED");
  console.log("OK auth invalid request without a token refused");
}

// 4. With the token, the listing has exactly the tools it may call, sorted, and its fingerprint
// answers unchanged.
{
  const check = "listing";
  let listed = null;
  try {
    listed = await call("ListDefinitionsSorted", {});
  } catch (error) {
    fail(check, failure(error));
  }
  const names = listed.definitions.map((d) => d.name);
  if (show(names) !== show(tools)) fail(check, `names ${show(names)}, want ${show(tools)}`);
  if (!listed.fingerprint) fail(check, "no fingerprint");
  let again = null;
  try {
    again = await call("ListDefinitionsSorted", { known_fingerprint: listed.fingerprint });
  } catch (error) {
    fail(check, `with known fingerprint ${listed.fingerprint}: ${failure(error)}`);
  }
  if (!again.unchanged || again.definitions.length) {
    fail(check, `with known fingerprint ${listed.fingerprint}: unchanged=${again.unchanged} definitions=${again.definitions.length}`);
  }
  console.log("OK auth listing shows the token's tools");
}

// 5. With the token, echo answers.
{
  const check = "call";
  let reply = null;
  try {
    reply = await call("CallTool", { name: "echo", input_json: show({ text: "auth" }) });
  } catch (error) {
    fail(check, `echo: ${failure(error)}`);
  }
  if (reply.output !== "auth") fail(check, `echo: output ${show(reply.output)}, want "auth"`);
  console.log("OK auth call allowed");
}

// 6. With the token, CallTool of a tool outside its scope is refused, naming the tool.
{
  const check = "forbidden";
  const error = await refusal(check, "CallTool", { name: forbidden, input_json: "{}" });
  expectError(check, `CallTool ${forbidden}`, error, grpc.status.PERMISSION_DENIED, "TOOL_FORBIDDEN", forbidden);
  console.log("OK auth forbidden tool refused");
}

// 7. With the token, CallTools with an allowed and a forbidden call is refused.
{
  const check = "batch";
  const calls = [
    { call_id: "a", name: "echo", input_json: show({ text: "x" }) },
    { call_id: "b", name: forbidden, input_json: "{}" },
  ];
  const error = await refusal(check, "CallTools", { calls });
  expectError(check, `CallTools echo, ${forbidden}`, error, grpc.status.PERMISSION_DENIED, "TOOL_FORBIDDEN", forbidden);
  console.log("OK auth batch with a forbidden call refused");
}
client.close();
