/**
 * A background command of a service's own facility read by polls: each poll
 * asks the command's state first (once it says finished, the output is
 * complete) and then its output from a byte cursor, which moves on; polls
 * run one at a time. A kind gives the three calls (state, output from a
 * cursor, kill); OpenSandbox's execd (`/command/status`, `/command/{id}/logs`)
 * is one, Daytona's session commands (status, logs) another.
 *
 * @module
 */
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
