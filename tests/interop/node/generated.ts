// Checks the llmworker contract from Node.js through the code `buf generate` makes (ts-proto
// messages and @grpc/grpc-js clients, in gen/): node build/generated.js TARGET FINGERPRINT
// after `tsc -p .`. Prints "OK <check>" per check; a mismatch prints "FAIL <check>: <why>".
import {
  type CallOptions,
  type ClientUnaryCall,
  credentials,
  Metadata,
  type ServiceError,
  status,
} from "@grpc/grpc-js";
import { Status } from "./gen/google/rpc/status.js";
import {
  CallToolRequest,
  CallToolsRequest,
  ListDefinitionsSortedRequest,
  ToolServiceClient,
} from "./gen/llmworker/v1/tool_service.js";

const [target, fingerprint] = process.argv.slice(2);
const client = new ToolServiceClient(target, credentials.createInsecure());

function fail(check: string, why: string): never {
  console.log(`FAIL ${check}: ${why}`);
  process.exit(1);
}

type Unary<Q, R> = (
  request: Q,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, reply: R) => void,
) => ClientUnaryCall;

// A unary method of the generated client as a promise, with a 20 s deadline.
function call<Q, R>(method: Unary<Q, R>, request: Q): Promise<R> {
  return new Promise((resolve, reject) =>
    method.call(client, request, new Metadata(), { deadline: Date.now() + 20_000 }, (error, reply) =>
      error ? reject(error) : resolve(reply),
    ),
  );
}

const listed = await call(client.listDefinitionsSorted, ListDefinitionsSortedRequest.fromPartial({}));
const names = listed.definitions.map((d) => d.name);
if (!names.includes("echo") || names.join() !== [...names].sort().join()) fail("list", `names ${names}`);
if (listed.fingerprint !== fingerprint) fail("list", `fingerprint ${listed.fingerprint}, Python computed ${fingerprint}`);
for (const d of listed.definitions) {
  if (typeof JSON.parse(d.inputSchemaJson) !== "object") fail("list", `${d.name}: input schema ${d.inputSchemaJson}`);
}
console.log(`OK generated list ${names.length} sorted definitions`);

const echoed = await call(client.callTool, CallToolRequest.fromPartial({ name: "echo", inputJson: '{"text": "from ts ✓"}' }));
if (echoed.output !== "from ts ✓") fail("call echo", JSON.stringify(echoed));
console.log("OK generated call echo");

// The trailer's google.rpc.Status, decoded with the generated message, matches the status.
const failure = await call(client.callTool, CallToolRequest.fromPartial({ name: "nope", inputJson: "{}" })).then(
  (reply) => fail("unknown tool", `the call succeeded: ${JSON.stringify(reply)}`),
  (error: ServiceError) => error,
);
if (failure.code !== status.NOT_FOUND || failure.details !== "Tool 'nope' not found") fail("unknown tool", `${failure.code} ${failure.details}`);
const [raw] = failure.metadata.get("grpc-status-details-bin");
if (!(raw instanceof Uint8Array)) fail("unknown tool", "no grpc-status-details-bin trailer");
const trailer = Status.decode(raw);
if (trailer.code !== failure.code || trailer.message !== failure.details) fail("unknown tool", `trailer ${JSON.stringify(trailer)}`);
if (!trailer.details.some((d) => d.typeUrl === "type.googleapis.com/google.rpc.ErrorInfo")) fail("unknown tool", "no ErrorInfo detail");
console.log("OK generated unknown tool: NOT_FOUND, google.rpc.Status trailer");

const batch = await call(
  client.callTools,
  CallToolsRequest.fromPartial({
    calls: [
      { callId: "ts-1", name: "echo", inputJson: '{"text": "one"}' },
      { callId: "ts-2", name: "nope", inputJson: "{}" },
    ],
  }),
);
const [ok, failed] = batch.completed?.results ?? fail("batch", `not completed: ${JSON.stringify(batch)}`);
if (ok?.callId !== "ts-1" || ok.output !== "one" || ok.isError) fail("batch", `first ${JSON.stringify(ok)}`);
if (failed?.callId !== "ts-2" || !failed.isError || failed.error?.code !== status.NOT_FOUND) fail("batch", `second ${JSON.stringify(failed)}`);
console.log("OK generated batch: a result and a per-call google.rpc.Status");
client.close();
