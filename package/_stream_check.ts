/**
 * Checking a package while it streams, in memory and with no disk: its
 * SHA-256, its format, and every entry under the rules of `_entries.ts`
 * (tar.gz: each header as it passes; ZIP: the central directory, read from a
 * bounded tail of the stream, or from the whole archive when it is kept).
 * Used where a package is not extracted on this host: loading a skill from a
 * package, and preparing it straight inside a sandbox.
 *
 * @module
 */
import { concatBytes } from "../_internal/std.ts";
import {
  type Entry,
  type FileEntry,
  Reader,
  Uint8ArrayReader,
  Uint8ArrayWriter,
  ZipReader,
} from "@zip.js/zip.js";
import { createTarDecoder } from "modern-tar";
import { PackageError } from "./errors.ts";
import { Sha256 } from "./_digest.ts";
import {
  checkEntryPath,
  EntrySet,
  locateSkill,
  type PackageFormat,
  type ResolvedLimits,
  sniffFormat,
} from "./_entries.ts";
import {
  asPackageError,
  Budget,
  zipEntryName,
  zipKind,
  zipMode,
} from "./_archive_rules.ts";

/** One file of a checked package (its path in the archive). */
export interface CheckedFile {
  /** The path in the archive, `/`-separated. */
  readonly path: string;
  /** Its size in bytes. */
  readonly size: number;
  /** Its permission bits. */
  readonly mode: number;
}

/** What a streamed check found. */
export interface CheckedPackage {
  /** The archive's digest. */
  readonly digest: string;
  /** The archive's size. */
  readonly size: number;
  /** Its format. */
  readonly format: PackageFormat;
  /** The entries (files and folders, parents included). */
  readonly set: EntrySet;
  /** Every file, in archive order. */
  readonly files: readonly CheckedFile[];
  /** Where the skill is: `""` or `"<folder>/"`. */
  readonly prefix: string;
  /** The text of its `SKILL.md`, when asked for. */
  readonly skillMd?: string;
}

/** Bytes of the stream's end kept to read a ZIP's central directory. */
export const ZIP_TAIL_BYTES = 16 * 1024 * 1024;
/** The largest `SKILL.md` read from a package. */
const SKILL_MD_MAX_BYTES = 4 * 1024 * 1024;

/** Options of {@linkcode StreamCheck}. */
export interface StreamCheckOptions {
  /** The limits. */
  readonly limits: ResolvedLimits;
  /** The digest the bytes must have. */
  readonly expected?: string;
  /** Read the skill's `SKILL.md` too. */
  readonly readSkillMd?: boolean;
  /**
   * A ZIP is kept whole in memory up to this size (needed to read its
   * `SKILL.md`); larger, only its tail. Default 0 (only the tail).
   */
  readonly keepZipBytes?: number;
}

/**
 * A check fed chunk by chunk: {@linkcode StreamCheck.push} each chunk (it
 * throws as soon as an entry is refused), then {@linkcode StreamCheck.finish}.
 */
export class StreamCheck {
  readonly #options: StreamCheckOptions;
  readonly #hash = new Sha256();
  #bytes = 0;
  #format: PackageFormat | undefined;
  #failed: unknown;
  // ZIP: the kept chunks (all, or the tail).
  #kept: Uint8Array[] = [];
  #keptBytes = 0;
  #keepAll = false;
  // tar.gz: the decoder fed through a writer, read by a loop.
  #tarWriter: WritableStreamDefaultWriter<Uint8Array<ArrayBuffer>> | undefined;
  #tarDone: Promise<void> | undefined;
  readonly #set: EntrySet;
  readonly #files: CheckedFile[] = [];
  readonly #skillMds = new Map<string, Uint8Array>();
  readonly #budget: Budget;

  constructor(options: StreamCheckOptions) {
    this.#options = options;
    this.#set = new EntrySet(options.limits);
    this.#budget = new Budget(options.limits, () => this.#bytes);
  }

  /** Bytes pushed so far. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Takes the next chunk (which the caller may pass on; it is not changed).
   *
   * @throws {PackageError} An entry is refused, or the archive is too large.
   */
  async push(chunk: Uint8Array): Promise<void> {
    if (this.#failed !== undefined) throw this.#failed;
    if (chunk.byteLength === 0) return;
    this.#bytes += chunk.byteLength;
    if (this.#bytes > this.#options.limits.maxBytes) {
      throw this.#fail(
        new PackageError(
          "too-large",
          `the archive is larger than ${this.#options.limits.maxBytes} bytes`,
        ),
      );
    }
    this.#hash.update(chunk);
    if (this.#format === undefined) {
      this.#format = sniffFormat(chunk);
      if (this.#format === undefined) {
        throw this.#fail(
          new PackageError(
            "bad-format",
            "it is neither a ZIP nor a tar.gz archive",
          ),
        );
      }
      if (this.#format === "tar.gz") this.#startTar();
      else this.#keepAll = (this.#options.keepZipBytes ?? 0) > 0;
    }
    if (this.#format === "zip") this.#keep(chunk);
    else {
      try {
        await this.#tarWriter!.write(chunk.slice());
      } catch (error) {
        throw this.#fail(this.#failed ?? asPackageError(error));
      }
      if (this.#failed !== undefined) throw this.#failed;
    }
  }

  /**
   * Ends the stream: checks the digest, then the rest of the entries.
   *
   * @returns What the package holds.
   * @throws {PackageError} A wrong digest, a refused entry, no skill.
   */
  async finish(): Promise<CheckedPackage> {
    if (this.#failed !== undefined) throw this.#failed;
    if (this.#format === undefined) {
      throw new PackageError("bad-format", "it is empty");
    }
    const digest = this.#hash.digest();
    const expected = this.#options.expected;
    if (this.#format === "tar.gz") {
      try {
        await this.#tarWriter!.close();
      } catch (error) {
        throw this.#failed ?? asPackageError(error);
      }
      await this.#tarDone;
      if (this.#failed !== undefined) throw this.#failed;
    }
    if (expected !== undefined && digest !== expected) {
      throw new PackageError(
        "digest-mismatch",
        `its digest is ${digest}, expected ${expected}`,
      );
    }
    let skillMd: Uint8Array | undefined;
    let prefix: string;
    if (this.#format === "zip") {
      ({ prefix, skillMd } = await this.#finishZip());
    } else {
      prefix = locateSkill(this.#set);
      skillMd = this.#skillMds.get(`${prefix}SKILL.md`);
    }
    let text: string | undefined;
    if (this.#options.readSkillMd) {
      if (skillMd === undefined) {
        throw new PackageError(
          "too-large",
          `its SKILL.md is larger than ${SKILL_MD_MAX_BYTES} bytes`,
          { entry: `${prefix}SKILL.md` },
        );
      }
      text = new TextDecoder().decode(skillMd);
    }
    return {
      digest,
      size: this.#bytes,
      format: this.#format,
      set: this.#set,
      files: this.#files,
      prefix,
      ...(text !== undefined ? { skillMd: text } : {}),
    };
  }

  /** Stops the check (the tar decoder, if any). */
  abort(reason?: unknown): void {
    this.#failed ??= reason ?? new Error("aborted");
    this.#tarWriter?.abort(reason).catch(() => {});
  }

  #fail(error: unknown): unknown {
    this.#failed ??= error;
    this.#tarWriter?.abort(error).catch(() => {});
    return this.#failed;
  }

  #keep(chunk: Uint8Array): void {
    const keepAll = this.#options.keepZipBytes ?? 0;
    if (this.#keepAll && this.#bytes > keepAll) this.#keepAll = false;
    this.#kept.push(chunk.slice());
    this.#keptBytes += chunk.byteLength;
    if (this.#keepAll) return;
    while (
      this.#kept.length > 1 &&
      this.#keptBytes - this.#kept[0]!.byteLength >= ZIP_TAIL_BYTES
    ) {
      this.#keptBytes -= this.#kept.shift()!.byteLength;
    }
  }

  async #finishZip(): Promise<{ prefix: string; skillMd?: Uint8Array }> {
    const tail = concat(this.#kept, this.#keptBytes);
    this.#kept = [];
    const whole = tail.byteLength === this.#bytes;
    const reader = new ZipReader(
      whole ? new Uint8ArrayReader(tail) : new TailReader(tail, this.#bytes),
      {
        useWebWorkers: false,
        strictness: "strict",
        checkCrc32: true,
      },
    );
    try {
      const listed: { entry: Entry; path: string }[] = [];
      let declared = 0;
      try {
        for await (const entry of reader.getEntriesGenerator()) {
          const name = zipEntryName(entry);
          const path = checkEntryPath(name);
          const kind = zipKind(entry, name);
          this.#set.add(path, kind, name);
          if (kind === "file" && path !== "") {
            declared += entry.uncompressedSize;
            this.#budget.check(declared, name);
            this.#files.push({
              path,
              size: entry.uncompressedSize,
              mode: zipMode(entry),
            });
            listed.push({ entry, path });
          }
        }
      } catch (error) {
        throw asPackageError(error);
      }
      const prefix = locateSkill(this.#set);
      if (!this.#options.readSkillMd) return { prefix };
      const item = listed.find((l) => l.path === `${prefix}SKILL.md`)!;
      if (!whole) {
        throw new PackageError(
          "too-large",
          `the archive is larger than the ${this.#options.keepZipBytes} bytes kept in memory to read its SKILL.md`,
        );
      }
      if (item.entry.uncompressedSize > SKILL_MD_MAX_BYTES) return { prefix };
      try {
        const data = await (item.entry as FileEntry).getData(
          new Uint8ArrayWriter(),
        );
        return { prefix, skillMd: data };
      } catch (error) {
        throw asPackageError(error, item.path);
      }
    } finally {
      await reader.close().catch(() => {});
    }
  }

  #startTar(): void {
    const { readable, writable } = new TransformStream<
      Uint8Array<ArrayBuffer>,
      Uint8Array<ArrayBuffer>
    >();
    this.#tarWriter = writable.getWriter();
    const entries = readable
      .pipeThrough(new DecompressionStream("gzip"))
      .pipeThrough(createTarDecoder({ strict: true }));
    this.#tarDone = this.#readTar(entries).catch((error) => {
      this.#fail(asPackageError(error));
      entries.cancel().catch(() => {});
    });
  }

  async #readTar(
    entries: ReadableStream<{
      header: { name: string; type?: string; size: number; mode?: number };
      body: ReadableStream<Uint8Array>;
    }>,
  ): Promise<void> {
    for await (const { header, body } of entries) {
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
      this.#set.add(path, type === "file" ? "file" : "folder", name);
      if (type === "directory") {
        await body.cancel();
        continue;
      }
      this.#budget.check(this.#budget.total + header.size, name);
      const keep = this.#options.readSkillMd &&
        /^([^/]+\/)?SKILL\.md$/.test(path) &&
        header.size <= SKILL_MD_MAX_BYTES;
      const parts: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of body) {
        size += chunk.byteLength;
        if (size > header.size) {
          throw new PackageError(
            "corrupt",
            `it holds more bytes than its header says (${header.size})`,
            { entry: name },
          );
        }
        this.#budget.add(chunk.byteLength, name);
        if (keep) parts.push(chunk.slice());
      }
      if (size !== header.size) {
        throw new PackageError(
          "corrupt",
          "the archive ends inside it (truncated)",
          { entry: name },
        );
      }
      if (keep) this.#skillMds.set(path, concat(parts, size));
      this.#files.push({
        path,
        size,
        mode: ((header.mode ?? 0o644) & 0o777) || 0o644,
      });
    }
  }
}

/**
 * The end of an archive for zip.js: reads inside the kept tail succeed, a
 * read before it means the central directory is larger than the tail.
 */
class TailReader extends Reader<Uint8Array> {
  readonly #tail: Uint8Array;
  readonly #start: number;
  constructor(tail: Uint8Array, size: number) {
    super(tail);
    this.#tail = tail;
    this.size = size;
    this.#start = size - tail.byteLength;
  }
  override init(): Promise<void> {
    return Promise.resolve();
  }
  override readUint8Array(index: number, length: number): Promise<Uint8Array> {
    if (index < this.#start) {
      return Promise.reject(
        new PackageError(
          "too-many-entries",
          `its central directory does not fit in the last ${ZIP_TAIL_BYTES} bytes checked while streaming`,
        ),
      );
    }
    const from = index - this.#start;
    return Promise.resolve(this.#tail.subarray(from, from + length));
  }
}

function concat(chunks: readonly Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1 && chunks[0]!.byteLength === size) return chunks[0]!;
  return concatBytes(chunks);
}
