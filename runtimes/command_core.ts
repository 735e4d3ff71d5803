/**
 * The command core every executor shares (the local launcher, OpenSandbox's
 * execd, AIO, and the next kinds): one rule for the timeout (validated, then
 * clamped to the longest timer the platform keeps), one deadline, the
 * caller's abort, a grace period between stopping a command and giving up on
 * it, and one way to build the {@linkcode ExecuteResult}.
 *
 * An executor makes a {@linkcode CommandRun} before it starts anything,
 * returns `run.result(-1, ...)` at once when `run.reason` is already set (an
 * aborted signal), registers what stopping means for it (SIGTERM, an
 * interrupt call, an aborted request) with {@linkcode CommandRun.onStop} and
 * what giving up means (SIGKILL, cancelling a stream) with
 * {@linkcode CommandRun.onGraceOver}, and disposes of the run when done.
 *
 * @module
 */
import { checkNumber } from "../_internal/check_number.ts";
import type { ExecuteResult } from "./types.ts";

/**
 * The longest timeout of a command, in ms: 2^31 - 1 (about 24.8 days), the
 * longest delay `setTimeout` keeps (beyond it, timers fire at once). Longer
 * timeouts are clamped to it on every runtime.
 */
export const MAX_EXECUTE_TIMEOUT_MS = 2 ** 31 - 1;

/** Why a command was stopped: its timeout, or the caller's signal. */
export type StopReason = "timeout" | "abort";

/**
 * What the command core needs of one stream's output: its text (bounded), its
 * byte count and whether part of it was dropped. The project's
 * `OutputCollector` is one.
 */
export interface OutputTally {
  /** The kept output as text. */
  text(): string;
  /** Every byte the command wrote to the stream. */
  readonly totalBytes: number;
  /** Whether part of the output was dropped. */
  readonly truncated: boolean;
}

/**
 * A command's timeout once {@linkcode checkTimeoutMs} has checked and clamped
 * it (`checkExecuteRequest` gives one): a number at run time; the brand lets
 * a launcher and {@linkcode CommandRun.checked} take it without checking it
 * again.
 *
 * @example
 * ```ts
 * import { checkTimeoutMs, type CheckedTimeoutMs } from "./command_core.ts";
 * const timeoutMs: CheckedTimeoutMs = checkTimeoutMs(5_000);
 * ```
 */
export type CheckedTimeoutMs = number & { readonly __checkedTimeoutMs: true };

/**
 * Checks a command's timeout and clamps it to
 * {@linkcode MAX_EXECUTE_TIMEOUT_MS}: the one rule of every runtime.
 *
 * Needs no permission.
 *
 * @example A month is clamped; zero is refused
 * ```ts
 * import { assertEquals, assertThrows } from "@std/assert";
 * import {
 *   checkTimeoutMs,
 *   MAX_EXECUTE_TIMEOUT_MS,
 * } from "./command_core.ts";
 * assertEquals(checkTimeoutMs(30 * 24 * 3600_000), MAX_EXECUTE_TIMEOUT_MS);
 * assertEquals(checkTimeoutMs(1500), 1500);
 * assertThrows(() => checkTimeoutMs(0), RangeError, 'timeout "0"');
 * ```
 *
 * @param value The timeout, in ms.
 * @returns The timeout, at most {@linkcode MAX_EXECUTE_TIMEOUT_MS}.
 * @throws {RangeError} It is not a finite number above 0.
 */
export function checkTimeoutMs(value: unknown): CheckedTimeoutMs {
  return Math.min(
    checkNumber(
      value,
      "timeout",
      "positive number of ms",
      "run a command with",
    ),
    MAX_EXECUTE_TIMEOUT_MS,
  ) as CheckedTimeoutMs;
}

/** Options of {@linkcode CommandRun}. */
export interface CommandRunOptions {
  /** The timeout in ms; checked and clamped by {@linkcode checkTimeoutMs}. */
  readonly timeoutMs: number;
  /** The caller's signal: stops the command. */
  readonly signal?: AbortSignal | undefined;
  /**
   * Time between the stop and {@linkcode CommandRun.onGraceOver}, in ms
   * (>= 0). Default 0.
   */
  readonly graceMs?: number;
}

/** Options of {@linkcode CommandRun.checked}: the timeout already checked. */
export interface CheckedCommandRunOptions extends CommandRunOptions {
  /** The timeout, from {@linkcode checkTimeoutMs} (or `checkExecuteRequest`). */
  readonly timeoutMs: CheckedTimeoutMs;
}

/** Whether the run being constructed has a checked timeout. */
let trusted = false;

/**
 * One command's deadline, abort and grace period, and its result. Disposing
 * of it clears its timers and listeners.
 *
 * @example The deadline stops the command, then the grace period ends
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { CommandRun } from "@skillrun/skillrun/runtime";
 *
 * using run = new CommandRun({ timeoutMs: 20, graceMs: 10 });
 * const steps: string[] = [];
 * run.onStop((reason) => steps.push(`stop: ${reason}`));
 * run.onGraceOver(() => steps.push("kill"));
 * await new Promise((resolve) => setTimeout(resolve, 100));
 * assertEquals(steps, ["stop: timeout", "kill"]);
 * const empty = { text: () => "", totalBytes: 0, truncated: false };
 * const result = run.result(0, empty, empty);
 * assertEquals([result.exitCode, result.timedOut, result.aborted], [-1, true, false]);
 * ```
 */
export class CommandRun implements Disposable {
  /** The timeout as clamped, in ms. */
  readonly timeoutMs: number;
  /** When the run began (`performance.now()`). */
  readonly startedAt: number;
  /** The deadline as `Date.now()` time. */
  readonly deadline: number;
  readonly #stop = new AbortController();
  readonly #grace = new AbortController();
  readonly #graceMs: number;
  readonly #signal: AbortSignal | undefined;
  #reason: StopReason | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #graceTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #onAbort = () => this.stop("abort");

  /**
   * Starts the deadline and listens to the signal. A signal already aborted
   * stops the run at once (`reason` is `abort`).
   *
   * @param options The timeout, the signal and the grace period.
   * @throws {RangeError} A bad timeout or grace period.
   */
  constructor(options: CommandRunOptions) {
    this.timeoutMs = trusted
      ? options.timeoutMs
      : checkTimeoutMs(options.timeoutMs);
    const graceMs = checkNumber(
      options.graceMs ?? 0,
      "graceMs",
      "non-negative number",
      "run a command with",
    );
    this.#graceMs = Math.min(graceMs, MAX_EXECUTE_TIMEOUT_MS);
    this.startedAt = performance.now();
    this.deadline = Date.now() + this.timeoutMs;
    this.#signal = options.signal;
    if (options.signal?.aborted) {
      this.stop("abort");
      return;
    }
    this.#timer = setTimeout(() => this.stop("timeout"), this.timeoutMs);
    options.signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  /**
   * Starts a run whose timeout is already checked (the request's, as
   * `checkExecuteRequest` gave it): the one check stays the request's.
   *
   * @example
   * ```ts
   * import { assertEquals } from "@std/assert";
   * import { checkTimeoutMs, CommandRun } from "./command_core.ts";
   * using run = CommandRun.checked({ timeoutMs: checkTimeoutMs(1000) });
   * assertEquals(run.timeoutMs, 1000);
   * ```
   *
   * @param options The checked timeout, the signal and the grace period.
   * @returns The run.
   * @throws {RangeError} A bad grace period.
   */
  static checked(options: CheckedCommandRunOptions): CommandRun {
    trusted = true;
    try {
      return new CommandRun(options);
    } finally {
      trusted = false;
    }
  }

  /** Why the run was stopped, or `undefined` while it was not. */
  get reason(): StopReason | undefined {
    return this.#reason;
  }

  /** Aborted when the run is stopped (for the executor's own requests). */
  get stopSignal(): AbortSignal {
    return this.#stop.signal;
  }

  /** Aborted when the grace period after the stop is over. */
  get graceSignal(): AbortSignal {
    return this.#grace.signal;
  }

  /**
   * The time left before the deadline, in ms (0 once it has passed).
   *
   * @returns The time left.
   */
  remainingMs(): number {
    return Math.max(0, this.deadline - Date.now());
  }

  /**
   * Stops the run (once: the first reason is kept) and starts the grace
   * period.
   *
   * @param reason Why.
   */
  stop(reason: StopReason): void {
    if (this.#reason) return;
    this.#reason = reason;
    clearTimeout(this.#timer);
    this.#stop.abort();
    if (this.#graceMs === 0) this.#grace.abort();
    else {
      this.#graceTimer = setTimeout(() => this.#grace.abort(), this.#graceMs);
    }
  }

  /**
   * Calls `callback` when the run is stopped (now, when it already is).
   *
   * @param callback What stopping means for the executor.
   */
  onStop(callback: (reason: StopReason) => void): void {
    if (this.#reason) callback(this.#reason);
    else {
      this.#stop.signal.addEventListener(
        "abort",
        () => callback(this.#reason!),
        { once: true },
      );
    }
  }

  /**
   * Calls `callback` when the grace period after the stop is over (now, when
   * it already is).
   *
   * @param callback What giving up means for the executor.
   */
  onGraceOver(callback: () => void): void {
    if (this.#grace.signal.aborted) callback();
    else {
      this.#grace.signal.addEventListener("abort", callback, { once: true });
    }
  }

  /**
   * Builds the result: `exitCode` is `-1` when the run was stopped.
   *
   * @param exitCode The command's own exit code.
   * @param stdout Its standard output.
   * @param stderr Its standard error.
   * @returns The result.
   */
  result(
    exitCode: number,
    stdout: OutputTally,
    stderr: OutputTally,
  ): ExecuteResult {
    const reason = this.#reason;
    return {
      stdout: stdout.text(),
      stderr: stderr.text(),
      exitCode: reason ? -1 : exitCode,
      timedOut: reason === "timeout",
      aborted: reason === "abort",
      stdoutBytes: stdout.totalBytes,
      stderrBytes: stderr.totalBytes,
      stdoutTruncated: stdout.truncated,
      stderrTruncated: stderr.truncated,
      durationMs: performance.now() - this.startedAt,
    };
  }

  /** Clears the timers and the signal's listener. */
  [Symbol.dispose](): void {
    clearTimeout(this.#timer);
    clearTimeout(this.#graceTimer);
    this.#signal?.removeEventListener("abort", this.#onAbort);
  }
}
