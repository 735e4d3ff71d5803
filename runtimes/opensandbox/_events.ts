/**
 * execd's `POST /command`: its body and its event stream, each event a bare
 * JSON object and a blank line (the real server) or SSE framing (`data:`
 * lines: a proxy, a newer server); SSE comments (`:`) and `event:`, `id:`,
 * `retry:` lines are skipped.
 *
 * @module
 */
import { RemoteHttpError } from "../remote/errors.ts";
import type { HttpClient } from "../remote/http.ts";
import { readTypedEvents } from "../remote/streams.ts";
import {
  rejoinLines,
  type SplitLineEvent,
  splitLinesCommand,
} from "../remote/split_lines.ts";
import {
  namedCommand,
  serverDeadlineMs,
  type StartedRemoteCommand,
} from "../remote/command.ts";
import type { RemoteCommand } from "../remote/runtime.ts";
import { needsShellPath } from "../remote/shell_files.ts";
import {
  backgroundCommandLine,
  backgroundTimeoutMs,
} from "../remote/service_background.ts";

/** One event of a command's stream. */
export interface ExecdEvent {
  /** `init`, `stdout`, `stderr`, `ping`, `execution_complete`, `error`, ... */
  readonly type: string;
  /** The command id (`init`) or one line of output (newline stripped). */
  readonly text?: string;
  /** Unix ms. */
  readonly timestamp?: number;
  /** For `error`. */
  readonly error?: {
    /** `CommandExecError` for an exit status or a start failure. */
    readonly ename?: string;
    /** The exit code as text (`-1` for a signal), or the start failure's text. */
    readonly evalue?: string;
    /** E.g. `["exit status 3"]` or `["signal: killed"]`. */
    readonly traceback?: readonly string[];
  };
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
   * `refused`: refused before anything ran; `start`: the process could not
   * start; `stream`: the event stream broke (the command was interrupted).
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
    super(message, options);
    this.reason = options.reason;
  }
}

/**
 * Yields the events of a command's stream in order (the kit's
 * `readTypedEvents`); a broken connection rejects with its error.
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
 * const events = await Array.fromAsync(readExecdEvents(new Blob([text]).stream()));
 * assert(events.map((event) => event.type).join() === "init,stdout");
 * ```
 */
export function readExecdEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<ExecdEvent> {
  return readTypedEvents(body, "the command's events", ExecdProtocolError);
}

/**
 * Sends `POST /command` (never retried; a 400, e.g. a missing folder, is a
 * refused {@linkcode SandboxCommandError}) and reads its events until
 * `init` names the command; its lines are rejoined (the kit's `rejoinLines`).
 */
export async function startCommand(
  http: HttpClient,
  request: RemoteCommand,
  background = false,
): Promise<StartedRemoteCommand> {
  const body = commandBody(request, background);
  let response: Response;
  try {
    response = await http.request({
      method: "POST",
      path: "/command",
      json: body,
      headers: { accept: "text/event-stream" },
      idempotent: false,
      ...(background ? {} : { timeoutMs: null }),
      ...(request.signal ? { signal: request.signal } : {}),
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
      folder: needsShellPath(request.cwd) ? request.cwd : undefined,
      error: (message) =>
        new SandboxCommandError(message, { reason: "refused" }),
    }),
  );
}

/**
 * The JSON body of `POST /command`: the command under the kit's wrapper for
 * a server that splits output into lines (`splitLinesCommand`), its folder,
 * its environment, and execd's own timeout 5 s after ours. A background
 * command writes raw into execd's log: it runs as the kit's
 * `backgroundCommandLine`, its timeout its own. A folder holding `$` (which
 * execd would expand) is entered by the command line instead.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { commandBody } from "./_events.ts";
 * const body = commandBody({ command: "true", cwd: "/w", env: {}, timeoutMs: 1000 });
 * assert(body.cwd === "/w" && body.timeout === 6000);
 * assert(commandBody({ command: "true", cwd: "/w/a$1", env: {}, timeoutMs: 1 }).cwd === "/");
 * const background = commandBody({ command: "serve", cwd: "/w", env: {}, timeoutMs: 1000 }, true);
 * assert(background.background && background.timeout === 1000);
 * ```
 *
 * @param request The command, folder, environment and timeout.
 * @param background Whether it runs in execd's background.
 * @returns The body.
 */
export function commandBody(
  request: Pick<RemoteCommand, "command" | "cwd" | "env" | "timeoutMs">,
  background = false,
): {
  command: string;
  cwd: string;
  envs: Readonly<Record<string, string>>;
  timeout?: number;
  background?: true;
} {
  const folder = needsShellPath(request.cwd) ? request.cwd : undefined;
  const timeout = background
    ? backgroundTimeoutMs(request.timeoutMs)
    : serverDeadlineMs(request.timeoutMs, 5_000);
  return {
    command: background
      ? backgroundCommandLine(request.command, folder)
      : splitLinesCommand(request.command, folder),
    cwd: folder === undefined ? request.cwd : "/",
    envs: request.env,
    ...(background ? { background: true as const } : {}),
    ...(timeout === undefined ? {} : { timeout }),
  };
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
      yield /^-?\d+$/.test(value)
        ? { type: "exit", exitCode: Number(value) }
        : {
          type: "exit",
          exitCode: -1,
          failure: new SandboxCommandError(
            `Cannot run the command: the sandbox could not start it: ${
              event.error?.evalue || event.error?.ename || "unknown error"
            }`,
            { reason: "start" },
          ),
        };
      return;
    }
  }
}
