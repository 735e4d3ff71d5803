/**
 * execd's own background commands: `POST /command` with `background: true`
 * (it answers `init` with the command's id, then `execution_complete` at
 * once), the output read from a byte cursor (`GET /command/{id}/logs`, the
 * next cursor in `EXECD-COMMANDS-TAIL-CURSOR`; standard output and error
 * in one log, in the order written), the state from
 * `GET /command/status/{id}`, and the interrupt `DELETE /command?id=`
 * (SIGTERM to the group, SIGKILL after 3 s, answered once it is gone).
 *
 * @module
 */
import type { HttpClient } from "../remote/http.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import type { BackgroundProcess } from "../types.ts";
import { PolledBackground } from "../remote/polled_background.ts";
import { ExecdProtocolError, readExecdEvents } from "./_events.ts";

/**
 * How long after `init` execd may still not know the command: it sends
 * `init` before it registers the command, so status and logs answer 404 /
 * 400 `command not found` for a moment.
 */
const REGISTER_GRACE_MS = 5_000;

/** The deadline of one status or logs call (the logs body streamed), in ms. */
const POLL_TIMEOUT_MS = 120_000;

/** What {@linkcode startExecdBackground} needs from the execd client. */
export interface ExecdBackgroundParts {
  /** The HTTP client on execd's base URL. */
  readonly http: HttpClient;
  /** Interrupts a command (an unknown or finished id is no error). */
  readonly interrupt: (id: string) => Promise<void>;
  /** Makes the error of a refused or failed start. */
  readonly refused: (
    message: string,
    reason: "refused" | "start",
    cause?: unknown,
  ) => Error;
}

/** A status answer of execd. */
interface ExecdStatus {
  running?: boolean;
  exit_code?: number | null;
  error?: string;
}

/**
 * Starts a background command on execd and returns once `init` gave its
 * id. Never retried.
 *
 * @param parts The client's parts.
 * @param body The `POST /command` body (`background: true`).
 * @param timeoutMs The command's timeout (to tell a timeout from a kill).
 * @param sinks Where fetched output goes (combined, as standard output).
 * @param signal Stops the start.
 * @returns The command.
 */
export async function startExecdBackground(
  parts: ExecdBackgroundParts,
  body: Record<string, unknown>,
  timeoutMs: number,
  sinks: { onStdout?: (chunk: Uint8Array) => void },
  signal?: AbortSignal,
): Promise<BackgroundProcess> {
  let response: Response;
  try {
    response = await parts.http.request({
      method: "POST",
      path: "/command",
      json: body,
      headers: { accept: "text/event-stream" },
      idempotent: false,
      ...(signal ? { signal } : {}),
    });
  } catch (error) {
    if (error instanceof RemoteHttpError && error.status === 400) {
      throw parts.refused(
        `Cannot run the command in "${body.cwd}": the sandbox refused it: ${
          error.serverMessage ?? error.message
        }`,
        "refused",
        error,
      );
    }
    throw error;
  }
  let id: string | undefined;
  let failure: string | undefined;
  const stream = response.body;
  try {
    if (!stream) throw new ExecdProtocolError("the answer has no body");
    for await (const event of readExecdEvents(stream)) {
      if (event.type === "init" && typeof event.text === "string") {
        id = event.text;
      } else if (event.type === "error") {
        failure = event.error?.evalue || event.error?.ename || "unknown error";
        break;
      } else if (event.type === "execution_complete") {
        break;
      }
    }
  } catch (error) {
    // After `init`, a start failure comes as a bare `{code, message}`.
    if (!(error instanceof ExecdProtocolError) || id === undefined) throw error;
    failure = error.message;
  } finally {
    await stream?.cancel().catch(() => {});
  }
  if (failure !== undefined) {
    if (id !== undefined) await parts.interrupt(id).catch(() => {});
    throw parts.refused(
      `Cannot run the command: the sandbox could not start it: ${failure}`,
      "start",
    );
  }
  if (id === undefined) {
    throw new ExecdProtocolError(
      "Cannot run the command: the answer to a background command gave no id",
    );
  }
  return execdBackground(parts, id, timeoutMs, sinks.onStdout);
}

/**
 * Finds a background command execd has by its id (another runtime on the
 * same sandbox started it): its state, command and start from
 * `GET /command/status/{id}`, its output read from the log's start.
 *
 * @param parts The client's parts.
 * @param id The command's id.
 * @param sinks Where fetched output goes.
 * @returns The command, or `undefined` when execd does not know it.
 */
export async function attachExecdBackground(
  parts: ExecdBackgroundParts,
  id: string,
  sinks: { onStdout?: (chunk: Uint8Array) => void },
): Promise<
  | { process: BackgroundProcess; command: string; startedAt: Date }
  | undefined
> {
  if (!/^[\w.-]{1,128}$/.test(id)) return undefined;
  let status: ExecdStatus & { content?: string; started_at?: string };
  try {
    status = await parts.http.json({
      method: "GET",
      path: `/command/status/${encodeURIComponent(id)}`,
      timeoutMs: POLL_TIMEOUT_MS,
    });
  } catch (error) {
    if (
      error instanceof RemoteHttpError &&
      (error.status === 404 || error.status === 400)
    ) return undefined;
    throw error;
  }
  // The wrapper of `backgroundCommandBody` evaluates the command, quoted.
  const evaluated = /\neval -- ([\s\S]*)$/.exec(status.content ?? "")?.[1];
  const command = evaluated === undefined
    ? status.content ?? ""
    : /^'[\s\S]*'$/.test(evaluated)
    ? evaluated.slice(1, -1).replaceAll("'\\''", "'")
    : evaluated;
  const started = Date.parse(status.started_at ?? "");
  // Its timeout is not known here: it never reads as timed out.
  return {
    process: execdBackground(parts, id, Infinity, sinks.onStdout, 0),
    command,
    startedAt: new Date(Number.isFinite(started) ? started : Date.now()),
  };
}

/**
 * An execd background command, read by the kit's polls: the state from
 * `GET /command/status/{id}`, the output from `GET /command/{id}/logs` and
 * its cursor header, the kill by interrupt.
 */
function execdBackground(
  parts: ExecdBackgroundParts,
  id: string,
  timeoutMs: number,
  onOutput?: (chunk: Uint8Array) => void,
  startedAt = Date.now(),
): BackgroundProcess {
  const path = encodeURIComponent(id);
  // One call, `undefined` while execd does not know the command yet.
  const known = async <T>(call: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await call();
    } catch (error) {
      if (
        error instanceof RemoteHttpError &&
        (error.status === 404 || error.status === 400) &&
        /command not found/.test(error.serverMessage ?? "") &&
        Date.now() - startedAt < REGISTER_GRACE_MS
      ) {
        return undefined;
      }
      throw error;
    }
  };
  return new PolledBackground(id, {
    state: async () => {
      const status = await known(() =>
        parts.http.json<ExecdStatus>({
          method: "GET",
          path: `/command/status/${path}`,
          timeoutMs: POLL_TIMEOUT_MS,
        })
      );
      if (!status) return undefined;
      if (status.running !== false) return { running: true };
      const exitCode = typeof status.exit_code === "number"
        ? status.exit_code
        : -1;
      return {
        running: false,
        exitCode,
        ...(exitCode === -1 && /killed/.test(status.error ?? "") &&
            Date.now() - startedAt >= timeoutMs
          ? { timedOut: true }
          : {}),
      };
    },
    output: async (cursor) => {
      const logs = await known(() =>
        parts.http.request({
          method: "GET",
          path: `/command/${path}/logs`,
          query: { cursor: String(cursor) },
          timeoutMs: POLL_TIMEOUT_MS,
        })
      );
      if (!logs) return undefined;
      const next = logs.headers.get("execd-commands-tail-cursor");
      return { body: logs.body, ...(next ? { next: Number(next) } : {}) };
    },
    kill: () => parts.interrupt(id),
  }, onOutput);
}
