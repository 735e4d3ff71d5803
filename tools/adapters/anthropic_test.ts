import { assertEquals } from "../../tests/helpers/assert.ts";
import { toAnthropicToolResult, toAnthropicTools } from "./anthropic.ts";
import { echoTool } from "../../tests/helpers/adapter_fixture.ts";

Deno.test("toAnthropicTools() gives Messages API tools with input_schema", () => {
  assertEquals(JSON.parse(JSON.stringify(toAnthropicTools([echoTool]))), [{
    name: "echo",
    description: "Echoes its input.",
    input_schema: {
      type: "object",
      properties: {
        text: { type: "string", description: "What to echo." },
        times: { type: "integer", minimum: 1, description: "How often." },
        fail: { type: "boolean", description: "Return an error result." },
      },
      required: ["text"],
      additionalProperties: false,
    },
  }]);
});

Deno.test("toAnthropicToolResult() gives a tool_result block with is_error", () => {
  assertEquals(
    toAnthropicToolResult("toolu_01", { text: "boom", isError: true }),
    {
      type: "tool_result",
      tool_use_id: "toolu_01",
      content: "boom",
      is_error: true,
    },
  );
  assertEquals(
    toAnthropicToolResult("toolu_02", { text: "fine", isError: false })
      .is_error,
    false,
  );
});
