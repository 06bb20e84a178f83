// The TypeScript provider on its own: a zod schema's input side as the definition, calls and
// errors as a registry sees them, and stop() ending while a client still holds a connection.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { z } from "zod";

import { InvalidArgument, Provider, ToolExecutionFailed, ToolInvalidArgument, createClient, defineTool } from "../dist/index.js";

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
