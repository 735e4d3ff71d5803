/**
 * The one capped read of a byte stream (an HTTP body, a file's content): it
 * keeps at most a given number of bytes and either cuts there or refuses the
 * whole.
 *
 * @module
 */

/** Options of {@linkcode readCapped}. */
export interface ReadCappedOptions {
  /** The most bytes kept (`Infinity`: no cap). */
  readonly maxBytes: number;
  /**
   * What a longer stream gives: `"truncate"` keeps its first `maxBytes`
   * bytes (and, should the stream fail, what arrived before: an excerpt is
   * all the caller wants); `"error"` throws {@linkcode BodyTooLargeError}.
   */
  readonly overflow: "truncate" | "error";
}

/** A stream was longer than the cap of a {@linkcode readCapped} call. */
export class BodyTooLargeError extends RangeError {
  /** The cap, in bytes. */
  readonly maxBytes: number;

  /**
   * @param maxBytes The cap, in bytes.
   */
  constructor(maxBytes: number) {
    super(`Cannot read the body: it is larger than ${maxBytes} bytes`);
    this.name = "BodyTooLargeError";
    this.maxBytes = maxBytes;
  }
}

/**
 * Reads a byte stream up to a cap; the rest is cancelled, never read. Memory
 * stays bounded by the cap (plus one chunk). Needs no permission.
 *
 * @param stream The stream (`null`, as a body-less response has: empty).
 * @param options The cap and what a longer stream gives.
 * @returns The bytes kept.
 * @throws {BodyTooLargeError} With `overflow: "error"`: the stream is longer
 * than the cap.
 * @throws The stream's error, with `overflow: "error"`.
 *
 * @example Cutting, or refusing, a long body
 * ```ts
 * import { assert, assertRejects } from "@std/assert";
 * import { BodyTooLargeError, readCapped } from "./body.ts";
 * const body = () => new Response("abcdef").body;
 * const cut = await readCapped(body(), { maxBytes: 3, overflow: "truncate" });
 * assert(new TextDecoder().decode(cut) === "abc");
 * await assertRejects(
 *   () => readCapped(body(), { maxBytes: 3, overflow: "error" }),
 *   BodyTooLargeError,
 * );
 * ```
 */
export async function readCapped(
  stream: ReadableStream<Uint8Array> | null,
  options: ReadCappedOptions,
): Promise<Uint8Array> {
  const { maxBytes, overflow } = options;
  if (stream === null) return new Uint8Array(0);
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  let complete = false;
  try {
    // Truncating stops once the cap is reached; refusing reads one byte past.
    while (overflow === "truncate" ? length < maxBytes : length <= maxBytes) {
      const { done, value } = await reader.read();
      if (done) {
        complete = true;
        break;
      }
      chunks.push(value);
      length += value.length;
    }
  } catch (error) {
    if (overflow === "error") throw error;
    // An excerpt keeps what arrived before the failure.
  } finally {
    if (!complete) reader.cancel().catch(() => {});
  }
  if (length > maxBytes) {
    if (overflow === "error") throw new BodyTooLargeError(maxBytes);
    length = maxBytes;
  }
  if (chunks.length === 1 && chunks[0]!.length === length) return chunks[0]!;
  const bytes = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, length - offset);
    bytes.set(part, offset);
    offset += part.length;
    if (offset >= length) break;
  }
  return bytes;
}
