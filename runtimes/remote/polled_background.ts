/**
 * A background command of a service's own facility read by polls: each poll
 * asks the command's state first (once it says finished, the output is
 * complete) and then its output from a byte cursor, which moves on; polls
 * run one at a time. A kind gives the three calls (state, output from a
 * cursor, kill); OpenSandbox's execd (`/command/status`, `/command/{id}/logs`)
 * is one, Daytona's session commands (status, logs) another.
 *
 * A service whose reads can wait for new output (long polls: AIO's
 * `/v1/bash/output` with `wait: true`) is read by
 * {@linkcode LongPolledBackground} instead: one long poll after another
 * while the command runs, so each answer holds only what came since the one
 * before and nothing piles up between two of the caller's polls, which only
 * say the latest state.
 *
 * @module
 */
import { delay } from "../../_internal/async.ts";
import type { BackgroundProcess, BackgroundState } from "../types.ts";

/** What a kind gives {@linkcode PolledBackground}. */
export interface PolledBackgroundCalls {
  /**
   * The command's state: `undefined` while the service does not know it yet
   * (some register a command a moment after answering its start).
   */
  state(): Promise<BackgroundState | undefined>;
  /**
   * The output written since `cursor` (streamed: only the caller's bounded
   * sinks keep anything) and the next cursor when the service says it;
   * `undefined` while the service does not know the command yet.
   */
  output(
    cursor: number,
  ): Promise<
    { body: ReadableStream<Uint8Array> | null; next?: number } | undefined
  >;
  /** Stops the command. */
  kill(): Promise<void>;
}

/**
 * A background command read by polls (see the module's description).
 *
 * @example A command that ends at its second poll
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { PolledBackground } from "./polled_background.ts";
 * let polls = 0;
 * let out = "";
 * const command = new PolledBackground("c1", {
 *   state: () => Promise.resolve(++polls < 2 ? { running: true } : { running: false, exitCode: 0 }),
 *   output: (cursor) => Promise.resolve({ body: new Blob([cursor === 0 ? "hi\n" : ""]).stream() }),
 *   kill: () => Promise.resolve(),
 * }, (chunk) => out += new TextDecoder().decode(chunk));
 * assertEquals(await command.poll(), { running: true });
 * assertEquals(await command.poll(), { running: false, exitCode: 0 });
 * assertEquals(out, "hi\n");
 * ```
 */
export class PolledBackground implements BackgroundProcess {
  /** The service's id of the command. */
  readonly id: string;
  readonly #calls: PolledBackgroundCalls;
  readonly #onOutput: ((chunk: Uint8Array) => void) | undefined;
  #cursor = 0;
  #last: BackgroundState = { running: true };
  /** Polls one at a time: the cursor moves with each. */
  #queue: Promise<unknown> = Promise.resolve();

  /**
   * Makes the command's reader; makes no request.
   *
   * @param id The service's id of the command.
   * @param calls The kind's calls.
   * @param onOutput Receives the output each poll reads.
   */
  constructor(
    id: string,
    calls: PolledBackgroundCalls,
    onOutput?: (chunk: Uint8Array) => void,
  ) {
    this.id = id;
    this.#calls = calls;
    this.#onOutput = onOutput;
  }

  /**
   * Reads what came since the last poll and says the state.
   *
   * @returns The state.
   */
  poll(): Promise<BackgroundState> {
    const next = this.#queue.then(() => this.#poll());
    this.#queue = next.catch(() => {});
    return next;
  }

  async #poll(): Promise<BackgroundState> {
    if (!this.#last.running) return this.#last;
    // The state first: once it says finished, the output is complete.
    const state = await this.#calls.state();
    const output = await this.#calls.output(this.#cursor);
    if (output) {
      let read = 0;
      for await (const chunk of output.body ?? []) {
        read += chunk.length;
        this.#onOutput?.(chunk);
      }
      const next = output.next;
      this.#cursor = next !== undefined && Number.isSafeInteger(next) &&
          next >= this.#cursor
        ? next
        : this.#cursor + read;
    }
    if (state && !state.running) this.#last = state;
    return this.#last;
  }

  /**
   * Stops the command (nothing when it has ended).
   *
   * @returns When the service has it stopped.
   */
  async kill(): Promise<void> {
    if (!this.#last.running) return;
    await this.#calls.kill();
  }
}

/** What a kind gives {@linkcode LongPolledBackground}. */
export interface LongPollCalls {
  /**
   * One read: when `wait`, the server waits (up to the kind's long poll) for
   * new output or the end. Hands the output read to the kind's sinks and
   * answers the state, or `undefined` when the answer did not say it.
   */
  read(
    wait: boolean,
    signal: AbortSignal,
  ): Promise<BackgroundState | undefined>;
  /** Stops the command; the reads then see its end. */
  kill(): Promise<void>;
  /**
   * Called once, when the reads stop: `ended` says whether the command was
   * seen to end (e.g. to reuse its session, or not).
   */
  done?(ended: boolean): void;
}

/** Options of {@linkcode LongPolledBackground}. */
export interface LongPolledBackgroundOptions {
  /** The pause after a failed read before the next, in ms. Default 500. */
  readonly retryMs?: number;
  /** Failed reads in a row after which the reader gives up. Default 120. */
  readonly maxFailures?: number;
  /** How long a kill waits for the reads to see the end, in ms. Default 10 000. */
  readonly killWaitMs?: number;
  /** The server as the give-up error names it. Default `the service`. */
  readonly serverName?: string;
}

/**
 * A background command read by long polls (see the module's description):
 * the reads start at once and run until the command ended (then once more
 * without waiting: its last output), {@linkcode LongPolledBackground.stop}
 * or too many failures in a row (the state is then unknown: it reads as
 * ended with `-1` and an error). A failed read is tried again after a
 * pause; its error is thrown once by the next {@linkcode poll}.
 *
 * @example A command that ends at its second read
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { LongPolledBackground } from "./polled_background.ts";
 * let reads = 0;
 * const command = new LongPolledBackground("c1", {
 *   read: () => Promise.resolve(++reads < 2 ? { running: true } : { running: false, exitCode: 0 }),
 *   kill: () => Promise.resolve(),
 * });
 * await command.stopped;
 * assertEquals([await command.poll(), reads], [{ running: false, exitCode: 0 }, 3]);
 * ```
 */
export class LongPolledBackground implements BackgroundProcess {
  /** The service's id of the command. */
  readonly id: string;
  /** Settles once the reads stopped. */
  readonly stopped: Promise<void>;
  readonly #calls: LongPollCalls;
  readonly #options: LongPolledBackgroundOptions;
  readonly #stop = new AbortController();
  #state: BackgroundState;
  #error: unknown;

  /**
   * Makes the command's reader and starts its reads.
   *
   * @param id The service's id of the command.
   * @param calls The kind's calls.
   * @param state The state the start answered. Default running.
   * @param options Pauses and limits.
   */
  constructor(
    id: string,
    calls: LongPollCalls,
    state: BackgroundState = { running: true },
    options: LongPolledBackgroundOptions = {},
  ) {
    this.id = id;
    this.#calls = calls;
    this.#state = state;
    this.#options = options;
    this.stopped = this.#reads();
  }

  async #reads(): Promise<void> {
    const signal = this.#stop.signal;
    let failures = 0;
    let ended = false;
    while (!signal.aborted) {
      const wasRunning = this.#state.running;
      try {
        // Once more without waiting after the end: the last output.
        const state = await this.#calls.read(wasRunning, signal);
        if (state) this.#state = state;
        this.#error = undefined;
        failures = 0;
        if (!wasRunning) {
          ended = true;
          break;
        }
      } catch (error) {
        if (signal.aborted) break;
        this.#error = error;
        if (++failures >= (this.#options.maxFailures ?? 120)) {
          const reason = error instanceof Error ? error.message : String(error);
          this.#state = {
            running: false,
            exitCode: -1,
            error: `${
              this.#options.serverName ?? "the service"
            } stopped answering: ${reason}`,
          };
          break;
        }
        await delay(this.#options.retryMs ?? 500);
      }
    }
    this.#calls.done?.(ended);
  }

  /**
   * The latest state; rejects once with the last read's error while the
   * command runs and the reads fail.
   *
   * @returns The state.
   */
  poll(): Promise<BackgroundState> {
    if (this.#state.running && this.#error !== undefined) {
      const error = this.#error;
      this.#error = undefined;
      return Promise.reject(error);
    }
    return Promise.resolve(this.#state);
  }

  /**
   * Stops the reads (e.g. the runtime closes); the command is not touched.
   *
   * @returns Once they stopped.
   */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.stopped;
  }

  /**
   * Stops the command and waits for the reads to see its end; when they do
   * not in time, they stop and the command reads as ended with `-1`.
   *
   * @returns Once it ended.
   * @throws {Error} The kill failed (the reads stop too).
   */
  async kill(): Promise<void> {
    if (!this.#state.running) return await this.stopped;
    try {
      await this.#calls.kill();
    } catch (error) {
      await this.stop();
      throw error;
    }
    const wait = new AbortController();
    await Promise.race([
      this.stopped,
      delay(this.#options.killWaitMs ?? 10_000, { signal: wait.signal })
        .catch(() => {}),
    ]);
    wait.abort();
    if (this.#state.running) {
      await this.stop();
      this.#state = { running: false, exitCode: -1 };
    }
  }
}
