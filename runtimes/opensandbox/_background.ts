/**
 * execd's own background commands: `POST /command` with `background: true`
 * (it answers `init` with the command's id, then `execution_complete` at
 * once), the output read from a byte cursor (`GET /command/{id}/logs`, the
 * next cursor in `EXECD-COMMANDS-TAIL-CURSOR`; standard output and error
 * in one log, in the order written), the state from
 * `GET /command/status/{id}`, and the interrupt `DELETE /command?id=`
 * (SIGTERM to the group, SIGKILL after 3 s, answered once it is gone); read
 * by the kit's `serviceBackground`.
 *
 * @module
 */
import { namedCommand } from "../remote/command.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import type { AttachedBackground } from "../remote/background.ts";
import type { RemoteCommand } from "../remote/runtime.ts";
import { needsShellPath } from "../remote/_shell_files.ts";
import {
  backgroundCommandLine,
  commandOfLine,
  launchedBackground,
  serviceBackground,
} from "../remote/service_background.ts";
import { MAX_EXECUTE_TIMEOUT_MS } from "../command_core.ts";
import type { BackgroundProcess } from "../types.ts";
import {
  execdEvents,
  ExecdProtocolError,
  postCommand,
  SandboxCommandError,
} from "./_events.ts";
import type { ExecdClient } from "./execd.ts";

/** The deadline of one status or logs call (the logs body streamed), in ms. */
const POLL_TIMEOUT_MS = 120_000;

/** What the background calls need of the execd client. */
export type ExecdBackgroundParts = Pick<ExecdClient, "http" | "interrupt">;

/**
 * The JSON body of `POST /command` for a background command
 * (`background: true`): its output goes raw into execd's log (no lines to
 * rejoin), so the command runs as the kit's `backgroundCommandLine`, which
 * enters a folder holding `$` itself. The server's timeout is the
 * command's own; none at the longest timeout.
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
  return {
    command: backgroundCommandLine(
      request.command,
      viaShell ? request.cwd : undefined,
    ),
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
  content?: string;
  started_at?: string;
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
  // After `init`, a start failure comes as a bare `{code, message}`.
  const id = await launchedBackground(
    await namedCommand(execdEvents(stream)),
    (id) => parts.interrupt(id),
    (cause) =>
      cause instanceof ExecdProtocolError
        ? new SandboxCommandError(
          `Cannot run the command: the sandbox could not start it: ${cause.message}`,
          { reason: "start" },
        )
        : undefined,
  );
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
): Promise<AttachedBackground | undefined> {
  if (!/^[\w.-]{1,128}$/.test(id)) return undefined;
  let status: ExecdStatus;
  try {
    status = await statusOf(parts, id);
  } catch (error) {
    if (unknown(error, "")) return undefined;
    throw error;
  }
  const started = Date.parse(status.started_at ?? "");
  // Its timeout is not known here: it never reads as timed out.
  return {
    process: execdBackground(parts, id, Infinity, sinks.onStdout, 0),
    command: commandOfLine(status.content ?? ""),
    startedAt: new Date(Number.isFinite(started) ? started : Date.now()),
  };
}

/** `GET /command/status/{id}`. */
function statusOf(
  parts: ExecdBackgroundParts,
  id: string,
): Promise<ExecdStatus> {
  return parts.http.json<ExecdStatus>({
    method: "GET",
    path: `/command/status/${encodeURIComponent(id)}`,
    timeoutMs: POLL_TIMEOUT_MS,
  });
}

/**
 * Whether execd does not know the command (404 or 400 whose message holds
 * `pattern`): it sends `init` before it registers the command.
 */
function unknown(error: unknown, pattern: string): boolean {
  return error instanceof RemoteHttpError &&
    (error.status === 404 || error.status === 400) &&
    (error.serverMessage ?? "").includes(pattern);
}

/** An execd background command read by the kit's polls. */
function execdBackground(
  parts: ExecdBackgroundParts,
  id: string,
  timeoutMs: number,
  onOutput?: (chunk: Uint8Array) => void,
  startedAt = Date.now(),
): BackgroundProcess {
  return serviceBackground(id, {
    status: async () => {
      const status = await statusOf(parts, id);
      return {
        running: status.running !== false,
        exitCode: status.exit_code,
        killed: /killed/.test(status.error ?? ""),
      };
    },
    logs: async (cursor) => {
      const logs = await parts.http.request({
        method: "GET",
        path: `/command/${encodeURIComponent(id)}/logs`,
        query: { cursor: String(cursor) },
        timeoutMs: POLL_TIMEOUT_MS,
      });
      const next = logs.headers.get("execd-commands-tail-cursor");
      return { body: logs.body, ...(next ? { next: Number(next) } : {}) };
    },
    kill: () => parts.interrupt(id),
    unknown: (error) => unknown(error, "command not found"),
  }, { timeoutMs, startedAt, onOutput });
}
