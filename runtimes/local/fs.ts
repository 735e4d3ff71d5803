/**
 * {@linkcode LocalFileSystem}: the local runtime's file system, fenced inside a
 * workspace when given a {@linkcode PathFence}.
 *
 * Why one long file: every operation of the file-system contract (read,
 * stream, write through a rename, edit, list, stat, remove, download), each
 * with the same fence checks and never-blocking opens, private to this class.
 *
 * @module
 */
import { tooLargeError } from "../../_internal/format.ts";
import { checkNumber } from "../../_internal/check_number.ts";
import type { Stats } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { hostPath } from "../../_internal/std.ts";
import { toPermissionError } from "../../_internal/permissions.ts";
import {
  writeBytesAtomically,
  writeStreamAtomically,
} from "../../_internal/atomic_write.ts";
import { WorkspaceEscapeError } from "../errors.ts";
import { checkPathText } from "../request.ts";
import type { FencedPath, PathFence } from "../../workspace/fence.ts";
import type {
  DownloadResult,
  FileInfo,
  FileType,
  ListOptions,
  ListResult,
  OpenFileResult,
  ReadTextOptions,
  SignalOptions,
  SkillRuntimeFileSystem,
} from "../types.ts";

/** The default depth of {@linkcode LocalFileSystem.list}. */
const DEFAULT_LIST_DEPTH = 1;
/** The default entry limit of {@linkcode LocalFileSystem.list}. */
const DEFAULT_LIST_LIMIT = 1000;
/** Bytes read at once by `readStream` and the reads. */
const STREAM_CHUNK = 256 * 1024;
/**
 * How files are opened for reading: never blocking (a pipe opens at once, a
 * terminal never becomes ours), so that what was opened can be checked first.
 * `O_NONBLOCK` does not change reads of a regular file.
 */
function readFlags(): number {
  const { constants } = nodeFs();
  return constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) |
    (constants.O_NOCTTY ?? 0);
}
/**
 * `node:fs`, loaded by the first read rather than at import: loading Node's
 * modules costs every cold start (about 15 ms).
 */
function nodeFs(): typeof import("node:fs") {
  return process.getBuiltinModule("node:fs") as typeof import("node:fs");
}
/** Entries stat'ed at once by `list`. */
const STAT_BATCH = 64;

/** Options of {@linkcode LocalFileSystem}. */
export interface LocalFileSystemOptions {
  /** The folder relative paths resolve against (absolute). */
  readonly cwd: string;
  /** The workspace's fence: when given, every path must stay inside it. */
  readonly fence?: PathFence;
}

/**
 * The local file system of a runtime. Relative paths resolve against `cwd`;
 * with a `fence` (workspace mode) every path must lie inside the workspace,
 * lexically and once its symlinks are resolved. Permission denials become
 * {@linkcode RuntimePermissionError}s naming the flag to add; missing files
 * give `Cannot read "x": no such file`.
 *
 * Needs `--allow-read` for what is read and `--allow-write` for what is written.
 *
 * @example Writing, reading and listing
 * ```ts
 * import { assert } from "@std/assert";
 * import { LocalFileSystem } from "@skillrun/skillrun/runtime";
 * const root = await Deno.makeTempDir();
 * try {
 *   const fs = new LocalFileSystem({ cwd: root });
 *   await fs.writeText("notes/a.txt", "hello");
 *   assert(await fs.readText("notes/a.txt", { maxBytes: 1024 }) === "hello");
 *   const { entries } = await fs.list(".", { depth: 2 });
 *   assert(entries.map((e) => e.name).join() === "notes,a.txt");
 * } finally {
 *   await Deno.remove(root, { recursive: true });
 * }
 * ```
 */
export class LocalFileSystem implements SkillRuntimeFileSystem {
  readonly #cwd: string;
  readonly #fence: PathFence | undefined;

  /**
   * Makes the file system.
   *
   * @param options The folder relative paths resolve against, and the fence in workspace mode.
   * @throws {TypeError} The folder is not absolute.
   */
  constructor(options: LocalFileSystemOptions) {
    if (
      typeof options?.cwd !== "string" || !hostPath.isAbsolute(options.cwd)
    ) {
      throw new TypeError(
        `Cannot use file-system folder ${
          JSON.stringify(options?.cwd)
        }: it must be an absolute path`,
      );
    }
    this.#cwd = hostPath.normalize(options.cwd);
    this.#fence = options.fence;
  }

  /** The folder relative paths resolve against. */
  get cwd(): string {
    return this.#cwd;
  }

  /**
   * Resolves a path: relative paths against `cwd`; with a fence, a path
   * outside the workspace is refused.
   *
   * Needs `--allow-read` for the workspace in workspace mode, else nothing.
   *
   * @param path The path.
   * @returns The absolute path.
   * @throws {TypeError} The path is empty.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   *
   * @example Resolving a relative path
   * ```ts
   * import { assert } from "@std/assert";
   * import { LocalFileSystem } from "./fs.ts";
   * if (Deno.build.os !== "windows") {
   *   const fs = new LocalFileSystem({ cwd: "/srv/data" });
   *   assert(await fs.resolve("a/../b.txt") === "/srv/data/b.txt");
   * }
   * ```
   */
  resolve(path: string): Promise<string> {
    return this.#resolve(path);
  }

  /**
   * The one walk of the fence of an operation: its result is trusted by the
   * steps that follow (without a fence, the plain resolution).
   */
  async #resolve(path: string): Promise<FencedPath> {
    // Before any normalisation: `a\0/..` must not become a harmless path.
    checkPathText(path);
    const absolute = hostPath.isAbsolute(path)
      ? hostPath.normalize(path)
      : hostPath.join(this.#cwd, path);
    if (!this.#fence) return absolute as FencedPath;
    const candidate = hostPath.isAbsolute(path) ? path : absolute;
    try {
      return await this.#fence.resolve(candidate);
    } catch (error) {
      if (error instanceof WorkspaceEscapeError && candidate !== path) {
        throw new WorkspaceEscapeError(
          error.message.replace(`"${candidate}"`, `"${path}"`),
          { path, workspace: error.workspace, cause: error },
        );
      }
      throw error;
    }
  }

  /**
   * Reads a UTF-8 text file, refusing one over `maxBytes`: the size is checked
   * first, then the limit is enforced while reading (files can grow), so at
   * most `maxBytes + 1` bytes are ever read. Only regular files are read: a
   * pipe, a device or a socket (also behind a symlink) is refused at once,
   * checked on the opened file (opened without blocking). A byte-order
   * mark is kept, so a later write gives the same bytes back.
   *
   * Needs `--allow-read` for the file.
   *
   * @param path The file.
   * @param options The limit (mandatory) and a signal.
   * @returns The text (invalid UTF-8 replaced by U+FFFD).
   * @throws {RangeError} `maxBytes` is not a non-negative integer, or the file
   * is larger: `Cannot read "big.txt": file is larger than the 1 MiB limit`.
   * @throws {Deno.errors.NotFound} No such file.
   * @throws {Deno.errors.IsADirectory} The path is a folder.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RuntimePermissionError} Reading is not allowed.
   *
   * @example Reading with a limit
   * ```ts
   * import { assert } from "@std/assert";
   * import { LocalFileSystem } from "./fs.ts";
   * const root = await Deno.makeTempDir();
   * try {
   *   const fs = new LocalFileSystem({ cwd: root });
   *   await fs.writeText("big.txt", "x".repeat(2048));
   *   let message = "";
   *   try { await fs.readText("big.txt", { maxBytes: 1024 }); } catch (e) { message = String(e); }
   *   assert(message.includes("larger than the 1 KiB limit"));
   * } finally {
   *   await Deno.remove(root, { recursive: true });
   * }
   * ```
   */
  async readText(path: string, options: ReadTextOptions): Promise<string> {
    checkNumber(options?.maxBytes, "maxBytes", "non-negative integer");
    const bytes = await this.#read(path, options.maxBytes, options.signal);
    return new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
  }

  /**
   * Reads a file's bytes, refusing one over `maxBytes` when given (checked
   * while reading, as {@linkcode LocalFileSystem.readText}).
   *
   * Needs `--allow-read` for the file.
   *
   * @param path The file.
   * @param options An optional limit and a signal.
   * @returns The bytes.
   * @throws {RangeError} The limit is invalid or the file is larger.
   * @throws {Deno.errors.NotFound} No such file.
   * @throws {Deno.errors.IsADirectory} The path is a folder.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RuntimePermissionError} Reading is not allowed.
   *
   * @example Reading bytes
   * ```ts
   * import { assert } from "@std/assert";
   * import { LocalFileSystem } from "./fs.ts";
   * const root = await Deno.makeTempDir();
   * try {
   *   await Deno.writeFile(`${root}/b.bin`, new Uint8Array([0, 255]));
   *   const bytes = await new LocalFileSystem({ cwd: root }).readBytes("b.bin");
   *   assert(bytes.length === 2 && bytes[1] === 255);
   * } finally {
   *   await Deno.remove(root, { recursive: true });
   * }
   * ```
   */
  async readBytes(
    path: string,
    options: SignalOptions & { maxBytes?: number } = {},
  ): Promise<Uint8Array> {
    if (options.maxBytes !== undefined) {
      checkNumber(options.maxBytes, "maxBytes", "non-negative integer");
    }
    return await this.#read(path, options.maxBytes, options.signal);
  }

  /**
   * Writes a UTF-8 text file, creating its parent folders, replacing what was
   * there. The text goes into a new temporary file beside the target, renamed
   * over it once complete: readers never see half a file, and the file that
   * was there is never written to, so a hard link to a file elsewhere keeps
   * the other file as it was (the path gets a file of its own). A symlink
   * (inside the workspace) is written through: its target is replaced. The
   * mode of the replaced file is kept. Anything but a regular file (a pipe, a
   * device, a socket) is refused without being opened.
   *
   * Needs `--allow-write` for the file and its new parents.
   *
   * @param path The file.
   * @param content The text.
   * @param options A signal.
   * @throws {TypeError} The content is not a string, or the path is not a
   * regular file.
   * @throws {Deno.errors.IsADirectory} The path is a folder.
   * @throws {Deno.errors.NotADirectory} A parent is a file.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RuntimePermissionError} Writing is not allowed.
   *
   * @example Writing a file in a new folder
   * ```ts
   * import { assert } from "@std/assert";
   * import { LocalFileSystem } from "./fs.ts";
   * const root = await Deno.makeTempDir();
   * try {
   *   await new LocalFileSystem({ cwd: root }).writeText("a/b/c.txt", "x");
   *   assert(await Deno.readTextFile(`${root}/a/b/c.txt`) === "x");
   * } finally {
   *   await Deno.remove(root, { recursive: true });
   * }
   * ```
   */
  async writeText(
    path: string,
    content: string,
    options: SignalOptions = {},
  ): Promise<void> {
    if (typeof content !== "string") {
      throw new TypeError(`Cannot write "${path}": the content is not text`);
    }
    const absolute = await this.#resolve(path);
    options.signal?.throwIfAborted();
    try {
      await Deno.mkdir(hostPath.dirname(absolute), { recursive: true });
    } catch (error) {
      if (
        error instanceof Deno.errors.AlreadyExists ||
        error instanceof Deno.errors.NotADirectory
      ) {
        throw new Deno.errors.NotADirectory(
          `Cannot write "${path}": a parent is not a folder`,
        );
      }
      throw toPermissionError(error, { operation: "write", path });
    }
    const target = await this.#writeTarget(path, absolute);
    // The file it replaces is locked as writeTextIfUnchanged locks it, so an
    // edit elsewhere never renames its result over this write unseen.
    using _held = await lockExisting(target);
    await writeBytesAtomically(target, new TextEncoder().encode(content), {
      displayPath: path,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /**
   * Replaces a text file only while it still holds `expected`: a compare and
   * swap that holds across processes and runtimes on this host. The file is
   * locked (an exclusive `flock`, which other such writers wait for), checked
   * to be still the file at the path and to hold exactly `expected`, then
   * replaced as {@linkcode LocalFileSystem.writeText} does (a new file renamed
   * over it). A writer waiting on the old file then finds it gone from the
   * path and reports a change.
   *
   * Needs `--allow-read` and `--allow-write` of the file.
   *
   * @param path The file (it must exist).
   * @param expected The bytes it must still hold.
   * @param content The new text.
   * @param options A signal.
   * @returns `true` when written; `false` when the file changed (or is gone).
   *
   * @example Two writers of what one of them read: the second is told
   * ```ts
   * import { assert } from "@std/assert";
   * import { LocalFileSystem } from "./fs.ts";
   * const root = await Deno.makeTempDir();
   * try {
   *   const fs = new LocalFileSystem({ cwd: root });
   *   await fs.writeText("a.txt", "one");
   *   const read = await fs.readBytes("a.txt");
   *   assert(await fs.writeTextIfUnchanged("a.txt", read, "two"));
   *   assert(!(await fs.writeTextIfUnchanged("a.txt", read, "three")));
   *   assert(await Deno.readTextFile(`${root}/a.txt`) === "two");
   * } finally {
   *   await Deno.remove(root, { recursive: true });
   * }
   * ```
   */
  async writeTextIfUnchanged(
    path: string,
    expected: Uint8Array,
    content: string,
    options: SignalOptions = {},
  ): Promise<boolean> {
    if (typeof content !== "string") {
      throw new TypeError(`Cannot write "${path}": the content is not text`);
    }
    const absolute = await this.#resolve(path);
    options.signal?.throwIfAborted();
    const target = await this.#writeTarget(path, absolute);
    let file: Deno.FsFile;
    try {
      // Read-only and non-blocking: #writeTarget checked it is a regular file.
      file = await Deno.open(target, { read: true });
    } catch (error) {
      if (isMissing(error)) return false;
      throw toPermissionError(error, { operation: "write", path });
    }
    try {
      await file.lock(true);
      options.signal?.throwIfAborted();
      // Still the file at the path (not replaced while this one waited)?
      const [held, current] = await Promise.all([
        file.stat(),
        Deno.stat(target).catch(() => null),
      ]);
      if (current === null || held.ino !== current.ino) return false;
      if (held.size !== expected.byteLength) return false;
      const now = new Uint8Array(expected.byteLength + 1);
      let read = 0;
      while (read < now.byteLength) {
        const n = await file.read(now.subarray(read));
        if (n === null) break;
        read += n;
      }
      if (read !== expected.byteLength) return false;
      for (let i = 0; i < read; i++) if (now[i] !== expected[i]) return false;
      await writeBytesAtomically(target, new TextEncoder().encode(content), {
        displayPath: path,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      return true;
    } finally {
      file.close();
    }
  }

  /** The file a write replaces (a symlink's target), checked to be one. */
  async #writeTarget(
    path: string,
    absolute: FencedPath,
  ): Promise<string> {
    let target: string;
    try {
      target = await Deno.realPath(absolute);
    } catch (error) {
      if (isMissing(error)) return absolute;
      throw toPermissionError(error, { operation: "write", path });
    }
    if (
      this.#fence && target !== this.#fence.root &&
      !target.startsWith(
        this.#fence.root.endsWith(hostPath.SEPARATOR)
          ? this.#fence.root
          : this.#fence.root + hostPath.SEPARATOR,
      )
    ) {
      // Swapped since the fence looked.
      throw new WorkspaceEscapeError(
        `Cannot use "${path}": path leads outside the workspace "${this.#fence.root}" through a symbolic link`,
        { path, workspace: this.#fence.root },
      );
    }
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(target);
    } catch (error) {
      if (isMissing(error)) return target;
      throw toPermissionError(error, { operation: "write", path });
    }
    if (info.isDirectory) {
      throw new Deno.errors.IsADirectory(
        `Cannot write "${path}": it is a folder`,
      );
    }
    if (!info.isFile) {
      throw new TypeError(
        `Cannot write "${path}": it is ${kindOf(info)}, not a regular file`,
      );
    }
    return target;
  }

  /**
   * Facts about a path without following a symlink there (a symlink is
   * reported as one), or `null` when nothing is there.
   *
   * Needs `--allow-read` for the path.
   *
   * @param path The path.
   * @param options A signal.
   * @returns The facts, or `null`.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RuntimePermissionError} Reading is not allowed.
   *
   * @example Stat of a missing file
   * ```ts
   * import { assert } from "@std/assert";
   * import { LocalFileSystem } from "./fs.ts";
   * const root = await Deno.makeTempDir();
   * try {
   *   assert(await new LocalFileSystem({ cwd: root }).stat("missing") === null);
   * } finally {
   *   await Deno.remove(root, { recursive: true });
   * }
   * ```
   */
  async stat(path: string, options: SignalOptions = {}): Promise<
    FileInfo | null
  > {
    const absolute = await this.#resolve(path);
    options.signal?.throwIfAborted();
    try {
      return toFileInfo(absolute, await Deno.lstat(absolute));
    } catch (error) {
      if (isMissing(error)) return null;
      throw toPermissionError(error, { operation: "stat", path });
    }
  }

  /**
   * Lists a folder, depth first: each folder's entries sorted by name (UTF-16
   * code units), a folder's content right after it. Symlinks are listed, never
   * descended. Entry paths are absolute.
   *
   * Needs `--allow-read` for the folder.
   *
   * @param path The folder (a symlink to a folder is followed here).
   * @param options Depth (default 1: the folder's own entries), limit (default
   * 1000), files only (leaves folders out, still descending), signal.
   * @returns The entries and whether the limit cut them.
   * @throws {RangeError} Depth or limit is not a positive integer.
   * @throws {Deno.errors.NotFound} No such folder.
   * @throws {Deno.errors.NotADirectory} The path is not a folder.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RuntimePermissionError} Reading is not allowed.
   *
   * @example Listing two levels, files only
   * ```ts
   * import { assert } from "@std/assert";
   * import { LocalFileSystem } from "./fs.ts";
   * const root = await Deno.makeTempDir();
   * try {
   *   const fs = new LocalFileSystem({ cwd: root });
   *   await fs.writeText("b.txt", "");
   *   await fs.writeText("a/c.txt", "");
   *   const { entries } = await fs.list(".", { depth: 2, filesOnly: true });
   *   assert(entries.map((e) => e.name).join() === "c.txt,b.txt");
   * } finally {
   *   await Deno.remove(root, { recursive: true });
   * }
   * ```
   */
  async list(path: string, options: ListOptions = {}): Promise<ListResult> {
    const depth = options.depth ?? DEFAULT_LIST_DEPTH;
    const limit = options.limit ?? DEFAULT_LIST_LIMIT;
    checkNumber(depth, "depth", "positive integer");
    checkNumber(limit, "limit", "positive integer");
    const { signal } = options;
    const absolute = await this.#resolve(path);
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(absolute);
    } catch (error) {
      if (isMissing(error)) {
        throw new Deno.errors.NotFound(`Cannot list "${path}": no such folder`);
      }
      throw toPermissionError(error, { operation: "list", path });
    }
    if (!info.isDirectory) {
      throw new Deno.errors.NotADirectory(
        `Cannot list "${path}": it is not a folder`,
      );
    }
    const entries: FileInfo[] = [];
    let truncated = false;
    const filesOnly = options.filesOnly === true;

    /** Lists one folder; returns false once the limit is reached. */
    async function visit(dir: string, level: number): Promise<boolean> {
      signal?.throwIfAborted();
      const names: string[] = [];
      try {
        for await (const entry of Deno.readDir(dir)) names.push(entry.name);
      } catch (error) {
        if (isMissing(error) && dir !== absolute) return true; // vanished
        throw toPermissionError(error, { operation: "list", path: dir });
      }
      names.sort(compareNames);
      for (let i = 0; i < names.length; i += STAT_BATCH) {
        signal?.throwIfAborted();
        const batch = names.slice(i, i + STAT_BATCH);
        const infos = await Promise.all(batch.map(async (name) => {
          const child = hostPath.join(dir, name);
          try {
            return toFileInfo(child, await Deno.lstat(child));
          } catch (error) {
            if (isMissing(error)) return null;
            throw toPermissionError(error, { operation: "list", path: child });
          }
        }));
        for (const info of infos) {
          if (info === null) continue;
          if (!filesOnly || info.type !== "directory") {
            if (entries.length >= limit) {
              truncated = true;
              return false;
            }
            entries.push(info);
          }
          if (info.type === "directory" && level < depth) {
            if (!await visit(info.path, level + 1)) return false;
          }
        }
      }
      return true;
    }
    await visit(absolute, 1);
    return { entries, truncated };
  }

  /**
   * Opens a file as a byte stream; cancel the stream (or abort the signal) to
   * close the file early.
   *
   * Needs `--allow-read` for the file.
   *
   * @param path The file.
   * @param options A signal; aborting errors the stream with its reason.
   * @returns The stream.
   * @throws {Deno.errors.NotFound} No such file.
   * @throws {Deno.errors.IsADirectory} The path is a folder.
   * @throws {TypeError} The path is a pipe, a device or a socket.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RuntimePermissionError} Reading is not allowed.
   *
   * @example Streaming a file
   * ```ts
   * import { assert } from "@std/assert";
   * import { LocalFileSystem } from "./fs.ts";
   * const root = await Deno.makeTempDir();
   * try {
   *   await Deno.writeTextFile(`${root}/a.txt`, "streamed");
   *   const stream = await new LocalFileSystem({ cwd: root }).readStream("a.txt");
   *   assert(await new Response(stream).text() === "streamed");
   * } finally {
   *   await Deno.remove(root, { recursive: true });
   * }
   * ```
   */
  async readStream(
    path: string,
    options: SignalOptions = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const file = await this.#open(path, options.signal);
    return fileStream(file, options.signal);
  }

  /**
   * Opens a file and returns its facts (a symbolic link followed) with its
   * stream, after one walk of the fence: the facts are the opened file's own
   * (`fstat`), so nothing can be swapped between them and the bytes. A
   * folder or a special file is not opened for reading: its facts come
   * without a stream. Opened without blocking, as every read here.
   *
   * Needs `--allow-read` for the file.
   *
   * @example Facts and bytes in one step
   * ```ts
   * import { assert } from "@std/assert";
   * import { LocalFileSystem } from "./fs.ts";
   * const root = await Deno.makeTempDir();
   * try {
   *   await Deno.writeTextFile(`${root}/a.txt`, "opened");
   *   const fs = new LocalFileSystem({ cwd: root });
   *   const opened = await fs.openFile("a.txt");
   *   assert(opened?.info.type === "file" && opened.info.size === 6);
   *   assert(await new Response(opened?.stream).text() === "opened");
   *   assert(await fs.openFile("missing.txt") === null);
   * } finally {
   *   await Deno.remove(root, { recursive: true });
   * }
   * ```
   *
   * @param path The file.
   * @param options A signal (it also stops the stream).
   * @returns The facts and, for a regular file, the stream; `null` when
   * nothing is there.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RuntimePermissionError} Reading is not allowed.
   */
  async openFile(
    path: string,
    options: SignalOptions = {},
  ): Promise<OpenFileResult | null> {
    const absolute = await this.#resolve(path);
    options.signal?.throwIfAborted();
    let handle: FileHandle;
    try {
      handle = await nodeFs().promises.open(absolute, readFlags());
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      // A socket cannot be opened: its facts, without a stream.
      if (code === "ENXIO") {
        return { info: toFileInfo(absolute, await Deno.stat(absolute)) };
      }
      throw readError(error, path);
    }
    try {
      const stats = await handle.stat();
      const info = fromNodeStats(absolute, stats);
      if (!stats.isFile()) {
        await handle.close();
        return { info };
      }
      const file = new OpenedFile(handle, path, stats.size);
      return { info, stream: fileStream(file, options.signal) };
    } catch (error) {
      await handle.close().catch(() => {});
      throw readError(error, path);
    }
  }

  /**
   * Copies a file of the runtime to a local path: streamed into a temporary
   * file beside the target, renamed into place only when complete. A failure or
   * an abort leaves neither a partial target nor a temporary file, and an
   * existing target as it was. Only the source goes through the fence: the
   * local path is the host's destination.
   *
   * Needs `--allow-read` for the source and `--allow-write` for the target's
   * folder.
   *
   * @param path The file in the runtime.
   * @param localPath The local file to write.
   * @param options A signal.
   * @returns The local path (absolute) and the bytes written.
   * @throws {Deno.errors.NotFound} No such source file.
   * @throws {Deno.errors.IsADirectory} The source or the target is a folder.
   * @throws {WorkspaceEscapeError} With a fence: the source is outside.
   * @throws {RuntimePermissionError} Reading or writing is not allowed.
   * @throws {DOMException} The signal's reason, when it aborted.
   *
   * @example Downloading a file
   * ```ts
   * import { assert } from "@std/assert";
   * import { LocalFileSystem } from "./fs.ts";
   * const root = await Deno.makeTempDir();
   * try {
   *   const fs = new LocalFileSystem({ cwd: root });
   *   await fs.writeText("out/report.txt", "done");
   *   const result = await fs.download("out/report.txt", `${root}/copy.txt`);
   *   assert(result.bytes === 4);
   * } finally {
   *   await Deno.remove(root, { recursive: true });
   * }
   * ```
   */
  async download(
    path: string,
    localPath: string,
    options: SignalOptions = {},
  ): Promise<DownloadResult> {
    if (typeof localPath !== "string" || localPath === "") {
      throw new TypeError(
        `Cannot download "${path}" to ${
          JSON.stringify(localPath)
        }: the local path is empty`,
      );
    }
    const stream = await this.readStream(path, options);
    const bytes = await writeStreamAtomically(
      stream,
      localPath,
      options.signal ? { signal: options.signal } : {},
    );
    return { localPath: hostPath.resolve(localPath), bytes };
  }

  /**
   * Opens a regular file for reading, never blocking: the path is opened
   * without waiting (a pipe would wait for a writer) and the opened file
   * itself is checked, so a swap between a check and the open cannot slip a
   * pipe or a device in.
   */
  async #open(
    path: string,
    signal: AbortSignal | undefined,
  ): Promise<OpenedFile> {
    const absolute = await this.#resolve(path);
    signal?.throwIfAborted();
    let handle: FileHandle;
    try {
      handle = await nodeFs().promises.open(absolute, readFlags());
    } catch (error) {
      throw readError(error, path);
    }
    try {
      const info = await handle.stat();
      if (info.isDirectory()) {
        throw new Deno.errors.IsADirectory(
          `Cannot read "${path}": it is a folder`,
        );
      }
      if (!info.isFile()) {
        throw new TypeError(
          `Cannot read "${path}": it is ${
            info.isFIFO()
              ? "a pipe"
              : info.isSocket()
              ? "a socket"
              : info.isCharacterDevice() || info.isBlockDevice()
              ? "a device"
              : "a special file"
          }, not a regular file`,
        );
      }
      return new OpenedFile(handle, path, info.size);
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
  }

  /** Reads a whole file, never more than `limit + 1` bytes. */
  async #read(
    path: string,
    limit: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Uint8Array> {
    const file = await this.#open(path, signal);
    try {
      if (limit !== undefined && file.size > limit) {
        throw tooLargeError(path, limit);
      }
      // The file's size (plus one byte to see the end) is the first guess.
      const cap = limit === undefined ? Infinity : limit + 1;
      let buffer = new Uint8Array(
        Math.min(cap, Math.max(file.size + 1, STREAM_CHUNK)),
      );
      let length = 0;
      for (;;) {
        signal?.throwIfAborted();
        if (length === buffer.length) {
          if (length >= cap) throw tooLargeError(path, limit!);
          const grown = new Uint8Array(Math.min(cap, buffer.length * 2));
          grown.set(buffer);
          buffer = grown;
        }
        const read = await file.read(
          buffer.subarray(length, length + Math.max(STREAM_CHUNK, file.size)),
        );
        if (read === null) break;
        length += read;
        if (limit !== undefined && length > limit) {
          throw tooLargeError(path, limit);
        }
      }
      // Keep the buffer when little of it is unused; copy otherwise.
      return buffer.length - length <= STREAM_CHUNK
        ? buffer.subarray(0, length)
        : buffer.slice(0, length);
    } finally {
      await file.close();
    }
  }
}

/** A regular file opened for reading (checked on the open handle). */
class OpenedFile {
  readonly #handle: FileHandle;
  readonly #path: string;
  /** Its size when opened. */
  readonly size: number;
  #closed = false;

  constructor(handle: FileHandle, path: string, size: number) {
    this.#handle = handle;
    this.#path = path;
    this.size = size;
  }

  /** Reads into `buffer`; `null` at the end. */
  async read(buffer: Uint8Array): Promise<number | null> {
    let bytesRead: number;
    try {
      ({ bytesRead } = await this.#handle.read(
        buffer,
        0,
        buffer.length,
        null,
      ));
    } catch (error) {
      throw readError(error, this.#path);
    }
    return bytesRead === 0 && buffer.length > 0 ? null : bytesRead;
  }

  /** Closes the file (once). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#handle.close().catch(() => {});
  }
}

/** A node:fs error (or a Deno one) as the file system's clear error. */
function readError(error: unknown, path: string): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (isMissing(error) || code === "ENOENT" || code === "ENOTDIR") {
    return new Deno.errors.NotFound(`Cannot read "${path}": no such file`);
  }
  if (code === "ELOOP") {
    return new Deno.errors.FilesystemLoop(
      `Cannot read "${path}": too many levels of symbolic links`,
    );
  }
  if (code === "EISDIR") {
    return new Deno.errors.IsADirectory(
      `Cannot read "${path}": it is a folder`,
    );
  }
  if (code === "EACCES" || code === "EPERM") {
    return toPermissionError(
      new Deno.errors.PermissionDenied(
        `Cannot read "${path}": permission denied`,
      ),
      { operation: "read", path },
    );
  }
  return toPermissionError(error, { operation: "read", path });
}

/** What a non-regular file is, for messages. */
function kindOf(info: Deno.FileInfo): string {
  if (info.isFifo) return "a pipe";
  if (info.isSocket) return "a socket";
  if (info.isCharDevice || info.isBlockDevice) return "a device";
  return "a special file";
}

function toFileInfo(path: string, info: Deno.FileInfo): FileInfo {
  const type: FileType = info.isSymlink
    ? "symlink"
    : info.isDirectory
    ? "directory"
    : info.isFile
    ? "file"
    : "other";
  const base: FileInfo = {
    path,
    name: hostPath.basename(path),
    type,
    size: info.size,
    modifiedAt: info.mtime,
  };
  if (type === "file" && info.mode !== null) {
    return { ...base, executable: (info.mode & 0o100) !== 0 };
  }
  return base;
}

/** Facts of an opened file (`fstat`: its target when a link led there). */
function fromNodeStats(
  path: string,
  stats: Stats,
): FileInfo {
  const type: FileType = stats.isDirectory()
    ? "directory"
    : stats.isFile()
    ? "file"
    : "other";
  const base: FileInfo = {
    path,
    name: hostPath.basename(path),
    type,
    size: stats.size,
    modifiedAt: stats.mtime,
  };
  return type === "file"
    ? { ...base, executable: (stats.mode & 0o100) !== 0 }
    : base;
}

function fileStream(
  file: OpenedFile,
  signal: AbortSignal | undefined,
): ReadableStream<Uint8Array> {
  let closed = false;
  let onAbort: (() => void) | undefined;
  const close = () => {
    if (closed) return;
    closed = true;
    if (onAbort) signal?.removeEventListener("abort", onAbort);
    file.close();
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (!signal) return;
      onAbort = () => {
        close();
        controller.error(signal.reason);
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    },
    async pull(controller) {
      if (closed) return;
      const buffer = new Uint8Array(STREAM_CHUNK);
      let read: number | null;
      try {
        read = await file.read(buffer);
      } catch (error) {
        if (closed) return; // aborted or cancelled meanwhile
        close();
        controller.error(error);
        return;
      }
      if (closed) return;
      if (read === null) {
        close();
        controller.close();
        return;
      }
      controller.enqueue(buffer.subarray(0, read));
    },
    cancel() {
      close();
    },
  });
}

function isMissing(error: unknown): boolean {
  return error instanceof Deno.errors.NotFound ||
    error instanceof Deno.errors.NotADirectory;
}

function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * An exclusive lock of the regular file at `path` while it is held; nothing
 * when there is none (or it cannot be opened for reading).
 */
async function lockExisting(path: string): Promise<Disposable> {
  // The file at the path may be replaced while this waits for its lock: the
  // lock that counts is the one of the file still there once it is held.
  for (let tries = 0; tries < 100; tries++) {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(path, { read: true });
    } catch {
      return { [Symbol.dispose]() {} };
    }
    try {
      await file.lock(true);
      const [held, current] = await Promise.all([
        file.stat(),
        Deno.stat(path).catch(() => null),
      ]);
      if (current !== null && held.ino !== current.ino) {
        file.close();
        continue;
      }
    } catch {
      // No lock here (some file systems): the write goes on without it.
    }
    return { [Symbol.dispose]: () => file.close() };
  }
  return { [Symbol.dispose]() {} };
}
