/**
 * Small helpers both test servers (`opensandbox.ts`, `aio.ts`) use: a byte
 * range of a `Range` header, a file streamed in chunks, a signal to a process
 * group, a command-line flag split from its inline value, and the usual type
 * and error checks. What differs between the two servers (how they write
 * JSON, errors and `Content-Disposition`, which `Range` headers they accept)
 * stays in their own modules.
 *
 * @module
 */

/** A UTF-8 encoder. */
export const encoder: TextEncoder = new TextEncoder();

/**
 * A server-side timer of `seconds`, or none when that is past the longest
 * JavaScript timer (2^31 - 1 ms, 24.8 days: such a timer fires at once); the
 * services keep any timeout (they are not JavaScript), and a test never waits
 * that long.
 */
export function serverTimer(
  seconds: number | null,
  fire: () => void,
): ReturnType<typeof setTimeout> | undefined {
  if (seconds === null || !(seconds > 0) || seconds * 1000 > 2 ** 31 - 1) {
    return undefined;
  }
  return setTimeout(fire, seconds * 1000);
}

/** Whether a value is a plain JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An error's message, or the value as text. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** One range of a `Range` header that can be served. */
export interface ByteRange {
  /** The first byte. */
  readonly start: number;
  /** How many bytes (at least 1, never past the end). */
  readonly length: number;
}

/**
 * One `first-last` range of a `bytes=` header against a file of `size`
 * bytes, as execd's `ParseRange` reads it: `"invalid"` when it does not
 * parse (or `last < first`), `"unsatisfiable"` when it starts at or past the
 * end, else the bytes to send (a suffix `-n` is the last `n` bytes; a range
 * past the end is cut at it).
 *
 * @param first The text before the dash, trimmed (empty for a suffix).
 * @param last The text after the dash, trimmed (empty for "to the end").
 * @param size The size of the file.
 * @returns The range, or why there is none.
 */
export function byteRange(
  first: string,
  last: string,
  size: number,
): ByteRange | "invalid" | "unsatisfiable" {
  let start: number;
  let length: number;
  if (first === "") {
    if (!/^\d+$/.test(last)) return "invalid";
    const n = Math.min(Number(last), size);
    start = size - n;
    length = size - start;
  } else {
    if (!/^\d+$/.test(first)) return "invalid";
    start = Number(first);
    if (last === "") {
      length = size - start;
    } else {
      if (!/^\d+$/.test(last) || Number(last) < start) return "invalid";
      length = Number(last) - start + 1;
    }
  }
  if (start >= size) return "unsatisfiable";
  if (start + length > size) length = size - start;
  return { start, length };
}

/**
 * `length` bytes of an open file from where it stands, read in chunks of at
 * most `chunkSize` bytes; the file is closed at the end, at end of file, or
 * when the reader cancels.
 *
 * @param file The file, already at the first byte to send.
 * @param length How many bytes to send at most.
 * @param chunkSize The largest read.
 * @returns The stream.
 */
export function fileStream(
  file: Deno.FsFile,
  length: number,
  chunkSize: number,
): ReadableStream<Uint8Array> {
  let left = length;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (left <= 0) {
        file.close();
        controller.close();
        return;
      }
      const buffer = new Uint8Array(Math.min(left, chunkSize));
      const read = await file.read(buffer);
      if (read === null || read === 0) {
        file.close();
        controller.close();
        return;
      }
      left -= read;
      controller.enqueue(buffer.subarray(0, read));
    },
    cancel() {
      file.close();
    },
  });
}

/**
 * Sends a signal to a process group (a command started `detached`, whose
 * pid is its group id).
 *
 * @param pgid The group id; 0 and 1 are never signalled.
 * @param signal The signal.
 * @returns Whether the signal was sent (false when the group is gone).
 */
export function signalGroup(pgid: number, signal: Deno.Signal): boolean {
  if (pgid <= 1) return false;
  try {
    Deno.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * A command-line argument split at its first `=`: `--port=8080` gives
 * `["--port", "8080"]`, `--port` gives `["--port", undefined]`.
 *
 * @param arg The argument.
 * @returns The flag and its inline value, if any.
 */
export function splitFlag(arg: string): [string, string | undefined] {
  return arg.includes("=")
    ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)]
    : [arg, undefined];
}

/** Where a sandbox of a test server keeps its own files. */
export interface SandboxFiles {
  /** The host folder holding the sandbox's `home` and `tmp`. */
  readonly root: string;
  /** The sandbox's home (the host's `<root>/home` is bound there). */
  readonly home: string;
  /** Host folders bound at the same path (the tests' own folders). */
  readonly volumes?: readonly string[];
  /** No network at all inside. */
  readonly noNetwork: boolean;
  /** The folder the program starts in. */
  readonly cwd: string;
}

/**
 * The `bwrap` arguments (after `bwrap`, before the program) that give a test
 * server's sandbox one file system of its own: the host read-only, its own
 * home and `/tmp`, the tests' volumes, no network when asked.
 *
 * @param files The sandbox's folders.
 * @returns The arguments.
 */
export function sandboxBwrapArgs(files: SandboxFiles): string[] {
  return [
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/home",
    "--bind",
    `${files.root}/home`,
    files.home,
    "--bind",
    `${files.root}/tmp`,
    "/tmp",
    ...(files.volumes ?? []).flatMap((v) => ["--bind", v, v]),
    ...(files.noNetwork ? ["--unshare-net"] : []),
    "--die-with-parent",
    "--chdir",
    files.cwd,
  ];
}
