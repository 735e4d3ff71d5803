/**
 * Reads the event stream of execd's `POST /command`: the real server writes
 * each event as a bare JSON object followed by a blank line; a proxy or a
 * newer server may use SSE framing (`data:` lines). Both are accepted; SSE
 * comments (`:`) and `event:`, `id:`, `retry:` lines are skipped.
 *
 * @module
 */
import { RemoteHttpError } from "../remote/errors.ts";
import type { HttpClient } from "../remote/http.ts";
import { readTypedEvents } from "../remote/streams.ts";
import { rejoinLines, type SplitLineEvent } from "../remote/split_lines.ts";
import { namedCommand, type StartedRemoteCommand } from "../remote/command.ts";

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

/**
 * A command the sandbox refused or could not start (a missing folder, a
 * start failure), or whose event stream broke before it finished.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { SandboxCommandError } from "@skillrun/skillrun/opensandbox";
 * const error = new SandboxCommandError(
 *   "Cannot run the command: the sandbox could not start it: permission denied",
 *   { reason: "start" },
 * );
 * assert(error.reason === "start");
 * ```
 */
export class SandboxCommandError extends Error {
  /** The error's name. */
  override readonly name = "SandboxCommandError";
  /**
   * `refused`: the server refused the request before running anything;
   * `start`: it could not start the process; `stream`: the event stream broke
   * (the command was interrupted so that nothing is left running).
   */
  readonly reason: "refused" | "start" | "stream";

  /**
   * Makes the error.
   *
   * @param message What failed.
   * @param options The reason and the cause.
   */
  constructor(
    message: string,
    options: { reason: SandboxCommandError["reason"]; cause?: unknown },
  ) {
    super(
      message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.reason = options.reason;
  }
}

/**
 * Yields the events of a command's stream in order (the kit's
 * `readTypedEvents`). The body is read to its end; a broken connection
 * rejects with the stream's error.
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
export function readExecdEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<ExecdEvent> {
  return readTypedEvents(body, "the command's events", ExecdProtocolError);
}

/**
 * Sends `POST /command` (never retried) and reads its events for the kit
 * until `init` names the command: the lines rejoined (the kit's
 * `rejoinLines`), the end's exit code, or why the command could not run. A
 * 400 (e.g. a missing folder) is a refused {@linkcode SandboxCommandError}.
 *
 * @param http execd's client.
 * @param body The request.
 * @param options The folder the wrapper enters itself (one holding `$`),
 * the signal, and `timeoutMs: null` for no deadline on the answer's head.
 * @returns The command, named.
 */
export async function startCommand(
  http: HttpClient,
  body: { readonly cwd: string },
  options: {
    folder?: string | undefined;
    signal?: AbortSignal | undefined;
    timeoutMs?: null;
  },
): Promise<StartedRemoteCommand> {
  let response: Response;
  try {
    response = await http.request({
      method: "POST",
      path: "/command",
      json: body,
      headers: { accept: "text/event-stream" },
      idempotent: false,
      ...(options.timeoutMs === null ? { timeoutMs: null } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    if (error instanceof RemoteHttpError && error.status === 400) {
      throw new SandboxCommandError(
        `Cannot run the command in "${body.cwd}": the sandbox refused it: ${
          error.serverMessage ?? error.message
        }`,
        { reason: "refused", cause: error },
      );
    }
    throw error;
  }
  if (!response.body) throw new ExecdProtocolError("the answer has no body");
  return await namedCommand(
    rejoinLines(splitEvents(response.body), {
      folder: options.folder,
      error: (message) =>
        new SandboxCommandError(message, { reason: "refused" }),
    }),
  );
}

/** execd's events as a splitting server's (see `rejoinLines`). */
async function* splitEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<SplitLineEvent> {
  for await (const event of readExecdEvents(body)) {
    if (event.type === "init" && typeof event.text === "string") {
      yield { type: "id", id: event.text };
    } else if (event.type === "stdout" || event.type === "stderr") {
      yield { type: event.type, line: event.text };
    } else if (event.type === "execution_complete" || event.type === "error") {
      const value = (event.error?.evalue ?? "0").trim();
      if (/^-?\d+$/.test(value)) {
        yield { type: "exit", exitCode: Number(value) };
        return;
      }
      const failure = new SandboxCommandError(
        `Cannot run the command: the sandbox could not start it: ${
          event.error?.evalue || event.error?.ename || "unknown error"
        }`,
        { reason: "start" },
      );
      yield { type: "exit", exitCode: -1, failure };
      return;
    }
  }
}
