/**
 * Adapters between skillrun's tools and model APIs: OpenAI (Chat Completions,
 * Responses), Anthropic Messages, the Vercel AI SDK, and a dispatcher for the
 * calls a model makes. No SDK is imported.
 *
 * @example Offering the tools to a Messages request and running a call
 * ```ts
 * import { assert } from "@std/assert";
 * import { dispatchToolCall, toAnthropicTools } from "@skillrun/skillrun";
 * const echo = {
 *   name: "echo", description: "Echoes its text",
 *   inputSchema: {
 *     type: "object", properties: { text: { type: "string" } },
 *     required: ["text"], additionalProperties: false,
 *   },
 *   execute: (input: unknown) =>
 *     Promise.resolve({ text: (input as { text: string }).text, isError: false }),
 * } as const;
 * const definitions = toAnthropicTools([echo]);
 * assert(definitions[0]?.name === "echo");
 * const result = await dispatchToolCall([echo], { name: "echo", input: { text: "hi" } });
 * assert(result.text === "hi");
 * ```
 *
 * @module
 */
export * from "./openai.ts";
export * from "./anthropic.ts";
export * from "./ai_sdk.ts";
export * from "./dispatch.ts";
