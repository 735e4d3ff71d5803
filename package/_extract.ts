/**
 * Safe extraction of a package that is already on disk (spooled while its
 * digest was checked) into an empty folder: ZIP read by `@zip.js/zip.js`
 * (central directory, local headers checked against it, CRC-32 checked;
 * the data of a large entry is located by its local header and inflated by
 * `pako` into reused buffers, see `extractLargeEntry`),
 * tar.gz read by `modern-tar` on the runtime's `DecompressionStream`.
 * Every entry goes through the rules of `_entries.ts` before anything of it
 * is written; files are created new (never opened through an existing path).
 *
 * @module
 */
import { crc32 } from "node:zlib";
import {
  type Entry,
  type FileEntry,
  Reader,
  Uint8ArrayReader,
  ZipReader,
} from "@zip.js/zip.js";
import {
  Z_FINISH,
  Z_NO_FLUSH,
  Z_STREAM_END,
  zlibInflate,
  zlibInflateEnd,
  zlibInflateInit2,
  zlibInflateReset,
  ZStream,
} from "pako";
import { createTarDecoder } from "modern-tar";
import type { PackageProgress } from "./pack.ts";
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
import {
  asPackageError,
  Budget,
  zipEntryName,
  zipKind,
  zipMode,
} from "./_archive_rules.ts";

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
 * Where a ZIP's extraction changes paths (tests set them low to reach the
 * large-entry path with small archives).
 */
export interface ZipThresholds {
  /** Archives up to this size are read into memory. */
  readonly inMemoryArchiveBytes: number;
  /** Entries over this size are extracted in flat memory. */
  readonly largeEntryBytes: number;
}

/**
 * The thresholds in use: an archive over 64 MiB is read from its spool file,
 * and its entries over 1 MiB are extracted in flat memory (through zip.js,
 * each would make garbage as large as itself).
 */
const ZIP_THRESHOLDS: ZipThresholds = {
  inMemoryArchiveBytes: 64 * 1024 ** 2,
  largeEntryBytes: 1024 ** 2,
};

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
  thresholds: ZipThresholds = ZIP_THRESHOLDS,
  onProgress?: (progress: PackageProgress) => void,
): Promise<Extracted> {
  const budget = new Budget(limits, archiveBytes, onProgress);
  return format === "zip"
    ? await extractZip(
      archivePath,
      archiveBytes,
      target,
      budget,
      signal,
      thresholds,
    )
    : await extractTarGz(archivePath, target, budget, signal);
}

/** Random access to a spooled archive for zip.js. */
class FileRangeReader extends Reader<Deno.FsFile> {
  readonly #file: Deno.FsFile;
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
    const out = new Uint8Array(length);
    const read = await readAt(this.#file, index, out);
    return read === length ? out : out.subarray(0, read);
  }
}

/** Reads into `out` from `position`; returns how many bytes (fewer at the end). */
async function readAt(
  file: Deno.FsFile,
  position: number,
  out: Uint8Array,
): Promise<number> {
  await file.seek(position, Deno.SeekMode.Start);
  let offset = 0;
  while (offset < out.length) {
    const n = await file.read(out.subarray(offset));
    if (n === null) break;
    offset += n;
  }
  return offset;
}

/** The buffers of {@linkcode extractLargeEntry}: read and inflated. */
const LARGE_ENTRY_CHUNK = 64 * 1024;
/** A ZIP local file header: signature and fixed part. */
const LOCAL_HEADER_SIGNATURE = 0x04034b50;
const LOCAL_HEADER_BYTES = 30;

/**
 * The entry's compression method when a skill package may use it (stored or
 * deflated, not encrypted); otherwise a `corrupt` error naming it.
 */
function packageMethod(entry: Entry, name: string): 0 | 8 {
  const method = entry.compressionMethod;
  if (entry.encrypted || (method !== 0 && method !== 8)) {
    throw new PackageError(
      "corrupt",
      `it uses a compression a skill package does not (method ${method}${
        entry.encrypted ? ", encrypted" : ""
      })`,
      { entry: name },
    );
  }
  return method;
}

/**
 * Extracts one large entry in flat memory. zip.js hands every chunk of an
 * entry's data over in a fresh buffer (even stored or passed through), and
 * the runtime's `DecompressionStream` makes one per chunk too: for a 1 GiB
 * entry the heap then grows by some 60-120 MiB before the collector frees
 * them. Here the entry zip.js listed (and the rules checked) is read from
 * the archive into one reused buffer and inflated by `pako`'s zlib (the
 * port of zlib's own `inflate`) into another, each chunk hashed, counted and
 * written before the buffers are reused: about 70 MiB peak for the whole
 * process on a 1 GiB entry. What is read of the archive by hand is only where
 * the data starts: the local header's signature, method and name are checked
 * against the central directory, its lengths locate the data, and the data
 * must lie inside the archive; the inflated bytes must end exactly with the
 * compressed ones and match the entry's size and CRC-32.
 */
async function extractLargeEntry(
  file: Deno.FsFile,
  archiveBytes: number,
  entry: Entry,
  sink: FileSink,
  signal: AbortSignal | undefined,
): Promise<void> {
  const name = entry.filename;
  const corrupt = (what: string) =>
    new PackageError("corrupt", what, { entry: name });
  const method = packageMethod(entry, name);
  const rawName = entry.rawFilename;
  const header = new Uint8Array(LOCAL_HEADER_BYTES + rawName.length);
  if (
    entry.offset + header.length > archiveBytes ||
    await readAt(file, entry.offset, header) !== header.length
  ) {
    throw corrupt("its local header lies outside the archive (truncated?)");
  }
  const view = new DataView(header.buffer);
  if (
    view.getUint32(0, true) !== LOCAL_HEADER_SIGNATURE ||
    view.getUint16(8, true) !== method ||
    view.getUint16(26, true) !== rawName.length ||
    !rawName.every((byte, i) => header[LOCAL_HEADER_BYTES + i] === byte)
  ) {
    throw corrupt("its local header does not match the central directory");
  }
  const start = entry.offset + LOCAL_HEADER_BYTES + rawName.length +
    view.getUint16(28, true);
  if (start + entry.compressedSize > archiveBytes) {
    throw corrupt("its data runs past the end of the archive (truncated?)");
  }
  if (method === 0 && entry.compressedSize !== entry.uncompressedSize) {
    throw corrupt("it is stored, but its two sizes differ");
  }
  const input = new Uint8Array(LARGE_ENTRY_CHUNK);
  const output = new Uint8Array(LARGE_ENTRY_CHUNK);
  const stream = new ZStream();
  if (method === 8) zlibInflateInit2(stream, -15); // raw deflate
  let crc = 0;
  let ended = method === 0;
  try {
    await file.seek(start, Deno.SeekMode.Start);
    for (let left = entry.compressedSize; left > 0;) {
      signal?.throwIfAborted();
      const n = await file.read(
        input.subarray(0, Math.min(input.length, left)),
      );
      if (n === null || n === 0) {
        throw corrupt("its data ends early (truncated?)");
      }
      left -= n;
      if (method === 0) {
        const chunk = input.subarray(0, n);
        crc = crc32(chunk, crc);
        await sink.write(chunk);
        continue;
      }
      if (ended) throw corrupt("it holds data after its compressed stream");
      stream.input = input;
      stream.next_in = 0;
      stream.avail_in = n;
      do {
        stream.output = output;
        stream.next_out = 0;
        stream.avail_out = output.length;
        const status = zlibInflate(stream, Z_NO_FLUSH);
        if (status < 0) {
          throw corrupt(
            `its compressed data is damaged (${stream.msg || status})`,
          );
        }
        if (stream.next_out > 0) {
          const chunk = output.subarray(0, stream.next_out);
          crc = crc32(chunk, crc);
          // Hashed, counted (the budget, the declared size) and written
          // before the buffer is reused.
          await sink.write(chunk);
        }
        if (status === Z_STREAM_END) {
          ended = true;
          if (stream.avail_in > 0) {
            throw corrupt("it holds data after its compressed stream");
          }
          break;
        }
      } while (stream.avail_in > 0 || stream.avail_out === 0);
    }
  } finally {
    if (method === 8) zlibInflateEnd(stream);
  }
  if (!ended) throw corrupt("its compressed data ends early (truncated?)");
  if (entry.crc32 !== undefined && (crc >>> 0) !== (entry.crc32 >>> 0)) {
    throw corrupt("its data does not match its CRC-32 (damaged)");
  }
}

/**
 * Checks that the local header of `entry` has the signature of one and the
 * same raw name as the central directory's.
 */
async function checkLocalHeader(
  archive: Uint8Array | Deno.FsFile,
  archiveBytes: number,
  entry: Entry,
  name: string,
): Promise<void> {
  const rawName = entry.rawFilename;
  const length = LOCAL_HEADER_BYTES + rawName.length;
  let header: Uint8Array;
  if (entry.offset + length > archiveBytes) {
    header = new Uint8Array(0);
  } else if (archive instanceof Uint8Array) {
    header = archive.subarray(entry.offset, entry.offset + length);
  } else {
    header = new Uint8Array(length);
    if (await readAt(archive, entry.offset, header) !== length) {
      header = new Uint8Array(0);
    }
  }
  if (header.length !== length) {
    throw new PackageError(
      "corrupt",
      "its local header lies outside the archive (truncated?)",
      { entry: name },
    );
  }
  const view = new DataView(header.buffer, header.byteOffset, length);
  if (
    view.getUint32(0, true) !== LOCAL_HEADER_SIGNATURE ||
    view.getUint16(26, true) !== rawName.length ||
    !rawName.every((byte, i) => header[LOCAL_HEADER_BYTES + i] === byte)
  ) {
    throw new PackageError(
      "corrupt",
      "its local header names it differently from the central directory",
      { entry: name },
    );
  }
}

/** Files created at once. */
const WRITE_CONCURRENCY = 16;
/** Declared contents up to this size are inflated in memory (pako). */
const IN_MEMORY_UNPACKED_BYTES = 256 * 1024 ** 2;

/**
 * The data of one entry of an archive held in memory: located by its local
 * header (already checked against the central directory), inflated by
 * `pako`'s zlib (one inflate state reset for every entry) into a buffer of
 * the declared size.
 */
function inMemoryData(
  bytes: Uint8Array,
  entry: Entry,
  name: string,
  stream: ZStream,
): Uint8Array {
  const corrupt = (what: string) =>
    new PackageError("corrupt", what, { entry: name });
  const method = packageMethod(entry, name);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint16(entry.offset + 8, true) !== method) {
    throw corrupt("its local header does not match the central directory");
  }
  const start = entry.offset + LOCAL_HEADER_BYTES + entry.rawFilename.length +
    view.getUint16(entry.offset + 28, true);
  const end = start + entry.compressedSize;
  if (end > bytes.byteLength) {
    throw corrupt("its data runs past the end of the archive (truncated?)");
  }
  const data = bytes.subarray(start, end);
  if (method === 0) return data;
  // Inflated into a buffer of the declared size (one byte for an empty
  // file): more data than declared cannot fit, and ends in an error.
  const size = entry.uncompressedSize;
  const output = new Uint8Array(Math.max(1, size));
  zlibInflateReset(stream);
  stream.input = data;
  stream.next_in = 0;
  stream.avail_in = data.length;
  stream.output = output;
  stream.next_out = 0;
  stream.avail_out = output.length;
  const status = zlibInflate(stream, Z_FINISH);
  if (status !== Z_STREAM_END || stream.avail_in !== 0) {
    throw corrupt(
      `its data does not inflate to its declared size (damaged or truncated: ${
        stream.msg || status
      })`,
    );
  }
  return output.subarray(0, stream.next_out);
}

async function extractZip(
  archivePath: string,
  archiveBytes: number,
  target: string,
  budget: Budget,
  signal: AbortSignal | undefined,
  thresholds: ZipThresholds,
): Promise<Extracted> {
  using archive = await Deno.open(archivePath);
  const bytes = archiveBytes <= thresholds.inMemoryArchiveBytes
    ? await Deno.readFile(archivePath)
    : undefined;
  const ranges = bytes ? undefined : new FileRangeReader(archive, archiveBytes);
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
    // Each local header names its entry as the central directory does (a
    // reader that streams the archive would go by the local name), before
    // anything is written.
    for (const { entry, name } of listed) {
      signal?.throwIfAborted();
      await checkLocalHeader(bytes ?? archive, archiveBytes, entry, name);
    }
    for (const folder of [...set.folders].sort()) {
      await Deno.mkdir(hostPath.join(target, folder), { recursive: true });
    }
    // 2. The data.
    if (bytes && declared <= IN_MEMORY_UNPACKED_BYTES) {
      // Small packages: each entry inflated in memory by pako's zlib, one
      // inflate state reset for every entry, its output bounded by the size
      // the central directory declares (checked above), CRC-32 checked here.
      // zip.js costs about 0.2 ms per entry; fflate's unzipSync (before)
      // 6.6 µs, this 12.9 µs and node:zlib's inflateRawSync 23 µs (5,000
      // entries of 360 bytes, medians, load 13-14: bench/README.md, issue
      // 29); a whole 5,001-entry install about 4 % slower than with fflate.
      const stream = new ZStream();
      zlibInflateInit2(stream, -15); // raw deflate
      const writes: { path: string; data: Uint8Array; mode: number }[] = [];
      for (const { entry, path, name, file } of listed) {
        if (!file) continue;
        signal?.throwIfAborted();
        const data = inMemoryData(bytes, entry, name, stream);
        if (
          data.byteLength !== entry.uncompressedSize ||
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
      zlibInflateEnd(stream);
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
        if (entry.uncompressedSize > thresholds.largeEntryBytes) {
          await extractLargeEntry(
            archive,
            archiveBytes,
            entry,
            sink,
            signal,
          );
        } else {
          await (entry as FileEntry).getData(
            new WritableStream<Uint8Array>({
              write: (chunk) => sink.write(chunk),
            }),
            signal ? { signal } : {},
          );
        }
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
