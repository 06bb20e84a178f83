// Checks the llmworker gRPC contract from Node.js: node client.mjs TARGET FINGERPRINT
// Prints "OK <check>" per check; a mismatch prints "FAIL <check>: <why>" and exits 1.
import path from "node:path";
import { fileURLToPath } from "node:url";
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";

const [target, fingerprint] = process.argv.slice(2);
const protoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../proto");
const definition = protoLoader.loadSync("llmworker/v1/tool_service.proto", {
  includeDirs: [protoRoot],
  keepCase: true,
  defaults: true,
});
const { ToolService } = grpc.loadPackageDefinition(definition).llmworker.v1;

// google.rpc.Status and ErrorInfo, wire-compatible, to read grpc-status-details-bin.
const rpc = protobuf.Root.fromJSON({
  nested: {
    google: {
      nested: {
        protobuf: { nested: { Any: { fields: { type_url: { type: "string", id: 1 }, value: { type: "bytes", id: 2 } } } } },
        rpc: {
          nested: {
            Status: {
              fields: {
                code: { type: "int32", id: 1 },
                message: { type: "string", id: 2 },
                details: { rule: "repeated", type: "google.protobuf.Any", id: 3 },
              },
            },
            ErrorInfo: {
              fields: {
                reason: { type: "string", id: 1 },
                domain: { type: "string", id: 2 },
                metadata: { keyType: "string", type: "string", id: 3 },
              },
            },
          },
        },
      },
    },
  },
});
const Status = rpc.lookupType("google.rpc.Status");
const ErrorInfo = rpc.lookupType("google.rpc.ErrorInfo");

function fail(check, why) {
  console.log(`FAIL ${check}: ${why}`);
  process.exit(1);
}

function errorInfo(error) {
  const [raw] = error.metadata?.get("grpc-status-details-bin") ?? [];
  if (!raw) return null;
  const status = Status.decode(raw);
  for (const detail of status.details) {
    if (detail.type_url.endsWith("/google.rpc.ErrorInfo")) return ErrorInfo.decode(detail.value);
  }
  return null;
}

const client = new ToolService(target, grpc.credentials.createInsecure());
const call = (method, request, deadlineMs = 20000) =>
  new Promise((resolve, reject) =>
    client[method](request, { deadline: Date.now() + deadlineMs }, (error, reply) =>
      error ? reject(error) : resolve(reply),
    ),
  );

async function expectError(check, request, code, reason, message) {
  try {
    await call("CallTool", request);
  } catch (error) {
    const info = errorInfo(error);
    if (error.code !== code) fail(check, `code ${error.code}, want ${code} (${error.details})`);
    if (error.details !== message) fail(check, `message ${JSON.stringify(error.details)}, want ${JSON.stringify(message)}`);
    if (!info || info.domain !== "llmworker" || info.reason !== reason) fail(check, `ErrorInfo ${JSON.stringify(info)}, want ${reason}`);
    console.log(`OK ${check} (${grpc.status[code]}, ${info.reason})`);
    return;
  }
  fail(check, "the call succeeded");
}

const listed = await call("ListDefinitionsSorted", {});
const names = listed.definitions.map((d) => d.name);
if (names.length === 0 || names.join() !== [...names].sort().join()) fail("list", `names ${names} are not sorted`);
if (listed.fingerprint !== fingerprint) fail("list", `fingerprint ${listed.fingerprint}, Python computed ${fingerprint}`);
console.log(`OK list ${names.length} sorted definitions, fingerprint ${listed.fingerprint.slice(0, 12)}`);

const again = await call("ListDefinitionsSorted", { known_fingerprint: fingerprint });
if (!again.unchanged || again.definitions.length !== 0) fail("list unchanged", JSON.stringify(again));
console.log("OK list unchanged for a known fingerprint");

const reply = await call("CallTool", { name: "echo", input_json: JSON.stringify({ text: "from node ✓" }) });
if (reply.output !== "from node ✓") fail("call echo", JSON.stringify(reply));
console.log("OK call echo");

await expectError("unknown tool", { name: "nope", input_json: "{}" }, grpc.status.NOT_FOUND, "TOOL_NOT_FOUND", "Tool 'nope' not found");
await expectError(
  "invalid arguments",
  { name: "echo", input_json: "[]" },
  grpc.status.INVALID_ARGUMENT,
  "TOOL_INVALID_ARGUMENT",
  "Tool execution failed: Invalid argument: arguments must be a JSON object, got an array",
);

const started = Date.now();
try {
  await call("CallTool", { name: "sleep", input_json: '{"seconds": 30}' }, 300);
  fail("deadline", "the call succeeded");
} catch (error) {
  const elapsed = Date.now() - started;
  if (error.code !== grpc.status.DEADLINE_EXCEEDED || elapsed > 5000) fail("deadline", `code ${error.code} after ${elapsed} ms`);
  console.log(`OK deadline honoured (DEADLINE_EXCEEDED after ${elapsed} ms)`);
}
client.close();
