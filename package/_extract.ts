/**
 * Safe extraction of a package that is already on disk (spooled while its
 * digest was checked) into an empty folder: ZIP read by `@zip.js/zip.js`
 * (central directory, local headers checked against it, CRC-32 checked),
 * tar.gz read by `modern-tar` on the runtime's `DecompressionStream`.
 * Every entry goes through the rules of `_entries.ts` before anything of it
 * is written; files are created new (never opened through an existing path).
 *
 * @module
 */
import { crc32 } from "node:zlib";
import {
  configure,
  type Entry,
  type FileEntry,
  Reader,
  Uint8ArrayReader,
  ZipReader,
} from "@zip.js/zip.js";
import { unzipSync } from "fflate";
import { createTarDecoder } from "modern-tar";
import { hostPath } from "../_internal/std.ts";
import { mapLimited } from "../_internal/pool.ts";
import { PackageError } from "./errors.ts";
import { Sha256, sha256Of } from "./_digest.ts";
import {
  checkEntryPath,
  EntrySet,
  type PackageFormat,
  type ResolvedLimits,
} from "./_entries.ts";

/** One extracted file. */
export interface ExtractedFile {
  /** The path inside the package, `/`-separated. */
  readonly path: string;
  /** Size in bytes. */
  readonly size: number;
  /** Permission bits from the archive (`0o644` when it has none). */
  readonly mode: number;
  /** `sha256:` digest of its content. */
  readonly digest: string;
}

/** What an extraction produced. */
export interface Extracted {
  /** The entry set (files and folders). */
  readonly set: EntrySet;
  /** The files, by path. */
  readonly files: Map<string, ExtractedFile>;
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

/** Counts uncompressed bytes against the limits. */
class Budget {
  total = 0;
  constructor(
    readonly limits: ResolvedLimits,
    readonly archiveBytes: number,
  ) {}
  add(bytes: number, entry: string): void {
    this.total += bytes;
    this.check(this.total, entry);
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

/** Writes one file's bytes: hashed, counted, created new. */
class FileSink {
  readonly #hash = new Sha256();
  #size = 0;
  readonly #file: Deno.FsFile;
  constructor(
    path: string,
    readonly entry: string,
    readonly budget: Budget,
    readonly declared: number | undefined,
    mode: number,
  ) {
    // Created with its final (read-only) mode: the open handle can still write.
    this.#file = Deno.openSync(path, { write: true, createNew: true, mode });
  }
  async write(chunk: Uint8Array): Promise<void> {
    this.#size += chunk.byteLength;
    if (this.declared !== undefined && this.#size > this.declared) {
      throw new PackageError(
        "corrupt",
        `it holds more bytes than its header says (${this.declared})`,
        { entry: this.entry },
      );
    }
    this.budget.add(chunk.byteLength, this.entry);
    this.#hash.update(chunk);
    let offset = 0;
    while (offset < chunk.byteLength) {
      offset += await this.#file.write(chunk.subarray(offset));
    }
  }
  close(): { size: number; digest: string } {
    this.#file.close();
    return { size: this.#size, digest: this.#hash.digest() };
  }
  abort(): void {
    try {
      this.#file.close();
    } catch {
      // already closed
    }
  }
  get size(): number {
    return this.#size;
  }
}

/**
 * Extracts a spooled archive into `target` (an empty folder made by the
 * caller). On a refusal, what was written stays in `target` for the caller
 * to remove.
 */
export async function extractArchive(
  archivePath: string,
  archiveBytes: number,
  format: PackageFormat,
  target: string,
  limits: ResolvedLimits,
  signal?: AbortSignal,
): Promise<Extracted> {
  const budget = new Budget(limits, archiveBytes);
  return format === "zip"
    ? await extractZip(archivePath, archiveBytes, target, budget, signal)
    : await extractTarGz(archivePath, target, budget, signal);
}

/** Reads of at most this size come from a ring of reused buffers. */
const RING_CHUNK = 32 * 1024;
/** Buffers in the ring: far more than the chunks zip.js's pipeline holds. */
const RING_SIZE = 32;

/**
 * Random access to a spooled archive for zip.js. Chunk-sized reads (the data
 * of large entries) land in a ring of reused buffers, so streaming a 1 GiB
 * entry allocates almost nothing (fresh buffers per chunk let the heap grow
 * by some 80 MiB before the collector runs). A buffer is reused only after
 * 31 later reads, while zip.js holds at most a few chunks per stage; and
 * every entry's CRC-32 is checked, so a chunk overwritten too early would
 * fail the entry, never pass wrong bytes.
 */
class FileRangeReader extends Reader<Deno.FsFile> {
  readonly #file: Deno.FsFile;
  readonly #ring: Uint8Array[] = [];
  #next = 0;
  /** Whether chunk reads use the ring (only while entries' data streams). */
  streaming = false;
  constructor(file: Deno.FsFile, size: number) {
    super(file);
    this.#file = file;
    this.size = size;
  }
  override init(): Promise<void> {
    return Promise.resolve();
  }
  override async readUint8Array(
    index: number,
    length: number,
  ): Promise<Uint8Array> {
    let out: Uint8Array;
    if (this.streaming && length <= RING_CHUNK) {
      const slot = this.#next;
      this.#next = (slot + 1) % RING_SIZE;
      out = (this.#ring[slot] ??= new Uint8Array(RING_CHUNK)).subarray(
        0,
        length,
      );
    } else {
      out = new Uint8Array(length);
    }
    await this.#file.seek(index, Deno.SeekMode.Start);
    let offset = 0;
    while (offset < length) {
      const n = await this.#file.read(out.subarray(offset));
      if (n === null) break;
      offset += n;
    }
    return offset === length ? out : out.subarray(0, offset);
  }
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

function zipEntryName(entry: Entry): string {
  try {
    return UTF8.decode(entry.rawFilename);
  } catch {
    throw new PackageError("unsafe-path", "its name is not valid UTF-8", {
      entry: entry.filename,
    });
  }
}

function zipKind(entry: Entry, name: string): "file" | "folder" {
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

function zipMode(entry: Entry): number {
  const unix = (entry.externalFileAttributes >>> 16) & 0o777;
  if (unix !== 0) return unix;
  return entry.executable ? 0o755 : 0o644;
}

// Smaller chunks than zip.js's 256 KiB default: each stage of an entry's
// pipeline holds one, and a 1 GiB entry then streams in flat memory.
configure({ chunkSize: 32 * 1024 });

/** Entries larger than this inflate with bounded memory (see below). */
const LARGE_ENTRY_BYTES = 64 * 1024 ** 2;

/** Files created at once. */
const WRITE_CONCURRENCY = 16;
/** Archives up to this size are read into memory (one read instead of many). */
const IN_MEMORY_ARCHIVE_BYTES = 64 * 1024 ** 2;
/** Declared contents up to this size are inflated in one pass (fflate). */
const IN_MEMORY_UNPACKED_BYTES = 256 * 1024 ** 2;

async function extractZip(
  archivePath: string,
  archiveBytes: number,
  target: string,
  budget: Budget,
  signal: AbortSignal | undefined,
): Promise<Extracted> {
  using file = await Deno.open(archivePath);
  const bytes = archiveBytes <= IN_MEMORY_ARCHIVE_BYTES
    ? await Deno.readFile(archivePath)
    : undefined;
  const ranges = bytes ? undefined : new FileRangeReader(file, archiveBytes);
  const reader = new ZipReader(
    ranges ?? new Uint8ArrayReader(bytes!),
    {
      useWebWorkers: false,
      strictness: "strict",
      checkCrc32: true,
      checkOverlappingEntry: true,
    },
  );
  const set = new EntrySet(budget.limits);
  const files = new Map<string, ExtractedFile>();
  try {
    // 1. The central directory: every entry is checked before anything is
    //    written (names, kinds, count, declared sizes and ratio).
    const listed: {
      entry: Entry;
      path: string;
      name: string;
      file: boolean;
    }[] = [];
    let declared = 0;
    try {
      for await (const entry of reader.getEntriesGenerator()) {
        signal?.throwIfAborted();
        const name = zipEntryName(entry);
        const path = checkEntryPath(name);
        const kind = zipKind(entry, name);
        set.add(path, kind, name);
        const isFile = kind === "file" && path !== "";
        if (isFile) {
          declared += entry.uncompressedSize;
          budget.check(declared, name);
        }
        listed.push({ entry, path, name, file: isFile });
      }
    } catch (error) {
      throw asPackageError(error);
    }
    for (const folder of [...set.folders].sort()) {
      await Deno.mkdir(hostPath.join(target, folder), { recursive: true });
    }
    // 2. The data.
    if (bytes && declared <= IN_MEMORY_UNPACKED_BYTES) {
      // Small packages: inflated in one pass by fflate (zip.js costs about
      // 0.2 ms per entry, fflate a few microseconds), sizes bounded by the
      // central directory just checked, CRC-32 checked here.
      let index = 0;
      let inflated: Record<string, Uint8Array>;
      const byIndex: string[] = [];
      try {
        inflated = unzipSync(bytes, {
          filter(info) {
            const item = listed[index++];
            if (!item || !item.file) return false;
            byIndex.push(info.name);
            return true;
          },
        });
      } catch (error) {
        throw asPackageError(error);
      }
      if (index !== listed.length) {
        throw new PackageError(
          "corrupt",
          "its central directory was read two ways with different entries",
        );
      }
      let at = 0;
      const writes: { path: string; data: Uint8Array; mode: number }[] = [];
      for (const { entry, path, name, file } of listed) {
        if (!file) continue;
        signal?.throwIfAborted();
        const data = inflated[byIndex[at++]!];
        if (
          !data || data.byteLength !== entry.uncompressedSize ||
          (entry.crc32 !== undefined && crc32(data) !== entry.crc32 >>> 0)
        ) {
          throw new PackageError(
            "corrupt",
            "its data does not match its size or CRC-32 (damaged or truncated)",
            { entry: name },
          );
        }
        budget.add(data.byteLength, name);
        const mode = zipMode(entry);
        writes.push({ path, data, mode });
        files.set(path, {
          path,
          size: data.byteLength,
          mode,
          digest: sha256Of(data),
        });
      }
      // Files are created in parallel: creating a file costs more than
      // writing a small one, and the system overlaps the creations.
      await mapLimited(
        writes,
        WRITE_CONCURRENCY,
        ({ path, data, mode }) =>
          Deno.writeFile(hostPath.join(target, path), data, {
            createNew: true,
            mode: mode & 0o555,
          }),
        signal ? { signal } : {},
      );
      return { set, files };
    }
    if (ranges) ranges.streaming = true;
    for (const { entry, path, name, file } of listed) {
      if (!file) continue;
      signal?.throwIfAborted();
      const mode = zipMode(entry);
      const sink = new FileSink(
        hostPath.join(target, path),
        name,
        budget,
        entry.uncompressedSize,
        mode & 0o555,
      );
      try {
        await (entry as FileEntry).getData(
          new WritableStream<Uint8Array>({
            write: (chunk) => sink.write(chunk),
          }),
          {
            ...(signal ? { signal } : {}),
            // Large entries go through zip.js's own inflater, which reuses
            // its buffers: the runtime's DecompressionStream makes a fresh
            // buffer per chunk, and 1 GiB of them grows the heap by some 100
            // MiB before the collector runs (measured for one 1 GiB entry:
            // 157 vs 86 MiB peak), for about twice the time.
            ...(entry.uncompressedSize > LARGE_ENTRY_BYTES
              ? { useCompressionStream: false }
              : {}),
          },
        );
      } catch (error) {
        sink.abort();
        throw asPackageError(error, name);
      }
      if (sink.size !== entry.uncompressedSize) {
        sink.abort();
        throw new PackageError(
          "corrupt",
          `it holds ${sink.size} bytes, not the ${entry.uncompressedSize} its header says`,
          { entry: name },
        );
      }
      const { size, digest } = sink.close();
      files.set(path, { path, size, mode, digest });
    }
  } finally {
    await reader.close().catch(() => {});
  }
  return { set, files };
}

async function extractTarGz(
  archivePath: string,
  target: string,
  budget: Budget,
  signal: AbortSignal | undefined,
): Promise<Extracted> {
  const set = new EntrySet(budget.limits);
  const files = new Map<string, ExtractedFile>();
  const file = await Deno.open(archivePath);
  const decoder = createTarDecoder({ strict: true });
  const entries = file.readable
    .pipeThrough(new DecompressionStream("gzip"))
    .pipeThrough(decoder);
  const made = new Set<string>([""]);
  const ensureParent = async (path: string) => {
    const parent = path.includes("/")
      ? path.slice(0, path.lastIndexOf("/"))
      : "";
    if (made.has(parent)) return;
    await Deno.mkdir(hostPath.join(target, parent), { recursive: true });
    made.add(parent);
  };
  const reader = entries.getReader();
  try {
    while (true) {
      signal?.throwIfAborted();
      let next: ReadableStreamReadResult<
        {
          header: { name: string; type?: string; size: number; mode?: number };
          body: ReadableStream<Uint8Array>;
        }
      >;
      try {
        next = await reader.read();
      } catch (error) {
        throw asPackageError(error);
      }
      if (next.done) break;
      const { header, body } = next.value;
      const name = header.name;
      const type = header.type ?? "file";
      if (type === "pax-global-header") {
        await body.cancel();
        continue;
      }
      const path = checkEntryPath(name);
      if (type === "symlink" || type === "link") {
        await body.cancel();
        throw new PackageError(
          "link",
          type === "link"
            ? "a skill package cannot hold hard links"
            : "a skill package cannot hold links",
          { entry: name },
        );
      }
      if (type !== "file" && type !== "directory") {
        await body.cancel();
        throw new PackageError(
          "special-file",
          `a skill package holds regular files and folders only, not a ${type}`,
          { entry: name },
        );
      }
      set.add(path, type === "file" ? "file" : "folder", name);
      if (type === "directory") {
        await body.cancel();
        if (path !== "" && !made.has(path)) {
          await Deno.mkdir(hostPath.join(target, path), { recursive: true });
          made.add(path);
        }
        continue;
      }
      await ensureParent(path);
      const mode = ((header.mode ?? 0o644) & 0o777) || 0o644;
      const sink = new FileSink(
        hostPath.join(target, path),
        name,
        budget,
        header.size,
        mode & 0o555,
      );
      try {
        for await (const chunk of body) await sink.write(chunk);
      } catch (error) {
        sink.abort();
        throw asPackageError(error, name);
      }
      if (sink.size !== header.size) {
        sink.abort();
        throw new PackageError(
          "corrupt",
          `the archive ends inside it (truncated)`,
          { entry: name },
        );
      }
      const { size, digest } = sink.close();
      files.set(path, { path, size, mode, digest });
    }
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  } finally {
    try {
      file.close();
    } catch {
      // closed by the stream
    }
  }
  return { set, files };
}

function asPackageError(error: unknown, entry?: string): unknown {
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
