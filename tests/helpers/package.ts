/**
 * Builders of hostile archives for the package tests: ZIP through raw
 * headers (any name, any mode in the external attributes, duplicates; data
 * stored or deflated by the runtime's zlib), tar through raw ustar headers
 * (any name bytes, any type), gzip through CompressionStream.
 *
 * @module
 */
import { concatBytes } from "../../_internal/std.ts";
import { crc32, deflateRawSync } from "node:zlib";

const encoder = new TextEncoder();

/** One entry of a test ZIP. */
export interface ZipSpec {
  /** The name, as text or raw bytes (then written with the UTF-8 flag off). */
  readonly name: string;
  /** The content. */
  readonly data?: Uint8Array | string;
  /** The Unix mode including the type bits (default a regular file 0o100644). */
  readonly mode?: number;
}

/** Options of {@linkcode makeZip}. */
export interface MakeZipOptions {
  /** The deflate level: 0 (the default) stores the data. */
  readonly level?: number;
}

/** 1980-01-01 00:00, the first DOS date and time: every entry's. */
const DOS_DATE = (1 << 5) | 1;

/** A ZIP of the entries, in order (duplicates allowed). */
export function makeZip(
  entries: readonly ZipSpec[],
  options: MakeZipOptions = {},
): Uint8Array {
  const level = options.level ?? 0;
  const method = level === 0 ? 0 : 8;
  const parts: Uint8Array[] = [];
  const records: Uint8Array[] = [];
  let offset = 0;
  for (const spec of entries) {
    const name = encoder.encode(spec.name);
    const data = typeof spec.data === "string"
      ? encoder.encode(spec.data)
      : spec.data ?? new Uint8Array(0);
    const body = method === 0 ? data : deflateRawSync(data, { level });
    const flags = name.length === spec.name.length ? 0 : 1 << 11; // UTF-8
    const crc = crc32(data) >>> 0;
    const local = new Uint8Array(30 + name.length);
    const head = new DataView(local.buffer);
    head.setUint32(0, 0x04034b50, true);
    head.setUint16(4, 20, true);
    head.setUint16(6, flags, true);
    head.setUint16(8, method, true);
    head.setUint16(12, DOS_DATE, true);
    head.setUint32(14, crc, true);
    head.setUint32(18, body.length, true);
    head.setUint32(22, data.length, true);
    head.setUint16(26, name.length, true);
    local.set(name, 30);
    const record = new Uint8Array(46 + name.length);
    const view = new DataView(record.buffer);
    view.setUint32(0, 0x02014b50, true);
    view.setUint16(4, (3 << 8) | 20, true); // made by Unix
    view.setUint16(6, 20, true);
    view.setUint16(8, flags, true);
    view.setUint16(10, method, true);
    view.setUint16(14, DOS_DATE, true);
    view.setUint32(16, crc, true);
    view.setUint32(20, body.length, true);
    view.setUint32(24, data.length, true);
    view.setUint16(28, name.length, true);
    view.setUint32(38, ((spec.mode ?? 0o100644) << 16) >>> 0, true);
    view.setUint32(42, offset, true);
    record.set(name, 46);
    parts.push(local, body);
    records.push(record);
    offset += local.length + body.length;
  }
  const directory = concatBytes(records);
  const end = new Uint8Array(22);
  const view = new DataView(end.buffer);
  view.setUint32(0, 0x06054b50, true);
  view.setUint16(8, entries.length, true);
  view.setUint16(10, entries.length, true);
  view.setUint32(12, directory.length, true);
  view.setUint32(16, offset, true);
  return concatBytes([...parts, directory, end]);
}

/** A compressed ZIP of name → content (for bombs). */
export function makeDeflatedZip(files: Record<string, Uint8Array>): Uint8Array {
  return makeZip(
    Object.entries(files).map(([name, data]) => ({ name, data })),
    { level: 9 },
  );
}

/** A ZIP whose one entry has a name of raw, non-UTF-8 bytes. */
export function makeZipWithRawName(
  prefix: string,
  raw: Uint8Array,
): Uint8Array {
  // Written with a placeholder of the same length, then patched in place
  // (local header and central directory both).
  const placeholder = prefix + "X".repeat(raw.length);
  const zip = makeZip([
    { name: `${prefix}SKILL.md`, data: "---\nname: s\ndescription: d\n---\n" },
    { name: placeholder, data: "x" },
  ]);
  const needle = encoder.encode(placeholder);
  for (let i = 0; i + needle.length <= zip.length; i++) {
    let match = true;
    for (let j = 0; j < needle.length; j++) {
      if (zip[i + j] !== needle[j]) {
        match = false;
        break;
      }
    }
    if (match) zip.set(raw, i + prefix.length);
  }
  return zip;
}

/** One entry of a test tar. */
export interface TarSpec {
  /** The name, as text or raw bytes. */
  readonly name: string | Uint8Array;
  /** The ustar type flag: "0" file, "1" hard link, "2" symlink, "3" char, "4" block, "5" dir, "6" fifo. */
  readonly type?: string;
  /** The content (files only). */
  readonly data?: Uint8Array | string;
  /** The link target. */
  readonly linkname?: string;
  /** Permission bits (default 0o644). */
  readonly mode?: number;
}

/** An uncompressed ustar archive of the entries, in order. */
export function makeTar(entries: readonly TarSpec[]): Uint8Array {
  const blocks: Uint8Array[] = [];
  for (const spec of entries) {
    const data = typeof spec.data === "string"
      ? encoder.encode(spec.data)
      : spec.data ?? new Uint8Array(0);
    const header = new Uint8Array(512);
    const name = typeof spec.name === "string"
      ? encoder.encode(spec.name)
      : spec.name;
    header.set(name.subarray(0, 100), 0);
    const octal = (value: number, offset: number, length: number) => {
      header.set(
        encoder.encode(value.toString(8).padStart(length - 1, "0") + "\0"),
        offset,
      );
    };
    octal(spec.mode ?? 0o644, 100, 8);
    octal(0, 108, 8);
    octal(0, 116, 8);
    octal(data.length, 124, 12);
    octal(0, 136, 12);
    header.set(encoder.encode(spec.type ?? "0"), 156);
    if (spec.linkname) header.set(encoder.encode(spec.linkname), 157);
    header.set(encoder.encode("ustar\u000000"), 257);
    header.fill(0x20, 148, 156);
    let sum = 0;
    for (const byte of header) sum += byte;
    header.set(encoder.encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
    blocks.push(header);
    if (data.length > 0) {
      const padded = new Uint8Array(Math.ceil(data.length / 512) * 512);
      padded.set(data);
      blocks.push(padded);
    }
  }
  blocks.push(new Uint8Array(1024));
  return concatBytes(blocks);
}

/** Gzips bytes. */
export async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(
    await new Response(
      new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(
        new CompressionStream("gzip"),
      ),
    ).arrayBuffer(),
  );
}

/** A minimal SKILL.md. */
export function skillMd(name: string): string {
  return `---\nname: ${name}\ndescription: A test skill.\n---\nDo it.\n`;
}

/** `n` random bytes (`crypto.getRandomValues` takes at most 64 KiB a call). */
export function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) {
    crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
  }
  return out;
}
