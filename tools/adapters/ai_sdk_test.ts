import { assert, assertEquals } from "../../_internal/assert.ts";
import { toAISDKSchema, toAISDKTools } from "./ai_sdk.ts";
import { echoTool } from "./_fixture.ts";

// What the AI SDK (5 and 6) checks in `asSchema`/`isSchema` and `isValidator`.
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

Deno.test("execute() passes the AI SDK's abortSignal on and returns the ToolResult", async () => {
  const tool = toAISDKTools([echoTool]).echo!;
  const output = await tool.execute({ text: "hi" }, {
    toolCallId: "c1",
    abortSignal: new AbortController().signal,
  });
  assertEquals(output, { text: '{"text":"hi"} (signal)', isError: false });
});

Deno.test("toModelOutput() maps results to text and error-text, in the v5 and v6 call shapes", async () => {
  const tool = toAISDKTools([echoTool]).echo!;
  const ok = await tool.execute({ text: "a" });
  const bad = await tool.execute({ text: "b", fail: true });
  assertEquals(tool.toModelOutput(ok), { type: "text", value: '{"text":"a"}' });
  assertEquals(tool.toModelOutput(bad), {
    type: "error-text",
    value: '{"text":"b","fail":true}',
  });
  assertEquals(
    tool.toModelOutput({ toolCallId: "c", input: {}, output: bad }).type,
    "error-text",
  );
});

Deno.test("a bad input reaches execute and comes back as an error result", async () => {
  const tool = toAISDKTools([echoTool]).echo!;
  const output = await tool.execute({ text: 3 });
  assertEquals(output, {
    text: 'Invalid input: Parameter "text" must be a string, got number 3',
    isError: true,
  });
});

Deno.test("toAISDKSchema() copies the schema", () => {
  const source = { type: "object", properties: {} };
  const schema = toAISDKSchema(source);
  assert(isAISDKSchema(schema));
  assertEquals(schema.jsonSchema, source);
  assert(schema.jsonSchema !== source);
});
