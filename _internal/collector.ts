/**
 * The bounded output collector every runtime uses for a command's stdout and
 * stderr: it keeps the first and the last bytes up to a cap, counts the rest,
 * and decodes the kept bytes as UTF-8 with a marker where the middle was cut.
 *
 * @module
 */
import { checkNumber } from "./check_number.ts";

/** Options of {@linkcode OutputCollector}. */
export interface OutputCollectorOptions {
  /**
   * The most bytes kept in memory: the first half (rounded up) from the
   * start of the output, the rest from its end. A non-negative integer.
   */
  readonly maxBytes: number;
}

/**
 * Collects a byte stream up to a cap, keeping its start and its end.
 *
 * Memory stays bounded by the cap whatever the output's size: the head is
 * filled once, then the tail lives in a ring buffer of fixed size; a chunk
 * larger than the ring replaces it with the chunk's last bytes, so each byte
 * is copied at most once and nothing is decoded until {@linkcode text} is
 * called. Needs no permission.
 *
 * @example Keeping the start and the end of a long output
 * ```ts
 * import { assert } from "@std/assert";
 * import { OutputCollector } from "./collector.ts";
 *
 * const collector = new OutputCollector({ maxBytes: 8 });
 * const bytes = new TextEncoder().encode("abcdefghijklmnopqrstuvwxyz");
 * collector.push(bytes.subarray(0, 10));
 * collector.push(bytes.subarray(10));
 * assert(collector.totalBytes === 26 && collector.truncated);
 * assert(collector.text() === "abcd\n[... 18 bytes omitted ...]\nwxyz");
 * ```
 */
export class OutputCollector {
  readonly #headCap: number;
  readonly #tailCap: number;
  #head: Uint8Array | null = null;
  #headLength = 0;
  #ring: Uint8Array | null = null;
  /** Where the next tail byte goes in the ring. */
  #ringPos = 0;
  /** Bytes held in the ring (at most its capacity). */
  #ringLength = 0;
  #total = 0;

  /**
   * Makes an empty collector.
   *
   * @param options The cap.
   * @throws {RangeError} `maxBytes` is not a non-negative safe integer.
   */
  constructor(options: OutputCollectorOptions) {
    const { maxBytes } = options;
    checkNumber(
      maxBytes,
      "maxBytes",
      "non-negative integer",
      "collect output with",
    );
    this.#headCap = Math.ceil(maxBytes / 2);
    this.#tailCap = maxBytes - this.#headCap;
  }

  /** Every byte pushed so far, kept or not. */
  get totalBytes(): number {
    return this.#total;
  }

  /** Whether bytes were dropped from the middle (the output exceeded the cap). */
  get truncated(): boolean {
    return this.#total > this.#headCap + this.#tailCap;
  }

  /**
   * Adds a chunk. The chunk is copied (never retained), so the caller may
   * reuse its buffer.
   *
   * @param chunk The next bytes of the output.
   */
  push(chunk: Uint8Array): void {
    const length = chunk.byteLength;
    if (length === 0) return;
    this.#total += length;
    let rest = chunk;
    if (this.#headLength < this.#headCap) {
      const take = Math.min(this.#headCap - this.#headLength, length);
      this.#growHead(this.#headLength + take);
      this.#head!.set(
        take === length ? chunk : chunk.subarray(0, take),
        this.#headLength,
      );
      this.#headLength += take;
      if (take === length) return;
      rest = chunk.subarray(take);
    }
    this.#pushTail(rest);
  }

  /**
   * The kept bytes in order; when the output was cut, the head and the tail
   * are adjacent here (use {@linkcode text} for a marked cut).
   *
   * @returns A fresh copy.
   */
  bytes(): Uint8Array {
    const tail = this.#tailBytes();
    const out = new Uint8Array(this.#headLength + tail.byteLength);
    if (this.#head) out.set(this.#head.subarray(0, this.#headLength));
    out.set(tail, this.#headLength);
    return out;
  }

  /**
   * Decodes the kept bytes as UTF-8 (invalid sequences become U+FFFD). When
   * the output was cut, a character split by the cut is dropped on both sides
   * and a marker like `\n[... 1234 bytes omitted ...]\n` stands for the
   * dropped middle, counting every byte not shown.
   *
   * @returns The text.
   */
  text(): string {
    const decoder = new TextDecoder();
    const head = this.#head?.subarray(0, this.#headLength) ??
      new Uint8Array(0);
    const tail = this.#tailBytes();
    if (!this.truncated) {
      if (tail.byteLength === 0) return decoder.decode(head);
      return decoder.decode(this.bytes());
    }
    const headEnd = completeUtf8Prefix(head);
    const tailStart = utf8ContinuationPrefix(tail);
    const shownHead = head.subarray(0, headEnd);
    const shownTail = tail.subarray(tailStart);
    const omitted = this.#total - shownHead.byteLength - shownTail.byteLength;
    return `${decoder.decode(shownHead)}\n[... ${omitted} bytes omitted ...]\n${
      decoder.decode(shownTail)
    }`;
  }

  #growHead(needed: number): void {
    const current = this.#head?.byteLength ?? 0;
    if (needed <= current) return;
    // Grow geometrically so many small commands don't each reserve the cap.
    const size = Math.min(
      this.#headCap,
      Math.max(needed, current * 2, 4096),
    );
    const grown = new Uint8Array(size);
    if (this.#head) grown.set(this.#head.subarray(0, this.#headLength));
    this.#head = grown;
  }

  #pushTail(chunk: Uint8Array): void {
    const cap = this.#tailCap;
    if (cap === 0) return;
    const length = chunk.byteLength;
    if (!this.#ring) {
      // Before the ring is full, grow it like the head.
      this.#ring = new Uint8Array(Math.min(cap, Math.max(length, 4096)));
    }
    if (length >= cap) {
      this.#ensureRing(cap);
      this.#ring!.set(chunk.subarray(length - cap));
      this.#ringPos = 0;
      this.#ringLength = cap;
      return;
    }
    if (this.#ringLength < cap && this.#ringPos === this.#ringLength) {
      // Still filling linearly (never wrapped yet).
      const needed = this.#ringLength + length;
      if (needed <= cap) {
        this.#ensureRing(needed);
        this.#ring!.set(chunk, this.#ringPos);
        this.#ringPos = needed === cap ? 0 : needed;
        this.#ringLength = needed;
        return;
      }
      this.#ensureRing(cap);
    }
    const ring = this.#ring!;
    const first = Math.min(length, cap - this.#ringPos);
    ring.set(chunk.subarray(0, first), this.#ringPos);
    if (first < length) ring.set(chunk.subarray(first), 0);
    this.#ringPos = (this.#ringPos + length) % cap;
    this.#ringLength = Math.min(cap, this.#ringLength + length);
  }

  #ensureRing(size: number): void {
    const ring = this.#ring!;
    if (ring.byteLength >= size) return;
    const grown = new Uint8Array(
      Math.min(this.#tailCap, Math.max(size, ring.byteLength * 2)),
    );
    // Only called while filling linearly: bytes are at [0, ringLength).
    grown.set(ring.subarray(0, this.#ringLength));
    this.#ring = grown;
  }

  #tailBytes(): Uint8Array {
    const ring = this.#ring;
    if (!ring || this.#ringLength === 0) return new Uint8Array(0);
    if (this.#ringLength < this.#tailCap) {
      return ring.subarray(0, this.#ringLength);
    }
    // Full ring: oldest byte at ringPos.
    const out = new Uint8Array(this.#tailCap);
    out.set(ring.subarray(this.#ringPos, this.#tailCap));
    out.set(ring.subarray(0, this.#ringPos), this.#tailCap - this.#ringPos);
    return out;
  }
}

/** The buffer a byte stream is read into (a pipe holds 64 KiB on Linux). */
const READ_BUFFER_BYTES = 64 * 1024;

/** Options of {@linkcode collectStream}. */
export interface CollectStreamOptions {
  /**
   * Stops reading: the stream is cancelled and what was read so far stays in
   * the collector (for a pipe still held open by an escaped process).
   */
  readonly signal?: AbortSignal;
  /**
   * Receives each chunk as it is read, before it is collected (e.g. to show
   * the output live). The chunk is only valid during the call: copy it to
   * keep it.
   */
  readonly onChunk?: (chunk: Uint8Array) => void;
}

/**
 * Reads a byte stream to its end into a collector.
 *
 * @example Collecting a stream
 * ```ts
 * import { assert } from "@std/assert";
 * import { collectStream, OutputCollector } from "./collector.ts";
 *
 * const collector = new OutputCollector({ maxBytes: 1024 });
 * await collectStream(new Blob(["hello ", "world"]).stream(), collector);
 * assert(collector.text() === "hello world");
 * ```
 *
 * @param stream The stream; it is read to its end (or until it errors).
 * @param collector Where its bytes go.
 * @param options A signal that stops reading early.
 * @returns The collector's total byte count once the stream ended.
 * @throws The stream's error, if it fails.
 */
export async function collectStream(
  stream: ReadableStream<Uint8Array>,
  collector: OutputCollector,
  options: CollectStreamOptions = {},
): Promise<number> {
  const { signal, onChunk } = options;
  // A byte stream (like a child's stdout) is read into one reused buffer:
  // no allocation per chunk, so draining gigabytes leaves the heap alone.
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = stream.getReader({ mode: "byob" });
  } catch {
    byob = undefined;
  }
  const reader = byob ?? stream.getReader();
  const cancel = () => {
    reader.cancel().catch(() => {});
  };
  if (signal?.aborted) cancel();
  signal?.addEventListener("abort", cancel, { once: true });
  try {
    if (byob) {
      let buffer = new ArrayBuffer(READ_BUFFER_BYTES);
      while (true) {
        const { done, value } = await byob.read(new Uint8Array(buffer));
        if (done || !value) break;
        onChunk?.(value);
        collector.push(value);
        buffer = value.buffer as ArrayBuffer;
      }
    } else {
      const defaultReader = reader as ReadableStreamDefaultReader<Uint8Array>;
      while (true) {
        const { done, value } = await defaultReader.read();
        if (done) break;
        onChunk?.(value);
        collector.push(value);
      }
    }
  } finally {
    signal?.removeEventListener("abort", cancel);
    reader.releaseLock();
  }
  return collector.totalBytes;
}

/** The length of the longest prefix of `bytes` that ends on a UTF-8 character boundary. */
function completeUtf8Prefix(bytes: Uint8Array): number {
  const length = bytes.byteLength;
  // Look back at most 3 bytes for the lead byte of the last character.
  for (let i = length - 1; i >= 0 && i >= length - 4; i--) {
    const byte = bytes[i]!;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte
    const needed = byte < 0x80
      ? 1
      : (byte & 0xe0) === 0xc0
      ? 2
      : (byte & 0xf0) === 0xe0
      ? 3
      : (byte & 0xf8) === 0xf0
      ? 4
      : 1;
    return i + needed <= length ? length : i;
  }
  return length;
}

/** How many UTF-8 continuation bytes (at most 3) start `bytes`. */
function utf8ContinuationPrefix(bytes: Uint8Array): number {
  let i = 0;
  while (i < 3 && i < bytes.byteLength && (bytes[i]! & 0xc0) === 0x80) i++;
  return i;
}
