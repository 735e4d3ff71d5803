/**
 * The ZIP container of `packSkill`: local headers, data, central directory,
 * end record, written into one reused buffer and handed on in chunks. The
 * data is deflated by the caller. No ZIP64: a package holds at most 65,535
 * files and 4 GiB (the package limits are lower: 20,000 entries and 2 GiB by
 * default); past that the writer refuses and tar.gz is the way.
 *
 * Written here rather than by fflate's `Zip`: for packages of many small
 * files its per-entry objects, callbacks and copies cost as much as reading
 * and deflating the files (73 ms of CPU for 5,000 entries, against about 5 ms
 * here). It is the one ZIP writer of the project (`installFromIndex` wraps a
 * lone SKILL.md with it too). Reading packages stays with zip.js and the
 * runtime's zlib.
 *
 * @module
 */
import { PackageError } from "./errors.ts";

const LOCAL_SIGNATURE = 0x04034b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const DESCRIPTOR_SIGNATURE = 0x08074b50;
const END_SIGNATURE = 0x06054b50;
/** Version 2.0: deflate. */
const VERSION_NEEDED = 20;
/** Made by Unix (3), version 2.0: the external attributes hold the mode. */
const VERSION_MADE_BY = (3 << 8) | VERSION_NEEDED;
/** General purpose flags: sizes and CRC in a data descriptor after the data. */
const FLAG_DESCRIPTOR = 1 << 3;
/** General purpose flags: the name is UTF-8. */
const FLAG_UTF8 = 1 << 11;
const DEFLATE = 8;
/** 1980-01-01 00:00, the first DOS time: every entry's time. */
const DOS_TIME = 0;
const DOS_DATE = (1 << 5) | 1;
const MAX_ENTRIES = 0xffff;
const MAX_OFFSET = 0xffffffff;

const encoder = new TextEncoder();

/** One entry as the central directory records it. */
interface CentralEntry {
  readonly name: Uint8Array;
  readonly flags: number;
  readonly mode: number;
  readonly offset: number;
  crc: number;
  compressedSize: number;
  size: number;
}

/** A streamed entry: its deflated data in pieces, then its CRC and size. */
export interface StreamedEntry {
  /** Appends deflated data. */
  push(data: Uint8Array): void;
  /** Ends the entry: the CRC-32 and size of its uncompressed data. */
  end(crc: number, size: number): void;
}

/** Writes a ZIP of deflated entries; chunks of about `chunkBytes` go to `emit`. */
export class ZipWriter {
  readonly #emit: (chunk: Uint8Array) => void;
  readonly #buffer: Uint8Array;
  readonly #view: DataView;
  #used = 0;
  /** Bytes handed on so far. */
  #written = 0;
  readonly #entries: CentralEntry[] = [];

  constructor(emit: (chunk: Uint8Array) => void, chunkBytes = 1 << 16) {
    this.#emit = emit;
    this.#buffer = new Uint8Array(chunkBytes);
    this.#view = new DataView(this.#buffer.buffer);
  }

  /** A file whose deflated data is all known. */
  add(name: string, mode: number, crc: number, size: number, data: Uint8Array) {
    const entry = this.#begin(name, mode, 0);
    entry.crc = crc >>> 0;
    entry.size = size;
    entry.compressedSize = data.byteLength;
    this.#local(entry);
    this.#append(data);
  }

  /** A file streamed: its header now, its data by `push`, its sizes at `end`. */
  addStreamed(name: string, mode: number): StreamedEntry {
    const entry = this.#begin(name, mode, FLAG_DESCRIPTOR);
    this.#local(entry);
    return {
      push: (data) => {
        entry.compressedSize += data.byteLength;
        this.#append(data);
      },
      end: (crc, size) => {
        entry.crc = crc >>> 0;
        entry.size = size;
        this.#checkSize(entry);
        const at = this.#reserve(16);
        const view = this.#view;
        view.setUint32(at, DESCRIPTOR_SIGNATURE, true);
        view.setUint32(at + 4, entry.crc, true);
        view.setUint32(at + 8, entry.compressedSize, true);
        view.setUint32(at + 12, entry.size, true);
      },
    };
  }

  /** Writes the central directory and the end record, and hands on the rest. */
  end(): void {
    const start = this.#offset;
    for (const entry of this.#entries) {
      const at = this.#reserve(46 + entry.name.length);
      const view = this.#view;
      view.setUint32(at, CENTRAL_SIGNATURE, true);
      view.setUint16(at + 4, VERSION_MADE_BY, true);
      view.setUint16(at + 6, VERSION_NEEDED, true);
      view.setUint16(at + 8, entry.flags, true);
      view.setUint16(at + 10, DEFLATE, true);
      view.setUint16(at + 12, DOS_TIME, true);
      view.setUint16(at + 14, DOS_DATE, true);
      view.setUint32(at + 16, entry.crc, true);
      view.setUint32(at + 20, entry.compressedSize, true);
      view.setUint32(at + 24, entry.size, true);
      view.setUint16(at + 28, entry.name.length, true);
      view.setUint32(at + 30, 0, true); // extra field and comment lengths
      view.setUint32(at + 34, 0, true); // disk number and internal attributes
      view.setUint32(at + 38, ((0o100000 | entry.mode) << 16) >>> 0, true);
      view.setUint32(at + 42, entry.offset, true);
      this.#buffer.set(entry.name, at + 46);
    }
    const size = this.#offset - start;
    if (this.#offset > MAX_OFFSET) throw tooLarge();
    const at = this.#reserve(22);
    const view = this.#view;
    view.setUint32(at, END_SIGNATURE, true);
    view.setUint32(at + 4, 0, true); // this disk, the directory's disk
    view.setUint16(at + 8, this.#entries.length, true);
    view.setUint16(at + 10, this.#entries.length, true);
    view.setUint32(at + 12, size, true);
    view.setUint32(at + 16, start, true);
    view.setUint16(at + 20, 0, true); // comment length
    this.#flush();
  }

  /** Hands on what the buffer holds once it is about full. */
  flushIfFull(): void {
    if (this.#used >= this.#buffer.length >>> 1) this.#flush();
  }

  get #offset(): number {
    return this.#written + this.#used;
  }

  #begin(name: string, mode: number, flags: number): CentralEntry {
    if (this.#entries.length >= MAX_ENTRIES) {
      throw new PackageError(
        "too-large",
        `a ZIP package holds at most ${MAX_ENTRIES} files; pack this skill as tar.gz`,
      );
    }
    const bytes = encoder.encode(name);
    const ascii = bytes.length === name.length;
    const entry: CentralEntry = {
      name: bytes,
      flags: flags | (ascii ? 0 : FLAG_UTF8),
      mode: mode & 0o777,
      offset: this.#offset,
      crc: 0,
      compressedSize: 0,
      size: 0,
    };
    if (entry.offset > MAX_OFFSET) throw tooLarge();
    this.#entries.push(entry);
    return entry;
  }

  #local(entry: CentralEntry): void {
    this.#checkSize(entry);
    const at = this.#reserve(30 + entry.name.length);
    const view = this.#view;
    const streamed = (entry.flags & FLAG_DESCRIPTOR) !== 0;
    view.setUint32(at, LOCAL_SIGNATURE, true);
    view.setUint16(at + 4, VERSION_NEEDED, true);
    view.setUint16(at + 6, entry.flags, true);
    view.setUint16(at + 8, DEFLATE, true);
    view.setUint16(at + 10, DOS_TIME, true);
    view.setUint16(at + 12, DOS_DATE, true);
    view.setUint32(at + 14, streamed ? 0 : entry.crc, true);
    view.setUint32(at + 18, streamed ? 0 : entry.compressedSize, true);
    view.setUint32(at + 22, streamed ? 0 : entry.size, true);
    view.setUint16(at + 26, entry.name.length, true);
    view.setUint16(at + 28, 0, true); // extra field length
    this.#buffer.set(entry.name, at + 30);
  }

  #checkSize(entry: CentralEntry): void {
    if (entry.size > MAX_OFFSET || entry.compressedSize > MAX_OFFSET) {
      throw tooLarge();
    }
  }

  /** Room for `bytes` in the buffer (handing on what it holds first if needed). */
  #reserve(bytes: number): number {
    if (this.#used + bytes > this.#buffer.length) this.#flush();
    if (bytes > this.#buffer.length) {
      throw new RangeError(`A ZIP header of ${bytes} bytes is too long`);
    }
    const at = this.#used;
    this.#used += bytes;
    return at;
  }

  #append(data: Uint8Array): void {
    if (this.#used + data.byteLength <= this.#buffer.length) {
      this.#buffer.set(data, this.#used);
      this.#used += data.byteLength;
      return;
    }
    this.#flush();
    if (data.byteLength <= this.#buffer.length >>> 1) {
      this.#buffer.set(data, 0);
      this.#used = data.byteLength;
    } else {
      // A large piece goes on as it is (a copy: the caller may reuse it).
      this.#emit(data.slice());
      this.#written += data.byteLength;
    }
  }

  #flush(): void {
    if (this.#used === 0) return;
    this.#emit(this.#buffer.slice(0, this.#used));
    this.#written += this.#used;
    this.#used = 0;
  }
}

function tooLarge(): PackageError {
  return new PackageError(
    "too-large",
    "a ZIP package holds at most 4 GiB (no ZIP64); pack this skill as tar.gz",
  );
}
