/**
 * Reads the event stream of execd's `POST /command`: the real server writes
 * each event as a bare JSON object followed by a blank line; a proxy or a
 * newer server may use SSE framing (`data:` lines). Both are accepted; SSE
 * comments (`:`) and `event:`, `id:`, `retry:` lines are skipped.
 *
 * @module
 */

/** The error details of an `error` event. */
export interface ExecdEventError {
  /** `CommandExecError` for an exit status or a start failure. */
  readonly ename?: string;
  /** The exit code as text (`-1` for a signal), or the start failure's text. */
  readonly evalue?: string;
  /** E.g. `["exit status 3"]` or `["signal: killed"]`. */
  readonly traceback?: readonly string[];
}

/** One event of a command's stream. */
export interface ExecdEvent {
  /** `init`, `stdout`, `stderr`, `ping`, `execution_complete`, `error`, ... */
  readonly type: string;
  /** The command id (`init`) or one line of output (newline stripped). */
  readonly text?: string;
  /** Unix ms. */
  readonly timestamp?: number;
  /** For `error`. */
  readonly error?: ExecdEventError;
}

/**
 * The stream broke its framing: an event that is not a JSON object.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ExecdProtocolError } from "./_events.ts";
 * const error = new ExecdProtocolError("Cannot read the command's events: \"x\" is not an event object");
 * assert(error.name === "ExecdProtocolError");
 * ```
 */
export class ExecdProtocolError extends Error {
  /** The error's name. */
  override readonly name = "ExecdProtocolError";
}

const MAX_SHOWN = 80;

/**
 * Yields the events of a command's stream in order. The body is read to its
 * end; a broken connection rejects with the stream's error.
 *
 * @param body The response body.
 * @returns The events.
 * @throws {ExecdProtocolError} A line that is not a JSON object.
 *
 * @example Bare JSON events and SSE framing alike
 * ```ts
 * import { assert } from "@std/assert";
 * import { readExecdEvents } from "./_events.ts";
 * const text = '{"type":"init","text":"c1"}\n\ndata: {"type":"stdout","text":"hi"}\n\n';
 * const types = [];
 * for await (const event of readExecdEvents(new Blob([text]).stream())) types.push(event.type);
 * assert(types.join() === "init,stdout");
 * ```
 */
export async function* readExecdEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<ExecdEvent> {
  const decoder = new TextDecoder();
  let pending = "";
  let data: string[] = [];
  const reader = body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      pending += done ? decoder.decode() : decoder.decode(value, {
        stream: true,
      });
      let start = 0;
      let newline: number;
      while ((newline = pending.indexOf("\n", start)) !== -1) {
        const line = pending.charCodeAt(newline - 1) === 13
          ? pending.slice(start, newline - 1)
          : pending.slice(start, newline);
        start = newline + 1;
        const event = takeLine(line, data);
        if (event === FLUSH) {
          const joined = data.join("\n");
          data = [];
          yield parseEvent(joined);
        } else if (event !== null) {
          yield event;
        }
      }
      pending = pending.slice(start);
      if (done) break;
    }
    const last = pending.endsWith("\r") ? pending.slice(0, -1) : pending;
    const event = takeLine(last, data);
    if (event !== null && event !== FLUSH) yield event;
    if (data.length > 0) yield parseEvent(data.join("\n"));
  } finally {
    reader.releaseLock();
  }
}

const FLUSH = Symbol("flush");

/** One line: an event, a signal to flush collected `data:` lines, or nothing. */
function takeLine(
  line: string,
  data: string[],
): ExecdEvent | typeof FLUSH | null {
  if (line.trim() === "") return data.length > 0 ? FLUSH : null;
  if (line.startsWith(":")) return null;
  if (line.startsWith("data:")) {
    data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5));
    return null;
  }
  if (/^(event|id|retry):/.test(line)) return null;
  // A bare JSON event line (the real execd).
  return parseEvent(line);
}

function parseEvent(text: string): ExecdEvent {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (
    typeof value !== "object" || value === null || Array.isArray(value) ||
    typeof (value as { type?: unknown }).type !== "string"
  ) {
    const shown = text.length > MAX_SHOWN
      ? `${text.slice(0, MAX_SHOWN)}...`
      : text;
    throw new ExecdProtocolError(
      `Cannot read the command's events: ${
        JSON.stringify(shown)
      } is not an event object`,
    );
  }
  return value as ExecdEvent;
}
