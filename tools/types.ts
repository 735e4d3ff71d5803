/**
 * The shape of a model-facing tool.
 *
 * @module
 */
import type { SkillEvent } from "../observe/events.ts";
import type {
  ToolApprovalCall,
  ToolApprovalCheck,
  ToolApprovalRequester,
} from "./approval.ts";

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
  /**
   * Set when the tool set's approval policy answered `"ask"` and the call
   * was neither approved nor could be asked about: nothing ran. Run it with
   * `approved: true` once someone said yes.
   */
  readonly needsApproval?: true;
  /** With `needsApproval`: what is to be approved (tool, input, skill). */
  readonly approval?: ToolApprovalCall;
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
  /**
   * The call was approved by someone: where the tool set's policy answers
   * `"ask"`, it runs. (A `"deny"` still denies.)
   */
  readonly approved?: boolean;
  /**
   * Where the policy answers `"ask"` and the call is not `approved`: asks
   * whether it may run (the MCP server asks its client). Only a yes runs
   * it; a no, or a requester that throws, is an error result.
   */
  readonly requestApproval?: ToolApprovalRequester;
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
  /**
   * The tool set's approval decision for an input, without running
   * anything (present when the tool set has an approval policy): what an
   * adapter turns into its own approval flow, e.g. the AI SDK's
   * `needsApproval`. An invalid input is `"allow"`: the call will answer
   * its error without running.
   */
  approvalFor?(input: unknown): Promise<ToolApprovalCheck>;
  /** Runs the tool. Never throws. */
  execute(input: unknown, options?: ToolCallOptions): Promise<ToolResult>;
}
