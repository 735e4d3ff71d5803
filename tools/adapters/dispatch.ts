/**
 * Runs a tool call that a model made, whatever the provider's shape.
 *
 * @module
 */
import type { Tool, ToolCallOptions, ToolResult } from "../types.ts";

/**
 * A tool call as a model sends it. Accepted shapes:
 * `{ name, arguments }` (arguments as a JSON string or an object),
 * an Anthropic `tool_use` block `{ name, input }`, or an OpenAI Chat tool call
 * `{ function: { name, arguments } }`. The call's own `id` (or `call_id`)
 * becomes the tool call id (the `execute_tool` span's `gen_ai.tool.call.id`,
 * the events' `callId`) unless `toolCallId` is given.
 */
export type ToolCallRequest =
  | {
    readonly name: string;
    readonly arguments?: string | Readonly<Record<string, unknown>> | null;
    /** The call's id (OpenAI Responses' `function_call` has `call_id`). */
    readonly id?: string;
    readonly call_id?: string;
  }
  | { readonly name: string; readonly input?: unknown; readonly id?: string }
  | {
    readonly id?: string;
    readonly function: {
      readonly name: string;
      readonly arguments?: string | null;
    };
  };

/**
 * Finds the tool a model called, parses its arguments and runs it. Never
 * throws: an unknown tool, arguments that are not valid JSON, or a failing
 * tool all come back as error results.
 *
 * @example Running an OpenAI-style call
 * ```ts
 * import { assert } from "@std/assert";
 * import { dispatchToolCall } from "@skillrun/skillrun";
 * const echo = {
 *   name: "echo", description: "Echoes",
 *   inputSchema: { type: "object", properties: {}, required: [], additionalProperties: false },
 *   execute: (input: unknown) =>
 *     Promise.resolve({ text: JSON.stringify(input), isError: false }),
 * } as const;
 * const ok = await dispatchToolCall([echo], { name: "echo", arguments: "{}" });
 * assert(ok.text === "{}");
 * const bad = await dispatchToolCall([echo], { name: "nope", arguments: "{}" });
 * assert(bad.isError && bad.text.startsWith('Unknown tool "nope"'));
 * ```
 *
 * Where the tool set's approval policy (`buildSkillTools({ approve })`)
 * answers `"ask"`, the result has `needsApproval: true` and `approval` (the
 * tool, its input, the active skill) and nothing ran: ask the user, then
 * dispatch the same call with `{ approved: true }` to run it.
 *
 * @param tools The tools offered to the model.
 * @param call The call.
 * @param options A signal; `approved: true` once the user approved the call.
 * @returns The tool's result.
 */
export async function dispatchToolCall(
  tools: readonly Tool[],
  call: ToolCallRequest,
  options?: ToolCallOptions,
): Promise<ToolResult> {
  try {
    const { name, raw } = unpack(call);
    if (typeof name !== "string" || name === "") {
      return {
        text: "Invalid tool call: the tool name is missing",
        isError: true,
      };
    }
    const tool = tools.find((t) => t.name === name);
    if (!tool) {
      return {
        text: `Unknown tool ${JSON.stringify(name)}: available tools are ${
          tools.map((t) => t.name).join(", ") || "none"
        }`,
        isError: true,
      };
    }
    let input: unknown = raw;
    if (typeof raw === "string") {
      if (raw.trim() === "") input = {};
      else {
        try {
          input = JSON.parse(raw);
        } catch (error) {
          return {
            text: `Invalid arguments for tool "${name}": not valid JSON (${
              error instanceof Error ? error.message : String(error)
            })`,
            isError: true,
          };
        }
      }
    }
    const id = callId(call);
    return await tool.execute(
      input,
      options?.toolCallId === undefined && id !== undefined
        ? { ...options, toolCallId: id }
        : options,
    );
  } catch (error) {
    return {
      text: `The tool call failed: ${
        error instanceof Error ? error.message : String(error)
      }`,
      isError: true,
    };
  }
}

function unpack(call: ToolCallRequest): { name: unknown; raw: unknown } {
  if (call === null || typeof call !== "object") {
    return { name: undefined, raw: undefined };
  }
  if (
    "function" in call && call.function && typeof call.function === "object"
  ) {
    return { name: call.function.name, raw: call.function.arguments };
  }
  const c = call as { name?: unknown; arguments?: unknown; input?: unknown };
  return { name: c.name, raw: "arguments" in c ? c.arguments : c.input };
}

function callId(call: ToolCallRequest): string | undefined {
  const c = call as { id?: unknown; call_id?: unknown };
  if (typeof c.id === "string" && c.id !== "") return c.id;
  if (typeof c.call_id === "string" && c.call_id !== "") return c.call_id;
  return undefined;
}
