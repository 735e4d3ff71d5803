/**
 * {@linkcode aioFileOps}: the file calls of an AIO container for the shared
 * `RemoteFileSystem`: list, upload and download through their endpoints, and
 * what has no endpoint (stat, chmod) through one shell command with every
 * value quoted (mkdir and delete: the kit's `FolderSandboxes`).
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
  type ShellRunner,
  shellSetModes,
  shellStats,
} from "../remote/shell_files.ts";
import type { FileInfo, FileType } from "../types.ts";
import {
  type AioClient,
  type AioFileInfo,
  AioOperationError,
} from "./client.ts";

/** How many uploads run at once. */
const UPLOAD_CONCURRENCY = 4;

/**
 * The file calls of one AIO container.
 *
 * @example Stat runs one quoted shell command
 * ```ts
 * import { assert } from "@std/assert";
 * import { AioClient } from "./client.ts";
 * import { aioFileOps } from "./files.ts";
 *
 * const seen: string[] = [];
 * const ops = aioFileOps(
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
 *
 * @param client The container's client.
 * @param shell Runs a helper command in the container.
 * @returns The file calls.
 */
export function aioFileOps(
  client: AioClient,
  shell: ShellRunner,
): RemoteFileOps {
  return {
    // There is no stat endpoint: `stat` is a command.
    ...shellStats(shell),
    /** `POST /v1/file/list`. */
    async list(path: string, options: RemoteListOptions) {
      let files: AioFileInfo[];
      try {
        files = await client.list({
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
    },
    /** `GET /v1/file/download`, with `Range` past 0. */
    open: (path: string, options: RemoteOpenOptions) =>
      client.download(path, options),
    /** One multipart call per file, a few at once. */
    async upload(files: readonly RemoteUploadFile[], signal?: AbortSignal) {
      await eachConcurrently(files, UPLOAD_CONCURRENCY, async (file) => {
        try {
          await client.upload(
            file.remotePath,
            file.content,
            signal ? { signal } : {},
          );
        } catch (error) {
          throw fileError(error, `Cannot upload "${file.remotePath}"`);
        }
      }, signal);
      // The server writes 0644: other modes by `chmod`.
      await shellSetModes(shell, files, {
        skip: 0o644,
        ...(signal ? { signal } : {}),
      });
    },
  };
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
