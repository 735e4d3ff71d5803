/**
 * The one remote command protocol: a kind says how to start a command
 * (`start(request)` → `{ id, events }`: output and the exit as they come),
 * how to kill one by its id, and how much later than ours its server's own
 * deadline (the backstop) falls; {@linkcode runRemoteCommand} owns the rest
 * for every kind: the deadline, the caller's abort, the grace period between
 * the kill and giving up on the stream, line joining, the bounded output and
 * the result. A command is never retried.
 *
 * **Line ends.** On every remote kind a `\r` ends a line as `\n` does, and
 * `\r\n` counts once: the output comes back with `\n` in their place.
 * OpenSandbox's execd can only give its output that way (it splits lines at
 * `\r` and drops the ends), so every kind does the same, here, once.
 *
 * @module
 */
import { OutputCollector } from "../../_internal/collector.ts";
import {
  type CheckedTimeoutMs,
  CommandRun,
  MAX_EXECUTE_TIMEOUT_MS,
} from "../command_core.ts";
import type { ExecuteResult } from "../types.ts";
import type { RemoteCommand } from "./runtime.ts";

/** What a kind's {@linkcode RemoteCommandKind.start} gets: everything resolved. */
export interface RemoteCommandStart {
  /** The command, for `bash -c`. */
  readonly command: string;
  /** The absolute POSIX folder it runs in. */
  readonly cwd: string;
  /** Its whole environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Our deadline, in ms (clamped). */
  readonly timeoutMs: number;
  /** The most bytes of each stream kept (a server may cut its answers to it). */
  readonly maxOutputBytes: number;
  /**
   * The server's own deadline, in ms: ours plus the kind's backstop, never
   * past {@linkcode MAX_EXECUTE_TIMEOUT_MS}.
   */
  readonly serverTimeoutMs: number;
  /** Aborted when the command is stopped (deadline, abort): cut long polls short. */
  readonly stop: AbortSignal;
  /**
   * Aborted when the kit gives up on the command (the grace period after the
   * stop is over): every request of the command, its event stream included,
   * must end then.
   */
  readonly signal: AbortSignal;
}

/** One event of a remote command. */
export type RemoteCommandEvent =
  | {
    /** Output of standard output or standard error. */
    readonly type: "stdout" | "stderr";
    /** The bytes (or their text). */
    readonly data: Uint8Array | string;
    /** Bytes the server left out before these (its own truncation). */
    readonly cut?: number;
  }
  | {
    /** The command ended. */
    readonly type: "exit";
    /** Its exit code. */
    readonly exitCode: number;
    /** The server's own timeout stopped it. */
    readonly timedOut?: boolean;
    /**
     * The command could not run at all (a start failure the server reported
     * in its stream): thrown once the output is read, nothing killed.
     */
    readonly failure?: Error;
  };

/** A command the server has, as {@linkcode RemoteCommandKind.start} gives it. */
export interface StartedRemoteCommand {
  /** The server's id of the command (what {@linkcode RemoteCommandKind.kill} takes). */
  readonly id: string;
  /** Its output and exit, in order; ends after the exit. */
  readonly events: AsyncIterable<RemoteCommandEvent>;
}

/** How a remote kind runs commands. */
export interface RemoteCommandKind {
  /**
   * How much later than ours the server's own deadline falls, in ms (it
   * stops a command whose client vanished).
   */
  readonly backstopMs: number;
  /** Time between the kill and giving up on the stream, in ms. Default 6 000. */
  readonly graceMs?: number;
  /**
   * Starts the command and resolves once the server has named it (its id).
   * Throws the kind's own error when the server refuses it.
   */
  start(request: RemoteCommandStart): Promise<StartedRemoteCommand>;
  /** Stops a command and everything it started; resolves once sent (or done). */
  kill(id: string): Promise<void>;
  /**
   * The error for a stream that broke (`cause`) or ended before the exit
   * (`cause` undefined); the command was killed. Default: a plain `Error`
   * saying so.
   */
  broken?(cause: unknown): Error;
}

/** An event of a kind's stream before the kit sees it: the id, or a command event. */
export type RemoteStreamEvent = RemoteCommandEvent | {
  /** The server named the command. */
  readonly type: "id";
  /** Its id. */
  readonly id: string;
};

/**
 * A started command from a kind's stream that names the command in one of
 * its events (execd's `init`, envd's `start`, Vercel's first line): read
 * until the id, whatever came before it kept for the kit.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { namedCommand } from "./command.ts";
 * const started = await namedCommand((async function* () {
 *   yield { type: "id" as const, id: "42" };
 *   yield { type: "exit" as const, exitCode: 0 };
 * })());
 * const types = [];
 * for await (const event of started.events) types.push(event.type);
 * assertEquals([started.id, types], ["42", ["exit"]]);
 * ```
 *
 * @param stream The kind's events, the id among them.
 * @returns The command, once named.
 * @throws {Error} The stream ended before naming it (or its own error).
 */
export async function namedCommand(
  stream: AsyncGenerator<RemoteStreamEvent>,
): Promise<StartedRemoteCommand> {
  const early: RemoteCommandEvent[] = [];
  try {
    while (true) {
      const next = await stream.next();
      if (next.done) {
        throw new Error(
          "Cannot run the command: the stream ended before the server named it",
        );
      }
      if (next.value.type === "id") {
        const id = next.value.id;
        return {
          id,
          events: (async function* () {
            yield* early;
            for await (const event of stream) {
              if (event.type !== "id") yield event;
            }
          })(),
        };
      }
      early.push(next.value);
    }
  } catch (error) {
    await stream.return(undefined).catch(() => {});
    throw error;
  }
}

/** The default grace period between the kill and giving up, in ms. */
const DEFAULT_GRACE_MS = 6_000;

/**
 * One stream's output: line ends made `\n` (a `\r` held back until the next
 * byte tells whether a `\n` follows), bounded, with the bytes the server
 * left out counted.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { RemoteOutput } from "./command.ts";
 * const out = new RemoteOutput(1024);
 * out.push("progress 50%\rprogress");
 * out.push(" 100%\r");
 * out.push("\nnext\r\n");
 * out.end();
 * assertEquals(out.text(), "progress 50%\nprogress 100%\nnext\n");
 * ```
 */
export class RemoteOutput {
  readonly #collector: OutputCollector;
  readonly #onChunk: ((chunk: Uint8Array) => void) | undefined;
  #cut = 0;
  #heldCr = false;

  /**
   * Makes the stream's output.
   *
   * @param maxBytes The most bytes kept.
   * @param onChunk Receives each chunk as it is joined.
   */
  constructor(maxBytes: number, onChunk?: (chunk: Uint8Array) => void) {
    this.#collector = new OutputCollector({ maxBytes });
    this.#onChunk = onChunk;
  }

  /**
   * Adds output.
   *
   * @param data The bytes or their text.
   * @param cut Bytes the server left out before them.
   */
  push(data: Uint8Array | string, cut = 0): void {
    this.#cut += cut;
    let bytes = typeof data === "string" ? ENCODER.encode(data) : data;
    if (bytes.length === 0) return;
    if (this.#heldCr) {
      this.#heldCr = false;
      this.#emit(NEWLINE);
      if (bytes[0] === LF) bytes = bytes.subarray(1);
    }
    if (bytes.indexOf(CR) === -1) {
      this.#emit(bytes);
      return;
    }
    const out = new Uint8Array(bytes.length);
    let n = 0;
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i]!;
      if (byte !== CR) out[n++] = byte;
      else if (i === bytes.length - 1) this.#heldCr = true;
      else {
        out[n++] = LF;
        if (bytes[i + 1] === LF) i++;
      }
    }
    this.#emit(out.subarray(0, n));
  }

  /** Ends the stream: a `\r` held back becomes its line end. */
  end(): void {
    if (this.#heldCr) {
      this.#heldCr = false;
      this.#emit(NEWLINE);
    }
  }

  #emit(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    this.#collector.push(bytes);
    this.#onChunk?.(bytes);
  }

  /**
   * The kept output as text.
   *
   * @returns The text.
   */
  text(): string {
    return this.#collector.text();
  }

  /** Every byte of the output, kept, dropped or left out by the server. */
  get totalBytes(): number {
    return this.#collector.totalBytes + this.#cut;
  }

  /** Whether part of the output was dropped. */
  get truncated(): boolean {
    return this.#collector.truncated || this.#cut > 0;
  }
}

/**
 * The server's own deadline for a command of ours: later by the backstop,
 * never past {@linkcode MAX_EXECUTE_TIMEOUT_MS}.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { serverDeadlineMs } from "./command.ts";
 * assertEquals(serverDeadlineMs(1000, 5000), 6000);
 * assertEquals(serverDeadlineMs(2 ** 31 - 1, 5000), 2 ** 31 - 1);
 * ```
 *
 * @param timeoutMs Our deadline, in ms.
 * @param backstopMs The kind's backstop, in ms.
 * @returns The server's deadline, in ms.
 */
export function serverDeadlineMs(
  timeoutMs: number,
  backstopMs: number,
): number {
  return Math.min(Math.ceil(timeoutMs) + backstopMs, MAX_EXECUTE_TIMEOUT_MS);
}

/**
 * The checked timeouts of the commands the kit made from a request that
 * `checkExecuteRequest` checked, by the command object's identity: a brand
 * is not there at run time, so {@linkcode runRemoteCommand} recognises these
 * objects and takes their timeout as it was checked.
 */
const CHECKED = new WeakMap<RemoteCommand, CheckedTimeoutMs>();

/**
 * Marks a command the kit made whose timeout is already checked (the
 * request's, as `checkExecuteRequest` gave it):
 * {@linkcode runRemoteCommand} runs this very object (a session's own
 * `execute` may pass it on) with that timeout, without checking it again. A
 * copy (`{ ...command }`) is a plain command again, checked once there.
 *
 * @example
 * ```ts
 * import { assertStrictEquals } from "@std/assert";
 * import { checkTimeoutMs } from "../command_core.ts";
 * import { checkedRemoteCommand } from "./command.ts";
 * const command = { command: "true", cwd: "/", env: {}, maxOutputBytes: 1024 };
 * const checked = { ...command, timeoutMs: checkTimeoutMs(1000) };
 * assertStrictEquals(checkedRemoteCommand(checked), checked);
 * ```
 *
 * @param command The command, its timeout checked.
 * @returns The same command.
 */
export function checkedRemoteCommand<
  C extends RemoteCommand & { readonly timeoutMs: CheckedTimeoutMs },
>(command: C): C {
  CHECKED.set(command, command.timeoutMs);
  return command;
}

/**
 * Runs one command through a kind to its end, the deadline or the caller's
 * signal; on the last two the command is killed and the result says
 * `timedOut` or `aborted` with exit code `-1` (with the output read until
 * the stream ended or the grace period was over). Never retried; never
 * throws for a failing command.
 *
 * The timeout is checked once: here, for a command of your own (a plain
 * number, checked and clamped as `checkTimeoutMs` does); a command the
 * remote runtime made from a request carries `checkExecuteRequest`'s check
 * ({@linkcode checkedRemoteCommand}) and is not checked again.
 *
 * Needs what the kind needs (network access to its server).
 *
 * @example A kind of your own (here, in memory)
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { runRemoteCommand } from "./command.ts";
 * const result = await runRemoteCommand({
 *   backstopMs: 5_000,
 *   start: () => Promise.resolve({
 *     id: "c1",
 *     events: (async function* () {
 *       yield { type: "stdout" as const, data: "half\rdone\r" };
 *       yield { type: "exit" as const, exitCode: 3 };
 *     })(),
 *   }),
 *   kill: () => Promise.resolve(),
 * }, { command: "work", cwd: "/", env: {}, timeoutMs: 1000, maxOutputBytes: 1024 });
 * assertEquals([result.stdout, result.exitCode], ["half\ndone\n", 3]);
 * ```
 *
 * @param kind How the kind starts and kills commands.
 * @param request The command.
 * @returns The result.
 * @throws {RangeError} The timeout of a command of your own is not a
 * positive number of ms (nothing is started).
 * @throws {Error} The kind's error: the server refused or could not start
 * the command, or its stream broke (the command was killed).
 */
export async function runRemoteCommand(
  kind: RemoteCommandKind,
  request: RemoteCommand,
): Promise<ExecuteResult> {
  const stdout = new RemoteOutput(request.maxOutputBytes, request.onStdout);
  const stderr = new RemoteOutput(request.maxOutputBytes, request.onStderr);
  // The kit's own commands carry their check; a plain one is checked here.
  const checked = CHECKED.get(request);
  const options = {
    signal: request.signal,
    graceMs: kind.graceMs ?? DEFAULT_GRACE_MS,
  };
  using run = checked === undefined
    ? new CommandRun({ ...options, timeoutMs: request.timeoutMs })
    : CommandRun.checked({ ...options, timeoutMs: checked });
  const result = (exitCode: number): ExecuteResult => {
    stdout.end();
    stderr.end();
    return run.result(exitCode, stdout, stderr);
  };
  if (run.reason) return result(-1);
  let started: StartedRemoteCommand;
  try {
    started = await kind.start({
      command: request.command,
      cwd: request.cwd,
      env: request.env,
      timeoutMs: run.timeoutMs,
      maxOutputBytes: request.maxOutputBytes,
      serverTimeoutMs: serverDeadlineMs(run.timeoutMs, kind.backstopMs),
      stop: run.stopSignal,
      signal: run.graceSignal,
    });
  } catch (error) {
    // Stopped before the server answered: its own deadline (the backstop)
    // stops a command it may have started.
    if (run.reason && run.graceSignal.aborted) return result(-1);
    throw error;
  }
  let killing: Promise<void> | undefined;
  let ended = false;
  const kill = () =>
    ended ? Promise.resolve() : killing ??= kind.kill(started.id).catch(
      () => {},
    );
  run.onStop(kill);
  let exit: Extract<RemoteCommandEvent, { type: "exit" }> | undefined;
  try {
    for await (const event of started.events) {
      if (event.type === "exit") {
        exit = event;
        break;
      }
      (event.type === "stdout" ? stdout : stderr).push(event.data, event.cut);
    }
  } catch (error) {
    if (run.reason) {
      await killing;
      return result(-1);
    }
    await kill();
    throw broken(kind, error);
  }
  if (run.reason) {
    await killing;
    return result(-1);
  }
  if (exit === undefined) {
    await kill();
    throw broken(kind, undefined);
  }
  ended = true;
  if (exit.failure) throw exit.failure;
  if (exit.timedOut) {
    run.stop("timeout");
    return result(-1);
  }
  return result(exit.exitCode);
}

function broken(kind: RemoteCommandKind, cause: unknown): Error {
  if (kind.broken) return kind.broken(cause);
  return new Error(
    cause === undefined
      ? "Cannot run the command: the stream ended before the command finished; it was killed"
      : `Cannot run the command: ${
        cause instanceof Error ? cause.message : String(cause)
      }; it was killed`,
    cause === undefined ? undefined : { cause },
  );
}

const ENCODER = new TextEncoder();
const CR = 13;
const LF = 10;
const NEWLINE = new Uint8Array([LF]);
