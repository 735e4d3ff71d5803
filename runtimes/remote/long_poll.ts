/**
 * Commands of a service that runs each in a session of its own and reads
 * their output by long polls from byte offsets (AIO's `/v1/bash/exec` and
 * `/v1/bash/output`): {@linkcode longPollKind} makes the kit's hooks (its
 * commands, its background commands) from the service's calls (send, read,
 * kill; start, read, lookup), with the pieces they are made of: the two
 * offsets, moved on by each answer with what the server cut out counted,
 * the wait of one long poll within the deadline, and a read sent again from
 * the same offsets when its answer broke off (a read is safe to repeat; the
 * command is never sent twice).
 *
 * @module
 */
import { delay } from "../../_internal/async.ts";
import type { BackgroundState } from "../types.ts";
import type {
  RemoteCommandEvent,
  RemoteCommandKind,
  RemoteCommandStart,
} from "./command.ts";
import { RemoteHttpError } from "./errors.ts";
import { SessionPool } from "./session_pool.ts";
import { LongPolledBackground } from "./polled_background.ts";
import type { RemoteCommand, RemoteSession } from "./runtime.ts";

/** Output of one stream since its offset, as {@linkcode StreamOffsets.take} gives it. */
export interface OffsetOutput {
  /** The stream. */
  readonly type: "stdout" | "stderr";
  /** The bytes read. */
  readonly data: Uint8Array;
  /** Bytes the server left out of this read (its own truncation). */
  readonly cut: number;
}

const ENCODER = new TextEncoder();

/**
 * The byte offsets of a command's two streams, moved on by each answer to
 * the offsets the server returns (never back).
 *
 * @example An answer cut by the server
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { StreamOffsets } from "./long_poll.ts";
 * const offsets = new StreamOffsets();
 * const read = offsets.take({ stdout: "ab" }, { stdout: 5 });
 * assertEquals([read[0]?.cut, offsets.stdout, offsets.stderr], [3, 5, 0]);
 * ```
 */
export class StreamOffsets {
  /** The next read's offset in standard output. */
  stdout = 0;
  /** The next read's offset in standard error. */
  stderr = 0;

  /**
   * An answer's output, with what the server cut from it counted.
   *
   * @param text Each stream's text since its offset.
   * @param ends Each stream's offset after the answer, when the server says it.
   * @returns The output of each stream that has some.
   */
  take(
    text: { readonly stdout?: string | null; readonly stderr?: string | null },
    ends: {
      readonly stdout?: number | undefined;
      readonly stderr?: number | undefined;
    },
  ): OffsetOutput[] {
    const output: OffsetOutput[] = [];
    for (const type of ["stdout", "stderr"] as const) {
      const data = ENCODER.encode(text[type] ?? "");
      const from = this[type];
      const next = ends[type] ?? from + data.length;
      this[type] = Math.max(next, from);
      const cut = Math.max(0, next - from - data.length);
      if (data.length > 0 || cut > 0) output.push({ type, data, cut });
    }
    return output;
  }
}

/**
 * The wait of one long poll: at most `pollSeconds`, never past the deadline
 * (at least 1 ms).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { longPollSeconds } from "./long_poll.ts";
 * assertEquals(longPollSeconds(20, performance.now() + 5_000) <= 5, true);
 * assertEquals(longPollSeconds(20, 0), 0.001);
 * ```
 *
 * @param pollSeconds The longest wait of one request, in s.
 * @param deadline When the command's time is up (`performance.now()` ms).
 * @returns The wait, in s.
 */
export function longPollSeconds(pollSeconds: number, deadline: number): number {
  return Math.max(
    0.001,
    Math.min(pollSeconds, (deadline - performance.now()) / 1000),
  );
}

/**
 * Sends a read again (after 100 ms, 200 ms) when its answer broke off (a
 * connection error without a timeout), at most `attempts` times in all; any
 * other error, or an abort of `signal`, is thrown at once.
 *
 * @param read Sends the read (from the same offsets each time).
 * @param signal Stops the retries.
 * @param attempts The most reads sent. Default 3.
 * @returns The answer.
 */
export async function readAgainIfBrokenOff<T>(
  read: () => Promise<T>,
  signal: AbortSignal,
  attempts = 3,
): Promise<T> {
  for (let attempt = 1;; attempt++) {
    try {
      return await read();
    } catch (error) {
      const brokeOff = error instanceof RemoteHttpError &&
        error.status === 0 && !error.timedOut;
      if (!brokeOff || signal.aborted || attempt >= attempts) throw error;
      await delay(100 * attempt);
    }
  }
}

/** One answer of a long-polled command. */
export interface LongPollAnswer {
  /** Its output since the offsets (which it moved on). */
  readonly output: Iterable<OffsetOutput>;
  /** Its state. */
  readonly state: BackgroundState;
}

/** One command of {@linkcode LongPollProtocol.command}, in its session. */
export interface LongPolledCommand {
  /**
   * Sends the command (never retried); the server answers within
   * `waitSeconds` (a soft timeout: the command goes on) with what it wrote.
   */
  send(waitSeconds: number): Promise<LongPollAnswer>;
  /** Waits up to `waitSeconds` for new output or the end (a long poll). */
  read(waitSeconds: number): Promise<LongPollAnswer>;
  /**
   * After a stop, once the kill is done: what the command wrote until then
   * (one read without waiting), or nothing when the session's command is
   * not this one (`killed`: whether the kill found a command).
   */
  last(killed: boolean, signal: AbortSignal): Promise<Iterable<OffsetOutput>>;
}

/** A background command as a long-poll service started or found it. */
export interface LongPollStarted {
  /** The server's id of the command. */
  readonly id: string;
  /** Its state, as the answer says it. */
  readonly state: BackgroundState;
}

/** The background calls of a long-poll service. */
export interface LongPollBackgroundCalls {
  /**
   * Sends the command in `session` to run detached (never retried); the
   * server answers at once with its id.
   */
  start(session: string, request: RemoteCommand): Promise<LongPollStarted>;
  /**
   * Reads a background command's output from `offsets`, waiting for new
   * output or the end when `wait` (a long poll); the state is `undefined`
   * when the answer does not say it.
   */
  read(
    session: string,
    id: string,
    offsets: StreamOffsets,
    wait: boolean,
    signal: AbortSignal,
  ): Promise<{ output: OffsetOutput[]; state: BackgroundState | undefined }>;
  /** The ids of the server's sessions (where another runtime's commands run). */
  sessions(): Promise<string[]>;
  /**
   * The command of id `id` in `session`: its command line and state, or
   * `undefined` when the session does not have it.
   */
  lookup(
    session: string,
    id: string,
  ): Promise<{ command: string; state: BackgroundState } | undefined>;
}

/** What a kind gives {@linkcode longPollKind}. */
export interface LongPollProtocol {
  /** The kind's backstop (see `RemoteCommandKind`), in ms. */
  readonly backstopMs: number;
  /** Time between the kill and giving up on the reads, in ms. */
  readonly graceMs?: number;
  /** The longest soft timeout or long poll of one request, in s. */
  readonly pollSeconds: number;
  /** The server as errors name it (`the container`). */
  readonly serverName?: string;
  /** Makes a session of the given id on the server (nothing ran when it throws). */
  createSession(id: string, signal?: AbortSignal): Promise<void>;
  /** Closes a session (when the runtime closes). */
  closeSession(id: string): Promise<void>;
  /** A command in `session`: how to send and read it. */
  command(session: string, request: RemoteCommandStart): LongPolledCommand;
  /**
   * Kills a session's command (its process group); answers whether there
   * was one (`false` also when its send has not reached the server yet).
   */
  kill(session: string): Promise<boolean>;
  /** Its own background commands. */
  readonly background: LongPollBackgroundCalls;
}

/** A long-poll service as the kit's hooks, from {@linkcode longPollKind}. */
export interface LongPollKind {
  /** The session hooks: its commands and background commands. */
  readonly session: Required<
    Pick<RemoteSession, "commands" | "startBackground" | "attachBackground">
  >;
  /** The sessions made on the server. */
  readonly sessions: SessionPool;
  /** Stops the background reads nobody stopped and closes every session. */
  close(): Promise<void>;
}

/**
 * The kit's hooks of a long-poll service (see the module's description).
 *
 * **Commands**: each takes a session of the pool (its id is the command's),
 * is sent with a soft timeout, then read by long polls within the deadline
 * until its state says it ended; the session goes back to the pool then. A
 * kill is tried again for a moment (the send may not have reached the
 * server yet); a session whose end is unsure is not reused. On a stop the
 * command's last output is read once the kill is done.
 *
 * **Background commands** take a session each too, kept until they end;
 * they are read by {@linkcode LongPolledBackground} (one long poll after
 * another, the output to the command's sinks). One that another runtime
 * started is found by its id (letters, digits, `_`, `.`, `-`; at most 128)
 * among the server's sessions (its session is not ours: neither reused nor
 * closed).
 *
 * @example A service that answers at once
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { longPollKind } from "./long_poll.ts";
 * import { runRemoteCommand } from "./command.ts";
 * const none = () => Promise.reject(new Error("not reached"));
 * const kind = longPollKind({
 *   backstopMs: 5_000,
 *   pollSeconds: 20,
 *   createSession: () => Promise.resolve(),
 *   closeSession: () => Promise.resolve(),
 *   kill: () => Promise.resolve(false),
 *   command: () => ({
 *     send: () => Promise.resolve({
 *       output: [{ type: "stdout" as const, data: new TextEncoder().encode("hi\n"), cut: 0 }],
 *       state: { running: false, exitCode: 0 },
 *     }),
 *     read: none,
 *     last: none,
 *   }),
 *   background: { start: none, read: none, sessions: none, lookup: none },
 * });
 * const result = await runRemoteCommand(kind.session.commands, {
 *   command: "echo hi", cwd: "/", env: {}, timeoutMs: 1000, maxOutputBytes: 1024,
 * });
 * assertEquals([result.stdout, result.exitCode, kind.sessions.size], ["hi\n", 0, 1]);
 * await kind.close();
 * ```
 *
 * @param protocol The service's calls.
 * @returns The hooks.
 */
export function longPollKind(protocol: LongPollProtocol): LongPollKind {
  const sessions = new SessionPool((id, signal) =>
    protocol.createSession(id, signal)
  );
  const reading = new Set<LongPolledBackground>();
  /** A background command read by long polls; `pool` gets its session back. */
  const background = (
    session: string,
    started: LongPollStarted,
    sinks: Pick<RemoteCommand, "onStdout" | "onStderr">,
    pool?: SessionPool,
  ): LongPolledBackground => {
    const offsets = new StreamOffsets();
    const process = new LongPolledBackground(
      started.id,
      {
        read: async (wait, signal) => {
          const answer = await protocol.background.read(
            session,
            started.id,
            offsets,
            wait,
            signal,
          );
          for (const { type, data } of answer.output) {
            if (data.length === 0) continue;
            if (type === "stdout") sinks.onStdout?.(data);
            else sinks.onStderr?.(data);
          }
          return answer.state;
        },
        kill: async () => {
          await protocol.kill(session);
        },
        done: (ended) => {
          reading.delete(process);
          if (ended) pool?.give(session);
          else pool?.drop(session);
        },
      },
      started.state,
      {
        ...(protocol.serverName ? { serverName: protocol.serverName } : {}),
      },
    );
    reading.add(process);
    return process;
  };
  return {
    sessions,
    session: {
      commands: longPollCommands(protocol, sessions),
      startBackground: async (request) => {
        const session = await sessions.open(request.signal);
        let started;
        try {
          started = await protocol.background.start(session, request);
        } catch (error) {
          // It may have started: stop it, and never reuse the session.
          await protocol.kill(session).catch(() => {});
          sessions.drop(session);
          throw error;
        }
        return background(session, started, request, sessions);
      },
      attachBackground: async (id, sinks) => {
        if (!/^[\w.-]{1,128}$/.test(id)) return undefined;
        for (const session of await protocol.background.sessions()) {
          const found = await protocol.background.lookup(session, id);
          if (!found) continue;
          return {
            process: background(session, { id, state: found.state }, sinks),
            command: found.command,
            startedAt: new Date(),
          };
        }
        return undefined;
      },
    },
    close: async () => {
      const all = [...reading];
      reading.clear();
      await Promise.all(all.map((process) => process.stop()));
      await Promise.all(
        sessions.drain().map((id) => protocol.closeSession(id).catch(() => {})),
      );
    },
  };
}

/** The commands of {@linkcode longPollKind}. */
function longPollCommands(
  protocol: LongPollProtocol,
  sessions: SessionPool,
): RemoteCommandKind {
  /** Each running command: whether it was sent, its kill once asked for. */
  const running = new Map<
    string,
    { sent: boolean; killing?: Promise<boolean> }
  >();
  const kill = async (session: string): Promise<boolean> => {
    for (let attempt = 0; attempt < 4; attempt++) {
      try {
        if (await protocol.kill(session)) {
          sessions.give(session);
          return true;
        }
      } catch {
        break;
      }
      await delay(100 * (attempt + 1));
    }
    sessions.drop(session);
    return false;
  };
  async function* events(
    session: string,
    request: RemoteCommandStart,
  ): AsyncGenerator<RemoteCommandEvent> {
    const deadline = performance.now() + request.timeoutMs;
    const wait = () => longPollSeconds(protocol.pollSeconds, deadline);
    const state = running.get(session)!;
    const command = protocol.command(session, request);
    try {
      request.stop.throwIfAborted();
      state.sent = true;
      let answer = await command.send(wait());
      yield* answer.output;
      while (answer.state.running) {
        answer = await readAgainIfBrokenOff(
          () => command.read(wait()),
          request.stop,
        );
        yield* answer.output;
      }
      sessions.give(session);
      yield {
        type: "exit",
        exitCode: answer.state.exitCode ?? -1,
        ...(answer.state.timedOut ? { timedOut: true } : {}),
      };
    } catch (error) {
      if (!request.stop.aborted) throw error;
      if (state.killing === undefined) {
        // Nothing ran; the session may or may not exist: use a new one.
        sessions.drop(session);
        return;
      }
      yield* await command.last(await state.killing, request.signal);
    } finally {
      running.delete(session);
    }
  }
  return {
    backstopMs: protocol.backstopMs,
    ...(protocol.graceMs !== undefined ? { graceMs: protocol.graceMs } : {}),
    kill: async (id) => {
      const command = running.get(id);
      if (!command?.sent) return;
      await (command.killing ??= kill(id));
    },
    broken: (cause) =>
      cause instanceof Error ? cause : new Error(String(cause)),
    start: async (request) => {
      const session = await sessions.open(request.stop);
      running.set(session, { sent: false });
      return { id: session, events: events(session, request) };
    },
  };
}
