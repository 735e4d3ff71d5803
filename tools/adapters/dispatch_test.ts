import { assertEquals } from "../../_internal/assert.ts";
import { dispatchToolCall } from "./dispatch.ts";
import { echoTool } from "./_fixture.ts";
import type { Tool } from "../types.ts";

Deno.test("dispatchToolCall() parses JSON arguments and runs the tool", async () => {
  assertEquals(
    await dispatchToolCall([echoTool], {
      name: "echo",
      arguments: '{"text":"hi"}',
    }),
    { text: '{"text":"hi"}', isError: false },
  );
});

Deno.test("dispatchToolCall() takes object arguments, tool_use blocks and OpenAI tool calls", async () => {
  const expected = { text: '{"text":"x"}', isError: false };
  assertEquals(
    await dispatchToolCall([echoTool], {
      name: "echo",
      arguments: { text: "x" },
    }),
    expected,
  );
  assertEquals(
    await dispatchToolCall([echoTool], { name: "echo", input: { text: "x" } }),
    expected,
  );
  assertEquals(
    await dispatchToolCall([echoTool], {
      function: { name: "echo", arguments: '{"text":"x"}' },
    }),
    expected,
  );
});

Deno.test("dispatchToolCall() reports bad JSON clearly", async () => {
  const result = await dispatchToolCall([echoTool], {
    name: "echo",
    arguments: '{"text":',
  });
  assertEquals(result.isError, true);
  assertEquals(
    result.text.startsWith(
      'Invalid arguments for tool "echo": not valid JSON (',
    ),
    true,
  );
});

Deno.test("dispatchToolCall() names the available tools for an unknown tool", async () => {
  assertEquals(
    await dispatchToolCall([echoTool], { name: "rm", arguments: "{}" }),
    {
      text: 'Unknown tool "rm": available tools are echo',
      isError: true,
    },
  );
  assertEquals(await dispatchToolCall([], { name: "rm" }), {
    text: 'Unknown tool "rm": available tools are none',
    isError: true,
  });
});

Deno.test("dispatchToolCall() treats empty arguments as no parameters", async () => {
  assertEquals(
    await dispatchToolCall([echoTool], { name: "echo", arguments: "" }),
    {
      text: 'Invalid input: Missing required parameter "text"',
      isError: true,
    },
  );
});

Deno.test("dispatchToolCall() turns a throwing tool into an error result", async () => {
  const throwing: Tool = {
    ...echoTool,
    execute: () => Promise.reject(new Error("boom")),
  };
  assertEquals(
    await dispatchToolCall([throwing], { name: "echo", arguments: "{}" }),
    {
      text: "The tool call failed: boom",
      isError: true,
    },
  );
});

Deno.test("dispatchToolCall() refuses a call without a name", async () => {
  assertEquals(
    await dispatchToolCall([echoTool], { name: "", arguments: "{}" }),
    { text: "Invalid tool call: the tool name is missing", isError: true },
  );
});
