/**
 * Tool definitions and results in the shapes of the Anthropic Messages API,
 * without the Anthropic SDK.
 *
 * @module
 */
import type { Tool, ToolResult } from "../types.ts";

/** The JSON Schema of a tool's input, as the Messages API types it. */
export interface AnthropicInputSchema {
  /** Always `"object"`. */
  type: "object";
  /** The parameters. */
  properties?: Record<string, unknown>;
  /** The required parameters. */
  required?: string[];
  /** The rest of the JSON Schema (`additionalProperties`...). */
  [keyword: string]: unknown;
}

/** A client tool of the Messages API (`tools[]`). */
export interface AnthropicTool {
  /** The tool's name. */
  readonly name: string;
  /** What it does. */
  readonly description: string;
  /** Its input's JSON Schema (`type: "object"`). */
  readonly input_schema: AnthropicInputSchema;
}

/** A `tool_result` content block answering a `tool_use` block. */
export interface AnthropicToolResultBlock {
  /** Always `"tool_result"`. */
  readonly type: "tool_result";
  /** The `id` of the `tool_use` block answered. */
  readonly tool_use_id: string;
  /** The result's text. */
  readonly content: string;
  /** Whether the call failed. */
  readonly is_error: boolean;
}

/**
 * The tools as Messages API tools: `{ name, description, input_schema }`.
 *
 * @example Tool definitions for a Messages request
 * ```ts
 * import { assert } from "@std/assert";
 * import { toAnthropicTools } from "@skillrun/skillrun";
 * const [definition] = toAnthropicTools([{
 *   name: "echo", description: "Echoes",
 *   inputSchema: { type: "object", properties: {}, required: [], additionalProperties: false },
 *   execute: () => Promise.resolve({ text: "", isError: false }),
 * }]);
 * assert(definition?.input_schema.type === "object");
 * ```
 *
 * @param tools The tools.
 * @returns The definitions for `tools` of a Messages request.
 */
export function toAnthropicTools(tools: readonly Tool[]): AnthropicTool[] {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: structuredClone(
      tool.inputSchema,
    ) as unknown as AnthropicInputSchema,
  }));
}

/**
 * A tool result as a `tool_result` block for the next user message.
 *
 * @example Answering a tool_use block
 * ```ts
 * import { assert } from "@std/assert";
 * import { toAnthropicToolResult } from "@skillrun/skillrun";
 * const block = toAnthropicToolResult("toolu_1", { text: "no such file", isError: true });
 * assert(block.is_error && block.tool_use_id === "toolu_1");
 * ```
 *
 * @param toolUseId The `tool_use` block's id.
 * @param result The result.
 * @returns The block.
 */
export function toAnthropicToolResult(
  toolUseId: string,
  result: ToolResult,
): AnthropicToolResultBlock {
  return {
    type: "tool_result",
    tool_use_id: toolUseId,
    content: result.text,
    is_error: result.isError,
  };
}
