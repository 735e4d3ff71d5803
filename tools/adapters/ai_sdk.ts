/**
 * Tools shaped for the Vercel AI SDK (5, 6 and 7), without importing it.
 *
 * @module
 */
import type { ToolResult } from "../types.ts";
import type { Tool } from "../types.ts";

/** Options of `~standard.jsonSchema.input` and `.output` (Standard JSON Schema). */
export interface AISDKJSONSchemaOptions {
  /** The JSON Schema dialect asked for, e.g. `draft-07`. */
  readonly target: string;
}

/**
 * The schema of a tool's input, in both shapes the AI SDK understands, so that
 * the AI SDK needs no conversion and a TypeScript user needs no cast:
 * - at run time it carries the markers of the AI SDK's own `jsonSchema()`
 *   (every version checks those first);
 * - its type is a Standard Schema with a Standard JSON Schema converter
 *   (standardschema.dev), which AI SDK 6 and 7 accept as a tool's
 *   `inputSchema`. For AI SDK 5, whose types accept only its own schema
 *   objects, pass its `jsonSchema` to {@linkcode toAISDKTools}.
 *
 * Validation is left to the tool itself, so a bad input reaches `execute` and
 * comes back to the model as a clear error.
 */
export interface AISDKSchema {
  /** The Standard Schema interface. */
  readonly "~standard": {
    /** Standard Schema version. */
    readonly version: 1;
    /** Who made the schema. */
    readonly vendor: "skillrun";
    /** Accepts every value: the tool validates its input itself. */
    readonly validate: (value: unknown) => { readonly value: unknown };
    /** The JSON Schema, for the providers. */
    readonly jsonSchema: {
      /** The input's JSON Schema. */
      readonly input: (
        options: AISDKJSONSchemaOptions,
      ) => Record<string, unknown>;
      /** The same schema (input and output are one here). */
      readonly output: (
        options: AISDKJSONSchemaOptions,
      ) => Record<string, unknown>;
    };
  };
  /** The JSON Schema passed to the providers. */
  readonly jsonSchema: Readonly<Record<string, unknown>>;
  /** Left `undefined`: the tool validates its input itself. */
  readonly validate: undefined;
}

/** Options the AI SDK passes to `execute`. */
export interface AISDKToolCallOptions {
  /** The id of the tool call. */
  readonly toolCallId?: string;
  /** Stops the call. */
  readonly abortSignal?: AbortSignal;
  /**
   * The messages of the request (AI SDK 6 and 7): where an approved call's
   * `tool-approval-response` is.
   */
  readonly messages?: readonly unknown[];
}

/** Options the AI SDK passes to `needsApproval`. */
export interface AISDKNeedsApprovalOptions {
  /** The id of the tool call. */
  readonly toolCallId?: string;
  /** The messages of the request. */
  readonly messages?: readonly unknown[];
}

/** A tool output for the model, as the AI SDK's `toModelOutput` returns it. */
export interface AISDKModelOutput {
  /** Always text: a failed call is thrown, so the AI SDK reports a tool error. */
  readonly type: "text";
  /** The tool's text. */
  readonly value: string;
}

/**
 * A tool in the shape of the AI SDK's `tool({ description, inputSchema,
 * execute })`, with its input schema of type `S` ({@linkcode AISDKSchema}, or
 * what the AI SDK's own `jsonSchema()` returns when given).
 */
export interface AISDKTool<S = AISDKSchema> {
  /** What the tool does. */
  readonly description: string;
  /** The input schema. */
  readonly inputSchema: S;
  /**
   * Runs the tool. A successful call returns its text. A failed one (a
   * refused path, a bad input, a failing command...) throws a
   * {@linkcode AISDKToolError} with the tool's text, so that the AI SDK
   * records a tool error for the application and the model still reads
   * the text.
   */
  execute(input: unknown, options?: AISDKToolCallOptions): Promise<string>;
  /** Turns the text into what the model sees. */
  toModelOutput(output: unknown): AISDKModelOutput;
  /**
   * The AI SDK's approval hook (AI SDK 6 and 7), present when the tool set
   * has an approval policy: `true` where the policy answers `"ask"` and the
   * active skill's `allowed-tools` do not pre-approve, so that the AI SDK
   * emits a `tool-approval-request` instead of running the call. Allowed
   * and denied calls need none (a denied one runs nothing and the model
   * reads why).
   */
  needsApproval?(
    input: unknown,
    options?: AISDKNeedsApprovalOptions,
  ): Promise<boolean>;
}

/** Options of {@linkcode toAISDKTools}. */
export interface ToAISDKToolsOptions<S> {
  /**
   * The AI SDK's own `jsonSchema` (`import { jsonSchema } from "ai"`): the
   * schemas are then made by it and typed as it types them (needed for the
   * types of AI SDK 5; optional with 6 and 7).
   */
  readonly jsonSchema?: (schema: never) => S;
}

/**
 * A failed tool call, thrown by the AI SDK tools' `execute` so that the AI SDK
 * records a tool error; its message is the tool's text (what the model sees).
 */
export class AISDKToolError extends Error {
  /** The error's name. */
  override readonly name = "AISDKToolError";
  /** The tool that failed. */
  readonly toolName: string;

  /**
   * Makes the error.
   *
   * @param toolName The tool that failed.
   * @param text The tool's error text.
   */
  constructor(toolName: string, text: string) {
    super(text);
    this.toolName = toolName;
  }
}

/**
 * A JSON Schema wrapped as a tool's `inputSchema` for the AI SDK (see
 * {@linkcode AISDKSchema}).
 *
 * @example Wrapping a JSON Schema
 * ```ts
 * import { assert } from "@std/assert";
 * import { toAISDKSchema } from "@skillrun/skillrun/tools";
 * const schema = toAISDKSchema({ type: "object", properties: {} });
 * assert(schema[Symbol.for("vercel.ai.schema") as never] === true);
 * assert(schema["~standard"].jsonSchema.input({ target: "draft-07" }).type === "object");
 * ```
 *
 * @param schema A JSON Schema.
 * @returns The schema object.
 */
export function toAISDKSchema(
  schema: Readonly<Record<string, unknown>>,
): AISDKSchema {
  const json = structuredClone(schema) as Record<string, unknown>;
  const standard: AISDKSchema["~standard"] = {
    version: 1,
    vendor: "skillrun",
    validate: (value: unknown) => ({ value }),
    jsonSchema: {
      input: () => structuredClone(json),
      output: () => structuredClone(json),
    },
  };
  return Object.assign(
    {
      // The AI SDK's own markers (what its jsonSchema() sets).
      [Symbol.for("vercel.ai.schema")]: true,
      [Symbol.for("vercel.ai.validator")]: true,
      _type: undefined,
    },
    { "~standard": standard, jsonSchema: json, validate: undefined },
  );
}

/**
 * Whether the messages hold an approving `tool-approval-response` for the
 * call: its `approvalId` is the one of a `tool-approval-request` for this
 * `toolCallId` (what the AI SDK checked before calling `execute`).
 */
function approvedIn(
  messages: readonly unknown[] | undefined,
  toolCallId: string | undefined,
): boolean {
  if (!Array.isArray(messages) || typeof toolCallId !== "string") return false;
  const parts = messages.flatMap((message) => {
    const content = (message as { content?: unknown } | null)?.content;
    return Array.isArray(content) ? content as Record<string, unknown>[] : [];
  });
  const ids = new Set(
    parts.filter((part) =>
      part?.type === "tool-approval-request" &&
      part.toolCallId === toolCallId &&
      typeof part.approvalId === "string"
    ).map((part) => part.approvalId),
  );
  return parts.some((part) =>
    part?.type === "tool-approval-response" && part.approved === true &&
    ids.has(part.approvalId)
  );
}

function toModelOutput(value: unknown): AISDKModelOutput {
  // AI SDK 5 passes the output itself; 6 and 7 pass `{ toolCallId, input, output }`.
  const output = value !== null && typeof value === "object" &&
      "output" in value
    ? (value as { output: unknown }).output
    : value;
  return { type: "text", value: String(output) };
}

/**
 * The tools as an AI SDK tool set (`{ [name]: tool }`) for `generateText` or
 * `streamText`, with AI SDK 5, 6 or 7. Each entry is what the AI SDK's
 * `tool()` returns for `{ description, inputSchema, execute, toModelOutput }`;
 * the AI SDK's abort signal reaches the tool. A failed call throws
 * {@linkcode AISDKToolError}, so the AI SDK records a tool error (the model
 * reads the same text either way).
 *
 * With AI SDK 6 and 7, `toAISDKTools(kit.tools)` type-checks as `tools`; with
 * AI SDK 5, pass its `jsonSchema`: `toAISDKTools(kit.tools, { jsonSchema })`.
 *
 * When the tool set has an approval policy (`buildSkillTools({ approve })`),
 * each tool has the AI SDK's `needsApproval` (AI SDK 6 and 7): a call the
 * policy asks about (and no active skill's `allowed-tools` pre-approve)
 * pauses on a `tool-approval-request`; `execute` runs it only when its
 * messages hold an approving `tool-approval-response` to that request, and a
 * denying one runs nothing (the model reads `execution-denied`).
 *
 * @example A tool set for generateText
 * ```ts
 * import { assert, assertRejects } from "@std/assert";
 * import { AISDKToolError, toAISDKTools } from "@skillrun/skillrun/tools";
 * const tools = toAISDKTools([{
 *   name: "echo", description: "Echoes",
 *   inputSchema: { type: "object", properties: {}, required: [], additionalProperties: false },
 *   execute: (input) =>
 *     Promise.resolve({ text: "no", isError: (input as { fail?: boolean }).fail === true }),
 * }]);
 * const output = await tools.echo!.execute({});
 * assert(tools.echo!.toModelOutput(output).value === "no");
 * await assertRejects(() => tools.echo!.execute({ fail: true }), AISDKToolError, "no");
 * ```
 *
 * @typeParam S The schema type (the AI SDK's, when its `jsonSchema` is given).
 * @param tools The tools.
 * @param options The AI SDK's `jsonSchema`, for its own schema objects.
 * @returns The tool set, keyed by tool name.
 */
export function toAISDKTools<S = AISDKSchema>(
  tools: readonly Tool[],
  options: ToAISDKToolsOptions<S> = {},
): Record<string, AISDKTool<S>> {
  const set: Record<string, AISDKTool<S>> = {};
  for (const tool of tools) {
    const schema = tool.inputSchema as unknown as Record<string, unknown>;
    const make = options.jsonSchema as
      | ((schema: Record<string, unknown>) => S)
      | undefined;
    set[tool.name] = {
      description: tool.description,
      inputSchema: make
        ? make(structuredClone(schema))
        : toAISDKSchema(schema) as S,
      async execute(input, callOptions = {}) {
        let result: ToolResult;
        try {
          result = await tool.execute(input, {
            ...(callOptions.abortSignal
              ? { signal: callOptions.abortSignal }
              : {}),
            ...(typeof callOptions.toolCallId === "string"
              ? { toolCallId: callOptions.toolCallId }
              : {}),
            ...(approvedIn(callOptions.messages, callOptions.toolCallId)
              ? { approved: true }
              : {}),
          });
        } catch (error) {
          result = {
            text: error instanceof Error ? error.message : String(error),
            isError: true,
          };
        }
        if (result.isError) throw new AISDKToolError(tool.name, result.text);
        return result.text;
      },
      toModelOutput,
      ...(tool.approvalFor ? { needsApproval: needsApproval(tool) } : {}),
    };
  }
  return set;
}

/** The AI SDK's `needsApproval` of a tool with an approval policy. */
function needsApproval(
  tool: Tool,
): NonNullable<AISDKTool["needsApproval"]> {
  return async (input) => {
    try {
      return (await tool.approvalFor!(input)).decision === "ask";
    } catch {
      // Never thrown by the tools; a custom tool's error asks.
      return true;
    }
  };
}

/**
 * A tool whose `execute` is an async generator, as the AI SDK takes for
 * streaming tool results: every value but the last is a preliminary result
 * (shown in the UI while the tool runs), the last is the output.
 */
export interface AISDKStreamingTool<S = AISDKSchema>
  extends Omit<AISDKTool<S>, "execute"> {
  /**
   * Runs the tool, yielding the command output so far (its last
   * `maxPreviewChars` characters) as it comes, then the tool's text. A
   * failed call throws an {@linkcode AISDKToolError} after its previews.
   */
  execute(
    input: unknown,
    options?: AISDKToolCallOptions,
  ): AsyncGenerator<string, void, void>;
}

/** Options of {@linkcode toAISDKStreamingTools}. */
export interface ToAISDKStreamingToolsOptions<S>
  extends ToAISDKToolsOptions<S> {
  /** The most characters of output in one preliminary result. Default 4000. */
  readonly maxPreviewChars?: number;
}

/**
 * Like {@linkcode toAISDKTools}, with streaming tool results: `bash` yields
 * its output as it comes (preliminary results), then its text. Events go
 * through the tools' redaction, so no configured secret appears.
 *
 * @example Output before the end
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { buildSkillTools, toAISDKStreamingTools } from "@skillrun/skillrun";
 * await using set = await buildSkillTools({ tools: ["bash"] });
 * const tools = toAISDKStreamingTools(set.tools);
 * const seen: string[] = [];
 * for await (const value of tools.bash!.execute({ command: "echo a; sleep 0.2; echo b" })) {
 *   seen.push(value);
 * }
 * assertEquals(seen.at(-1), "a\nb\n");
 * assertEquals(seen[0], "a\n");
 * ```
 *
 * @typeParam S The schema type.
 * @param tools The tools.
 * @param options The AI SDK's `jsonSchema`; the preview size.
 * @returns The tool set, keyed by tool name.
 */
export function toAISDKStreamingTools<S = AISDKSchema>(
  tools: readonly Tool[],
  options: ToAISDKStreamingToolsOptions<S> = {},
): Record<string, AISDKStreamingTool<S>> {
  const plain = toAISDKTools(tools, options);
  const max = options.maxPreviewChars ?? 4000;
  const set: Record<string, AISDKStreamingTool<S>> = {};
  for (const tool of tools) {
    const base = plain[tool.name]!;
    set[tool.name] = {
      description: base.description,
      inputSchema: base.inputSchema,
      toModelOutput: base.toModelOutput,
      ...(base.needsApproval ? { needsApproval: base.needsApproval } : {}),
      async *execute(input, callOptions = {}) {
        let output = "";
        let changed = false;
        let wake: (() => void) | undefined;
        const running = tool.execute(input, {
          ...(callOptions.abortSignal
            ? { signal: callOptions.abortSignal }
            : {}),
          ...(callOptions.toolCallId !== undefined
            ? { toolCallId: callOptions.toolCallId }
            : {}),
          ...(approvedIn(callOptions.messages, callOptions.toolCallId)
            ? { approved: true }
            : {}),
          onEvent: (event) => {
            if (event.type !== "command_output") return;
            output = (output + event.text).slice(-max);
            changed = true;
            wake?.();
          },
        }).then(
          (result) => result,
          (error): ToolResult => ({
            text: error instanceof Error ? error.message : String(error),
            isError: true,
          }),
        );
        let result: ToolResult | undefined;
        void running.then((r) => {
          result = r;
          wake?.();
        });
        while (result === undefined) {
          if (!changed) {
            await new Promise<void>((resolve) => wake = resolve);
            wake = undefined;
          }
          if (changed && result === undefined) {
            changed = false;
            yield output;
          }
        }
        if (result.isError) throw new AISDKToolError(tool.name, result.text);
        yield result.text;
      },
    };
  }
  return set;
}
