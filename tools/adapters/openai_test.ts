import { assertEquals } from "../../tests/helpers/assert.ts";
import {
  toOpenAIChatToolMessage,
  toOpenAIChatTools,
  toOpenAIFunctionCallOutput,
  toOpenAIResponsesTools,
  toStrictSchema,
} from "./openai.ts";
import { echoTool } from "../../tests/helpers/adapter_fixture.ts";

const parameters = {
  type: "object",
  properties: {
    text: { type: "string", description: "What to echo." },
    times: { type: "integer", minimum: 1, description: "How often." },
    fail: { type: "boolean", description: "Return an error result." },
  },
  required: ["text"],
  additionalProperties: false,
};

Deno.test("toOpenAIChatTools() gives Chat Completions function tools", () => {
  assertEquals(JSON.parse(JSON.stringify(toOpenAIChatTools([echoTool]))), [{
    type: "function",
    function: {
      name: "echo",
      description: "Echoes its input.",
      parameters,
    },
  }]);
});

Deno.test("toOpenAIResponsesTools() gives flat function tools with strict false", () => {
  assertEquals(JSON.parse(JSON.stringify(toOpenAIResponsesTools([echoTool]))), [
    {
      type: "function",
      name: "echo",
      description: "Echoes its input.",
      parameters,
      strict: false,
    },
  ]);
});

Deno.test("strict mode lists every parameter as required and makes optional ones nullable", () => {
  const expected = {
    type: "object",
    properties: {
      text: { type: "string", description: "What to echo." },
      times: {
        type: ["integer", "null"],
        minimum: 1,
        description: "How often.",
      },
      fail: {
        type: ["boolean", "null"],
        description: "Return an error result.",
      },
    },
    required: ["text", "times", "fail"],
    additionalProperties: false,
  };
  assertEquals(
    JSON.parse(JSON.stringify(toStrictSchema(echoTool.inputSchema))),
    expected,
  );
  const [chat] = toOpenAIChatTools([echoTool], { strict: true });
  assertEquals(chat?.function.strict, true);
  assertEquals(JSON.parse(JSON.stringify(chat?.function.parameters)), expected);
  const [responses] = toOpenAIResponsesTools([echoTool], { strict: true });
  assertEquals(responses?.strict, true);
});

Deno.test("strict-mode nulls are accepted by the tool as parameters not given", async () => {
  const result = await echoTool.execute({
    text: "hi",
    times: null,
    fail: null,
  });
  assertEquals(result, { text: '{"text":"hi"}', isError: false });
});

Deno.test("strict mode drops keywords OpenAI refuses and keeps enum values valid", () => {
  const strict = toStrictSchema({
    type: "object",
    properties: {
      mode: { type: "string", enum: ["a", "b"] },
      path: { type: "string", minLength: 1 },
    },
    required: ["path"],
    additionalProperties: false,
  });
  assertEquals(JSON.parse(JSON.stringify(strict.properties)), {
    mode: { type: ["string", "null"], enum: ["a", "b", null] },
    path: { type: "string" },
  });
});

Deno.test("results become a tool message and a function_call_output item", () => {
  assertEquals(
    toOpenAIChatToolMessage("call_1", { text: "ok", isError: false }),
    {
      role: "tool",
      tool_call_id: "call_1",
      content: "ok",
    },
  );
  assertEquals(
    toOpenAIFunctionCallOutput("call_2", {
      text: "no such file",
      isError: true,
    }),
    {
      type: "function_call_output",
      call_id: "call_2",
      output: "Error: no such file",
    },
  );
});

Deno.test("the definitions are copies: changing them leaves the tool alone", () => {
  const [chat] = toOpenAIChatTools([echoTool]);
  (chat!.function.parameters as { required: string[] }).required.push("times");
  assertEquals(echoTool.inputSchema.required, ["text"]);
});
