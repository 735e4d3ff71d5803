/**
 * The adapters against the real SDKs (test-only, pinned dependencies): each
 * adapter's output is compiled into each SDK's own call (no casts), and the
 * calls run for real, with the SDKs' own mock models or a loopback server.
 *
 * @module
 */
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import * as ai5 from "npm:ai@5.0.277";
import { MockLanguageModelV2 } from "npm:ai@5.0.277/test";
import * as ai6 from "npm:ai@6.0.326";
import { MockLanguageModelV3 } from "npm:ai@6.0.326/test";
import * as ai7 from "npm:ai@7.0.173";
import { MockLanguageModelV4 } from "npm:ai@7.0.173/test";
import Anthropic from "npm:@anthropic-ai/sdk@1.14.0";
import { buildSkillTools } from "../builder.ts";
import { LocalSkillRuntime } from "../../runtimes/local/mod.ts";
import { toAISDKTools } from "./ai_sdk.ts";
import { toAnthropicTools } from "./anthropic.ts";

const SKILLS = new URL("../../examples/skills", import.meta.url).pathname;

/** A conversation kit whose `read` refuses a path outside its workspace. */
async function kit() {
  const root = await Deno.makeTempDir({ prefix: "skillrun-sdk-" });
  const runtime = await LocalSkillRuntime.create({
    conversationsRoot: root,
    conversationId: "sdk",
  });
  const tools = await buildSkillTools({ skills: SKILLS, runtime });
  await Deno.writeTextFile(`${runtime.cwd}/hi.txt`, "hi\n");
  return {
    tools: tools.tools,
    async [Symbol.asyncDispose]() {
      await tools.close();
      await runtime.close();
      await Deno.remove(root, { recursive: true });
    },
  };
}

/** Two model turns: read a file in the workspace, then one outside. */
const CALLS = [
  { toolCallId: "ok", toolName: "read", input: '{"file_path":"hi.txt"}' },
  { toolCallId: "bad", toolName: "read", input: '{"file_path":"/etc/passwd"}' },
] as const;

Deno.test("AI SDK 5: toAISDKTools(tools, { jsonSchema }) type-checks as generateText tools; a refused path is a tool error", async () => {
  await using k = await kit();
  const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
  let turn = 0;
  const result = await ai5.generateText({
    model: new MockLanguageModelV2({
      doGenerate: () =>
        Promise.resolve(
          turn++ === 0
            ? {
              content: CALLS.map((c) => ({ type: "tool-call" as const, ...c })),
              finishReason: "tool-calls" as const,
              usage,
              warnings: [],
            }
            : {
              content: [{ type: "text" as const, text: "done" }],
              finishReason: "stop" as const,
              usage,
              warnings: [],
            },
        ),
    }),
    tools: toAISDKTools(k.tools, { jsonSchema: ai5.jsonSchema }),
    stopWhen: ai5.stepCountIs(2),
    prompt: "read",
  });
  const [step] = result.steps;
  assert(step);
  const ok = step.content.find((p) => p.type === "tool-result");
  const bad = step.content.find((p) => p.type === "tool-error");
  assertEquals(ok?.toolCallId, "ok");
  assertStringIncludes(String(ok?.type === "tool-result" && ok.output), "hi");
  assertEquals(bad?.toolCallId, "bad");
  assertStringIncludes(
    String(bad?.type === "tool-error" && (bad.error as Error).message),
    "outside",
  );
  assertEquals(result.text, "done");
});

Deno.test("AI SDK 6: toAISDKTools(tools) type-checks as generateText tools; a refused path is a tool error", async () => {
  await using k = await kit();
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 1, text: 1, reasoning: 0 },
  };
  let turn = 0;
  const result = await ai6.generateText({
    model: new MockLanguageModelV3({
      doGenerate: () =>
        Promise.resolve(
          turn++ === 0
            ? {
              content: CALLS.map((c) => ({ type: "tool-call" as const, ...c })),
              finishReason: { unified: "tool-calls" as const, raw: undefined },
              usage,
              warnings: [],
            }
            : {
              content: [{ type: "text" as const, text: "done" }],
              finishReason: { unified: "stop" as const, raw: undefined },
              usage,
              warnings: [],
            },
        ),
    }),
    tools: toAISDKTools(k.tools),
    stopWhen: ai6.stepCountIs(2),
    prompt: "read",
  });
  const [step] = result.steps;
  assert(step);
  const ok = step.content.find((p) => p.type === "tool-result");
  const bad = step.content.find((p) => p.type === "tool-error");
  assertEquals(ok?.toolCallId, "ok");
  assertEquals(bad?.toolCallId, "bad");
  assertStringIncludes(
    String(bad?.type === "tool-error" && (bad.error as Error).message),
    "outside",
  );
  assertEquals(result.text, "done");
});

Deno.test("AI SDK 7: toAISDKTools(tools) type-checks as generateText tools; a refused path is a tool error", async () => {
  await using k = await kit();
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 1, text: 1, reasoning: 0 },
  };
  let turn = 0;
  const result = await ai7.generateText({
    model: new MockLanguageModelV4({
      doGenerate: () =>
        Promise.resolve(
          turn++ === 0
            ? {
              content: CALLS.map((c) => ({ type: "tool-call" as const, ...c })),
              finishReason: { unified: "tool-calls" as const, raw: undefined },
              usage,
              warnings: [],
            }
            : {
              content: [{ type: "text" as const, text: "done" }],
              finishReason: { unified: "stop" as const, raw: undefined },
              usage,
              warnings: [],
            },
        ),
    }),
    tools: toAISDKTools(k.tools),
    stopWhen: ai7.stepCountIs(2),
    prompt: "read",
  });
  const [step] = result.steps;
  assert(step);
  const ok = step.content.find((p) => p.type === "tool-result");
  const bad = step.content.find((p) => p.type === "tool-error");
  assertEquals(ok?.toolCallId, "ok");
  assertEquals(bad?.toolCallId, "bad");
  assertStringIncludes(
    String(bad?.type === "tool-error" && (bad.error as Error).message),
    "outside",
  );
  assertEquals(result.text, "done");
});

Deno.test("Anthropic SDK: toAnthropicTools(tools) type-checks as messages.create tools and arrives as sent", async () => {
  await using k = await kit();
  let received: { tools?: { name: string; input_schema: unknown }[] } = {};
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      received = await request.json();
      return Response.json({
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-test",
        content: [{ type: "text", text: "ok" }],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 1 },
      });
    },
  );
  const client = new Anthropic({
    apiKey: "test-key",
    baseURL: `http://127.0.0.1:${server.addr.port}`,
    maxRetries: 0,
  });
  const tools = toAnthropicTools(k.tools);
  const message = await client.messages.create({
    model: "claude-test",
    max_tokens: 16,
    messages: [{ role: "user", content: "hi" }],
    tools,
  });
  assertEquals(message.content[0]?.type, "text");
  assertEquals(
    received.tools?.map((t) => t.name),
    tools.map((t) => t.name),
  );
  assertEquals(received.tools?.[0]?.input_schema, tools[0]?.input_schema);
});
