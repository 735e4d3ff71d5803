/**
 * Builders of hostile archives for the package tests: ZIP through fflate
 * (any name, any mode in the external attributes), tar through raw ustar
 * headers (any name bytes, any type), gzip through CompressionStream.
 *
 * @module
 */
import { concatBytes } from "../../_internal/std.ts";
import { Zip, type Zippable, ZipPassThrough, zipSync } from "fflate";

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

/** A ZIP of the entries, in order (duplicates allowed). */
export function makeZip(entries: readonly ZipSpec[]): Uint8Array {
  const chunks: Uint8Array[] = [];
  const zip = new Zip((error, data) => {
    if (error) throw error;
    chunks.push(data);
  });
  for (const spec of entries) {
    const entry = new ZipPassThrough(spec.name);
    entry.os = 3;
    entry.attrs = ((spec.mode ?? 0o100644) << 16) >>> 0;
    entry.mtime = new Date(1980, 0, 1);
    zip.add(entry);
    const data = typeof spec.data === "string"
      ? encoder.encode(spec.data)
      : spec.data ?? new Uint8Array(0);
    entry.push(data, true);
  }
  zip.end();
  return concatBytes(chunks);
}

/** A compressed ZIP of name → content (for bombs). */
export function makeDeflatedZip(files: Record<string, Uint8Array>): Uint8Array {
  const tree: Zippable = {};
  for (const [name, data] of Object.entries(files)) {
    tree[name] = [data, { level: 9 }];
  }
  return zipSync(tree);
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
