/**
 * Reading a `SKILL.md` without trusting what it is: only a regular file (a
 * link to one included), streamed, and never more than
 * {@linkcode SKILL_MD_MAX_BYTES}. A FIFO would block the reader forever, a link
 * to `/dev/zero` would grow it without bound, and a huge file would be read
 * whole before being judged.
 *
 * @module
 */
import { formatBytes } from "../_internal/format.ts";
import { concatBytes } from "../_internal/std.ts";

/**
 * The largest `SKILL.md` read: 4 MiB, the bound packages apply too. The
 * largest real skills' `SKILL.md` are under 80 KB (the Agent Skills
 * specification advises under 500 lines).
 */
export const SKILL_MD_MAX_BYTES: number = 4 * 1024 * 1024;

/** A `SKILL.md` that is not read: what it is, as the message says. */
export class SkillFileError extends Error {
  /** Creates the error; `message` is the reason, e.g. `it is a FIFO, not a regular file`. */
  constructor(message: string) {
    super(message);
    this.name = "SkillFileError";
  }
}

const CHUNK = 64 * 1024;

/**
 * The bytes of a `SKILL.md`, when it is a regular file (or a link to one) of
 * at most `maxBytes`.
 *
 * @param path The file.
 * @param signal Stops the reading (the promise rejects with its reason).
 * @param maxBytes The bound (default {@linkcode SKILL_MD_MAX_BYTES}).
 * @returns Its bytes.
 * @throws {Deno.errors.NotFound} There is no such file.
 * @throws {Deno.errors.IsADirectory} It is a folder.
 * @throws {SkillFileError} It is a FIFO, a device, a socket, or larger than
 * the bound (read no further than the bound).
 */
export async function readSkillMdBytes(
  path: string,
  signal?: AbortSignal,
  maxBytes: number = SKILL_MD_MAX_BYTES,
): Promise<Uint8Array> {
  // Stat first: opening a FIFO for reading blocks until a writer comes.
  const info = await Deno.stat(path);
  checkKind(info);
  using file = await Deno.open(path, { read: true });
  // The same file, should it have been replaced between the two calls.
  checkKind(await file.stat());
  if (info.size > maxBytes) throw tooLarge(maxBytes);
  const chunks: Uint8Array[] = [];
  let total = 0;
  while (true) {
    signal?.throwIfAborted();
    const buffer = new Uint8Array(CHUNK);
    const read = await file.read(buffer);
    if (read === null) break;
    total += read;
    if (total > maxBytes) throw tooLarge(maxBytes);
    chunks.push(read === CHUNK ? buffer : buffer.subarray(0, read));
  }
  return chunks.length === 1 ? chunks[0]! : concatBytes(chunks);
}

function checkKind(info: Deno.FileInfo): void {
  if (info.isFile) return;
  if (info.isDirectory) throw new Deno.errors.IsADirectory("it is a folder");
  const kind = info.isFifo
    ? "a FIFO"
    : info.isCharDevice
    ? "a character device"
    : info.isBlockDevice
    ? "a block device"
    : info.isSocket
    ? "a socket"
    : "not a file";
  throw new SkillFileError(
    kind === "not a file"
      ? "it is not a regular file"
      : `it is ${kind}, not a regular file`,
  );
}

function tooLarge(maxBytes: number): SkillFileError {
  return new SkillFileError(
    `it is larger than the ${formatBytes(maxBytes)} limit of a SKILL.md`,
  );
}
