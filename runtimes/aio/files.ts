/**
 * {@linkcode AioFileOps}: the file calls of an AIO container for the shared
 * `RemoteFileSystem`: list, upload and download through their endpoints, and
 * what has no endpoint (stat, mkdir, chmod, delete) through one shell command
 * with every value quoted.
 *
 * @module
 */
import { RemoteHttpError } from "../remote/errors.ts";
import type {
  RemoteFileOps,
  RemoteListOptions,
  RemoteOpenOptions,
  RemoteUploadFile,
} from "../remote/fs.ts";
import {
  eachConcurrently,
  shellMakeDirectories,
  shellRemove,
  shellSetModes,
  shellStat,
  shellStatMany,
} from "../remote/_shell_files.ts";
import type { ExecuteResult, FileInfo, FileType } from "../types.ts";
import {
  type AioClient,
  type AioFileInfo,
  AioOperationError,
} from "./client.ts";

/** Runs a helper shell command in the container (never retried). */
export type AioShell = (
  command: string,
  signal?: AbortSignal,
) => Promise<ExecuteResult>;

/** How many uploads run at once. */
const UPLOAD_CONCURRENCY = 4;

/**
 * The file calls of one AIO container.
 *
 * @example Stat runs one quoted shell command
 * ```ts
 * import { assert } from "@std/assert";
 * import { AioClient } from "./client.ts";
 * import { AioFileOps } from "./files.ts";
 *
 * const seen: string[] = [];
 * const ops = new AioFileOps(
 *   new AioClient({ baseUrl: "http://aio.invalid" }),
 *   (command) => {
 *     seen.push(command);
 *     return Promise.resolve({
 *       stdout: "directory|4096|1700000000|755\n", stderr: "", exitCode: 0,
 *       timedOut: false, aborted: false, stdoutBytes: 30, stderrBytes: 0,
 *       stdoutTruncated: false, stderrTruncated: false, durationMs: 1,
 *     });
 *   },
 * );
 * const info = await ops.stat("/home/it's");
 * assert(info?.type === "directory" && info.executable === true);
 * assert(seen[0]!.includes("'/home/it'\\''s'"));
 * ```
 */
export class AioFileOps implements RemoteFileOps {
  readonly #client: AioClient;
  readonly #shell: AioShell;
  /** There is no stat endpoint: `stat` is a command. */
  readonly statsByCommand = true;

  /**
   * @param client The container's client.
   * @param shell Runs a helper command in the container.
   */
  constructor(client: AioClient, shell: AioShell) {
    this.#client = client;
    this.#shell = shell;
  }

  /**
   * Facts about a path (symlinks not followed), or `null` when missing.
   *
   * @param path The absolute path.
   * @param signal Stops the call.
   * @returns The facts or `null`.
   */
  stat(path: string, signal?: AbortSignal): Promise<FileInfo | null> {
    return shellStat(this.#shell, path, signal);
  }

  /**
   * Facts about several paths by one command, in their order.
   *
   * @param paths The absolute paths.
   * @param signal Stops the call.
   * @returns The facts, `null` for each missing path.
   */
  statMany(
    paths: readonly string[],
    signal?: AbortSignal,
  ): Promise<(FileInfo | null)[]> {
    return shellStatMany(this.#shell, paths, signal);
  }

  /**
   * The entries below a folder down to `depth` levels (`POST /v1/file/list`).
   *
   * @param path The absolute folder.
   * @param options Depth and signal.
   * @returns The entries.
   * @throws {Deno.errors.NotFound} The folder is missing.
   * @throws {Deno.errors.NotADirectory} It is not a folder.
   */
  async list(path: string, options: RemoteListOptions): Promise<FileInfo[]> {
    let files: AioFileInfo[];
    try {
      files = await this.#client.list({
        path,
        recursive: options.depth > 1,
        max_depth: options.depth,
        show_hidden: true,
        include_size: true,
        include_permissions: true,
      }, options.signal ? { signal: options.signal } : {});
    } catch (error) {
      throw fileError(error, `Cannot list "${path}"`);
    }
    return files.map(toFileInfo);
  }

  /**
   * Opens a file from `offset` (`GET /v1/file/download`, `Range` past 0).
   *
   * @param path The absolute file.
   * @param options Offset and signal.
   * @returns A 2xx response (206 when the server honoured the range).
   */
  async open(path: string, options: RemoteOpenOptions): Promise<Response> {
    return await this.#client.download(path, {
      offset: options.offset,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /**
   * Uploads files (one multipart call each, a few at once), then sets the
   * modes that differ from the server's default 0644 with `chmod`.
   *
   * @param files The files.
   * @param signal Stops the uploads.
   */
  async upload(
    files: readonly RemoteUploadFile[],
    signal?: AbortSignal,
  ): Promise<void> {
    await eachConcurrently(files, UPLOAD_CONCURRENCY, async (file) => {
      try {
        await this.#client.upload(
          file.remotePath,
          file.content,
          signal ? { signal } : {},
        );
      } catch (error) {
        throw fileError(error, `Cannot upload "${file.remotePath}"`);
      }
    }, signal);
    // The server writes 0644: other modes by `chmod`.
    await shellSetModes(this.#shell, files, {
      skip: 0o644,
      ...(signal ? { signal } : {}),
    });
  }

  /**
   * Makes folders and their parents (`mkdir -p`).
   *
   * @param paths Absolute folders.
   * @param signal Stops the call.
   */
  mkdir(paths: readonly string[], signal?: AbortSignal): Promise<void> {
    return shellMakeDirectories(this.#shell, paths, signal);
  }

  /**
   * Deletes paths and what is below them (`rm -rf`); a missing path is fine.
   *
   * @param paths Absolute paths.
   * @param signal Stops the call.
   */
  remove(paths: readonly string[], signal?: AbortSignal): Promise<void> {
    return shellRemove(this.#shell, paths, signal);
  }
}

function toFileInfo(file: AioFileInfo): FileInfo {
  const permissions = file.permissions ?? "";
  const type: FileType = permissions.startsWith("l")
    ? "symlink"
    : file.is_directory
    ? "directory"
    : "file";
  const modified = file.modified_time ? new Date(file.modified_time) : null;
  return {
    path: file.path,
    name: file.name,
    type,
    size: type === "file" ? file.size ?? 0 : 0,
    modifiedAt: modified && !Number.isNaN(modified.getTime()) ? modified : null,
    ...(permissions.length >= 4 ? { executable: permissions[3] === "x" } : {}),
  };
}

/** The envelope's `not_found` / `invalid_target` as Deno's errors. */
function fileError(error: unknown, what: string): unknown {
  if (error instanceof AioOperationError) {
    const reason = `${what}: ${error.serverMessage ?? error.message}`;
    if (error.errorType === "not_found") {
      return new Deno.errors.NotFound(reason, { cause: error });
    }
    if (error.errorType === "invalid_target") {
      return new Deno.errors.NotADirectory(reason, { cause: error });
    }
  }
  if (error instanceof RemoteHttpError && error.status === 404) {
    return new Deno.errors.NotFound(`${what}: ${error.message}`, {
      cause: error,
    });
  }
  return error;
}
