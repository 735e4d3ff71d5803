/**
 * {@linkcode RemoteFileSystem}: the file system of a remote runtime, shared by
 * every server kind, over a few per-server calls ({@linkcode RemoteFileOps}).
 *
 * @module
 */
import type {
  DownloadResult,
  FileInfo,
  ListOptions,
  ListResult,
  ReadTextOptions,
  SignalOptions,
  SkillRuntimeFileSystem,
} from "../types.ts";
import type { MultipartPart } from "./upload.ts";
import { RemotePathFence, resolveRemotePath } from "./paths.ts";
import { downloadToFile } from "./download.ts";

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
  readonly defaultDirectory: string;
  /** A remote workspace root: paths outside are refused, with no request. */
  readonly fenceRoot?: string;
}

/**
 * The file system of a remote runtime.
 */
export class RemoteFileSystem implements SkillRuntimeFileSystem {
  readonly #ops: RemoteFileOps | (() => Promise<RemoteFileOps>);
  readonly #defaultDirectory: string;
  readonly #fence: RemotePathFence | undefined;

  /**
   * Makes the file system; makes no request.
   *
   * @param ops The server's calls, or a function giving them on first use.
   * @param options Default directory and fence.
   */
  constructor(
    ops: RemoteFileOps | (() => Promise<RemoteFileOps>),
    options: RemoteFileSystemOptions,
  ) {
    this.#ops = ops;
    this.#fence = options.fenceRoot === undefined
      ? undefined
      : new RemotePathFence(options.fenceRoot);
    this.#defaultDirectory = options.defaultDirectory;
  }

  /** The fence's workspace root, or `undefined` without a fence. */
  get fenceRoot(): string | undefined {
    return this.#fence?.root;
  }

  /**
   * Resolves a path as the runtime sees it.
   *
   * @param path The path.
   * @returns The absolute POSIX path.
   */
  resolve(path: string): Promise<string> {
    try {
      const absolute = resolveRemotePath(this.#defaultDirectory, path);
      return Promise.resolve(
        this.#fence ? this.#fence.resolve(absolute) : absolute,
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Reads a UTF-8 text file, capped while streaming.
   *
   * @param path The file.
   * @param options The limit and a signal.
   * @returns The text.
   */
  async readText(path: string, options: ReadTextOptions): Promise<string> {
    const bytes = await this.readBytes(path, options);
    return new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
  }

  /**
   * Reads a file's bytes.
   *
   * @param path The file.
   * @param options An optional limit and a signal.
   * @returns The bytes.
   */
  async readBytes(
    path: string,
    options: SignalOptions & { maxBytes?: number } = {},
  ): Promise<Uint8Array> {
    const stream = await this.readStream(path, options);
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  /**
   * Writes a UTF-8 text file.
   *
   * @param path The file.
   * @param content The text.
   * @param options A signal.
   */
  async writeText(
    path: string,
    content: string,
    options: SignalOptions = {},
  ): Promise<void> {
    const remotePath = await this.resolve(path);
    await (await this.#getOps()).upload(
      [{ remotePath, content }],
      options.signal,
    );
  }

  /**
   * Facts about a path, or `null`.
   *
   * @param path The path.
   * @param options A signal.
   * @returns The facts or `null`.
   */
  async stat(
    path: string,
    options: SignalOptions = {},
  ): Promise<FileInfo | null> {
    const remotePath = await this.resolve(path);
    return await (await this.#getOps()).stat(remotePath, options.signal);
  }

  /**
   * Lists a folder.
   *
   * @param path The folder.
   * @param options Depth, limit, files only, signal.
   * @returns The entries.
   */
  async list(path: string, options: ListOptions = {}): Promise<ListResult> {
    const remotePath = await this.resolve(path);
    const entries = await (await this.#getOps()).list(remotePath, {
      depth: options.depth ?? 1,
    });
    return { entries, truncated: false };
  }

  /**
   * Opens a file as a byte stream.
   *
   * @param path The file.
   * @param options A signal.
   * @returns The stream.
   */
  async readStream(
    path: string,
    options: SignalOptions = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const remotePath = await this.resolve(path);
    const response = await (await this.#getOps()).open(remotePath, {
      offset: 0,
    });
    void options;
    return response.body ?? ReadableStream.from<Uint8Array>([]);
  }

  /**
   * Downloads a file to a local path.
   *
   * @param path The remote file.
   * @param localPath The local file.
   * @param options A signal.
   * @returns The file and its size.
   */
  async download(
    path: string,
    localPath: string,
    options: SignalOptions = {},
  ): Promise<DownloadResult> {
    const remotePath = await this.resolve(path);
    const ops = await this.#getOps();
    return await downloadToFile(
      (offset, signal) =>
        ops.open(remotePath, signal ? { offset, signal } : { offset }),
      localPath,
      options,
    );
  }

  async #getOps(): Promise<RemoteFileOps> {
    return typeof this.#ops === "function" ? await this.#ops() : this.#ops;
  }
}
