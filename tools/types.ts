/**
 * The shape of a model-facing tool.
 *
 * @module
 */
import type { SkillEvent } from "../observe/events.ts";

/** A JSON Schema object describing a tool's input. */
export interface JsonSchema {
  /** Always `"object"` at the top level of a tool's input. */
  readonly type: "object";
  /** The parameters. */
  readonly properties: Readonly<
    Record<string, Readonly<Record<string, unknown>>>
  >;
  /** The parameters that must be given. */
  readonly required: readonly string[];
  /** Unknown parameters are refused. */
  readonly additionalProperties: false;
}

/** What a tool returns to the model. */
export interface ToolResult {
  /** The text for the model. */
  readonly text: string;
  /** Whether the call failed (bad input, missing file, failed preparation...). */
  readonly isError: boolean;
}

/** Options of {@linkcode Tool.execute}. */
export interface ToolCallOptions {
  /** Stops the call (e.g. the agent loop was cancelled). */
  readonly signal?: AbortSignal;
  /** The call's id (the model's tool call id), carried by its events. */
  readonly toolCallId?: string;
  /**
   * Receives this call's events alone (its start and end, the preparation
   * it waits for, its command's output), besides the tool set's `onEvent`:
   * what an MCP server turns into progress notifications.
   */
  readonly onEvent?: (event: SkillEvent) => unknown;
}

/**
 * A model-facing tool: a plain object with a name, a description, an input JSON
 * Schema and an `execute` that never throws (every failure is a result with
 * `isError: true`).
 */
export interface Tool {
  /** The tool's name, e.g. `bash`. */
  readonly name: string;
  /** What the tool does, for the model. */
  readonly description: string;
  /** The input's JSON Schema (required parameters marked). */
  readonly inputSchema: JsonSchema;
  /** Runs the tool. Never throws. */
  execute(input: unknown, options?: ToolCallOptions): Promise<ToolResult>;
}
