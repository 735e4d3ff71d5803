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
import { RemoteHttpError } from "../remote/errors.ts";
import type { RemoteCommand } from "../remote/runtime.ts";
import { needsShellPath } from "../remote/_shell_files.ts";
import { shellQuote } from "../remote/shell.ts";
import { MAX_EXECUTE_TIMEOUT_MS } from "../command_core.ts";
import type { BackgroundProcess } from "../types.ts";
import { PolledBackground } from "../remote/polled_background.ts";
import {
  ExecdProtocolError,
  postCommand,
  readExecdEvents,
  SandboxCommandError,
} from "./_events.ts";
import type { ExecdClient } from "./execd.ts";

/**
 * How long after `init` execd may still not know the command: it sends
 * `init` before it registers the command, so status and logs answer 404 /
 * 400 `command not found` for a moment.
 */
const REGISTER_GRACE_MS = 5_000;

/** The deadline of one status or logs call (the logs body streamed), in ms. */
const POLL_TIMEOUT_MS = 120_000;

/** What the background calls need of the execd client. */
export type ExecdBackgroundParts = Pick<ExecdClient, "http" | "interrupt">;

/**
 * The JSON body of `POST /command` for a background command
 * (`background: true`): its output goes raw into execd's log (no lines to
 * rejoin), so the wrapper only enters a folder holding `$`, runs the
 * command with `eval` (a leading `-` stays a command) and, on SIGTERM
 * (execd's interrupt), waits for its children so that none is left to pid 1
 * as a zombie, which the interrupt would wait for. The server's timeout is
 * the command's own; none at the longest timeout.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { backgroundCommandBody } from "./_background.ts";
 * const body = backgroundCommandBody({ command: "serve", cwd: "/w", env: {}, timeoutMs: 1000 });
 * assert(body.background && body.timeout === 1000 && body.cwd === "/w");
 * ```
 *
 * @param request The command, folder, environment and timeout.
 * @returns The body.
 */
export function backgroundCommandBody(
  request: Pick<RemoteCommand, "command" | "cwd" | "env" | "timeoutMs">,
): {
  command: string;
  cwd: string;
  envs: Readonly<Record<string, string>>;
  background: true;
  timeout?: number;
} {
  const viaShell = needsShellPath(request.cwd);
  const enter = viaShell ? `cd -- ${shellQuote(request.cwd)} || exit 1\n` : "";
  return {
    command: `trap 'wait; exit 143' TERM\n${enter}eval -- ${
      shellQuote(request.command)
    }`,
    cwd: viaShell ? "/" : request.cwd,
    envs: request.env,
    background: true,
    ...(request.timeoutMs < MAX_EXECUTE_TIMEOUT_MS
      ? { timeout: Math.max(1, Math.ceil(request.timeoutMs)) }
      : {}),
  };
}

/** A status answer of execd. */
interface ExecdStatus {
  running?: boolean;
  exit_code?: number | null;
  error?: string;
}

/**
 * Starts a background command (never retried) once `init` gave its id; its
 * output (both streams in one log) goes to `onStdout` as polls read it.
 */
export async function startExecdBackground(
  parts: ExecdBackgroundParts,
  request: RemoteCommand,
): Promise<BackgroundProcess> {
  const stream = await postCommand(
    parts.http,
    backgroundCommandBody(request),
    { signal: request.signal },
  );
  let id: string | undefined;
  let failure: string | undefined;
  try {
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
    await stream.cancel().catch(() => {});
  }
  if (failure !== undefined) {
    if (id !== undefined) await parts.interrupt(id).catch(() => {});
    throw new SandboxCommandError(
      `Cannot run the command: the sandbox could not start it: ${failure}`,
      { reason: "start" },
    );
  }
  if (id === undefined) {
    throw new ExecdProtocolError(
      "Cannot run the command: the answer to a background command gave no id",
    );
  }
  return execdBackground(parts, id, request.timeoutMs, request.onStdout);
}

/**
 * Finds a background command another runtime on the sandbox started: its
 * state, command and start from `GET /command/status/{id}`, its output from
 * the log's start; `undefined` when execd does not know it.
 */
export async function attachExecdBackground(
  parts: ExecdBackgroundParts,
  id: string,
  sinks: { onStdout?: ((chunk: Uint8Array) => void) | undefined },
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

/** An execd background command read by the kit's polls. */
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
