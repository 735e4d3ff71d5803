/**
 * Tools shaped for the Vercel AI SDK (v5 and later), without importing it.
 *
 * @module
 */
import type { ToolResult } from "../types.ts";
import type { Tool } from "../types.ts";

/** The AI SDK's marker of a schema object (what `jsonSchema()` sets). */
export const AI_SDK_SCHEMA_SYMBOL: unique symbol = Symbol.for(
  "vercel.ai.schema",
) as never;
/** The AI SDK's marker of a validator object. */
export const AI_SDK_VALIDATOR_SYMBOL: unique symbol = Symbol.for(
  "vercel.ai.validator",
) as never;

/** A schema object as the AI SDK's `jsonSchema()` makes it. */
export interface AISDKSchema {
  /** Marks the object as a schema. */
  readonly [AI_SDK_SCHEMA_SYMBOL]: true;
  /** Marks the object as a validator. */
  readonly [AI_SDK_VALIDATOR_SYMBOL]: true;
  /** Type holder, always `undefined`. */
  readonly _type: undefined;
  /** The JSON Schema passed to the providers. */
  readonly jsonSchema: Readonly<Record<string, unknown>>;
  /**
   * Left `undefined`: the tool validates its input itself, so a bad input
   * reaches `execute` and comes back to the model as a clear error result.
   */
  readonly validate: undefined;
}

/** Options the AI SDK passes to `execute`. */
export interface AISDKToolCallOptions {
  /** The id of the tool call. */
  readonly toolCallId?: string;
  /** Stops the call. */
  readonly abortSignal?: AbortSignal;
}

/** A tool output for the model, as the AI SDK's `toModelOutput` returns it. */
export type AISDKModelOutput =
  | { readonly type: "text"; readonly value: string }
  | { readonly type: "error-text"; readonly value: string };

/** A tool in the shape of the AI SDK's `tool({ description, inputSchema, execute })`. */
export interface AISDKTool {
  /** What the tool does. */
  readonly description: string;
  /** The input schema, as `jsonSchema(...)` makes it. */
  readonly inputSchema: AISDKSchema;
  /**
   * Runs the tool; never throws. Its output is the {@linkcode ToolResult}
   * (`{ text, isError }`), turned into text for the model by `toModelOutput`.
   */
  execute(input: unknown, options?: AISDKToolCallOptions): Promise<ToolResult>;
  /**
   * Turns the output into what the model sees: `text`, or `error-text` for an
   * error result. Accepts the output itself (AI SDK 5) or `{ output }` (AI SDK 6).
   */
  toModelOutput(output: unknown): AISDKModelOutput;
}

/**
 * A JSON Schema wrapped the way the AI SDK's `jsonSchema()` wraps it, so it can
 * be used as a tool's `inputSchema`.
 *
 * @example Wrapping a JSON Schema
 * ```ts
 * import { assert } from "@std/assert";
 * import { toAISDKSchema } from "./ai_sdk.ts";
 * const schema = toAISDKSchema({ type: "object", properties: {} });
 * assert(schema[Symbol.for("vercel.ai.schema") as never] === true);
 * assert("validate" in schema);
 * ```
 *
 * @param schema A JSON Schema.
 * @returns The schema object.
 */
export function toAISDKSchema(
  schema: Readonly<Record<string, unknown>>,
): AISDKSchema {
  return {
    [AI_SDK_SCHEMA_SYMBOL]: true,
    [AI_SDK_VALIDATOR_SYMBOL]: true,
    _type: undefined,
    jsonSchema: structuredClone(schema),
    validate: undefined,
  };
}

function isToolResult(value: unknown): value is ToolResult {
  return value !== null && typeof value === "object" &&
    typeof (value as ToolResult).text === "string" &&
    typeof (value as ToolResult).isError === "boolean";
}

function toModelOutput(value: unknown): AISDKModelOutput {
  const output = !isToolResult(value) && value !== null &&
      typeof value === "object" && "output" in value
    ? (value as { output: unknown }).output
    : value;
  if (isToolResult(output)) {
    return output.isError
      ? { type: "error-text", value: output.text }
      : { type: "text", value: output.text };
  }
  return { type: "text", value: String(output) };
}

/**
 * The tools as an AI SDK tool set (`{ [name]: tool }`) for `generateText` or
 * `streamText`. Each entry is what the AI SDK's `tool()` returns for
 * `{ description, inputSchema: jsonSchema(...), execute, toModelOutput }`;
 * the AI SDK's abort signal reaches the tool.
 *
 * @example A tool set for generateText
 * ```ts
 * import { assert } from "@std/assert";
 * import { toAISDKTools } from "./ai_sdk.ts";
 * const tools = toAISDKTools([{
 *   name: "echo", description: "Echoes",
 *   inputSchema: { type: "object", properties: {}, required: [], additionalProperties: false },
 *   execute: () => Promise.resolve({ text: "ok", isError: false }),
 * }]);
 * const output = await tools.echo!.execute({});
 * assert(tools.echo!.toModelOutput(output).value === "ok");
 * ```
 *
 * @param tools The tools.
 * @returns The tool set, keyed by tool name.
 */
export function toAISDKTools(
  tools: readonly Tool[],
): Record<string, AISDKTool> {
  const set: Record<string, AISDKTool> = {};
  for (const tool of tools) {
    set[tool.name] = {
      description: tool.description,
      inputSchema: toAISDKSchema(
        tool.inputSchema as unknown as Record<string, unknown>,
      ),
      async execute(input, options = {}) {
        try {
          return await tool.execute(
            input,
            options.abortSignal ? { signal: options.abortSignal } : {},
          );
        } catch (error) {
          return {
            text: error instanceof Error ? error.message : String(error),
            isError: true,
          };
        }
      },
      toModelOutput,
    };
  }
  return set;
}
