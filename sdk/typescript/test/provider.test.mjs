// The TypeScript provider on its own: a zod schema's input side as the definition, calls and
// errors as a registry sees them, stop() ending while a client still holds a connection, and
// its grpc.health.v1 Health.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { z } from "zod";

import {
  Health,
  InvalidArgument,
  Provider,
  ServingStatus,
  ToolExecutionFailed,
  ToolInvalidArgument,
  createClient,
  createServiceClient,
  defineTool,
} from "../dist/index.js";

const upper = defineTool({
  name: "ts_upper",
  description: "Upper-case a text",
  input: z.object({ text: z.string(), times: z.number().int().default(1) }),
  run: ({ text, times }) => {
    if (!text) throw new InvalidArgument("text is empty");
    return text.toUpperCase().repeat(times);
  },
});
const failing = defineTool({
  name: "ts_fail",
  description: "Fails with another service's error",
  input: { type: "object", properties: {} },
  run: () => {
    throw new ConnectError("the backend said no", Code.NotFound);
  },
});

test("a zod schema's input side is the definition", () => {
  const schema = JSON.parse(upper.definition.inputSchemaJson);
  assert.deepEqual(schema.required, ["text"]); // times has a default: optional to the model
  assert.equal(schema.$schema, undefined);
});

test("calls, errors, and a stop that ends with a client connected", async () => {
  const provider = new Provider([upper, failing]);
  const address = await provider.serve();
  const client = createClient(address); // the provider serves ToolService, as a server does
  assert.equal((await client.callTool("ts_upper", { text: "ab", times: 2 })).output, "ABAB");
  await assert.rejects(client.callTool("ts_upper", { text: "" }), (error) => {
    assert.ok(error instanceof ToolInvalidArgument);
    assert.equal(error.metadata.tool_error, "text is empty");
    return true;
  });
  await assert.rejects(client.callTool("ts_upper", { text: 7 }), ToolInvalidArgument);
  await assert.rejects(client.callTool("ts_fail"), (error) => error instanceof ToolExecutionFailed && /backend said no/.test(error.message));
  const started = Date.now();
  await provider.stop(2000);
  assert.ok(Date.now() - started < 5000, "stop waited for the client's connection");
  assert.throws(() => new Provider([upper, upper]), TypeError);
  assert.throws(() => defineTool({ name: "bad name", description: "", input: {}, run: () => "" }), TypeError);
});

test("grpc.health.v1: SERVING until stop() begins, then NOT_SERVING, and watches end", async () => {
  const provider = new Provider([upper]);
  const address = await provider.serve();
  const health = createServiceClient(Health, address, { timeoutMs: 5000 });
  assert.equal((await health.check({ service: "" })).status, ServingStatus.SERVING);
  assert.equal((await health.check({ service: "llmworker.v1.ToolService" })).status, ServingStatus.SERVING);
  await assert.rejects(health.check({ service: "other" }), (error) => error instanceof ConnectError && error.code === Code.NotFound);
  const listed = await health.list({});
  assert.deepEqual(Object.keys(listed.statuses).sort(), ["", "llmworker.v1.ToolService"]);
  const seen = [];
  const watching = (async () => {
    for await (const reply of health.watch({ service: "llmworker.v1.ToolService" }, { timeoutMs: 0 })) {
      seen.push(ServingStatus[reply.status]);
      if (seen.length === 1) void provider.stop();
    }
  })();
  const unknown = [];
  for await (const reply of health.watch({ service: "other" }, { timeoutMs: 0 })) {
    unknown.push(ServingStatus[reply.status]); // the server ends this watch at stop()
  }
  await watching;
  assert.deepEqual(seen, ["SERVING", "NOT_SERVING"]);
  assert.deepEqual(unknown, ["SERVICE_UNKNOWN"]);
});
