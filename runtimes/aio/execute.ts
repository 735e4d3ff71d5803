/**
 * How an AIO container runs commands for the kit. A command: `POST
 * /v1/bash/exec` with a soft timeout, then `POST /v1/bash/output` long polls
 * from the byte offsets the server returns until it ends; at our own
 * deadline or on abort the session's process is killed (`POST
 * /v1/bash/kill`, SIGKILL). A background command: the exec with
 * `async_mode: true` (it answers at once with the command's id), its output
 * long-polled by the kit's {@linkcode LongPolledBackground} from the same
 * offsets while it runs, so each answer holds only what came since the one
 * before. Each runs in a bash session of its own (a kill acts on a
 * session's current process). A command is never sent twice.
 *
 * @module
 */
import { MAX_EXECUTE_TIMEOUT_MS } from "../command_core.ts";
import type { BackgroundState } from "../types.ts";
import type { RemoteCommandKind } from "../remote/command.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import { longPollCommands, StreamOffsets } from "../remote/long_poll.ts";
import { LongPolledBackground } from "../remote/polled_background.ts";
import type { RemoteCommand, RemoteSession } from "../remote/runtime.ts";
import type { SessionPool } from "../remote/session_pool.ts";
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
function stateOf(command: Omit<AioCommandInfo, "command">): BackgroundState {
  const { status, exit_code } = command;
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
 * How an AIO container runs commands for the kit's `runRemoteCommand`, by
 * the kit's {@linkcode longPollCommands} (see the module's description):
 * each command in a bash session of its own (the session's id is the
 * command's: `/v1/bash/kill` acts on a session); the server's
 * `hard_timeout` 5 s after ours; the server's own truncation of the output
 * counted as left out.
 *
 * @example Making the kind (no request is made)
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { aioCommands } from "./execute.ts";
 * import { AioClient } from "./client.ts";
 * import { SessionPool } from "../remote/session_pool.ts";
 * const client = new AioClient({ baseUrl: "http://127.0.0.1:9" });
 * const kind = aioCommands(client, new SessionPool(() => Promise.resolve()));
 * assertEquals(kind.backstopMs, 5_000);
 * ```
 *
 * @param client The container's client.
 * @param sessions The container's session pool.
 * @param pollSeconds The longest soft timeout or long poll per request, in s.
 * @returns The kind's commands.
 */
export function aioCommands(
  client: AioClient,
  sessions: SessionPool,
  pollSeconds = DEFAULT_POLL_SECONDS,
): RemoteCommandKind {
  return longPollCommands({
    backstopMs: 5_000,
    graceMs: 20_000,
    pollSeconds,
    sessions,
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
  });
}

/**
 * Reads a command's output from its offsets (`id` undefined: the session's
 * current command), long-polled as `wait` says.
 */
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

/** How long a background kill waits for the reads to see the end, in ms. */
const KILL_WAIT_MS = 10_000;

/**
 * AIO's own background commands for a session (its `startBackground` and
 * `attachBackground`), and `stop()` for the reads nobody stopped (the
 * runtime closes).
 *
 * @param client The container's client.
 * @param sessions The container's session pool.
 * @param pollSeconds The longest long poll per request, in s.
 * @returns The calls.
 */
export function aioBackground(
  client: AioClient,
  sessions: SessionPool,
  pollSeconds = DEFAULT_POLL_SECONDS,
): {
  calls: Required<Pick<RemoteSession, "startBackground" | "attachBackground">>;
  stop(): Promise<void>;
} {
  const reading = new Set<LongPolledBackground>();
  /** A command read by long polls; `pool` gets its session back (ours only). */
  const read = (
    sessionId: string,
    command: Omit<AioCommandInfo, "command">,
    sinks: Pick<RemoteCommand, "onStdout" | "onStderr">,
    pool?: SessionPool,
  ): LongPolledBackground => {
    const id = command.command_id;
    const offsets = new StreamOffsets();
    const process = new LongPolledBackground(
      id,
      {
        read: async (wait, signal) => {
          const answer = await readOutput(client, sessionId, id, offsets, {
            wait,
            wait_timeout: pollSeconds,
          }, { signal, timeoutMs: pollSeconds * 1000 + 15_000 });
          for (const { type, data } of outputOf(offsets, answer)) {
            if (data.length === 0) continue;
            if (type === "stdout") sinks.onStdout?.(data);
            else sinks.onStderr?.(data);
          }
          return answer.command ? stateOf(answer.command) : undefined;
        },
        // The session runs this command alone: its process group is killed.
        kill: async () => {
          await client.kill(sessionId, "SIGKILL", { timeoutMs: KILL_WAIT_MS });
        },
        done: (ended) => {
          reading.delete(process);
          if (ended) pool?.give(sessionId);
          else pool?.drop(sessionId);
        },
      },
      stateOf(command),
      {
        killWaitMs: KILL_WAIT_MS,
        serverName: "the container",
      },
    );
    reading.add(process);
    return process;
  };
  const calls: Required<
    Pick<RemoteSession, "startBackground" | "attachBackground">
  > = {
    /** Never retried; a session is kept for it until it ends. */
    startBackground: async (request) => {
      const sessionId = await sessions.open(request.signal);
      let answer;
      try {
        answer = await client.exec({
          command: commandArgument(request.command),
          session_id: sessionId,
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
      } catch (error) {
        // It may have started: stop it, and never reuse the session.
        await client.kill(sessionId, "SIGKILL", { timeoutMs: 10_000 }).catch(
          () => {},
        );
        sessions.drop(sessionId);
        throw error;
      }
      return read(sessionId, answer, request, sessions);
    },
    /**
     * A command another runtime on the container started: its session is
     * looked up among the container's, its output read from the start. The
     * session is not ours: neither reused nor closed here.
     */
    attachBackground: async (id, sinks) => {
      if (!/^[\w.-]{1,128}$/.test(id)) return undefined;
      const options = { timeoutMs: 15_000 };
      for (const { session_id } of await client.sessions(options)) {
        let answer;
        try {
          answer = await client.output(
            { session_id, command_id: id, wait: false },
            options,
          );
        } catch (error) {
          if (error instanceof AioOperationError) continue; // not this session's
          throw error;
        }
        if (!answer.command) continue;
        return {
          process: read(
            session_id,
            { ...answer.command, command_id: id },
            sinks,
          ),
          command: answer.command.command,
          startedAt: new Date(),
        };
      }
      return undefined;
    },
  };
  return {
    calls,
    stop: async () => {
      const all = [...reading];
      reading.clear();
      await Promise.all(all.map((process) => process.stop()));
    },
  };
}
