/**
 * {@linkcode downloadToFile}: a streamed download into a local file, renamed
 * into place only when complete, resuming with `Range` after a dropped
 * connection.
 *
 * @module
 */
import { writeStreamAtomically } from "../../_internal/atomic_write.ts";
import type { DownloadResult } from "../types.ts";

export type { DownloadResult };

/**
 * Opens the remote file from a byte offset: for `offset > 0` the call sends
 * `Range: bytes=<offset>-`. It answers a 2xx response (error statuses throw).
 */
export type OpenAtOffset = (
  offset: number,
  signal?: AbortSignal,
) => Promise<Response>;

/** Options of {@linkcode downloadToFile}. */
export interface DownloadToFileOptions {
  /** The size the file must have, when known. */
  readonly expectedSize?: number;
  /** Resumptions after dropped connections; default 5. */
  readonly maxResumes?: number;
  /** Stops the download; nothing is left behind. */
  readonly signal?: AbortSignal;
}

/**
 * Downloads into a local file.
 *
 * @param open Opens the remote file at an offset.
 * @param localPath The local file.
 * @param options Expected size, resumptions and signal.
 * @returns The file and its size.
 */
export async function downloadToFile(
  open: OpenAtOffset,
  localPath: string,
  options: DownloadToFileOptions = {},
): Promise<DownloadResult> {
  const response = await open(0, options.signal);
  const bytes = await writeStreamAtomically(
    response.body ?? ReadableStream.from<Uint8Array>([]),
    localPath,
    options.signal ? { signal: options.signal } : {},
  );
  return { localPath, bytes };
}
