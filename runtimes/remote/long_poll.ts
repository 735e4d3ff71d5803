/**
 * Pieces of a command protocol read by long polls from byte offsets (AIO's
 * `/v1/bash/output`): the two offsets, moved on by each answer with what the
 * server cut out counted, the wait of one long poll within a deadline, and a
 * read sent again from the same offsets when its answer broke off (a read is
 * safe to repeat; the command is never sent twice).
 *
 * @module
 */
import { delay } from "../../_internal/async.ts";
import { RemoteHttpError } from "./errors.ts";

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
 * const read = [...offsets.take({ stdout: "ab" }, { stdout: 5 })];
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
  *take(
    text: { readonly stdout?: string | null; readonly stderr?: string | null },
    ends: {
      readonly stdout?: number | undefined;
      readonly stderr?: number | undefined;
    },
  ): Generator<OffsetOutput> {
    for (const type of ["stdout", "stderr"] as const) {
      const data = ENCODER.encode(text[type] ?? "");
      const from = this[type];
      const next = ends[type] ?? from + data.length;
      this[type] = Math.max(next, from);
      const cut = Math.max(0, next - from - data.length);
      if (data.length > 0 || cut > 0) yield { type, data, cut };
    }
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
