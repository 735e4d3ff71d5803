import {
  assert,
  assertEquals,
  assertRejects,
} from "../../tests/helpers/assert.ts";
import { AISDKToolError, toAISDKSchema, toAISDKTools } from "./ai_sdk.ts";
import { echoTool } from "../../tests/helpers/adapter_fixture.ts";

// What the AI SDK (5, 6 and 7) checks first in `asSchema`/`isSchema`.
function isAISDKSchema(value: unknown): boolean {
  const v = value as Record<string | symbol, unknown>;
  return typeof v === "object" && v !== null &&
    v[Symbol.for("vercel.ai.schema")] === true &&
    v[Symbol.for("vercel.ai.validator")] === true &&
    "jsonSchema" in v && "validate" in v;
}

Deno.test("toAISDKTools() gives a tool set keyed by name in the tool() shape", () => {
  const set = toAISDKTools([echoTool]);
  assertEquals(Object.keys(set), ["echo"]);
  const tool = set.echo!;
  assertEquals(tool.description, "Echoes its input.");
  assert(isAISDKSchema(tool.inputSchema));
  assertEquals(tool.inputSchema.jsonSchema, {
    type: "object",
    properties: {
      text: { type: "string", description: "What to echo." },
      times: { type: "integer", minimum: 1, description: "How often." },
      fail: { type: "boolean", description: "Return an error result." },
    },
    required: ["text"],
    additionalProperties: false,
  });
  assertEquals(typeof tool.execute, "function");
});

Deno.test("execute() passes the AI SDK's abortSignal on and returns the tool's text", async () => {
  const tool = toAISDKTools([echoTool]).echo!;
  const output = await tool.execute({ text: "hi" }, {
    toolCallId: "c1",
    abortSignal: new AbortController().signal,
  });
  assertEquals(output, '{"text":"hi"} (signal)');
});

Deno.test("execute() throws an error result as AISDKToolError, so the AI SDK records a tool error", async () => {
  const tool = toAISDKTools([echoTool]).echo!;
  const error = await assertRejects(
    () => tool.execute({ text: "b", fail: true }),
    AISDKToolError,
  );
  assertEquals(error.message, '{"text":"b","fail":true}');
  assertEquals(error.toolName, "echo");
});

Deno.test("toModelOutput() gives text, in the call shapes of AI SDK 5 and of 6 and 7", async () => {
  const tool = toAISDKTools([echoTool]).echo!;
  const ok = await tool.execute({ text: "a" });
  assertEquals(tool.toModelOutput(ok), { type: "text", value: '{"text":"a"}' });
  assertEquals(
    tool.toModelOutput({ toolCallId: "c", input: {}, output: ok }),
    { type: "text", value: '{"text":"a"}' },
  );
});

Deno.test("a bad input reaches execute and comes back as a tool error with a clear message", async () => {
  const tool = toAISDKTools([echoTool]).echo!;
  await assertRejects(
    () => tool.execute({ text: 3 }),
    AISDKToolError,
    'Invalid input: Parameter "text" must be a string, got number 3',
  );
});

Deno.test("toAISDKTools() with the AI SDK's jsonSchema lets it make the schemas", () => {
  const made: unknown[] = [];
  const set = toAISDKTools([echoTool], {
    jsonSchema: (schema: unknown) => {
      made.push(schema);
      return { made: true } as const;
    },
  });
  assertEquals(set.echo!.inputSchema, { made: true });
  assertEquals(made, [echoTool.inputSchema]);
});

Deno.test("toAISDKSchema() copies the schema", () => {
  const source = { type: "object", properties: {} };
  const schema = toAISDKSchema(source);
  assert(isAISDKSchema(schema));
  assertEquals(schema.jsonSchema, source);
  assert(schema.jsonSchema !== source);
  const standard = schema["~standard"];
  assertEquals(standard.jsonSchema.input({ target: "draft-07" }), source);
  assertEquals(standard.validate({ any: 1 }), { value: { any: 1 } });
});
