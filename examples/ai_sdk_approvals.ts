/**
 * An AI SDK agent whose `bash`, `write` and `edit` calls wait for the person
 * at the keyboard: the tool set's approval policy answers `"ask"` for them
 * (and `"deny"` for `rm -rf`), `toAISDKTools` turns that into the AI SDK's
 * own `needsApproval`, and the loop answers each `tool-approval-request`
 * with what was typed (`y` runs the call; anything else denies it and the
 * model reads `execution-denied`). A skill's `allowed-tools` pre-approve the
 * calls they cover once the skill is loaded.
 *
 * Run it with an AI Gateway key (the model id as the AI SDK's gateway names
 * it; the workspace goes to `.skillrun/approvals-<time>`):
 *
 * ```sh
 * AI_GATEWAY_API_KEY=... npx -y deno@2.9.6 run --allow-net --allow-env --allow-sys \
 *   --allow-read=. --allow-write=.skillrun --allow-run=bash \
 *   examples/ai_sdk_approvals.ts "Summarise the sample sales data with the csv-report skill"
 * ```
 *
 * @module
 */
import {
  generateText,
  type LanguageModel,
  type ModelMessage,
  stepCountIs,
} from "npm:ai@7.0.173";
import {
  toAISDKTools,
  type ToolApprovalCall,
  type ToolApprovalDecision,
} from "@skillrun/skillrun";
import {
  DEFAULT_PROMPT,
  envVar,
  exampleTools,
  runMain,
} from "./_agent_shared.ts";

/**
 * The example's policy: `rm -rf` is denied, `bash`, `write` and `edit` are
 * asked about, everything else (reading, listing, searching, loading a
 * skill) runs.
 *
 * @param call The call.
 * @returns The decision.
 */
export function examplePolicy(call: ToolApprovalCall): ToolApprovalDecision {
  const command = typeof call.input.command === "string"
    ? call.input.command
    : "";
  if (
    call.tool === "bash" && /\brm\s+-\w*r\w*f|\brm\s+-\w*f\w*r/.test(command)
  ) {
    return "deny";
  }
  return ["bash", "write", "edit"].includes(call.tool) ? "ask" : "allow";
}

/** What the terminal asker reads from and writes to. */
export interface TerminalStreams {
  /** Where answers are typed (default stdin). */
  readonly input: ReadableStream<Uint8Array>;
  /** Where questions are written (default stderr). */
  readonly output: { write(bytes: Uint8Array): Promise<number> };
}

/** Asks a question about one call and says whether the answer was yes. */
export type Asker = (question: string) => Promise<boolean>;

/**
 * Asks at the terminal: writes the question and `[y/N]`, reads one line;
 * `y` or `yes` approves, anything else (and the end of input) denies.
 *
 * @param streams Where to read and write (default stdin and stderr).
 * @returns The asker.
 */
export function terminalAsker(
  streams: TerminalStreams = {
    input: Deno.stdin.readable,
    output: Deno.stderr,
  },
): Asker {
  const lines = streams.input.pipeThrough(new TextDecoderStream())
    .getReader();
  let buffered = "";
  const encoder = new TextEncoder();
  return async (question) => {
    await streams.output.write(encoder.encode(`${question} [y/N] `));
    while (!buffered.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) break;
      buffered += value;
    }
    const end = buffered.indexOf("\n");
    const line = end === -1 ? buffered : buffered.slice(0, end);
    buffered = end === -1 ? "" : buffered.slice(end + 1);
    return /^\s*y(es)?\s*$/i.test(line);
  };
}

/** Options of {@linkcode runApprovalAgent}. */
export interface ApprovalAgentOptions {
  /** The model (an AI SDK model object or a gateway id). */
  readonly model: LanguageModel;
  /** The tools (from `buildSkillTools({ approve })`). */
  readonly tools: Parameters<typeof toAISDKTools>[0];
  /** The user's request. */
  readonly prompt: string;
  /** Asks the person at the keyboard. */
  readonly ask: Asker;
  /** Receives a line for each tool call and answer. Default none. */
  readonly log?: (line: string) => void;
  /** The most rounds of approvals. Default 20. */
  readonly maxRounds?: number;
}

/**
 * Runs the agent until the model answers without pending approvals: each
 * round is a `generateText` call; its `tool-approval-request` parts are put
 * to the person, and their answers go back as a `tool` message of
 * `tool-approval-response` parts for the next round.
 *
 * @param options Model, tools, prompt, asker.
 * @returns The model's final text.
 */
export async function runApprovalAgent(
  options: ApprovalAgentOptions,
): Promise<string> {
  const tools = toAISDKTools(options.tools);
  const messages: ModelMessage[] = [{ role: "user", content: options.prompt }];
  for (let round = 0; round < (options.maxRounds ?? 20); round++) {
    const result = await generateText({
      model: options.model,
      tools,
      stopWhen: stepCountIs(10),
      messages,
    });
    messages.push(...result.response.messages);
    for (const step of result.steps) {
      for (const part of step.content) {
        if (part.type === "tool-result" || part.type === "tool-error") {
          options.log?.(`→ ${part.toolName} ${JSON.stringify(part.input)}`);
        }
      }
    }
    const requests = result.content.filter((part) =>
      part.type === "tool-approval-request"
    );
    if (requests.length === 0) return result.text;
    const answers = [];
    for (const request of requests) {
      const { toolName, input } = request.toolCall;
      const approved = await options.ask(
        `Allow ${toolName} ${JSON.stringify(input)}?`,
      );
      options.log?.(`${approved ? "approved" : "denied"}: ${toolName}`);
      answers.push({
        type: "tool-approval-response" as const,
        approvalId: request.approvalId,
        approved,
        ...(approved ? {} : { reason: "the user said no" }),
      });
    }
    messages.push({ role: "tool", content: answers });
  }
  throw new Error(
    `Cannot finish: the model kept asking for approvals after ${
      options.maxRounds ?? 20
    } rounds`,
  );
}

if (import.meta.main) {
  await runMain(async () => {
    if (!envVar("AI_GATEWAY_API_KEY")) {
      throw new Error("Cannot call the model: set AI_GATEWAY_API_KEY");
    }
    await using kit = await exampleTools("approvals", {
      approve: examplePolicy,
    });
    console.error(`(workspace: ${kit.workspace})`);
    const text = await runApprovalAgent({
      model: envVar("AI_MODEL") ?? "openai/gpt-5-mini",
      tools: kit.tools,
      prompt: Deno.args.join(" ") || DEFAULT_PROMPT,
      ask: terminalAsker(),
      log: (line) => console.error(line),
    });
    console.log(text);
  });
}
