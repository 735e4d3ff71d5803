/**
 * An agent loop on the OpenAI Chat Completions API with skillrun's tools.
 *
 * The model is a function `(request) => response` in the API's own JSON shape:
 * {@linkcode openAIChatModel} calls the real API with `fetch`; a test passes a
 * scripted stand-in instead.
 *
 * Run it with a key (the workspace goes to `.skillrun/openai-<time>`):
 *
 * ```sh
 * OPENAI_API_KEY=sk-... deno run --allow-net=api.openai.com \
 *   --allow-env=OPENAI_API_KEY,OPENAI_MODEL,OPENAI_BASE_URL,PATH --allow-read=. \
 *   --allow-write=.skillrun --allow-run=bash examples/openai_agent.ts \
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
import type { OpenAIChatTool } from "@skillrun/skillrun/tools";
import {
  dispatchToolCall,
  type Tool,
  toOpenAIChatToolMessage,
  toOpenAIChatTools,
} from "@skillrun/skillrun";

/** A tool call in an assistant message. */
export interface ChatToolCall {
  /** The call's id, echoed by the `tool` message answering it. */
  readonly id: string;
  /** Always `"function"`. */
  readonly type: "function";
  /** The function called and its arguments as a JSON string. */
  readonly function: { readonly name: string; readonly arguments: string };
}

/** A message of a chat completion conversation. */
export type ChatMessage =
  | { readonly role: "system" | "user"; readonly content: string }
  | {
    readonly role: "assistant";
    readonly content: string | null;
    readonly tool_calls?: readonly ChatToolCall[];
  }
  | {
    readonly role: "tool";
    readonly tool_call_id: string;
    readonly content: string;
  };

/** The body of `POST /v1/chat/completions`, as this loop sends it. */
export interface ChatRequest {
  /** The model's name. */
  readonly model: string;
  /** The conversation so far. */
  readonly messages: readonly ChatMessage[];
  /** The tools offered. */
  readonly tools: readonly OpenAIChatTool[];
}

/** The parts of a chat completion this loop reads. */
export interface ChatResponse {
  /** The choices; the loop reads the first. */
  readonly choices: readonly {
    readonly message: Extract<ChatMessage, { role: "assistant" }>;
    readonly finish_reason: string;
  }[];
}

/** A model: takes a request, returns a response, both in the API's JSON shape. */
export type ChatModel = (
  request: ChatRequest,
  options: { readonly signal?: AbortSignal },
) => Promise<ChatResponse>;

/** Options of {@linkcode openAIChatModel}. */
export interface OpenAIChatModelOptions {
  /** The API key. Default: the `OPENAI_API_KEY` environment variable. */
  readonly apiKey?: string;
  /** The API's base URL. Default: `OPENAI_BASE_URL` or `https://api.openai.com/v1`. */
  readonly baseUrl?: string;
}

/**
 * A {@linkcode ChatModel} that calls the Chat Completions API with `fetch`.
 *
 * Permissions: `--allow-net` to the API's host; `--allow-env=OPENAI_API_KEY`
 * when no key is given, `--allow-env=OPENAI_BASE_URL` when no base URL is given.
 *
 * @param options The key and base URL.
 * @returns The model function. It throws an `Error` naming the HTTP status and
 * the API's message when the API refuses a request.
 * @throws {TypeError} No key given and `OPENAI_API_KEY` is not set.
 *
 * @example Building the model with an explicit key
 * ```ts
 * import { openAIChatModel } from "./openai_agent.ts";
 * import { assert } from "@std/assert";
 * const model = openAIChatModel({ apiKey: "sk-test" });
 * assert(typeof model === "function");
 * ```
 */
export function openAIChatModel(
  options: OpenAIChatModelOptions = {},
): ChatModel {
  const apiKey = options.apiKey ?? Deno.env.get("OPENAI_API_KEY");
  if (!apiKey) {
    throw new TypeError(
      "Cannot call the OpenAI API: set OPENAI_API_KEY or pass apiKey",
    );
  }
  const url = `${
    (options.baseUrl ?? envVar("OPENAI_BASE_URL") ??
      "https://api.openai.com/v1")
      .replace(/\/$/, "")
  }/chat/completions`;
  return async (request, { signal }) => {
    const response = await fetch(url, {
      method: "POST",
      headers: {
        "authorization": `Bearer ${apiKey}`,
        "content-type": "application/json",
      },
      body: JSON.stringify(request),
      ...(signal ? { signal } : {}),
    });
    if (!response.ok) {
      const body = await response.text().catch(() => "");
      throw new Error(
        `OpenAI API error ${response.status}: ${apiMessage(body)}`,
      );
    }
    return await response.json() as ChatResponse;
  };
}

/** One tool call the loop ran. */
export interface ToolCallRecord {
  /** The tool's name. */
  readonly name: string;
  /** The arguments as the model sent them (a JSON string). */
  readonly arguments: string;
  /** The tool's result text. */
  readonly text: string;
  /** Whether the tool reported an error. */
  readonly isError: boolean;
}

/** Options of {@linkcode runOpenAIAgent}. */
export interface OpenAIAgentOptions {
  /** The tools offered to the model. */
  readonly tools: readonly Tool[];
  /** The model function. Default {@linkcode openAIChatModel}. */
  readonly model?: ChatModel;
  /** The model's name. Default `OPENAI_MODEL` or `gpt-4.1-mini`. */
  readonly modelName?: string;
  /** The system message. */
  readonly system?: string;
  /** The most model calls. Default 20. */
  readonly maxTurns?: number;
  /** Stops the loop, the model call and the running tool. */
  readonly signal?: AbortSignal;
  /** Called after each tool call (e.g. to print a transcript). */
  readonly onToolCall?: (record: ToolCallRecord) => void;
}

/** What {@linkcode runOpenAIAgent} returns. */
export interface OpenAIAgentResult {
  /** The model's final answer. */
  readonly text: string;
  /** The whole conversation. */
  readonly messages: readonly ChatMessage[];
  /** The tool calls, in order. */
  readonly toolCalls: readonly ToolCallRecord[];
  /** How many times the model was called. */
  readonly turns: number;
}

/** The system message used when none is given. */
export const DEFAULT_SYSTEM =
  "You are a helpful agent. Use the skill tool to load a skill when a task matches one, then follow its instructions with the other tools.";

/**
 * Runs the loop: calls the model with the tools; runs every tool call it makes
 * (through {@linkcode dispatchToolCall}) and answers with `tool` messages;
 * stops at the first answer without tool calls.
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
 * import { runOpenAIAgent } from "./openai_agent.ts";
 * import { assert } from "@std/assert";
 * const result = await runOpenAIAgent("Hi", {
 *   tools: [],
 *   model: () =>
 *     Promise.resolve({
 *       choices: [{ message: { role: "assistant", content: "Hello!" }, finish_reason: "stop" }],
 *     }),
 * });
 * assert(result.text === "Hello!" && result.turns === 1);
 * ```
 */
export async function runOpenAIAgent(
  prompt: string,
  options: OpenAIAgentOptions,
): Promise<OpenAIAgentResult> {
  const model = options.model ?? openAIChatModel();
  const modelName = options.modelName ?? defaultModelName();
  const maxTurns = options.maxTurns ?? 20;
  const signal = options.signal;
  const tools = toOpenAIChatTools(options.tools);
  const messages: ChatMessage[] = [
    { role: "system", content: options.system ?? DEFAULT_SYSTEM },
    { role: "user", content: prompt },
  ];
  const toolCalls: ToolCallRecord[] = [];
  for (let turn = 1; turn <= maxTurns; turn++) {
    signal?.throwIfAborted();
    const response = await model(
      { model: modelName, messages: [...messages], tools },
      signal ? { signal } : {},
    );
    const message = response.choices[0]?.message;
    if (!message) throw new Error("The model returned no choice");
    messages.push(message);
    const calls = message.tool_calls ?? [];
    if (calls.length === 0) {
      return { text: message.content ?? "", messages, toolCalls, turns: turn };
    }
    for (const call of calls) {
      const result = await dispatchToolCall(
        options.tools,
        call,
        signal ? { signal } : {},
      );
      const record = {
        name: call.function.name,
        arguments: call.function.arguments,
        text: result.text,
        isError: result.isError,
      };
      toolCalls.push(record);
      options.onToolCall?.(record);
      messages.push(toOpenAIChatToolMessage(call.id, result));
    }
  }
  throw new RangeError(
    `Cannot finish the task: the model still called tools after ${maxTurns} turns`,
  );
}

function defaultModelName(): string {
  return envVar("OPENAI_MODEL") ?? "gpt-4.1-mini";
}

if (import.meta.main) {
  await runMain(async () => {
    const prompt = Deno.args.join(" ") || DEFAULT_PROMPT;
    await using example = await exampleTools("openai");
    const result = await runOpenAIAgent(prompt, {
      tools: example.tools,
      onToolCall: (call) =>
        console.error(
          `→ ${call.name} ${call.arguments}${call.isError ? " (error)" : ""}`,
        ),
    });
    console.log(result.text);
    console.error(`(workspace: ${example.workspace})`);
  });
}
