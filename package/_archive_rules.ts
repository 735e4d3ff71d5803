/**
 * What the package's extraction on this host (`_extract.ts`) and its check in
 * a stream (`_stream_check.ts`, used when a package is prepared inside a
 * sandbox) share: the budget of uncompressed bytes, a ZIP entry's name, kind
 * and mode, and the mapping of a reader's errors to `PackageError`. Kept
 * apart so that the check in a stream does not load the extractor (its zlib
 * and file writing), which the preparation in a sandbox never uses.
 *
 * @module
 */
import type { Entry } from "@zip.js/zip.js";
import type { PackageProgress } from "./pack.ts";
import { PackageError } from "./errors.ts";
import { checkEntryPath, type ResolvedLimits } from "./_entries.ts";

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

/** Counts uncompressed bytes against the limits. */
export class Budget {
  total = 0;
  constructor(
    readonly limits: ResolvedLimits,
    /** The archive's size, or a function giving the bytes read so far. */
    readonly archive: number | (() => number),
    readonly onProgress?: (progress: PackageProgress) => void,
  ) {}
  #files = 0;
  #entry: string | undefined;
  get archiveBytes(): number {
    return typeof this.archive === "number" ? this.archive : this.archive();
  }
  add(bytes: number, entry: string): void {
    this.total += bytes;
    this.check(this.total, entry);
    if (this.onProgress) {
      if (entry !== this.#entry) {
        this.#entry = entry;
        this.#files++;
      }
      this.onProgress({
        stage: "extract",
        bytes: this.total,
        files: this.#files,
      });
    }
  }
  check(total: number, entry: string): void {
    if (total > this.limits.maxBytes) {
      throw new PackageError(
        "too-large",
        `it unpacks to more than ${this.limits.maxBytes} bytes`,
        { entry },
      );
    }
    if (
      total > this.limits.ratioFloorBytes &&
      total / Math.max(1, this.archiveBytes) > this.limits.maxRatio
    ) {
      throw new PackageError(
        "ratio",
        `it unpacks to more than ${this.limits.maxRatio} times its size (a decompression bomb)`,
        { entry },
      );
    }
  }
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

export function zipEntryName(entry: Entry): string {
  try {
    return UTF8.decode(entry.rawFilename);
  } catch {
    throw new PackageError("unsafe-path", "its name is not valid UTF-8", {
      entry: entry.filename,
    });
  }
}

export function zipKind(entry: Entry, name: string): "file" | "folder" {
  if (entry.encrypted) {
    throw new PackageError("corrupt", "it is encrypted", { entry: name });
  }
  if (entry.symlink) {
    throw new PackageError("link", "a skill package cannot hold links", {
      entry: name,
    });
  }
  const unix = (entry.versionMadeBy >> 8) === 3 ||
    (entry.externalFileAttributes >>> 16) !== 0;
  const type = unix ? ((entry.externalFileAttributes >>> 16) & S_IFMT) : 0;
  if (type === S_IFLNK) {
    throw new PackageError("link", "a skill package cannot hold links", {
      entry: name,
    });
  }
  if (type !== 0 && type !== S_IFREG && type !== S_IFDIR) {
    throw new PackageError(
      "special-file",
      "a skill package holds regular files only (not devices, pipes or sockets)",
      { entry: name },
    );
  }
  return entry.directory || type === S_IFDIR ? "folder" : "file";
}

export function zipMode(entry: Entry): number {
  const unix = (entry.externalFileAttributes >>> 16) & 0o777;
  if (unix !== 0) return unix;
  return entry.executable ? 0o755 : 0o644;
}

export function asPackageError(error: unknown, entry?: string): unknown {
  if (error instanceof PackageError) return error;
  const unsafe = (error as { filename?: unknown } | null)?.filename;
  if (typeof unsafe === "string") {
    // zip.js refused a name first: say why in our words.
    try {
      checkEntryPath(unsafe);
    } catch (ours) {
      return ours;
    }
    return new PackageError("unsafe-path", "its name is unsafe", {
      entry: unsafe,
      cause: error,
    });
  }
  if (error instanceof DOMException && error.name === "AbortError") {
    return error;
  }
  const message = error instanceof Error ? error.message : String(error);
  return new PackageError(
    "corrupt",
    `the archive cannot be read (${message}); it may be truncated or damaged`,
    { ...(entry !== undefined ? { entry } : {}), cause: error },
  );
}
