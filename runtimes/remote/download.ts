/**
 * {@linkcode downloadToFile}: a streamed download into a local file, renamed
 * into place only when complete, resuming with `Range` after a dropped
 * connection.
 *
 * @module
 */
import { checkNumber } from "../../_internal/check_number.ts";
import { writeFileAtomically } from "../../_internal/atomic_write.ts";
import type { DownloadResult } from "../types.ts";

export type { DownloadResult };

/**
 * Opens the remote file from a byte offset: for `offset > 0` the call sends
 * `Range: bytes=<offset>-`. It answers a 2xx response, or (for an offset at
 * the end of the file) a `416` whose `Content-Range` gives the file's size
 * (an unsatisfied range); other error statuses throw.
 */
export type OpenAtOffset = (
  offset: number,
  signal?: AbortSignal,
) => Promise<Response>;

/** Options of {@linkcode downloadToFile}. */
export interface DownloadToFileOptions {
  /** The size the file must have, when known (checked against the server's). */
  readonly expectedSize?: number;
  /** Resumptions after dropped connections; default 5. */
  readonly maxResumes?: number;
  /** What is downloaded (e.g. the remote path), for messages. */
  readonly source?: string;
  /** Stops the download; nothing is left behind. */
  readonly signal?: AbortSignal;
}

/** The default number of resumptions of {@linkcode downloadToFile}: 5. */
export const DEFAULT_MAX_RESUMES = 5;

/**
 * Downloads into a local file, streaming straight into a temporary file
 * beside it (`_internal/atomic_write.ts`), flushed and renamed into place
 * only when complete:
 *
 * - after a dropped connection (the body fails, or ends short of the size
 *   announced) it resumes with `open(<bytes so far>)`, which sends
 *   `Range: bytes=<n>-`; a `206` answer must carry a `Content-Range` that
 *   starts at that byte; a server that ignores `Range` and answers `200`
 *   starts the file over from zero (never appended after the partial);
 * - when the connection dropped after the last byte (no length was
 *   announced), the resumption from the end answers `416` whose
 *   `Content-Range` (an unsatisfied range) gives the file's size: a size
 *   equal to what is on disk means done, without reading anything again;
 * - the size is verified against the `Content-Length`, the `Content-Range`
 *   total and `expectedSize`: any disagreement, or more bytes than announced,
 *   is an error;
 * - on any failure or abort, neither the target nor the temporary file is
 *   left (an existing target stays as it was).
 *
 * Needs `--allow-write` (and `--allow-read`) for the target's folder, and
 * whatever `open` needs.
 *
 * @param open Opens the remote file at an offset.
 * @param localPath The local file.
 * @param options Expected size, resumptions, a name for messages, a signal.
 * @returns The file and its size.
 * @throws {RangeError} An option is out of range.
 * @throws {Error} The sizes disagree, the server resumed at the wrong byte,
 * or the connection dropped more than `maxResumes` times (`cause` holds the
 * last error); errors of `open` pass through.
 * @throws {RuntimePermissionError} Deno or the system refused a write.
 * @throws {DOMException} The signal's reason, when it aborted.
 *
 * @example Downloading with resumption from a loopback server
 * ```ts
 * import { assert } from "@std/assert";
 * import { downloadToFile } from "@skillrun/skillrun/runtime";
 * const data = new TextEncoder().encode("0123456789");
 * await using server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (request) => {
 *   const range = /bytes=(\d+)-/.exec(request.headers.get("range") ?? "");
 *   if (!range) return new Response(data);
 *   const start = Number(range[1]);
 *   return new Response(data.subarray(start), {
 *     status: 206,
 *     headers: { "content-range": `bytes ${start}-${data.length - 1}/${data.length}` },
 *   });
 * });
 * const dir = await Deno.makeTempDir();
 * try {
 *   const url = `http://127.0.0.1:${server.addr.port}/file`;
 *   const result = await downloadToFile(
 *     (offset, signal) =>
 *       fetch(url, { headers: offset > 0 ? { range: `bytes=${offset}-` } : {}, signal: signal ?? null }),
 *     `${dir}/file.txt`,
 *     { expectedSize: 10 },
 *   );
 *   assert(result.bytes === 10);
 *   assert(await Deno.readTextFile(`${dir}/file.txt`) === "0123456789");
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function downloadToFile(
  open: OpenAtOffset,
  localPath: string,
  options: DownloadToFileOptions = {},
): Promise<DownloadResult> {
  if (typeof open !== "function") {
    throw new TypeError("Cannot download: open is not a function");
  }
  const { signal, expectedSize } = options;
  const maxResumes = options.maxResumes ?? DEFAULT_MAX_RESUMES;
  checkNumber(maxResumes, "maxResumes", "non-negative integer");
  if (expectedSize !== undefined) {
    checkNumber(expectedSize, "expectedSize", "non-negative integer");
  }
  const what = options.source === undefined
    ? `to "${localPath}"`
    : `"${options.source}" to "${localPath}"`;
  const fail = (reason: string, cause?: unknown): Error =>
    new Error(
      `Cannot download ${what}: ${reason}`,
      cause === undefined ? undefined : { cause },
    );

  const bytes = await writeFileAtomically(localPath, async (file) => {
    let total = expectedSize;
    let totalFrom = "the expected size";
    const announce = (size: number, from: string) => {
      if (total !== undefined && total !== size) {
        throw fail(
          `size mismatch: ${from} says ${size} bytes, ${totalFrom} ${total}`,
        );
      }
      total = size;
      totalFrom = from;
    };
    const writer = new BufferedWriter(file);
    let resumes = 0;
    for (;;) {
      signal?.throwIfAborted();
      const offset = writer.written;
      const response = await open(offset, signal);
      const body = response.body;
      try {
        if (response.status === 416 && offset > 0) {
          // The connection dropped after the last byte: asked from the end,
          // the server says the file has exactly what is on disk.
          const size = unsatisfiedSize(response.headers.get("content-range"));
          if (size === offset) {
            announce(size, "the 416 Content-Range size");
            await body?.cancel().catch(() => {});
            await writer.flush().catch((error) => {
              throw error instanceof WriteError ? error.cause : error;
            });
            return writer.written;
          }
          throw fail(
            `the server answered 416 when asked from byte ${offset}${
              size === undefined ? "" : ` of a ${size}-byte file`
            }`,
          );
        }
        if (response.status === 206) {
          const range = parseContentRange(
            response.headers.get("content-range"),
          );
          if (range === null) {
            throw fail("the server answered 206 without a valid Content-Range");
          }
          if (range.start !== offset) {
            throw fail(
              `the server answered bytes from ${range.start} when asked from ${offset}`,
            );
          }
          if (range.total !== undefined) {
            announce(range.total, "the Content-Range total");
          }
        } else if (response.status >= 200 && response.status < 300) {
          if (offset > 0) {
            // The server ignored Range: start over from zero.
            await writer.restart();
          }
          const length = contentLength(response);
          if (length !== undefined) {
            announce(length, "the Content-Length");
          }
        } else {
          throw fail(`the server answered ${response.status}`);
        }
      } catch (error) {
        await body?.cancel().catch(() => {});
        throw error;
      }
      let dropped: unknown = undefined;
      if (body !== null) {
        let byob: ReadableStreamBYOBReader | undefined;
        let plain: ReadableStreamDefaultReader<Uint8Array> | undefined;
        try {
          byob = body.getReader({ mode: "byob" });
        } catch {
          plain = body.getReader();
        }
        const tooMuch = () =>
          fail(
            `size mismatch: the server sent more than the ${total} bytes of ${totalFrom}`,
          );
        try {
          for (;;) {
            let more: boolean;
            try {
              more = byob
                ? await writer.readFrom(byob)
                : await writer.writeChunk(plain!);
            } catch (error) {
              signal?.throwIfAborted();
              if (error instanceof WriteError) throw error.cause;
              dropped = error;
              break;
            }
            signal?.throwIfAborted();
            if (total !== undefined && writer.written > total) throw tooMuch();
            if (!more) break;
          }
        } catch (error) {
          (byob ?? plain)!.cancel(error).catch(() => {});
          throw error;
        }
      }
      await writer.flush().catch((error) => {
        throw error instanceof WriteError ? error.cause : error;
      });
      signal?.throwIfAborted();
      if (
        dropped === undefined && total !== undefined && writer.written < total
      ) {
        dropped = new Error(
          `the answer ended after ${writer.written} of ${total} bytes`,
        );
      }
      if (dropped === undefined) {
        if (total !== undefined && writer.written !== total) {
          throw fail(
            `size mismatch: received ${writer.written} bytes, ${totalFrom} says ${total}`,
          );
        }
        return writer.written;
      }
      if (resumes >= maxResumes) {
        throw fail(
          `the connection dropped ${
            resumes + 1
          } times (last after ${writer.written} bytes): ${
            dropped instanceof Error ? dropped.message : String(dropped)
          }`,
          dropped,
        );
      }
      resumes++;
    }
  }, signal ? { signal } : {});
  return { localPath, bytes };
}

/** Bytes gathered before one write to the file. */
const WRITE_BUFFER_BYTES = 1024 * 1024;
/** Bytes read from a BYOB reader at once (a divisor of the write buffer). */
const READ_BUFFER_BYTES = 256 * 1024;

/** A failure of the local file (not of the connection). */
class WriteError extends Error {
  constructor(cause: unknown) {
    super("write failed", { cause });
  }
}

/**
 * Gathers the body into large writes (reading straight into its buffer from
 * a BYOB reader); counts what reached it.
 */
class BufferedWriter {
  readonly #file: Deno.FsFile;
  readonly #buffer = new Uint8Array(WRITE_BUFFER_BYTES);
  #scratch = new ArrayBuffer(READ_BUFFER_BYTES);
  #filled = 0;
  #flushed = 0;

  constructor(file: Deno.FsFile) {
    this.#file = file;
  }

  /** Bytes received so far (buffered ones included). */
  get written(): number {
    return this.#flushed + this.#filled;
  }

  /**
   * Reads once from a BYOB reader into a reused read buffer (so a failed read
   * loses nothing already received), then copies into the write buffer;
   * false at the end of the body.
   */
  async readFrom(reader: ReadableStreamBYOBReader): Promise<boolean> {
    let result: ReadableStreamReadResult<Uint8Array>;
    try {
      result = await reader.read(
        new Uint8Array(this.#scratch, 0, READ_BUFFER_BYTES),
      );
    } catch (error) {
      // The failed read kept the buffer it was lent.
      this.#scratch = new ArrayBuffer(READ_BUFFER_BYTES);
      throw error;
    }
    const { done, value } = result;
    if (value !== undefined) {
      this.#scratch = value.buffer as ArrayBuffer;
      if (this.#filled + value.length > WRITE_BUFFER_BYTES) await this.flush();
      this.#append(value);
      if (this.#filled === WRITE_BUFFER_BYTES) await this.flush();
    }
    return !done;
  }

  /** Reads one chunk and buffers it; false at the end of the body. */
  async writeChunk(
    reader: ReadableStreamDefaultReader<Uint8Array>,
  ): Promise<boolean> {
    const { done, value } = await reader.read();
    if (done) return false;
    let chunk = value;
    while (chunk.length > 0) {
      const take = Math.min(chunk.length, WRITE_BUFFER_BYTES - this.#filled);
      this.#append(chunk.subarray(0, take));
      chunk = chunk.subarray(take);
      if (this.#filled === WRITE_BUFFER_BYTES) await this.flush();
    }
    return true;
  }

  /** Copies bytes into the write buffer (flushing first when they do not fit). */
  #append(bytes: Uint8Array): void {
    this.#buffer.set(bytes, this.#filled);
    this.#filled += bytes.length;
  }

  async flush(): Promise<void> {
    if (this.#filled === 0) return;
    const data = this.#buffer.subarray(0, this.#filled);
    try {
      for (let offset = 0; offset < data.length;) {
        offset += await this.#file.write(data.subarray(offset));
      }
    } catch (error) {
      throw new WriteError(error);
    }
    this.#flushed += this.#filled;
    this.#filled = 0;
  }

  async restart(): Promise<void> {
    this.#filled = 0;
    this.#flushed = 0;
    await this.#file.truncate(0);
    await this.#file.seek(0, Deno.SeekMode.Start);
  }
}

/** `bytes a-b/total` (total may be `*`), or `null`. */
function parseContentRange(
  value: string | null,
): { start: number; end: number; total: number | undefined } | null {
  if (value === null) return null;
  const match = /^\s*bytes\s+(\d+)-(\d+)\/(\d+|\*)\s*$/i.exec(value);
  if (!match) return null;
  const start = Number(match[1]);
  const end = Number(match[2]);
  const total = match[3] === "*" ? undefined : Number(match[3]);
  if (end < start || (total !== undefined && end >= total)) return null;
  return { start, end, total };
}

/** The size an unsatisfied `Content-Range` (of a 416) gives, or `undefined`. */
function unsatisfiedSize(value: string | null): number | undefined {
  const match = /^\s*bytes\s+\*\/(\d+)\s*$/i.exec(value ?? "");
  return match ? Number(match[1]) : undefined;
}

/** The Content-Length of an unencoded body, or `undefined`. */
function contentLength(response: Response): number | undefined {
  const encoding = response.headers.get("content-encoding");
  if (encoding !== null && encoding.trim().toLowerCase() !== "identity") {
    return undefined;
  }
  const value = response.headers.get("content-length");
  if (value === null || !/^\s*\d+\s*$/.test(value)) return undefined;
  return Number(value);
}
