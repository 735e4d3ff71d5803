/**
 * Tool definitions and results in the shapes of the OpenAI APIs (Chat
 * Completions and Responses), without the OpenAI SDK.
 *
 * @module
 */
import type { JsonSchema, Tool, ToolResult } from "../types.ts";

/** A function tool of the Chat Completions API (`tools[]`). */
export interface OpenAIChatTool {
  /** Always `"function"`. */
  readonly type: "function";
  /** The function. */
  readonly function: {
    /** The tool's name. */
    readonly name: string;
    /** What it does. */
    readonly description: string;
    /** Its input's JSON Schema. */
    readonly parameters: Readonly<Record<string, unknown>>;
    /** Whether the model must follow the schema exactly (structured outputs). */
    readonly strict?: boolean;
  };
}

/** A function tool of the Responses API (`tools[]`). */
export interface OpenAIResponsesTool {
  /** Always `"function"`. */
  readonly type: "function";
  /** The tool's name. */
  readonly name: string;
  /** What it does. */
  readonly description: string;
  /** Its input's JSON Schema. */
  readonly parameters: Readonly<Record<string, unknown>>;
  /** Whether the model must follow the schema exactly. */
  readonly strict: boolean;
}

/** Options of the OpenAI adapters. */
export interface OpenAIToolOptions {
  /**
   * Use strict mode: every parameter is listed as required and optional ones
   * accept `null` (the tools treat `null` as "not given"). Default `false`.
   */
  readonly strict?: boolean;
}

/**
 * The JSON Schema of a tool in OpenAI's strict form: every property required,
 * optional ones made nullable, `additionalProperties: false`.
 *
 * @example Making a schema strict
 * ```ts
 * import { assert } from "@std/assert";
 * import { toStrictSchema } from "@skillrun/skillrun/tools";
 * const strict = toStrictSchema({
 *   type: "object",
 *   properties: { a: { type: "string" }, b: { type: "integer" } },
 *   required: ["a"],
 *   additionalProperties: false,
 * });
 * assert(JSON.stringify(strict.required) === '["a","b"]');
 * assert(JSON.stringify(strict.properties.b?.type) === '["integer","null"]');
 * ```
 *
 * @param schema The tool's input schema.
 * @returns The strict schema.
 */
export function toStrictSchema(schema: JsonSchema): JsonSchema {
  const required = new Set(schema.required);
  const properties: Record<string, Readonly<Record<string, unknown>>> = {};
  for (const [name, property] of Object.entries(schema.properties)) {
    if (required.has(name)) {
      properties[name] = stripUnsupported(property);
      continue;
    }
    const { type, enum: values, ...rest } = stripUnsupported(property);
    properties[name] = {
      ...rest,
      type: Array.isArray(type) ? [...type, "null"] : [type, "null"],
      ...(Array.isArray(values) ? { enum: [...values, null] } : {}),
    };
  }
  return {
    type: "object",
    properties,
    required: Object.keys(schema.properties),
    additionalProperties: false,
  };
}

/** Keywords strict mode refuses; the tools check them themselves. */
function stripUnsupported(
  property: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const { minLength: _minLength, default: _default, ...rest } = property;
  return rest;
}

function parametersOf(tool: Tool, strict: boolean): Record<string, unknown> {
  const schema = strict ? toStrictSchema(tool.inputSchema) : tool.inputSchema;
  return structuredClone(schema) as unknown as Record<string, unknown>;
}

/**
 * The tools as Chat Completions function tools:
 * `{ type: "function", function: { name, description, parameters } }`.
 *
 * @example Tools for a chat completion
 * ```ts
 * import { assert } from "@std/assert";
 * import { toOpenAIChatTools } from "@skillrun/skillrun";
 * const [definition] = toOpenAIChatTools([{
 *   name: "echo", description: "Echoes",
 *   inputSchema: { type: "object", properties: {}, required: [], additionalProperties: false },
 *   execute: () => Promise.resolve({ text: "", isError: false }),
 * }]);
 * assert(definition?.function.name === "echo");
 * ```
 *
 * @param tools The tools.
 * @param options Strict mode.
 * @returns The definitions for `tools` of a chat completion request.
 */
export function toOpenAIChatTools(
  tools: readonly Tool[],
  options: OpenAIToolOptions = {},
): OpenAIChatTool[] {
  const strict = options.strict ?? false;
  return tools.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      description: tool.description,
      parameters: parametersOf(tool, strict),
      ...(strict ? { strict: true } : {}),
    },
  }));
}

/**
 * The tools as Responses API function tools:
 * `{ type: "function", name, description, parameters, strict }`. `strict` is
 * always given, because the Responses API treats a missing one as `true`.
 *
 * @example Tools for a Responses request
 * ```ts
 * import { assert } from "@std/assert";
 * import { toOpenAIResponsesTools } from "@skillrun/skillrun";
 * const [definition] = toOpenAIResponsesTools([{
 *   name: "echo", description: "Echoes",
 *   inputSchema: { type: "object", properties: {}, required: [], additionalProperties: false },
 *   execute: () => Promise.resolve({ text: "", isError: false }),
 * }]);
 * assert(definition?.name === "echo" && definition.strict === false);
 * ```
 *
 * @param tools The tools.
 * @param options Strict mode.
 * @returns The definitions for `tools` of a Responses request.
 */
export function toOpenAIResponsesTools(
  tools: readonly Tool[],
  options: OpenAIToolOptions = {},
): OpenAIResponsesTool[] {
  const strict = options.strict ?? false;
  return tools.map((tool) => ({
    type: "function",
    name: tool.name,
    description: tool.description,
    parameters: parametersOf(tool, strict),
    strict,
  }));
}

/** A `tool` message of the Chat Completions API answering one tool call. */
export interface OpenAIChatToolMessage {
  /** Always `"tool"`. */
  readonly role: "tool";
  /** The `id` of the tool call answered. */
  readonly tool_call_id: string;
  /** The result's text (an error result starts with `Error: `). */
  readonly content: string;
}

/**
 * A tool result as a Chat Completions `tool` message. The API has no error
 * flag: an error result's text is prefixed with `Error: `.
 *
 * @example Answering a chat tool call
 * ```ts
 * import { assert } from "@std/assert";
 * import { toOpenAIChatToolMessage } from "@skillrun/skillrun";
 * const message = toOpenAIChatToolMessage("call_1", { text: "no such file", isError: true });
 * assert(message.content === "Error: no such file");
 * ```
 *
 * @param toolCallId The tool call's id.
 * @param result The result.
 * @returns The message.
 */
export function toOpenAIChatToolMessage(
  toolCallId: string,
  result: ToolResult,
): OpenAIChatToolMessage {
  return {
    role: "tool",
    tool_call_id: toolCallId,
    content: result.isError ? `Error: ${result.text}` : result.text,
  };
}

/** A `function_call_output` item of the Responses API. */
export interface OpenAIFunctionCallOutput {
  /** Always `"function_call_output"`. */
  readonly type: "function_call_output";
  /** The `call_id` of the function call answered. */
  readonly call_id: string;
  /** The result's text (an error result starts with `Error: `). */
  readonly output: string;
}

/**
 * A tool result as a Responses API `function_call_output` input item.
 *
 * @example Answering a Responses function call
 * ```ts
 * import { assert } from "@std/assert";
 * import { toOpenAIFunctionCallOutput } from "@skillrun/skillrun";
 * const item = toOpenAIFunctionCallOutput("call_1", { text: "done", isError: false });
 * assert(item.type === "function_call_output" && item.output === "done");
 * ```
 *
 * @param callId The function call's `call_id`.
 * @param result The result.
 * @returns The input item.
 */
export function toOpenAIFunctionCallOutput(
  callId: string,
  result: ToolResult,
): OpenAIFunctionCallOutput {
  return {
    type: "function_call_output",
    call_id: callId,
    output: result.isError ? `Error: ${result.text}` : result.text,
  };
}
