// The MCP front of an llmworker demo server, driven by the official TypeScript SDK
// (@modelcontextprotocol/sdk, revision 2025-11-25 over Streamable HTTP): tools listed with
// their titles and hints, calls with text and structured results, a failed validation and an
// unknown tool, progress, an approval asked by elicitation, a foreign Origin refused, an
// image, a cancelled call, bearer tokens (none, or one that allows only echo), and a tool
// registered meanwhile announced by notifications/tools/list_changed.
// Prints one "OK mcp ..." line per check; exits non-zero on the first failure.
//
//   node mcp.mjs http://127.0.0.1:PORT/mcp TOKEN NARROW-TOKEN
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token, narrowToken] = process.argv.slice(2);
const bearer = (secret) => ({ requestInit: { headers: { Authorization: `Bearer ${secret}` } } });
const REASON = "io.llmworker/reason";

function fail(check, message) {
  console.error(`FAIL mcp ${check}: ${message}`);
  process.exit(1);
}

const client = new Client({ name: "llmworker-interop", version: "1" }, { capabilities: { elicitation: {} } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params.message);
  return { action: "accept", content: { decision: "approve" } };
});
let listChanged;
const changed = new Promise((resolve) => (listChanged = resolve));
client.setNotificationHandler(ToolListChangedNotificationSchema, () => listChanged());
await client.connect(new StreamableHTTPClientTransport(new URL(url), bearer(token)));

// 1. The listing: sorted, with titles and hints.
const { tools } = await client.listTools();
const names = tools.map((tool) => tool.name);
if (JSON.stringify(names) !== JSON.stringify([...names].sort())) fail("listed", `not sorted: ${names}`);
const kvDelete = tools.find((tool) => tool.name === "kv_delete");
if (!kvDelete || kvDelete.title !== "Delete a key" || kvDelete.annotations?.destructiveHint !== true) {
  fail("listed", `kv_delete ${JSON.stringify(kvDelete)}`);
}
if (!tools.find((tool) => tool.name === "echo")?.inputSchema?.properties?.text) fail("listed", "echo has no text parameter");
console.log("OK mcp listed");

// 2. Calls: text and structured results.
const echoed = await client.callTool({ name: "echo", arguments: { text: "from TypeScript" } });
if (echoed.isError || echoed.content[0]?.text !== "from TypeScript") fail("called", JSON.stringify(echoed));
const who = await client.callTool({ name: "whoami", arguments: {} });
if (who.structuredContent?.tool !== "whoami") fail("called", `whoami ${JSON.stringify(who)}`);
console.log("OK mcp called");

// 3. A failed validation is an error result naming the field; an unknown tool a JSON-RPC error.
const invalid = await client.callTool({ name: "echo", arguments: { txt: "typo" } });
if (!invalid.isError || invalid._meta?.[REASON] !== "TOOL_INVALID_ARGUMENT" || !invalid.content[0].text.includes("text")) {
  fail("errors", JSON.stringify(invalid));
}
try {
  await client.callTool({ name: "no_such_tool", arguments: {} });
  fail("errors", "no_such_tool answered");
} catch (error) {
  if (!(error instanceof McpError) || error.code !== -32602) fail("errors", `no_such_tool: ${error}`);
}
console.log("OK mcp errors");

// 4. Progress of a streaming tool.
const progress = [];
const counted = await client.callTool({ name: "countdown", arguments: { n: 3, delay: 0.06 } }, undefined, {
  onprogress: (update) => progress.push(update.progress),
});
if (counted.isError || progress.at(-1) !== 3) fail("progress", `progress ${progress}, result ${JSON.stringify(counted)}`);
console.log("OK mcp progress");

// 5. A tool that requires approval: the person is asked, the call runs as approved.
await client.callTool({ name: "kv_set", arguments: { key: "k", value: "v" } });
const deleted = await client.callTool({ name: "kv_delete", arguments: { key: "k" } });
if (deleted.isError || asked.length !== 1 || !asked[0].includes("kv_delete")) {
  fail("approval", `${JSON.stringify(deleted)}, asked ${asked}`);
}
const gone = await client.callTool({ name: "kv_get", arguments: { key: "k" } });
if (!gone.isError) fail("approval", `kv_get after the delete: ${JSON.stringify(gone)}`);
console.log("OK mcp approval");

// 6. A page on another site cannot drive the server (DNS rebinding).
const foreign = await fetch(url, {
  method: "POST",
  headers: {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    origin: "http://evil.example",
    authorization: `Bearer ${token}`,
  },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
});
if (foreign.status !== 403) fail("origin", `a foreign Origin got ${foreign.status}`);
console.log("OK mcp origin");

// 7. An image beside the text.
const picture = await client.callTool({ name: "picture", arguments: {} });
const image = picture.content.find((block) => block.type === "image");
if (picture.isError || image?.mimeType !== "image/png" || Buffer.from(image.data, "base64").subarray(1, 4).toString() !== "PNG") {
  fail("image", JSON.stringify(picture));
}
console.log("OK mcp image");

// 8. A cancelled call: the request is abandoned (notifications/cancelled), the server goes on.
const abort = new AbortController();
let started = false;
try {
  await client.callTool({ name: "countdown", arguments: { n: 100, delay: 0.2 } }, undefined, {
    signal: abort.signal,
    onprogress: () => {
      started = true;
      abort.abort("enough");
    },
  });
  fail("cancelled", "the countdown ran to its end");
} catch (error) {
  if (!started) fail("cancelled", `rejected before any progress: ${error}`);
}
const after = await client.callTool({ name: "echo", arguments: { text: "still here" } });
if (after.content[0]?.text !== "still here") fail("cancelled", JSON.stringify(after));
console.log("OK mcp cancelled");

// 9. Bearer tokens: none is 401 with a Bearer challenge; a narrow token sees and calls echo only.
const anonymous = await fetch(url, {
  method: "POST",
  headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
});
if (anonymous.status !== 401 || !anonymous.headers.get("www-authenticate")?.startsWith("Bearer")) {
  fail("tokens", `no token got ${anonymous.status} ${anonymous.headers.get("www-authenticate")}`);
}
const narrow = new Client({ name: "llmworker-interop-narrow", version: "1" });
await narrow.connect(new StreamableHTTPClientTransport(new URL(url), bearer(narrowToken)));
const seen = (await narrow.listTools()).tools.map((tool) => tool.name);
if (JSON.stringify(seen) !== JSON.stringify(["echo"])) fail("tokens", `the narrow token sees ${seen}`);
const forbidden = await narrow.callTool({ name: "kv_get", arguments: { key: "k" } });
if (!forbidden.isError || forbidden._meta?.[REASON] !== "TOOL_FORBIDDEN") fail("tokens", JSON.stringify(forbidden));
await narrow.close();
console.log("OK mcp tokens");

// 10. A tool registered while the session is open: announced, then listed and called.
if (!client.getServerCapabilities()?.tools?.listChanged) fail("list-changed", "tools.listChanged not declared");
console.log("WAITING list-changed"); // the test registers a tool now
const timer = setTimeout(() => fail("list-changed", "no notifications/tools/list_changed in 20 s"), 20_000);
await changed;
clearTimeout(timer);
const relisted = (await client.listTools()).tools.map((tool) => tool.name);
if (!relisted.includes("late")) fail("list-changed", `late not listed: ${relisted}`);
const late = await client.callTool({ name: "late", arguments: {} });
if (late.content[0]?.text !== "late") fail("list-changed", JSON.stringify(late));
console.log("OK mcp list-changed");

await client.close();
