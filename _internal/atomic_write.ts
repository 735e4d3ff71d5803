/**
 * Writes a byte stream (or whatever a callback writes) into a local file
 * atomically: into a temporary file beside the target, renamed into place
 * only when complete. Shared by every runtime's `download`.
 *
 * @module
 */
import { hostPath } from "./std.ts";
import { toPermissionError } from "./permissions.ts";
import { checkPathText } from "./path_text.ts";

/** Options of {@linkcode writeStreamAtomically}. */
export interface WriteStreamAtomicallyOptions {
  /** Stops the write; nothing is left behind. */
  readonly signal?: AbortSignal;
  /**
   * The path that error messages name (default: the path written), e.g. the
   * caller's path when it writes the file a symlink leads to.
   */
  readonly displayPath?: string;
}

/**
 * Streams `stream` into `localPath` through a temporary file in the same
 * folder (`.skillrun-<random>.part`, whatever the target's name), flushed to disk, then renamed over the
 * target. On any failure (the stream errors, the signal aborts, the disk
 * refuses) the temporary file is removed and the target is left as it was: an
 * existing target is replaced only on success, in one rename. Missing parent
 * folders are created. The new file gets mode `0o644`, or the mode of the file
 * it replaces.
 *
 * Needs `--allow-write` (and `--allow-read`) for the target's folder.
 *
 * @param stream The bytes; cancelled when the write fails.
 * @param localPath The file to write (relative to the current directory, or
 * absolute).
 * @param options A signal.
 * @returns How many bytes were written.
 * @throws {Deno.errors.IsADirectory} The target is a folder.
 * @throws {Error} The stream failed (`cause` holds its error).
 * @throws {RuntimePermissionError} Deno or the system refused a write.
 * @throws {DOMException} The signal's reason, when it aborted.
 *
 * @example Writing a stream into a file
 * ```ts
 * import { assert } from "@std/assert";
 * import { writeStreamAtomically } from "./atomic_write.ts";
 * const dir = await Deno.makeTempDir();
 * try {
 *   const stream = ReadableStream.from([new TextEncoder().encode("hello")]);
 *   const bytes = await writeStreamAtomically(stream, `${dir}/out.txt`);
 *   assert(bytes === 5);
 *   assert(await Deno.readTextFile(`${dir}/out.txt`) === "hello");
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function writeStreamAtomically(
  stream: ReadableStream<Uint8Array>,
  localPath: string,
  options: WriteStreamAtomicallyOptions = {},
): Promise<number> {
  const { signal } = options;
  try {
    checkPathText(localPath, "write");
  } catch (error) {
    await stream.cancel().catch(() => {});
    throw error;
  }
  const reader = stream.getReader();
  const onAbort = () => {
    reader.cancel(signal?.reason).catch(() => {});
  };
  try {
    signal?.throwIfAborted();
    signal?.addEventListener("abort", onAbort, { once: true });
    return await writeFileAtomically(localPath, async (file) => {
      let bytes = 0;
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (error) {
          signal?.throwIfAborted();
          throw new Error(
            `Cannot write "${localPath}": the source stream failed: ${
              error instanceof Error ? error.message : String(error)
            }`,
            { cause: error },
          );
        }
        signal?.throwIfAborted();
        if (chunk.done) break;
        await writeAll(file, chunk.value);
        bytes += chunk.value.length;
      }
      return bytes;
    }, signal ? { signal } : {});
  } catch (error) {
    reader.cancel(error).catch(() => {});
    throw error;
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * Writes a local file atomically through a callback: `write` gets the open
 * temporary file (`.<name>.<random>.part` in the target's folder, empty,
 * positioned at 0) and may write, seek and truncate it as it likes (a resumed
 * download restarts from zero this way); when it resolves the file is
 * flushed to disk and renamed over the target. When it throws, or the signal
 * aborts, the temporary file is removed and the target is left as it was.
 * Missing parent folders are created; the new file gets mode `0o644`, or the
 * mode of the file it replaces.
 *
 * Needs `--allow-write` (and `--allow-read`) for the target's folder.
 *
 * @param localPath The file to write.
 * @param write Writes the content into the open temporary file; returns the
 * number of bytes it holds.
 * @param options A signal.
 * @returns What `write` returned.
 * @throws {TypeError} The path is empty or holds NUL.
 * @throws {Deno.errors.IsADirectory} The target is a folder.
 * @throws {RuntimePermissionError} Deno or the system refused a write.
 * @throws {DOMException} The signal's reason, when it aborted.
 *
 * @example Writing, then starting over, before the rename
 * ```ts
 * import { assert } from "@std/assert";
 * import { writeFileAtomically } from "./atomic_write.ts";
 * const dir = await Deno.makeTempDir();
 * try {
 *   const bytes = await writeFileAtomically(`${dir}/out.txt`, async (file) => {
 *     await file.write(new TextEncoder().encode("partial"));
 *     await file.truncate(0);
 *     await file.seek(0, Deno.SeekMode.Start);
 *     return await file.write(new TextEncoder().encode("whole"));
 *   });
 *   assert(bytes === 5 && await Deno.readTextFile(`${dir}/out.txt`) === "whole");
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function writeFileAtomically(
  localPath: string,
  write: (file: Deno.FsFile) => Promise<number>,
  options: WriteStreamAtomicallyOptions = {},
): Promise<number> {
  const { signal } = options;
  checkPathText(localPath, "write");
  const shown = options.displayPath ?? localPath;
  const target = hostPath.resolve(localPath);
  let temp: string | undefined;
  let file: Deno.FsFile | undefined;
  try {
    signal?.throwIfAborted();
    let mode = 0o644;
    try {
      const existing = await Deno.stat(target);
      if (existing.isDirectory) {
        throw new Deno.errors.IsADirectory(
          `Cannot write "${shown}": it is a folder`,
        );
      }
      if (existing.mode !== null) mode = existing.mode & 0o7777;
    } catch (error) {
      // Missing is the common case; without read access, write with defaults.
      if (
        !(error instanceof Deno.errors.NotFound ||
          error instanceof Deno.errors.NotCapable)
      ) {
        throw error;
      }
    }
    const dir = hostPath.dirname(target);
    await Deno.mkdir(dir, { recursive: true });
    temp = await Deno.makeTempFile({
      dir,
      // Not built from the target's name: any name is valid for the target
      // (quotes, `*`, `?`, 255 bytes), not necessarily inside a prefix.
      prefix: ".skillrun-",
      suffix: ".part",
    });
    file = await Deno.open(temp, { read: true, write: true, truncate: true });
    const bytes = await write(file);
    signal?.throwIfAborted();
    await file.syncData();
    file.close();
    file = undefined;
    if (Deno.build.os !== "windows") await Deno.chmod(temp, mode);
    signal?.throwIfAborted();
    await Deno.rename(temp, target);
    temp = undefined;
    return bytes;
  } catch (error) {
    if (
      error instanceof Deno.errors.IsADirectory &&
      !error.message.startsWith("Cannot write")
    ) {
      // The target became a folder before the rename.
      throw new Deno.errors.IsADirectory(
        `Cannot write "${shown}": it is a folder`,
      );
    }
    throw toPermissionError(error, { operation: "write", path: shown });
  } finally {
    try {
      file?.close();
    } catch {
      // already closed
    }
    if (temp !== undefined) await Deno.remove(temp).catch(() => {});
  }
}

/**
 * Writes `bytes` into a local file atomically, as
 * {@linkcode writeFileAtomically} does: a temporary file beside the target,
 * flushed to disk, then renamed over it; the target keeps its mode.
 *
 * Needs `--allow-write` (and `--allow-read`) for the target's folder.
 *
 * @param localPath The file to write.
 * @param bytes The content.
 * @param options A signal, the path to name in errors.
 * @returns How many bytes were written.
 * @throws {TypeError} The path is empty or holds NUL.
 * @throws {Deno.errors.IsADirectory} The target is a folder.
 * @throws {RuntimePermissionError} Deno or the system refused a write.
 * @throws {DOMException} The signal's reason, when it aborted.
 *
 * @example Writing bytes
 * ```ts
 * import { assert } from "@std/assert";
 * import { writeBytesAtomically } from "./atomic_write.ts";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await writeBytesAtomically(`${dir}/a.txt`, new TextEncoder().encode("hi"));
 *   assert(await Deno.readTextFile(`${dir}/a.txt`) === "hi");
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export function writeBytesAtomically(
  localPath: string,
  bytes: Uint8Array,
  options: WriteStreamAtomicallyOptions = {},
): Promise<number> {
  return writeFileAtomically(localPath, async (file) => {
    await writeAll(file, bytes);
    return bytes.length;
  }, options);
}

/** Writes all of `data` at the file's position. */
async function writeAll(file: Deno.FsFile, data: Uint8Array): Promise<void> {
  for (let offset = 0; offset < data.length;) {
    offset += await file.write(data.subarray(offset));
  }
}
