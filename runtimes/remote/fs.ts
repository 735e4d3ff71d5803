/**
 * {@linkcode RemoteFileSystem}: the file system of a remote runtime, shared by
 * every server kind, over a few per-server calls ({@linkcode RemoteFileOps}).
 *
 * @module
 */
import { tooLargeError } from "../../_internal/format.ts";
import { checkNumber } from "../../_internal/check_number.ts";
import type {
  DownloadResult,
  ExecuteResult,
  FileInfo,
  ListOptions,
  ListResult,
  OpenFileResult,
  ReadTextOptions,
  SignalOptions,
  SkillRuntimeFileSystem,
} from "../types.ts";
import type { MultipartPart } from "./upload.ts";
import { RemotePathFence, resolveRemotePath } from "./paths.ts";
import { downloadToFile } from "./download.ts";
import { RemoteHttpError } from "./errors.ts";
import { BodyTooLargeError, readCapped } from "../../_internal/body.ts";
import { WorkspaceEscapeError } from "../errors.ts";
import type { ShellRunner } from "./shell_files.ts";
import {
  fencedOpen,
  fencedRead,
  fencedRealPath,
  fencedWrite,
  fenceSteps,
} from "./_fenced_files.ts";

/** One file for {@linkcode RemoteFileOps.upload}. */
export interface RemoteUploadFile {
  /** The absolute remote path (parents are created). */
  readonly remotePath: string;
  /** Text, bytes, or a local file streamed from disk. */
  readonly content: MultipartPart["content"];
  /** Permission bits (`0o755`); none: the server's default. */
  readonly mode?: number;
}

/** Options of {@linkcode RemoteFileOps.list}. */
export interface RemoteListOptions {
  /** How deep to descend; 1: the folder's own entries. */
  readonly depth: number;
  /** Stops the call. */
  readonly signal?: AbortSignal;
}

/** Options of {@linkcode RemoteFileOps.open}. */
export interface RemoteOpenOptions {
  /** The first byte wanted; > 0 sends `Range: bytes=<offset>-`. */
  readonly offset: number;
  /** Stops the call and the body. */
  readonly signal?: AbortSignal;
}

/**
 * The calls a server kind implements for {@linkcode RemoteFileSystem}. Paths
 * are absolute POSIX paths, already resolved and fenced. A missing path may
 * throw `Deno.errors.NotFound` or a `RemoteHttpError` with status 404.
 */
export interface RemoteFileOps {
  /** Facts about a path (symlinks not followed), or `null` when missing. */
  stat(path: string, signal?: AbortSignal): Promise<FileInfo | null>;
  /**
   * Facts about several paths in their order (symlinks not followed, `null`
   * for a missing one), in one request where the server allows; without
   * it, {@linkcode RemoteFileOps.stat} is called for each, in parallel.
   */
  statMany?(
    paths: readonly string[],
    signal?: AbortSignal,
  ): Promise<(FileInfo | null)[]>;
  /**
   * Whether `stat` runs a command in the sandbox (no stat endpoint): in a
   * fenced workspace a read of a small file is then one command that checks
   * and reads (the same cost, and no window between the check and the use).
   */
  readonly statsByCommand?: boolean;
  /** The entries below a folder, down to `depth` levels, in any order. */
  list(path: string, options: RemoteListOptions): Promise<FileInfo[]>;
  /** A 2xx response whose body is the file from `offset` (206 when ranged). */
  open(path: string, options: RemoteOpenOptions): Promise<Response>;
  /** Writes files (creating parents), in as few requests as the server allows. */
  upload(
    files: readonly RemoteUploadFile[],
    signal?: AbortSignal,
  ): Promise<void>;
}

/** Options of {@linkcode RemoteFileSystem}. */
export interface RemoteFileSystemOptions {
  /** Where relative paths resolve (absolute POSIX path). */
  readonly cwd: string;
  /** A remote workspace root: paths outside are refused, with no request. */
  readonly fenceRoot?: string;
  /**
   * Runs one helper command in the sandbox (never retried). With a fence,
   * writes go through it (the check of what is there, a temporary file and
   * the rename over the target in one command) and so does
   * {@linkcode RemoteFileSystem.realPath}; without it, a fenced write checks
   * with `stat` and uploads in place.
   */
  readonly shell?: (
    command: string,
    signal?: AbortSignal,
  ) => Promise<ExecuteResult>;
}

/** The default depth of {@linkcode RemoteFileSystem.list}: 1. */
const DEFAULT_LIST_DEPTH = 1;
/** The default entry limit of {@linkcode RemoteFileSystem.list}: 1000. */
const DEFAULT_LIST_LIMIT = 1000;

/**
 * The file system of a remote runtime, shared by every server kind: paths
 * are POSIX and resolved here (relative ones against `cwd`);
 * with `fenceRoot`, a path outside the remote workspace is refused with a
 * `WorkspaceEscapeError` before any request, and what is really there is
 * looked at before each use: a read stats every step (a symbolic link on the
 * way, or a file that is not a regular one, is refused); with a `shell`, a
 * write checks the same and renames a temporary file over the target in one
 * command (a hard link keeps its other name's bytes), and
 * {@linkcode RemoteFileSystem.realPath} resolves a search root in the
 * sandbox. The server's calls come
 * from a {@linkcode RemoteFileOps}, which may be given lazily (a function
 * called on first real use, again after it failed), so that constructing the
 * file system makes no request.
 *
 * Needs `--allow-net` for the server (and `--allow-write` for downloads).
 *
 * @example A file system over a loopback server's files
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   RemoteFileSystem,
 *   type RemoteFileOps,
 * } from "@skillrun/skillrun/runtime";
 * const files = new Map([["/w/a.txt", "hello"]]);
 * let calls = 0;
 * const ops: RemoteFileOps = {
 *   stat: (path) => Promise.resolve(files.has(path)
 *     ? { path, name: path.slice(3), type: "file", size: 5, modifiedAt: null }
 *     : null),
 *   list: () => Promise.resolve([]),
 *   open: (path) => Promise.resolve(new Response(files.get(path) ?? null)),
 *   upload: () => Promise.resolve(),
 * };
 * const fs = new RemoteFileSystem(() => {
 *   calls++;
 *   return Promise.resolve(ops);
 * }, { cwd: "/w", fenceRoot: "/w" });
 * let refused = false;
 * try { await fs.readText("../etc/passwd", { maxBytes: 100 }); } catch { refused = true; }
 * assert(refused && calls === 0);
 * assert(await fs.readText("a.txt", { maxBytes: 100 }) === "hello");
 * assert(await fs.stat("b.txt") === null);
 * ```
 */
export class RemoteFileSystem implements SkillRuntimeFileSystem {
  readonly #ops: RemoteFileOps | (() => Promise<RemoteFileOps>);
  #pending: Promise<RemoteFileOps> | undefined;
  readonly #cwd: string;
  readonly #fence: RemotePathFence | undefined;
  readonly #shell: ShellRunner | undefined;

  /**
   * Makes the file system; makes no request.
   *
   * @param ops The server's calls, or a function giving them on first use.
   * @param options Default directory and fence.
   * @throws {TypeError} The default directory or the fence root is not an
   * absolute POSIX path, or the default directory is outside the fence.
   */
  constructor(
    ops: RemoteFileOps | (() => Promise<RemoteFileOps>),
    options: RemoteFileSystemOptions,
  ) {
    if (
      ops === null || (typeof ops !== "object" && typeof ops !== "function")
    ) {
      throw new TypeError("Cannot make a remote file system: ops are missing");
    }
    this.#ops = ops;
    this.#shell = options.shell;
    this.#fence = options.fenceRoot === undefined
      ? undefined
      : new RemotePathFence(options.fenceRoot);
    const directory = options.cwd;
    if (typeof directory !== "string" || !directory.startsWith("/")) {
      throw new TypeError(
        `Cannot use default directory ${
          JSON.stringify(directory)
        }: it must be an absolute POSIX path`,
      );
    }
    this.#cwd = resolveRemotePath("/", directory);
    if (this.#fence && !this.#fence.contains(this.#cwd)) {
      throw new TypeError(
        `Cannot use default directory "${directory}": it is outside the workspace "${this.#fence.root}"`,
      );
    }
  }

  /** The remote workspace root when fenced, else `undefined`. */
  get fenceRoot(): string | undefined {
    return this.#fence?.root;
  }

  /**
   * Resolves a path as the runtime sees it: POSIX, relative paths against the
   * default directory; with a fence, a path outside is refused. Makes no
   * request.
   *
   * @param path The path.
   * @returns The absolute, normalised POSIX path.
   * @throws {TypeError} The path is empty or holds a NUL character.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   */
  resolve(path: string): Promise<string> {
    try {
      return Promise.resolve(this.#resolve(path));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Reads a UTF-8 text file, refusing one over `maxBytes`: an announced
   * `Content-Length` over the limit stops at once; otherwise the limit is
   * enforced while streaming, so at most `maxBytes + 1` bytes are read (the
   * rest of the answer is cancelled). A byte-order mark is kept.
   *
   * @param path The file.
   * @param options The limit (mandatory) and a signal.
   * @returns The text (invalid UTF-8 replaced by U+FFFD).
   * @throws {RangeError} `maxBytes` is not a non-negative integer, or the file
   * is larger: `Cannot read "big.txt": file is larger than the 1 MiB limit`.
   * @throws {Deno.errors.NotFound} No such file.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RemoteHttpError} The server failed.
   */
  async readText(path: string, options: ReadTextOptions): Promise<string> {
    checkNumber(options?.maxBytes, "maxBytes", "non-negative integer");
    const bytes = await this.#checkedRead(
      path,
      options.maxBytes,
      options.signal,
    );
    return new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
  }

  /**
   * Reads a file's bytes, refusing one over `maxBytes` when given (checked
   * while streaming, as {@linkcode RemoteFileSystem.readText}).
   *
   * @param path The file.
   * @param options An optional limit and a signal.
   * @returns The bytes.
   * @throws {RangeError} The limit is invalid or the file is larger.
   * @throws {Deno.errors.NotFound} No such file.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RemoteHttpError} The server failed.
   */
  async readBytes(
    path: string,
    options: SignalOptions & { maxBytes?: number } = {},
  ): Promise<Uint8Array> {
    if (options.maxBytes !== undefined) {
      checkNumber(options.maxBytes, "maxBytes", "non-negative integer");
    }
    return await this.#checkedRead(path, options.maxBytes, options.signal);
  }

  /** A whole read, fenced: in one command where stat is one anyway. */
  async #checkedRead(
    path: string,
    limit: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Uint8Array> {
    if (this.#fence && this.#shell) {
      const remotePath = this.#resolve(path);
      signal?.throwIfAborted();
      const ops = await this.#getOps();
      if (ops.statsByCommand) {
        const read = await fencedRead(
          this.#shell,
          this.#fence.root,
          remotePath,
          path,
          limit === undefined ? undefined : limit + 1,
          signal,
        );
        if (read === null) {
          throw new Deno.errors.NotFound(`Cannot read "${path}": no such file`);
        }
        if (read !== "large") {
          if (limit !== undefined && read.length > limit) {
            throw tooLargeError(path, limit);
          }
          return read;
        }
      }
    }
    await this.#checkPlaced(path, "read", signal);
    return await this.#read(path, limit, signal);
  }

  /**
   * Writes a UTF-8 text file through the server's upload, creating its
   * parents, replacing what was there.
   *
   * @param path The file.
   * @param content The text.
   * @param options A signal.
   * @throws {TypeError} The content is not a string.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RemoteHttpError} The server failed.
   */
  async writeText(
    path: string,
    content: string,
    options: SignalOptions = {},
  ): Promise<void> {
    const remotePath = this.#resolve(path);
    if (typeof content !== "string") {
      throw new TypeError(`Cannot write "${path}": the content is not text`);
    }
    options.signal?.throwIfAborted();
    if (this.#fence && this.#shell) {
      const ops = await this.#getOps();
      await fencedWrite({
        shell: this.#shell,
        upload: (path, bytes, signal) =>
          ops.upload(
            [{ remotePath: path, content: bytes, mode: 0o644 }],
            signal,
          ),
        root: this.#fence.root,
        target: remotePath,
        given: path,
        bytes: new TextEncoder().encode(content),
        signal: options.signal,
      });
      return;
    }
    await this.#checkPlaced(path, "write", options.signal);
    const ops = await this.#getOps();
    await ops.upload([{ remotePath, content }], options.signal);
  }

  /**
   * Where a path really leads, for a search root: with a fence (and a
   * shell), resolved in the sandbox by `realpath`, refused when it leads
   * outside the workspace (a symbolic link to a place inside is followed,
   * as the local runtime does); otherwise the lexical path.
   *
   * @param path The path.
   * @param options A signal.
   * @returns The absolute path it leads to, or `null` when nothing is there.
   * @throws {WorkspaceEscapeError} With a fence: it leads outside.
   * @throws {Error} The command failed.
   */
  async realPath(
    path: string,
    options: SignalOptions = {},
  ): Promise<string | null> {
    const remotePath = this.#resolve(path);
    options.signal?.throwIfAborted();
    if (!this.#fence || !this.#shell) return remotePath;
    await this.#getOps();
    return await fencedRealPath(
      this.#shell,
      this.#fence.root,
      remotePath,
      path,
      options.signal,
    );
  }

  /**
   * Facts about a path (a symlink is reported as one), or `null` when
   * nothing is there.
   *
   * @param path The path.
   * @param options A signal.
   * @returns The facts, or `null`.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RemoteHttpError} The server failed.
   */
  async stat(
    path: string,
    options: SignalOptions = {},
  ): Promise<FileInfo | null> {
    const remotePath = this.#resolve(path);
    options.signal?.throwIfAborted();
    const ops = await this.#getOps();
    try {
      return await ops.stat(remotePath, options.signal);
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  /**
   * Lists a folder in the order of the local runtime: depth first, each
   * folder's entries sorted by name (UTF-16 code units), a folder's content
   * right after it, whatever order the server gave. Entry paths are absolute.
   *
   * @param path The folder.
   * @param options Depth (default 1: the folder's own entries), limit
   * (default 1000), files only (leaves folders out), signal.
   * @returns The entries and whether the limit cut them.
   * @throws {RangeError} Depth or limit is not a positive integer.
   * @throws {Deno.errors.NotFound} No such folder.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RemoteHttpError} The server failed.
   */
  async list(path: string, options: ListOptions = {}): Promise<ListResult> {
    const depth = options.depth ?? DEFAULT_LIST_DEPTH;
    const limit = options.limit ?? DEFAULT_LIST_LIMIT;
    checkNumber(depth, "depth", "positive integer");
    checkNumber(limit, "limit", "positive integer");
    const remotePath = this.#resolve(path);
    options.signal?.throwIfAborted();
    const ops = await this.#getOps();
    let found: FileInfo[];
    try {
      found = await ops.list(
        remotePath,
        options.signal ? { depth, signal: options.signal } : { depth },
      );
    } catch (error) {
      if (isMissing(error)) {
        throw new Deno.errors.NotFound(`Cannot list "${path}": no such folder`);
      }
      throw error;
    }
    const prefix = remotePath === "/" ? "/" : `${remotePath}/`;
    const keyed: { key: string[]; info: FileInfo }[] = [];
    for (const info of found) {
      if (!info.path.startsWith(prefix)) continue; // the folder itself, or stray
      const key = info.path.slice(prefix.length).split("/");
      if (key.length > depth || key.includes("")) continue;
      if (options.filesOnly === true && info.type === "directory") continue;
      keyed.push({ key, info });
    }
    keyed.sort((a, b) => compareKeys(a.key, b.key));
    const truncated = keyed.length > limit;
    return {
      entries: keyed.slice(0, limit).map((k) => k.info),
      truncated,
    };
  }

  /**
   * Opens a file as a byte stream; cancel the stream (or abort the signal)
   * to stop the transfer.
   *
   * @param path The file.
   * @param options A signal.
   * @returns The stream.
   * @throws {Deno.errors.NotFound} No such file.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RemoteHttpError} The server failed.
   */
  async readStream(
    path: string,
    options: SignalOptions = {},
  ): Promise<ReadableStream<Uint8Array>> {
    await this.#checkPlaced(path, "read", options.signal);
    const response = await this.#open(path, 0, options.signal);
    return response.body ?? ReadableStream.from<Uint8Array>([]);
  }

  /**
   * Opens a file and returns its facts with its stream. Where `stat` is a
   * command anyway (`statsByCommand`, with a `shell`): one command looks
   * (with a fence, at every step, as a fenced read does), gives the facts
   * and brings back a small file's bytes. Elsewhere one `stat` request
   * gives the facts (with a fence, of every step at once, where the server
   * stats several paths in one request). A file not brought back is
   * downloaded when its stream is first read (never, when it is cancelled
   * unread).
   *
   * @param path The file.
   * @param options A signal (it also stops the stream).
   * @returns The facts and, for a regular file, the stream; `null` when
   * nothing is there.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside, or a
   * step is a symbolic link.
   * @throws {RemoteHttpError} The server failed.
   */
  async openFile(
    path: string,
    options: SignalOptions = {},
  ): Promise<OpenFileResult | null> {
    const remotePath = this.#resolve(path);
    const { signal } = options;
    signal?.throwIfAborted();
    let info: FileInfo | null;
    if (this.#shell && (await this.#getOps()).statsByCommand) {
      const opened = await fencedOpen(
        this.#shell,
        this.#fence?.root,
        remotePath,
        path,
        signal,
      );
      if (opened?.bytes) {
        return {
          info: opened.info,
          stream: ReadableStream.from([opened.bytes]),
        };
      }
      info = opened?.info ?? null;
    } else {
      info = this.#fence
        ? await this.#checkPlaced(path, "read", signal, true)
        : await this.stat(path, options);
    }
    if (info?.type !== "file") return info && { info };
    // Asked for on the first read: a stream cancelled unread costs nothing.
    let body: ReadableStreamDefaultReader<Uint8Array> | undefined;
    const stream = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        body ??= ((await this.#open(path, 0, signal)).body ??
          ReadableStream.from<Uint8Array>([])).getReader();
        const { done, value } = await body.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: (reason) => body?.cancel(reason),
    }, { highWaterMark: 0 });
    return { info, stream };
  }

  /**
   * Downloads a file to a local path with {@linkcode downloadToFile}:
   * streamed into a temporary file beside the target, resumed with `Range`
   * after a dropped connection, the size verified, renamed into place only
   * when complete; nothing is left behind on failure.
   *
   * Needs `--allow-write` for the local folder.
   *
   * @param path The remote file.
   * @param localPath The local file.
   * @param options A signal.
   * @returns The local file and its size.
   * @throws {Deno.errors.NotFound} No such remote file.
   * @throws {WorkspaceEscapeError} With a fence: the path is outside.
   * @throws {RemoteHttpError} The server failed.
   * @throws {Error} The download failed (sizes, too many drops).
   */
  async download(
    path: string,
    localPath: string,
    options: SignalOptions = {},
  ): Promise<DownloadResult> {
    this.#resolve(path);
    options.signal?.throwIfAborted();
    await this.#checkPlaced(path, "read", options.signal);
    return await downloadToFile(
      (offset, signal) => this.#open(path, offset, signal),
      localPath,
      options.signal
        ? { source: path, signal: options.signal }
        : { source: path },
    );
  }

  #resolve(path: string): string {
    return this.#fence
      ? this.#fence.resolve(
        resolveRemotePath(this.#cwd, path),
      )
      : resolveRemotePath(this.#cwd, path);
  }

  /**
   * With a fence: what is really at `path` in the sandbox. Every existing
   * folder from the workspace root down, and the file, are looked at
   * (symlinks not followed, in parallel): a symbolic link anywhere on the
   * way is refused, even to a place inside (the sandbox made it; resolving it
   * would take the sandbox's word, and it may swap the link between our
   * check and the server's use), and so is a file that is not a regular one
   * (a FIFO would block the server's open; a device or a socket is no file).
   * One request where the server can stat several paths at once. The check
   * and the use are two requests: a command swapping a folder for a link
   * between them is not stopped (writes with a shell make the check and the
   * rename in one command instead).
   */
  async #checkPlaced(
    path: string,
    use: "read" | "write",
    signal: AbortSignal | undefined,
    anyType = false,
  ): Promise<FileInfo | null> {
    if (!this.#fence) return null;
    const remotePath = this.#resolve(path);
    const root = this.#fence.root;
    const steps = fenceSteps(root, remotePath);
    const ops = await this.#getOps();
    const infos = ops.statMany
      ? await ops.statMany(steps, signal)
      : await Promise.all(
        steps.map((step) =>
          ops.stat(step, signal).catch((error) => {
            if (isMissing(error)) return null;
            throw error;
          })
        ),
      );
    for (let i = 0; i < steps.length; i++) {
      const info = infos[i];
      if (info === null || info === undefined) {
        // Nothing there (then nothing below either): the server's own
        // answer says so.
        break;
      }
      if (info.type === "symlink") {
        throw new WorkspaceEscapeError(
          `Cannot ${use} "${path}": "${
            steps[i]
          }" is a symbolic link, and the remote file tools never follow one`,
          { path, workspace: root },
        );
      }
      const last = i === steps.length - 1;
      if (!last && info.type !== "directory") {
        throw new Deno.errors.NotFound(
          `Cannot ${use} "${path}": "${steps[i]}" is not a folder`,
        );
      }
      if (last && info.type !== "file" && !anyType) {
        throw new TypeError(
          `Cannot ${use} "${path}": it is ${
            info.type === "directory"
              ? "a folder"
              : "not a regular file (a FIFO, a device or a socket)"
          }`,
        );
      }
    }
    return infos[steps.length - 1] ?? null;
  }

  #getOps(): Promise<RemoteFileOps> {
    const ops = this.#ops;
    if (typeof ops !== "function") return Promise.resolve(ops);
    if (this.#pending === undefined) {
      const pending = Promise.resolve().then(() => ops());
      this.#pending = pending;
      // A failed start is tried again by the next call.
      pending.catch(() => {
        if (this.#pending === pending) this.#pending = undefined;
      });
    }
    return this.#pending;
  }

  async #open(
    path: string,
    offset: number,
    signal: AbortSignal | undefined,
  ): Promise<Response> {
    const remotePath = this.#resolve(path);
    signal?.throwIfAborted();
    const ops = await this.#getOps();
    try {
      return await ops.open(
        remotePath,
        signal ? { offset, signal } : { offset },
      );
    } catch (error) {
      if (isMissing(error)) {
        throw new Deno.errors.NotFound(`Cannot read "${path}": no such file`, {
          cause: error,
        });
      }
      throw error;
    }
  }

  /** Reads a whole file, never more than `limit + 1` bytes. */
  async #read(
    path: string,
    limit: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Uint8Array> {
    const response = await this.#open(path, 0, signal);
    const body = response.body;
    if (body === null) return new Uint8Array(0);
    const announced = response.headers.get("content-encoding") === null
      ? Number(response.headers.get("content-length") ?? NaN)
      : NaN;
    if (limit !== undefined && announced > limit) {
      await body.cancel().catch(() => {});
      throw tooLargeError(path, limit);
    }
    try {
      return await readCapped(body, {
        maxBytes: limit ?? Infinity,
        overflow: "error",
      });
    } catch (error) {
      if (error instanceof BodyTooLargeError) throw tooLargeError(path, limit!);
      throw error;
    }
  }
}

function isMissing(error: unknown): boolean {
  return error instanceof Deno.errors.NotFound ||
    (error instanceof RemoteHttpError && error.status === 404);
}

function compareKeys(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.length - b.length;
}
