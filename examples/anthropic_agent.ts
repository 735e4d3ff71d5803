/**
 * An agent loop on the Anthropic Messages API with skillrun's tools.
 *
 * The model is a function `(request) => response` in the API's own JSON shape:
 * {@linkcode anthropicMessagesModel} calls the real API with `fetch`; a test
 * passes a scripted stand-in instead.
 *
 * Run it with a key (the workspace goes to `.skillrun/anthropic-<time>`):
 *
 * ```sh
 * ANTHROPIC_API_KEY=sk-ant-... deno run --allow-net=api.anthropic.com \
 *   --allow-env=ANTHROPIC_API_KEY,ANTHROPIC_MODEL,ANTHROPIC_BASE_URL,PATH --allow-read=. \
 *   --allow-write=.skillrun --allow-run=bash examples/anthropic_agent.ts \
 *   "Summarise the sample sales data with the csv-report skill"
 * ```
 *
 * @module
 */
import {
  apiMessage,
  DEFAULT_PROMPT,
  envVar,
  exampleTools,
  runMain,
} from "./_agent_shared.ts";
import type {
  AnthropicTool,
  AnthropicToolResultBlock,
} from "@skillrun/skillrun/tools";
import {
  dispatchToolCall,
  toAnthropicToolResult,
  toAnthropicTools,
  type Tool,
} from "@skillrun/skillrun";

/** A text block. */
export interface TextBlock {
  /** Always `"text"`. */
  readonly type: "text";
  /** The text. */
  readonly text: string;
}

/** A `tool_use` block: the model calls a tool. */
export interface ToolUseBlock {
  /** Always `"tool_use"`. */
  readonly type: "tool_use";
  /** The call's id, echoed by the `tool_result` answering it. */
  readonly id: string;
  /** The tool's name. */
  readonly name: string;
  /** The arguments. */
  readonly input: unknown;
}

/** A block of an assistant message (other kinds, e.g. thinking, are kept as they are). */
export type AssistantBlock = TextBlock | ToolUseBlock | {
  readonly type: string;
};

/** A message of a Messages API conversation. */
export type AnthropicMessage =
  | {
    readonly role: "user";
    readonly content: string | readonly AnthropicToolResultBlock[];
  }
  | { readonly role: "assistant"; readonly content: readonly AssistantBlock[] };

/** The body of `POST /v1/messages`, as this loop sends it. */
export interface MessagesRequest {
  /** The model's name. */
  readonly model: string;
  /** The most tokens of one answer. */
  readonly max_tokens: number;
  /** The system prompt. */
  readonly system: string;
  /** The conversation so far. */
  readonly messages: readonly AnthropicMessage[];
  /** The tools offered. */
  readonly tools: readonly AnthropicTool[];
}

/** The parts of a Messages API response this loop reads. */
export interface MessagesResponse {
  /** The answer's blocks. */
  readonly content: readonly AssistantBlock[];
  /** Why the model stopped: `tool_use`, `end_turn`, `max_tokens`... */
  readonly stop_reason: string | null;
}

/** A model: takes a request, returns a response, both in the API's JSON shape. */
export type MessagesModel = (
  request: MessagesRequest,
  options: { readonly signal?: AbortSignal },
) => Promise<MessagesResponse>;

/** Options of {@linkcode anthropicMessagesModel}. */
export interface AnthropicMessagesModelOptions {
  /** The API key. Default: the `ANTHROPIC_API_KEY` environment variable. */
  readonly apiKey?: string;
  /** The API's base URL. Default: `ANTHROPIC_BASE_URL` or `https://api.anthropic.com/v1`. */
  readonly baseUrl?: string;
}

/** The `anthropic-version` header sent. */
export const ANTHROPIC_VERSION = "2023-06-01";

/**
 * A {@linkcode MessagesModel} that calls the Messages API with `fetch`.
 *
 * Permissions: `--allow-net` to the API's host; `--allow-env=ANTHROPIC_API_KEY`
 * when no key is given, `--allow-env=ANTHROPIC_BASE_URL` when no base URL is given.
 *
 * @param options The key and base URL.
 * @returns The model function. It throws an `Error` naming the HTTP status and
 * the API's message when the API refuses a request.
 * @throws {TypeError} No key given and `ANTHROPIC_API_KEY` is not set.
 *
 * @example Building the model with an explicit key
 * ```ts
 * import { anthropicMessagesModel } from "./anthropic_agent.ts";
 * import { assert } from "@std/assert";
 * const model = anthropicMessagesModel({ apiKey: "sk-ant-test" });
 * assert(typeof model === "function");
 * ```
 */
export function anthropicMessagesModel(
  options: AnthropicMessagesModelOptions = {},
): MessagesModel {
  const apiKey = options.apiKey ?? Deno.env.get("ANTHROPIC_API_KEY");
  if (!apiKey) {
    throw new TypeError(
      "Cannot call the Anthropic API: set ANTHROPIC_API_KEY or pass apiKey",
    );
  }
  const url = `${
    (options.baseUrl ?? envVar("ANTHROPIC_BASE_URL") ??
      "https://api.anthropic.com/v1")
      .replace(/\/$/, "")
  }/messages`;
  return async (request, { signal }) => {
    const response = await fetch(url, {
      method: "POST",
      headers: {
        "x-api-key": apiKey,
        "anthropic-version": ANTHROPIC_VERSION,
        "content-type": "application/json",
      },
      body: JSON.stringify(request),
      ...(signal ? { signal } : {}),
    });
    if (!response.ok) {
      const body = await response.text().catch(() => "");
      throw new Error(
        `Anthropic API error ${response.status}: ${apiMessage(body)}`,
      );
    }
    return await response.json() as MessagesResponse;
  };
}

/** One tool call the loop ran. */
export interface ToolUseRecord {
  /** The tool's name. */
  readonly name: string;
  /** The arguments as the model sent them. */
  readonly input: unknown;
  /** The tool's result text. */
  readonly text: string;
  /** Whether the tool reported an error. */
  readonly isError: boolean;
}

/** Options of {@linkcode runAnthropicAgent}. */
export interface AnthropicAgentOptions {
  /** The tools offered to the model. */
  readonly tools: readonly Tool[];
  /** The model function. Default {@linkcode anthropicMessagesModel}. */
  readonly model?: MessagesModel;
  /** The model's name. Default `ANTHROPIC_MODEL` or `claude-sonnet-4-5`. */
  readonly modelName?: string;
  /** The most tokens of one answer. Default 4096. */
  readonly maxTokens?: number;
  /** The system prompt. */
  readonly system?: string;
  /** The most model calls. Default 20. */
  readonly maxTurns?: number;
  /** Stops the loop, the model call and the running tool. */
  readonly signal?: AbortSignal;
  /** Called after each tool call (e.g. to print a transcript). */
  readonly onToolCall?: (record: ToolUseRecord) => void;
}

/** What {@linkcode runAnthropicAgent} returns. */
export interface AnthropicAgentResult {
  /** The model's final answer (its text blocks joined). */
  readonly text: string;
  /** The whole conversation. */
  readonly messages: readonly AnthropicMessage[];
  /** The tool calls, in order. */
  readonly toolCalls: readonly ToolUseRecord[];
  /** How many times the model was called. */
  readonly turns: number;
}

/** The system prompt used when none is given. */
export const DEFAULT_SYSTEM =
  "You are a helpful agent. Use the skill tool to load a skill when a task matches one, then follow its instructions with the other tools.";

/**
 * Runs the loop: calls the model with the tools; runs every `tool_use` block
 * (through {@linkcode dispatchToolCall}) and answers them all in one user
 * message of `tool_result` blocks; stops at the first answer without
 * `tool_use`.
 *
 * Permissions: what the model function and the tools need.
 *
 * @param prompt The user's message.
 * @param options The tools, the model and limits.
 * @returns The final answer, the conversation and the tool calls.
 * @throws {RangeError} The model still calls tools after `maxTurns` calls.
 * @throws {Error} The model function failed (e.g. an HTTP error).
 *
 * @example A scripted model that answers at once
 * ```ts
 * import { runAnthropicAgent } from "./anthropic_agent.ts";
 * import { assert } from "@std/assert";
 * const result = await runAnthropicAgent("Hi", {
 *   tools: [],
 *   model: () =>
 *     Promise.resolve({ content: [{ type: "text", text: "Hello!" }], stop_reason: "end_turn" }),
 * });
 * assert(result.text === "Hello!" && result.turns === 1);
 * ```
 */
export async function runAnthropicAgent(
  prompt: string,
  options: AnthropicAgentOptions,
): Promise<AnthropicAgentResult> {
  const model = options.model ?? anthropicMessagesModel();
  const modelName = options.modelName ?? defaultModelName();
  const maxTurns = options.maxTurns ?? 20;
  const signal = options.signal;
  const tools = toAnthropicTools(options.tools);
  const messages: AnthropicMessage[] = [{ role: "user", content: prompt }];
  const toolCalls: ToolUseRecord[] = [];
  for (let turn = 1; turn <= maxTurns; turn++) {
    signal?.throwIfAborted();
    const response = await model({
      model: modelName,
      max_tokens: options.maxTokens ?? 4096,
      system: options.system ?? DEFAULT_SYSTEM,
      messages: [...messages],
      tools,
    }, signal ? { signal } : {});
    messages.push({ role: "assistant", content: response.content });
    const uses = response.content.filter(isToolUse);
    if (uses.length === 0) {
      const text = response.content.filter(isText).map((b) => b.text).join(
        "\n",
      );
      return { text, messages, toolCalls, turns: turn };
    }
    const results: AnthropicToolResultBlock[] = [];
    for (const use of uses) {
      const result = await dispatchToolCall(
        options.tools,
        use,
        signal ? { signal } : {},
      );
      const record = {
        name: use.name,
        input: use.input,
        text: result.text,
        isError: result.isError,
      };
      toolCalls.push(record);
      options.onToolCall?.(record);
      results.push(toAnthropicToolResult(use.id, result));
    }
    messages.push({ role: "user", content: results });
  }
  throw new RangeError(
    `Cannot finish the task: the model still called tools after ${maxTurns} turns`,
  );
}

function isToolUse(block: AssistantBlock): block is ToolUseBlock {
  return block.type === "tool_use";
}

function isText(block: AssistantBlock): block is TextBlock {
  return block.type === "text";
}

function defaultModelName(): string {
  return envVar("ANTHROPIC_MODEL") ?? "claude-sonnet-4-5";
}

if (import.meta.main) {
  await runMain(async () => {
    const prompt = Deno.args.join(" ") || DEFAULT_PROMPT;
    await using example = await exampleTools("anthropic");
    const result = await runAnthropicAgent(prompt, {
      tools: example.tools,
      onToolCall: (call) =>
        console.error(
          `→ ${call.name} ${JSON.stringify(call.input)}${
            call.isError ? " (error)" : ""
          }`,
        ),
    });
    console.log(result.text);
    console.error(`(workspace: ${example.workspace})`);
  });
}
