import {
  assertEquals,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { dispatchToolCall } from "./dispatch.ts";
import { echoTool } from "../../tests/helpers/adapter_fixture.ts";
import type { Tool } from "../types.ts";
import { pathExists } from "../../tests/helpers/tools.ts";
import { buildSkillTools } from "../builder.ts";
import { LocalSkillRuntime } from "../../runtimes/local/mod.ts";

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

Deno.test("dispatchToolCall() runs the real tools from every provider's call shape", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await Deno.mkdir(`${dir}/hello`);
    await Deno.writeTextFile(
      `${dir}/hello/SKILL.md`,
      "---\nname: hello\ndescription: Says hello.\n---\nRun `echo hello`.\n",
    );
    const { buildSkillTools } = await import("../builder.ts");
    const { LocalSkillRuntime } = await import("../../runtimes/local/mod.ts");
    await using set = await buildSkillTools({
      skills: dir,
      runtime: new LocalSkillRuntime({ cwd: dir }),
    });
    // OpenAI Chat Completions tool call.
    const loaded = await dispatchToolCall(set.tools, {
      function: { name: "skill", arguments: '{"name":"hello"}' },
    });
    assertEquals(loaded.isError, false);
    assertEquals(loaded.text.includes("Run `echo hello`."), true);
    // Anthropic tool_use block.
    assertEquals(
      await dispatchToolCall(set.tools, {
        name: "bash",
        input: { command: "echo hello" },
      }),
      { text: "hello\n", isError: false },
    );
    // Responses API function_call (arguments as a JSON string).
    assertEquals(
      await dispatchToolCall(set.tools, {
        name: "read",
        arguments: '{"file_path":"hello/SKILL.md","offset":5}',
      }),
      {
        text:
          `File: ${dir}/hello/SKILL.md (lines 5-5 of 5)\n     5\tRun \`echo hello\`.`,
        isError: false,
      },
    );
    assertEquals(
      await dispatchToolCall(set.tools, {
        name: "read",
        arguments: '{"path":"x"}',
      }),
      {
        text:
          'Invalid input:\n- Unknown parameter "path": expected one of file_path, offset, limit\n- Missing required parameter "file_path"',
        isError: true,
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("dispatchToolCall()'s options show as optional in deno doc", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--filter", "dispatchToolCall", "tools/adapters/dispatch.ts"],
    cwd: new URL("../../", import.meta.url),
    env: { NO_COLOR: "1" },
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  const signature = text.split("\n").find((l) =>
    l.includes("function dispatchToolCall")
  );
  assertEquals(output.code, 0, new TextDecoder().decode(output.stderr));
  assertStringIncludes(signature ?? text, "options?: ToolCallOptions");
});

Deno.test("dispatchToolCall(): a call the policy asks about answers needsApproval and runs nothing; { approved: true } runs it", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await using set = await buildSkillTools({
      runtime: new LocalSkillRuntime({ cwd: dir }),
      tools: ["bash"],
      approve: () => "ask",
    });
    const call = { name: "bash", arguments: '{"command":"touch marker"}' };
    const first = await dispatchToolCall(set.tools, call);
    assertEquals(first.needsApproval, true);
    assertEquals(first.approval, {
      tool: "bash",
      input: { command: "touch marker" },
    });
    const again = await dispatchToolCall(set.tools, call);
    assertEquals(again.needsApproval, true);
    assertEquals(await pathExists(`${dir}/marker`), false);
    const approved = await dispatchToolCall(set.tools, call, {
      approved: true,
    });
    assertEquals(approved, { text: "(no output)", isError: false });
    assertEquals(await pathExists(`${dir}/marker`), true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
