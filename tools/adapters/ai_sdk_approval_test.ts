/**
 * The approval flow of the AI SDK (6 and 7, pinned, test-only) over
 * `toAISDKTools`: their own mock models ask for tool calls; a call the
 * policy asks about pauses on a `tool-approval-request`; an approving
 * `tool-approval-response` runs it and the model reads its result, a
 * denying one runs nothing and the model reads `execution-denied`; denied
 * and pre-approved calls raise no request. Marker files prove what ran.
 *
 * @module
 */
import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import * as ai6 from "npm:ai@6.0.326";
import { MockLanguageModelV3 } from "npm:ai@6.0.326/test";
import * as ai7 from "npm:ai@7.0.173";
import { MockLanguageModelV4 } from "npm:ai@7.0.173/test";
import { LocalSkillRuntime } from "../../runtimes/local/mod.ts";
import { buildSkillTools } from "../builder.ts";
import type { ToolApprovalCall } from "../approval.ts";
import { pathExists, tempDir, writeSkill } from "../../tests/helpers/tools.ts";
import { toAISDKStreamingTools, toAISDKTools } from "./ai_sdk.ts";

/** bash and write asked about, `rm` denied, everything else allowed. */
function policy(call: ToolApprovalCall) {
  const command = String(call.input.command ?? "");
  if (call.tool === "bash" && command.startsWith("rm")) return "deny" as const;
  return call.tool === "bash" || call.tool === "write" ? "ask" : "allow";
}

/** A conversation with a skill whose allowed-tools pre-approve `touch pre`. */
async function conversation() {
  const dir = await tempDir();
  await writeSkill(`${dir.path}/skills`, "marker", {
    description: "Makes markers.\nallowed-tools: Bash(touch pre)",
  });
  const runtime = await LocalSkillRuntime.create({
    conversationsRoot: `${dir.path}/conversations`,
    conversationId: "ai",
  });
  const set = await buildSkillTools({
    skills: `${dir.path}/skills`,
    runtime,
    approve: policy,
  });
  return {
    set,
    cwd: runtime.cwd,
    async [Symbol.asyncDispose]() {
      await set.close();
      await runtime.close();
      await dir[Symbol.asyncDispose]();
    },
  };
}

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** The model's turns: load the skill; then four bash calls; then text. */
function turns() {
  const prompts: unknown[] = [];
  let turn = 0;
  const doGenerate = (options: { prompt: unknown }) => {
    prompts.push(options.prompt);
    const n = turn++;
    const content = n === 0
      ? [{
        type: "tool-call" as const,
        toolCallId: "load",
        toolName: "skill",
        input: '{"name":"marker"}',
      }]
      : n === 1
      ? [
        ["pre", "touch pre"],
        ["yes", "touch yes"],
        ["no", "touch no"],
        ["rm", "rm -f pre"],
      ].map(([toolCallId, command]) => ({
        type: "tool-call" as const,
        toolCallId: toolCallId!,
        toolName: "bash",
        input: JSON.stringify({ command }),
      }))
      : [{ type: "text" as const, text: "done" }];
    return Promise.resolve({
      content,
      finishReason: {
        unified: n < 2 ? "tool-calls" as const : "stop" as const,
        raw: undefined,
      },
      usage,
      warnings: [],
    });
  };
  return { doGenerate, prompts };
}

interface FlowPart {
  type: string;
  toolCallId?: string;
  approvalId?: string;
  toolCall?: { toolCallId: string };
}

/** What both versions' first round must show, and the approvals to send. */
async function checkFirstRound(
  cwd: string,
  content: readonly FlowPart[],
): Promise<{ yes: string; no: string }> {
  const requests = content.filter((p) => p.type === "tool-approval-request");
  assertEquals(
    requests.map((p) => p.toolCall?.toolCallId).sort(),
    ["no", "yes"],
  );
  const results = content.filter((p) => p.type === "tool-result").map((p) =>
    p.toolCallId
  );
  assertEquals(results, ["load", "pre"]);
  const errors = content.filter((p) => p.type === "tool-error").map((p) =>
    p.toolCallId
  );
  assertEquals(errors, ["rm"]);
  assert(await pathExists(`${cwd}/pre`), "the pre-approved call ran");
  assertFalse(await pathExists(`${cwd}/yes`));
  assertFalse(await pathExists(`${cwd}/no`));
  const id = (callId: string) =>
    requests.find((p) => p.toolCall?.toolCallId === callId)!.approvalId!;
  return { yes: id("yes"), no: id("no") };
}

async function checkSecondRound(cwd: string, prompts: unknown[]) {
  assert(await pathExists(`${cwd}/yes`), "the approved call ran");
  assertFalse(await pathExists(`${cwd}/no`), "the denied call did not run");
  assert(await pathExists(`${cwd}/pre`), "the policy's rm was denied");
  const seen = JSON.stringify(prompts.at(-1));
  assertStringIncludes(seen, "execution-denied");
  assertStringIncludes(seen, "not today");
  assertStringIncludes(seen, "Denied: the bash call");
}

/** One `generateText` round of a version: its parts, messages and text. */
type Round = (messages: unknown[]) => Promise<{
  content: FlowPart[];
  messages: unknown[];
  text: string;
}>;

/** Both rounds of the flow, the second with a yes and a no. */
async function approvalFlow(cwd: string, prompts: unknown[], round: Round) {
  const messages: unknown[] = [{ role: "user", content: "go" }];
  const first = await round(messages);
  const { yes, no } = await checkFirstRound(cwd, first.content);
  messages.push(...first.messages, {
    role: "tool",
    content: [
      { type: "tool-approval-response", approvalId: yes, approved: true },
      {
        type: "tool-approval-response",
        approvalId: no,
        approved: false,
        reason: "not today",
      },
    ],
  });
  const second = await round(messages);
  assertEquals(second.text, "done");
  await checkSecondRound(cwd, prompts);
}

Deno.test("AI SDK 6: ask pauses on tool-approval-request; approved runs, denied is execution-denied; denied and pre-approved calls raise none", async () => {
  await using k = await conversation();
  const { doGenerate, prompts } = turns();
  const model = new MockLanguageModelV3({ doGenerate });
  const tools = toAISDKTools(k.set.tools);
  await approvalFlow(k.cwd, prompts, async (messages) => {
    const result = await ai6.generateText({
      model,
      tools,
      stopWhen: ai6.stepCountIs(5),
      messages: messages as ai6.ModelMessage[],
    });
    return {
      content: result.steps.flatMap((step) => step.content) as FlowPart[],
      messages: result.response.messages,
      text: result.text,
    };
  });
});

Deno.test("AI SDK 7: ask pauses on tool-approval-request; approved runs, denied is execution-denied; denied and pre-approved calls raise none", async () => {
  await using k = await conversation();
  const { doGenerate, prompts } = turns();
  const model = new MockLanguageModelV4({ doGenerate });
  const tools = toAISDKTools(k.set.tools);
  await approvalFlow(k.cwd, prompts, async (messages) => {
    const result = await ai7.generateText({
      model,
      tools,
      stopWhen: ai7.stepCountIs(5),
      messages: messages as ai7.ModelMessage[],
    });
    return {
      content: result.steps.flatMap((step) => step.content) as FlowPart[],
      messages: result.response.messages,
      text: result.text,
    };
  });
});

Deno.test("AI SDK 7 streamText with streaming tools: the same pause and approved run", async () => {
  await using k = await conversation();
  const { doGenerate } = turns();
  const model = new MockLanguageModelV4({
    doStream: async (options) => {
      const result = await doGenerate(options);
      const chunks = [
        ...result.content.map((part) =>
          part.type === "text"
            ? [
              { type: "text-start" as const, id: "t" },
              { type: "text-delta" as const, id: "t", delta: part.text },
              { type: "text-end" as const, id: "t" },
            ]
            : [part]
        ).flat(),
        {
          type: "finish" as const,
          finishReason: result.finishReason,
          usage: result.usage,
        },
      ];
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const chunk of chunks) controller.enqueue(chunk);
            controller.close();
          },
        }),
      };
    },
  });
  const tools = toAISDKStreamingTools(k.set.tools);
  const messages: ai7.ModelMessage[] = [{ role: "user", content: "go" }];
  const first = ai7.streamText({
    model,
    tools,
    stopWhen: ai7.stepCountIs(5),
    messages,
  });
  const content = (await first.steps).flatMap((step) => step.content);
  const { yes, no } = await checkFirstRound(k.cwd, content as FlowPart[]);
  messages.push(...(await first.response).messages, {
    role: "tool",
    content: [
      { type: "tool-approval-response", approvalId: yes, approved: true },
      { type: "tool-approval-response", approvalId: no, approved: false },
    ],
  });
  const second = ai7.streamText({
    model,
    tools,
    stopWhen: ai7.stepCountIs(5),
    messages,
  });
  assertEquals(await second.text, "done");
  assert(await pathExists(`${k.cwd}/yes`));
  assertFalse(await pathExists(`${k.cwd}/no`));
});

Deno.test("toAISDKTools(): execute without an approval in its messages does not run an asked call", async () => {
  await using k = await conversation();
  const tools = toAISDKTools(k.set.tools);
  assertEquals(await tools.bash!.needsApproval!({ command: "touch x" }), true);
  assertEquals(await tools.read!.needsApproval!({ file_path: "a" }), false);
  assertEquals(await tools.bash!.needsApproval!({ command: "rm x" }), false);
  let error: unknown;
  try {
    await tools.bash!.execute({ command: "touch x" }, {
      toolCallId: "c1",
      messages: [{
        role: "tool",
        content: [{
          type: "tool-approval-response",
          approvalId: "forged",
          approved: true,
        }],
      }],
    });
  } catch (e) {
    error = e;
  }
  assertStringIncludes(String(error), "Approval needed");
  assertFalse(await pathExists(`${k.cwd}/x`));
});
