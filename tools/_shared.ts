/**
 * Helpers every tool uses: the wrapper that validates input, catches every
 * error and redacts secrets; error texts; cutting long outputs.
 *
 * @module
 */
import { redactSecrets } from "../_internal/redact.ts";
import {
  RuntimePermissionError,
  SkillPreparationError,
  WorkspaceEscapeError,
} from "../runtimes/errors.ts";
import { type ToolInput, validateInput } from "./_input.ts";
import { describeCall } from "./_describe_call.ts";
import type { ToolContext } from "./context.ts";
import { EventSink } from "../observe/events.ts";
import {
  inSpan,
  markError,
  type SpanAttributes,
  tracingActive,
} from "../observe/otel.ts";
import type { Span } from "@opentelemetry/api";
import type { JsonSchema, Tool, ToolCallOptions, ToolResult } from "./types.ts";
import type {
  ToolApprovalAnswer,
  ToolApprovalCheck,
  ToolApprover,
} from "./approval.ts";

/** What a tool's body gets. */
export interface ToolCall {
  /** The validated parameters. */
  readonly input: ToolInput;
  /** The caller's signal, when given. */
  readonly signal?: AbortSignal;
  /** The call's id, when the application listens to events. */
  readonly callId?: string;
  /** Where this call's events go (the tool set's and the call's listeners). */
  readonly events?: EventSink;
  /** The call's own listener alone (for events the tool set gets otherwise). */
  readonly callEvents?: EventSink;
}

/** The parts of a tool that {@linkcode defineTool} wraps. */
export interface ToolDefinition {
  /** The tool's name. */
  readonly name: string;
  /** Its description. */
  readonly description: string;
  /** Its input schema. */
  readonly inputSchema: JsonSchema;
  /**
   * The time limit of one call in ms, if the tool has one: the body's signal
   * aborts then, and the call answers that it was stopped.
   */
  readonly timeoutMs?: number;
  /** The body: may throw; its errors become error results. */
  run(call: ToolCall): Promise<ToolResult>;
}

/**
 * Makes a tool whose `execute` never throws: it validates the input against
 * the schema, runs the body, turns every error into an error result and removes
 * the context's secrets from the text.
 *
 * @param context The shared context (for the secrets).
 * @param definition Name, description, schema and body.
 * @returns The tool.
 */
export function defineTool(
  context: ToolContext,
  definition: ToolDefinition,
): Tool {
  const clean = (result: ToolResult): ToolResult =>
    result.needsApproval
      ? {
        ...result,
        text: redactSecrets(result.text, safeSecrets(context)),
      }
      : {
        text: redactSecrets(result.text, safeSecrets(context)),
        isError: result.isError,
      };
  // The same for every call: made once.
  const spanName = `execute_tool ${definition.name}`;
  const spanAttributes: SpanAttributes = Object.freeze({
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": definition.name,
  });
  const approval = context.approval;
  return Object.freeze({
    name: definition.name,
    description: definition.description,
    inputSchema: definition.inputSchema,
    ...(approval
      ? {
        approvalFor(input: unknown): Promise<ToolApprovalCheck> {
          const checked = validateInput(definition.inputSchema, input);
          if (!checked.ok) {
            return Promise.resolve({
              decision: "allow",
              call: { tool: definition.name, input: {} },
              reason: "the input is invalid: the call answers its error",
            });
          }
          return approval.check(definition.name, checked.value);
        },
      }
      : {}),
    execute(
      input: unknown,
      options: ToolCallOptions = {},
    ): Promise<ToolResult> {
      const name = definition.name;
      const callId = typeof options?.toolCallId === "string"
        ? options.toolCallId
        : undefined;
      const body = async (span?: Span): Promise<ToolResult> => {
        const events = callEvents(context, options ?? {});
        const result = events
          ? await observedCall(events, name, options ?? {}, call, input)
          : await call(input, options ?? {});
        if (result.isError && span) {
          span.setAttribute("error.type", "tool_error");
          markError(span, result.text.split("\n", 1)[0]!.slice(0, 200));
        }
        return result;
      };
      // Nothing listening: no span, not even its attributes.
      if (!tracingActive()) return body();
      return inSpan(
        spanName,
        callId === undefined ? spanAttributes : {
          ...spanAttributes,
          "gen_ai.tool.call.id": callId,
        },
        body,
      );
    },
  });

  async function call(
    input: unknown,
    options: ToolCallOptions,
    callId?: string,
    events?: EventSink,
  ): Promise<ToolResult> {
    {
      try {
        const { signal } = options;
        if (signal?.aborted) return errorResult(cancelledText(signal));
        const checked = validateInput(definition.inputSchema, input);
        if (!checked.ok) return clean(errorResult(checked.message));
        if (context.approval) {
          const refused = await approvalStep(
            context.approval,
            definition.name,
            checked.value,
            options,
          );
          if (refused) return clean(refused);
        }
        const { timeoutMs } = definition;
        const deadline = timeoutMs === undefined
          ? undefined
          : AbortSignal.timeout(timeoutMs);
        const bodySignal = deadline
          ? signal ? AbortSignal.any([signal, deadline]) : deadline
          : signal;
        try {
          const result = await definition.run({
            input: checked.value,
            ...(bodySignal ? { signal: bodySignal } : {}),
            ...(callId !== undefined ? { callId } : {}),
            ...(events ? { events } : {}),
            ...(events && typeof options.onEvent === "function"
              ? {
                callEvents: new EventSink(options.onEvent, () =>
                  safeSecrets(context)),
              }
              : {}),
          });
          return clean(result);
        } catch (error) {
          if (deadline?.aborted && !signal?.aborted) {
            return clean(errorResult(
              `Stopped: the ${definition.name} call reached its time limit of ${timeoutMs} ms`,
            ));
          }
          throw error;
        }
      } catch (error) {
        try {
          return clean(errorResult(errorText(error, options.signal)));
        } catch {
          return errorResult("The tool failed with an unreadable error");
        }
      }
    }
  }
}

/**
 * The policy step of one call: `undefined` when it may run, or the result
 * that answers it instead (denied, not approved, needs approval).
 */
async function approvalStep(
  approver: ToolApprover,
  tool: string,
  input: ToolInput,
  options: ToolCallOptions,
): Promise<ToolResult | undefined> {
  const { decision, call, reason } = await approver.check(tool, input);
  if (decision === "allow") return undefined;
  const what = describeCall(call);
  if (decision === "deny") {
    return errorResult(
      `Denied: ${what} was ${
        reason.startsWith("denied") ? reason : `denied: ${reason}`
      }; nothing ran`,
    );
  }
  if (options.approved === true) return undefined;
  const ask = options.requestApproval;
  if (typeof ask !== "function") {
    return {
      text:
        `Approval needed: ${what} needs the user's approval and did not run`,
      isError: true,
      needsApproval: true,
      approval: call,
    };
  }
  let answer: boolean | ToolApprovalAnswer;
  try {
    answer = await ask(call, options.signal ? { signal: options.signal } : {});
  } catch (error) {
    return errorResult(
      `Not approved: asking for approval of ${what} failed (${
        errorText(error, options.signal)
      }); nothing ran`,
    );
  }
  if (
    answer === true || (typeof answer === "object" && answer?.approved === true)
  ) {
    return undefined;
  }
  const why = typeof answer === "object" && typeof answer?.reason === "string"
    ? answer.reason
    : "it was not approved";
  return errorResult(`Not approved: ${what} did not run (${why})`);
}

export { describeCall };

/** The events of one call: the tool set's listener and the call's own. */
function callEvents(
  context: ToolContext,
  options: ToolCallOptions,
): EventSink | undefined {
  const own = options?.onEvent;
  if (typeof own !== "function") return context.events;
  const shared = context.events;
  return new EventSink((event) => {
    shared?.emit(event);
    own(event);
  }, () => safeSecrets(context));
}

/** One call with its start and end events. */
async function observedCall(
  events: EventSink,
  tool: string,
  options: ToolCallOptions,
  call: (
    input: unknown,
    options: ToolCallOptions,
    callId?: string,
    events?: EventSink,
  ) => Promise<ToolResult>,
  input: unknown,
): Promise<ToolResult> {
  const callId = typeof options.toolCallId === "string"
    ? options.toolCallId
    : crypto.randomUUID();
  events.emit({ type: "tool_call_start", tool, callId });
  const startedAt = performance.now();
  const result = await call(input, options, callId, events);
  events.emit({
    type: "tool_call_end",
    tool,
    callId,
    durationMs: performance.now() - startedAt,
    isError: result.isError,
    bytesOut: utf8Length(result.text),
  });
  return result;
}

/**
 * The UTF-8 byte count of a text, counted without encoding it (no buffer;
 * a lone surrogate counts 3, as `TextEncoder` writes U+FFFD for it).
 */
function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    if (code < 0x800) bytes += 1;
    else if (
      code >= 0xd800 && code <= 0xdbff && i + 1 < text.length &&
      (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00
    ) {
      bytes += 2; // a pair: 2 UTF-16 units, 4 bytes
      i++;
    } else bytes += 2;
  }
  return bytes;
}

function safeSecrets(context: ToolContext): string[] {
  try {
    return context.secrets();
  } catch {
    return [];
  }
}

/**
 * An error result.
 *
 * @param text The message for the model.
 * @returns `{ text, isError: true }`.
 */
export function errorResult(text: string): ToolResult {
  return { text, isError: true };
}

/**
 * A successful result.
 *
 * @param text The text for the model.
 * @returns `{ text, isError: false }`.
 */
export function okResult(text: string): ToolResult {
  return { text, isError: false };
}

function cancelledText(signal: AbortSignal): string {
  const reason = signal.reason;
  return reason instanceof DOMException && reason.name === "TimeoutError"
    ? "Cancelled: the call timed out"
    : "Cancelled: the call was aborted";
}

/**
 * The text for the model of an error thrown inside a tool.
 *
 * @param error What was thrown.
 * @param signal The caller's signal (an abort becomes "Cancelled").
 * @returns A clear, single message.
 */
export function errorText(error: unknown, signal?: AbortSignal): string {
  if (signal?.aborted) return cancelledText(signal);
  if (
    error instanceof WorkspaceEscapeError ||
    error instanceof RuntimePermissionError ||
    error instanceof SkillPreparationError
  ) {
    return error.message;
  }
  if (error instanceof DOMException && error.name === "AbortError") {
    return "Cancelled: the call was aborted";
  }
  if (error instanceof Deno.errors.NotCapable) {
    return `Permission denied: ${error.message}`;
  }
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

/**
 * The error text for a path that does not exist or cannot be used.
 *
 * @param action What was attempted, e.g. `read`.
 * @param path The path as the model gave it.
 * @param reason Why, e.g. `no such file`.
 * @returns `Cannot <action> "<path>": <reason>`.
 */
export function pathError(
  action: string,
  path: string,
  reason: string,
): ToolResult {
  return errorResult(`Cannot ${action} ${JSON.stringify(path)}: ${reason}`);
}

/**
 * Cuts a text longer than `max` characters, keeping its start and its end
 * around a notice that says how much was left out.
 *
 * @param text The text.
 * @param max The most characters kept (the notice comes on top).
 * @returns The text, cut when too long.
 */
export function cutMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.ceil(max * 0.5);
  const tail = max - head;
  const omitted = text.length - head - tail;
  return `${
    text.slice(0, head)
  }\n\n[... ${omitted} characters omitted: the output has ${text.length} characters; the first ${head} and the last ${tail} are shown ...]\n\n${
    text.slice(text.length - tail)
  }`;
}

export { formatBytes } from "../_internal/format.ts";

/**
 * Numbers a line like `cat -n`: the number right-aligned in six columns, a tab,
 * the line.
 *
 * @param number The 1-based line number.
 * @param line The line, without its end.
 * @returns The numbered line.
 */
export function numberLine(number: number, line: string): string {
  return `${String(number).padStart(6, " ")}\t${line}`;
}

/**
 * Resolves a path given by the model through the runtime (relative paths
 * against its default working directory; in a workspace, outside paths are
 * refused with a {@linkcode WorkspaceEscapeError}).
 *
 * @param context The context.
 * @param path The path as given.
 * @returns The path as the runtime sees it.
 */
export function resolvePath(
  context: ToolContext,
  path: string,
): Promise<string> {
  return context.runtime.fs.resolve(path);
}
