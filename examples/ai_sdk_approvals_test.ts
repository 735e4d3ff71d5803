import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { MockLanguageModelV4 } from "npm:ai@7.0.173/test";
import { pathExists } from "../tests/helpers/tools.ts";
import { exampleTools } from "./_agent_shared.ts";
import {
  examplePolicy,
  runApprovalAgent,
  terminalAsker,
} from "./ai_sdk_approvals.ts";

/** Typed answers, as stdin would carry them, and what was asked. */
function keyboard(typed: string) {
  const written: string[] = [];
  const ask = terminalAsker({
    input: ReadableStream.from([new TextEncoder().encode(typed)]),
    output: {
      write: (bytes) => {
        written.push(new TextDecoder().decode(bytes));
        return Promise.resolve(bytes.length);
      },
    },
  });
  return { ask, written };
}

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

function call(toolCallId: string, toolName: string, input: unknown) {
  return {
    type: "tool-call" as const,
    toolCallId,
    toolName,
    input: JSON.stringify(input),
  };
}

Deno.test("examples/ai_sdk_approvals.ts: the person's y runs a call, n denies it, a denied rm asks nobody, the skill's allowed-tools pre-approve", async () => {
  const kit = await exampleTools("approvals-test", { approve: examplePolicy });
  try {
    const turns = [
      // Asked: y runs it, n denies it; rm -rf is denied by the policy.
      [
        call("a", "bash", { command: "touch typed-yes" }),
        call("b", "write", { file_path: "typed-no.txt", content: "x" }),
        call("c", "bash", { command: "rm -rf ." }),
      ],
      [call("d", "skill", { name: "csv-report" })],
      // csv-report's allowed-tools (bash read write): no question.
      [call("e", "bash", { command: "touch pre-approved" })],
    ];
    let turn = 0;
    const prompts: string[] = [];
    const model = new MockLanguageModelV4({
      doGenerate: (options) => {
        prompts.push(JSON.stringify(options.prompt));
        const content = turns[turn++] ??
          [{ type: "text" as const, text: "ok" }];
        return Promise.resolve({
          content,
          finishReason: {
            unified: content[0]?.type === "tool-call"
              ? "tool-calls" as const
              : "stop" as const,
            raw: undefined,
          },
          usage,
          warnings: [],
        });
      },
    });
    const { ask, written } = keyboard("y\nn\n");
    const log: string[] = [];
    const text = await runApprovalAgent({
      model,
      tools: kit.tools,
      prompt: "go",
      ask,
      log: (line) => log.push(line),
    });
    assertEquals(text, "ok");
    assertEquals(written, [
      'Allow bash {"command":"touch typed-yes"}? [y/N] ',
      'Allow write {"file_path":"typed-no.txt","content":"x"}? [y/N] ',
    ]);
    assert(await pathExists(`${kit.workspace}/typed-yes`));
    assertFalse(await pathExists(`${kit.workspace}/typed-no.txt`));
    assert(await pathExists(`${kit.workspace}/pre-approved`));
    assertStringIncludes(prompts.join("\n"), "execution-denied");
    assertStringIncludes(prompts.join("\n"), "Denied: the bash call");
    assert(log.includes("approved: bash") && log.includes("denied: write"));
  } finally {
    await kit[Symbol.asyncDispose]();
    await Deno.remove(kit.workspace, { recursive: true });
  }
});

Deno.test("examples/ai_sdk_approvals.ts: the end of input denies", async () => {
  const { ask } = keyboard("yes\n");
  assertEquals(await ask("first?"), true);
  assertEquals(await ask("second?"), false);
});

Deno.test("examples/ai_sdk_approvals.ts: without a key it ends with one clear line", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read=.",
      "--allow-env",
      "--allow-sys",
      "examples/ai_sdk_approvals.ts",
    ],
    cwd: hostPath.fromFileUrl(new URL("../", import.meta.url)),
    env: { NO_COLOR: "1" },
    clearEnv: true,
    stdin: "null",
  }).output();
  assertEquals(output.code, 1);
  assertEquals(
    new TextDecoder().decode(output.stderr),
    "error: Cannot call the model: set AI_GATEWAY_API_KEY\n",
  );
});
