/**
 * How an AIO container runs commands for the kit. A command: `POST
 * /v1/bash/exec` with a soft timeout, then `POST /v1/bash/output` long polls
 * from the byte offsets the server returns until it ends; at our own
 * deadline or on abort the session's process is killed (`POST
 * /v1/bash/kill`, SIGKILL). A background command: the exec with
 * `async_mode: true` (it answers at once with the command's id), its output
 * long-polled from the same offsets while it runs, so each answer holds
 * only what came since the one before. A command is never sent twice.
 *
 * @module
 */
import { MAX_EXECUTE_TIMEOUT_MS } from "../command_core.ts";
import type { BackgroundState } from "../types.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import {
  type LongPollKind,
  longPollKind,
  StreamOffsets,
} from "../remote/long_poll.ts";
import {
  type AioCallOptions,
  type AioClient,
  type AioCommandInfo,
  AioOperationError,
  type AioOutput,
  type AioOutputRequest,
  type AioOutputResult,
} from "./client.ts";

/** The longest soft timeout or long poll of one request, in seconds: 20. */
export const DEFAULT_POLL_SECONDS = 20;

/**
 * The command as the server's `bash -c` gets it. The server puts it right
 * after `-c`, where bash would read a leading `-` or `+` as an option of its
 * own (`--help`, `-x`): such a command gets a leading space, which changes
 * nothing else.
 *
 * @param command The command.
 * @returns The argument sent.
 */
export function commandArgument(command: string): string {
  return /^[-+]/.test(command) ? ` ${command}` : command;
}

/** A command's state as the kit says it (`-1` unless it completed). */
function stateOf(
  { status, exit_code }: Pick<AioCommandInfo, "status" | "exit_code">,
): BackgroundState {
  if (status === "running" || status === "pending") return { running: true };
  return {
    running: false,
    exitCode: status === "completed" ? exit_code ?? -1 : -1,
    ...(status === "timed_out" ? { timedOut: true } : {}),
  };
}

/** An answer's output, the offsets moved on. */
function outputOf(offsets: StreamOffsets, answer: AioOutput) {
  return offsets.take(answer, {
    stdout: answer.offset,
    stderr: answer.stderr_offset,
  });
}

/**
 * How an AIO container runs commands and background commands for the kit,
 * as the kit's {@linkcode longPollKind} (see the module's description):
 * each in a bash session of its own (`/v1/bash/kill` acts on a session's
 * process group); the server's `hard_timeout` 5 s after ours; the server's
 * own truncation of the output counted as left out.
 *
 * @example Making the kind (no request is made)
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { aioKind } from "./execute.ts";
 * import { AioClient } from "./client.ts";
 * const kind = aioKind(new AioClient({ baseUrl: "http://127.0.0.1:9" }));
 * assertEquals([kind.session.commands.backstopMs, kind.sessions.size], [5_000, 0]);
 * ```
 *
 * @param client The container's client.
 * @param pollSeconds The longest soft timeout or long poll per request, in s.
 * @returns The kind's hooks.
 */
export function aioKind(
  client: AioClient,
  pollSeconds = DEFAULT_POLL_SECONDS,
): LongPollKind {
  return longPollKind({
    backstopMs: 5_000,
    graceMs: 20_000,
    pollSeconds,
    serverName: "the container",
    createSession: (id, signal) =>
      client.createSession(id, {
        timeoutMs: 30_000,
        ...(signal ? { signal } : {}),
      }),
    closeSession: (id) => client.closeSession(id, { timeoutMs: 5_000 }),
    kill: (session) => client.kill(session, "SIGKILL", { timeoutMs: 10_000 }),
    command: (session, request) => {
      const line = commandArgument(request.command);
      const offsets = new StreamOffsets();
      let id: string | undefined;
      return {
        send: async (soft) => {
          const answer = await client.exec({
            command: line,
            session_id: session,
            exec_dir: request.cwd,
            env: request.env,
            timeout: soft,
            // A backstop on the server in case we vanish; ours acts first.
            hard_timeout: Math.ceil(request.serverTimeoutMs / 1000),
            max_output_length: Math.max(1, request.maxOutputBytes),
          }, { signal: request.stop, timeoutMs: soft * 1000 + 15_000 });
          id = answer.command_id;
          return { output: outputOf(offsets, answer), state: stateOf(answer) };
        },
        read: async (wait) => {
          const answer = await readOutput(client, session, id, offsets, {
            wait: true,
            wait_timeout: wait,
          }, { signal: request.stop, timeoutMs: wait * 1000 + 15_000 });
          if (!answer.command) {
            const url = `${client.baseUrl}/v1/bash/output`;
            throw new RemoteHttpError(
              `POST ${url}: the answer names no command`,
              { method: "POST", url, status: 200 },
            );
          }
          return {
            output: outputOf(offsets, answer),
            state: stateOf(answer.command),
          };
        },
        last: async (killed, signal) => {
          if (id === undefined && !killed) return [];
          const answer = await readOutput(client, session, id, offsets, {}, {
            timeoutMs: 5_000,
            signal,
          }).catch(() => undefined);
          return answer && answer.command?.command === line
            ? outputOf(offsets, answer)
            : [];
        },
      };
    },
    background: {
      start: async (session, request) => {
        const answer = await client.exec({
          command: commandArgument(request.command),
          session_id: session,
          exec_dir: request.cwd,
          env: request.env,
          async_mode: true,
          ...(request.timeoutMs < MAX_EXECUTE_TIMEOUT_MS
            ? { hard_timeout: Math.max(0.001, request.timeoutMs / 1000) }
            : {}),
        }, {
          timeoutMs: 30_000,
          ...(request.signal ? { signal: request.signal } : {}),
        });
        return { id: answer.command_id, state: stateOf(answer) };
      },
      read: async (session, id, offsets, wait, signal) => {
        const answer = await readOutput(client, session, id, offsets, {
          wait,
          wait_timeout: pollSeconds,
        }, { signal, timeoutMs: pollSeconds * 1000 + 15_000 });
        const state = answer.command ? stateOf(answer.command) : undefined;
        return { output: outputOf(offsets, answer), state };
      },
      sessions: async () =>
        (await client.sessions({ timeoutMs: 15_000 })).map((s) => s.session_id),
      lookup: async (session, id) => {
        try {
          const { command } = await client.output(
            { session_id: session, command_id: id, wait: false },
            { timeoutMs: 15_000 },
          );
          if (!command) return undefined;
          return { command: command.command, state: stateOf(command) };
        } catch (error) {
          if (error instanceof AioOperationError) return undefined; // not its session
          throw error;
        }
      },
    },
  });
}

/** Reads a command's output from its offsets (no `id`: the session's current one). */
function readOutput(
  client: AioClient,
  session: string,
  id: string | undefined,
  offsets: StreamOffsets,
  wait: Pick<AioOutputRequest, "wait" | "wait_timeout">,
  options: AioCallOptions,
): Promise<AioOutputResult> {
  return client.output({
    session_id: session,
    ...(id !== undefined ? { command_id: id } : {}),
    offset: offsets.stdout,
    stderr_offset: offsets.stderr,
    ...wait,
  }, options);
}
