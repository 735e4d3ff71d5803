/**
 * The events of the tools and runtimes: one `onEvent(event)` option on
 * `buildSkillTools` and on every runtime, with typed events (a `type` field):
 * tool calls, preparation progress, command output, remote HTTP requests and
 * the runtime's lifecycle.
 *
 * Every string of an event goes through the project's one redaction rule
 * (`_internal/redact.ts`) with the configured values before a listener sees
 * it, and a listener that throws (or returns a rejected promise) never breaks
 * the call that emitted the event.
 *
 * @module
 */
import { Redactor } from "../_internal/redact.ts";
import type { PrepareProgress, PrepareRequest } from "../runtimes/types.ts";

/** A tool call began. */
export interface ToolCallStartEvent {
  /** The kind. */
  readonly type: "tool_call_start";
  /** The tool's name. */
  readonly tool: string;
  /** The call's id (the caller's `toolCallId`, else one made up). */
  readonly callId: string;
}

/** A tool call ended. */
export interface ToolCallEndEvent {
  /** The kind. */
  readonly type: "tool_call_end";
  /** The tool's name. */
  readonly tool: string;
  /** The call's id, as in its start event. */
  readonly callId: string;
  /** Wall time in ms. */
  readonly durationMs: number;
  /** Whether the result is an error. */
  readonly isError: boolean;
  /** UTF-8 bytes of the result's text. */
  readonly bytesOut: number;
}

/** A preparation advanced. */
export interface PrepareProgressEvent {
  /** The kind. */
  readonly type: "prepare_progress";
  /** The skill being prepared. */
  readonly skillName: string;
  /** What is happening. */
  readonly stage: "copy" | "upload" | "bootstrap" | "done";
  /** A short detail. */
  readonly detail?: string;
  /** Files copied or uploaded so far, when known. */
  readonly files?: number;
  /** Bytes copied or uploaded so far, when known. */
  readonly bytes?: number;
  /** The bootstrap command under way (1-based), at the bootstrap stage. */
  readonly step?: number;
  /** How many bootstrap commands there are, at the bootstrap stage. */
  readonly steps?: number;
  /** The end of the bootstrap command's output, when one failed. */
  readonly outputTail?: string;
}

/** A chunk of a command's output, as it was written. */
export interface CommandOutputEvent {
  /** The kind. */
  readonly type: "command_output";
  /** Which stream. */
  readonly stream: "stdout" | "stderr";
  /** The chunk as text (a UTF-8 sequence cut between chunks is kept whole). */
  readonly text: string;
  /** The tool call it belongs to, when emitted by a tool. */
  readonly callId?: string;
}

/** A remote HTTP call ended (after its retries). */
export interface HttpRequestEvent {
  /** The kind. */
  readonly type: "http_request";
  /** The method, upper case. */
  readonly method: string;
  /** The URL, secret query values replaced. */
  readonly url: string;
  /** The final status, or `undefined` when no answer came. */
  readonly status?: number;
  /** Retries made (0 when the first attempt answered). */
  readonly retries: number;
  /** Wall time to the answer's head (or the failure), in ms. */
  readonly durationMs: number;
  /** Why it failed, when it did (an error status or no answer). */
  readonly error?: string;
}

/** A sandbox was created, attached, renewed or deleted. */
export interface RuntimeLifecycleEvent {
  /** The kind. */
  readonly type: "runtime_lifecycle";
  /** What happened. */
  readonly action: "created" | "attached" | "renewed" | "deleted";
  /** The runtime's kind, e.g. `opensandbox`. */
  readonly runtime: string;
  /** The sandbox's id, when there is one. */
  readonly sandboxId?: string;
}

/** One event of the tools or runtimes. */
export type SkillEvent =
  | ToolCallStartEvent
  | ToolCallEndEvent
  | PrepareProgressEvent
  | CommandOutputEvent
  | HttpRequestEvent
  | RuntimeLifecycleEvent;

/** Receives events; what it throws or rejects is ignored. */
export type SkillEventListener = (event: SkillEvent) => unknown;

/**
 * Sends events to a listener: each string redacted with the configured
 * values, each failure of the listener swallowed.
 *
 * @example Secrets never reach the listener; a throwing one breaks nothing
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { EventSink, type SkillEvent } from "./events.ts";
 * const seen: SkillEvent[] = [];
 * const sink = new EventSink((event) => {
 *   seen.push(event);
 *   throw new Error("listener bug");
 * }, () => ["s3cr3t-token"]);
 * sink.emit({ type: "command_output", stream: "stdout", text: "key=s3cr3t-token\n" });
 * assertEquals(seen, [{ type: "command_output", stream: "stdout", text: "key=[redacted]\n" }]);
 * ```
 */
export class EventSink {
  readonly #listener: SkillEventListener;
  readonly #secrets: () => Iterable<string>;
  #redactor: Redactor | undefined;
  #key: readonly unknown[] = [];

  /**
   * Makes a sink.
   *
   * @param listener Where events go.
   * @param secrets The values to keep out of events (asked at each event, so
   * values configured later count).
   * @throws {TypeError} The listener is not a function.
   */
  constructor(
    listener: SkillEventListener,
    secrets: () => Iterable<string> = () => [],
  ) {
    if (typeof listener !== "function") {
      throw new TypeError("Cannot listen to events: onEvent is not a function");
    }
    this.#listener = listener;
    this.#secrets = secrets;
  }

  /**
   * Redacts the event's strings and hands it to the listener; never throws.
   *
   * @param event The event.
   */
  emit(event: SkillEvent): void {
    let clean: SkillEvent;
    try {
      clean = this.#redact(event);
    } catch {
      return;
    }
    try {
      const answer = this.#listener(clean) as { catch?: unknown } | undefined;
      if (answer && typeof answer.catch === "function") {
        (answer as Promise<unknown>).catch(() => {});
      }
    } catch {
      // A listener's failure is its own.
    }
  }

  /**
   * Redacts one text with the current values.
   *
   * @param text The text.
   * @returns The text without the values.
   */
  redactText(text: string): string {
    return this.#current().redact(text);
  }

  /**
   * How many characters at the end of `text` a stream must hold back until
   * more comes: the longest end of it that starts a configured value (so a
   * value written across two chunks is redacted whole, and nothing else
   * waits).
   *
   * @param text Redacted text.
   * @returns The number of characters to hold back.
   */
  heldTail(text: string): number {
    this.#current();
    let best = 0;
    for (const value of this.#values) {
      for (let k = Math.min(value.length - 1, text.length); k > best; k--) {
        if (text.endsWith(value.slice(0, k))) {
          best = k;
          break;
        }
      }
    }
    return best;
  }

  #values: string[] = [];

  #current(): Redactor {
    let values: string[];
    try {
      values = [...this.#secrets()];
    } catch {
      values = [];
    }
    // The values are asked at each event (a value configured later counts);
    // the redactor is made again only when they changed.
    if (!this.#redactor || !sameValues(values, this.#key)) {
      this.#redactor = new Redactor(values);
      this.#values = values.filter((v) =>
        typeof v === "string" && v.length >= 4
      );
      this.#key = values;
    }
    return this.#redactor;
  }

  #redact(event: SkillEvent): SkillEvent {
    const redactor = this.#current();
    if (redactor.empty) return Object.freeze({ ...event });
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(event)) {
      out[name] = typeof value === "string" && name !== "type"
        ? redactor.redact(value)
        : value;
    }
    return Object.freeze(out) as unknown as SkillEvent;
  }
}

/** Whether two lists of configured values are the same, in order. */
function sameValues(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Makes a sink for an optional listener: `undefined` without one, so a
 * caller with nothing listening pays one check per event.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { eventSink } from "./events.ts";
 * assert(eventSink(undefined) === undefined);
 * assert(eventSink(() => {}) !== undefined);
 * ```
 *
 * @param listener The listener, when given.
 * @param secrets The values to keep out of events.
 * @returns The sink, or `undefined`.
 */
export function eventSink(
  listener: SkillEventListener | undefined,
  secrets?: () => Iterable<string>,
): EventSink | undefined {
  return listener === undefined ? undefined : new EventSink(listener, secrets);
}

/** What {@linkcode outputEmitter} returns. */
export interface OutputEmitter {
  /** Takes one chunk of the stream. */
  write(chunk: Uint8Array): void;
  /** Emits what was held back (call once the command ended). */
  flush(): void;
}

/**
 * Decodes a stream's chunks to text for `command_output` events, keeping a
 * UTF-8 sequence cut between chunks whole, and holding back the last
 * characters that could start a configured value until more comes (or
 * {@linkcode OutputEmitter.flush}), so a secret written across two chunks is
 * redacted whole.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { EventSink, outputEmitter, type SkillEvent } from "./events.ts";
 * const seen: string[] = [];
 * const sink = new EventSink((e) => {
 *   if (e.type === "command_output") seen.push(e.text);
 * }, () => ["s3cr3t-token"]);
 * const out = outputEmitter(sink, "stdout");
 * const bytes = new TextEncoder().encode("é key=s3cr3t-token\n");
 * out.write(bytes.subarray(0, 1));
 * out.write(bytes.subarray(1, 12));
 * out.write(bytes.subarray(12));
 * out.flush();
 * assertEquals(seen.join(""), "é key=[redacted]\n");
 * ```
 *
 * @param sink Where the events go.
 * @param stream Which stream.
 * @param callId The tool call, when any.
 * @returns The chunk handler.
 */
export function outputEmitter(
  sink: EventSink,
  stream: "stdout" | "stderr",
  callId?: string,
): OutputEmitter {
  // Made at the first chunk: a command that writes nothing costs no decoder.
  let decoder: TextDecoder | undefined;
  let carry = "";
  const send = (text: string) => {
    if (text === "") return;
    sink.emit({
      type: "command_output",
      stream,
      text,
      ...(callId !== undefined ? { callId } : {}),
    });
  };
  return {
    write(chunk) {
      decoder ??= new TextDecoder();
      const text = sink.redactText(
        carry + decoder.decode(chunk, { stream: true }),
      );
      const hold = sink.heldTail(text);
      carry = hold === 0 ? "" : text.slice(text.length - hold);
      send(hold === 0 ? text : text.slice(0, text.length - hold));
    },
    flush() {
      if (!decoder) return;
      const text = carry + decoder.decode();
      carry = "";
      send(text);
    },
  };
}

/** What {@linkcode observeExecute} returns. */
export interface ObservedExecute<R> {
  /** The request with its output also sent to the events. */
  readonly request: R;
  /** Emits what the output emitters held back (call once the command ended). */
  flush(): void;
}

/**
 * Adds `command_output` events to a runtime's execute request, beside the
 * caller's own `onStdout` and `onStderr` (a runtime's `onEvent` uses it).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { EventSink, observeExecute, type SkillEvent } from "./events.ts";
 * const seen: SkillEvent[] = [];
 * const sink = new EventSink((e) => seen.push(e));
 * const mine: string[] = [];
 * const observed = observeExecute({
 *   command: "x",
 *   onStdout: (c: Uint8Array) => mine.push(new TextDecoder().decode(c)),
 * }, sink);
 * observed.request.onStdout!(new TextEncoder().encode("hi"));
 * observed.flush();
 * assertEquals(mine, ["hi"]);
 * assertEquals(seen, [{ type: "command_output", stream: "stdout", text: "hi" }]);
 * ```
 *
 * @param request The request.
 * @param sink Where the events go; without one the request is unchanged.
 * @returns The request to run and the flush to call at its end.
 */
export function observeExecute<
  R extends {
    readonly onStdout?: (chunk: Uint8Array) => void;
    readonly onStderr?: (chunk: Uint8Array) => void;
  },
>(request: R, sink: EventSink | undefined): ObservedExecute<R> {
  if (!sink) return { request, flush: () => {} };
  const out = outputEmitter(sink, "stdout");
  const err = outputEmitter(sink, "stderr");
  const { onStdout, onStderr } = request;
  return {
    request: {
      ...request,
      onStdout: onStdout
        ? (chunk: Uint8Array) => {
          out.write(chunk);
          onStdout(chunk);
        }
        : out.write,
      onStderr: onStderr
        ? (chunk: Uint8Array) => {
          err.write(chunk);
          onStderr(chunk);
        }
        : err.write,
    },
    flush: () => {
      out.flush();
      err.flush();
    },
  };
}

/**
 * Adds `prepare_progress` events to a runtime's prepare request, beside the
 * caller's own `onProgress`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { EventSink, observePrepare, type SkillEvent } from "./events.ts";
 * const seen: SkillEvent[] = [];
 * const request = observePrepare({ skills: [] }, new EventSink((e) => seen.push(e)));
 * request.onProgress!({ skillName: "a", stage: "done" });
 * assertEquals(seen, [{ type: "prepare_progress", skillName: "a", stage: "done" }]);
 * ```
 *
 * @param request The request.
 * @param sink Where the events go; without one the request is unchanged.
 * @returns The request to run.
 */
export function observePrepare(
  request: PrepareRequest,
  sink: EventSink | undefined,
): PrepareRequest {
  if (!sink) return request;
  const { onProgress } = request;
  return {
    ...request,
    onProgress: (progress: PrepareProgress) => {
      sink.emit({ ...progress, type: "prepare_progress" });
      onProgress?.(progress);
    },
  };
}
