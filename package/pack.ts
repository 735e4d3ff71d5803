/**
 * Packing a skill folder into a reproducible archive: ZIP (written by
 * `fflate`) or tar.gz (ustar written by `modern-tar`, gzip by the runtime's
 * `CompressionStream`).
 *
 * @module
 */
import { crc32, deflateRawSync } from "node:zlib";
import { Zip, type ZipInputFile } from "fflate";
import { createTarPacker } from "modern-tar";
import { hostPath } from "../_internal/std.ts";
import { comparePaths } from "../_internal/compare.ts";
import { writeStreamAtomically } from "../_internal/atomic_write.ts";
import {
  type CopyPolicy,
  type SkillFileEntry,
  walkSkillFiles,
} from "../workspace/copy.ts";
import { parseSkillMd } from "../skill/parse.ts";
import { PackageError } from "./errors.ts";
import { hashingStream } from "./_digest.ts";
import { checkSkillFolderName, type PackageFormat } from "./_entries.ts";

export type { PackageFormat } from "./_entries.ts";

/** Options of {@linkcode packSkill}. */
export interface PackSkillOptions {
  /** The archive's format. Default `"zip"`. */
  readonly format?: PackageFormat;
  /**
   * A file to write the archive to (atomically: a temporary file renamed into
   * place). Without it the archive is returned in `bytes`.
   */
  readonly output?: string;
  /** Which files go; default: the copy policy's defaults (secrets left out). */
  readonly policy?: CopyPolicy;
  /** Stops packing; nothing is left behind. */
  readonly signal?: AbortSignal;
}

/** What {@linkcode packSkill} made. */
export interface PackResult {
  /** The archive's digest, `sha256:` and 64 hex digits. */
  readonly digest: string;
  /** The skill's name: the package's one top-level folder. */
  readonly name: string;
  /** The archive's format. */
  readonly format: PackageFormat;
  /** The archive's size in bytes. */
  readonly size: number;
  /** How many files it holds. */
  readonly files: number;
  /** The archive, when no `output` was given. */
  readonly bytes?: Uint8Array;
}

/** The fixed time of every entry: 1980-01-01 00:00 (the first DOS time). */
const FIXED_TIME = new Date(1980, 0, 1, 0, 0, 0);
/** Files read whole; larger ones are streamed. */
const WHOLE_FILE_BYTES = 1 << 20;
/** Bytes gathered before the archive stream hands a chunk on. */
const CHUNK_BYTES = 1 << 16;

/**
 * Packs a skill folder into a reproducible archive holding one top-level
 * folder named after the skill (the `name` of its `SKILL.md`, else the
 * folder's name): entries sorted by path, every time fixed (1980-01-01), the
 * permission bits kept, the copy policy's exclusions and secret files left
 * out. A symlink, socket, pipe or device in the folder is refused (never
 * followed). The same folder gives the same bytes, so the same digest.
 *
 * Needs `--allow-read` of the folder (and `--allow-write` of `output`).
 *
 * @param dir The skill's folder (holding `SKILL.md`).
 * @param options Format, output file, policy, signal.
 * @returns The digest, name, format, size and file count (and the bytes
 * without `output`).
 * @throws {PackageError} There is no `SKILL.md`, its name cannot name a
 * folder, or the folder holds a link or a special file.
 * @throws {Deno.errors.NotFound} The folder does not exist.
 *
 * @example Packing a skill twice gives the same digest
 * ```ts
 * import { assert } from "@std/assert";
 * import { packSkill } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\n");
 *   const a = await packSkill(dir, { format: "zip" });
 *   const b = await packSkill(dir, { format: "zip" });
 *   assert(a.digest === b.digest && a.name === "hello");
 *   assert(/^sha256:[0-9a-f]{64}$/.test(a.digest));
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function packSkill(
  dir: string,
  options: PackSkillOptions = {},
): Promise<PackResult> {
  const format = options.format ?? "zip";
  if (format !== "zip" && format !== "tar.gz") {
    throw new TypeError(
      `Cannot pack "${dir}": format must be "zip" or "tar.gz", got ${
        JSON.stringify(format)
      }`,
    );
  }
  const { name, files } = await collect(dir, options);
  const chunks = format === "zip"
    ? zipChunks(name, files, options.signal)
    : tarGzChunks(name, files, options.signal);
  const hashing = hashingStream();
  const stream = ReadableStream.from(chunks).pipeThrough(hashing.stream);
  let bytes: Uint8Array | undefined;
  let size: number;
  if (options.output !== undefined) {
    size = await writeStreamAtomically(
      stream,
      options.output,
      options.signal ? { signal: options.signal } : {},
    );
  } else {
    bytes = new Uint8Array(await new Response(stream).arrayBuffer());
    size = bytes.byteLength;
  }
  return Object.freeze({
    digest: await hashing.digest,
    name,
    format,
    size,
    files: files.length,
    ...(bytes ? { bytes } : {}),
  });
}

/**
 * Packs a skill folder as a stream, for uploading without a file.
 * {@linkcode packSkill} is the same, written to a file or to bytes.
 *
 * @param dir The skill's folder.
 * @param options Format, policy, signal.
 * @returns The skill's name, the archive's bytes as they are made, and its
 * digest once the stream has been read to the end.
 *
 * @example Streaming a package
 * ```ts
 * import { assert } from "@std/assert";
 * import { packSkillStream } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\n");
 *   const packed = await packSkillStream(dir, { format: "tar.gz" });
 *   const bytes = await new Response(packed.stream).bytes();
 *   assert(bytes[0] === 0x1f && (await packed.digest).startsWith("sha256:"));
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function packSkillStream(
  dir: string,
  options: Omit<PackSkillOptions, "output"> = {},
): Promise<{
  readonly name: string;
  readonly stream: ReadableStream<Uint8Array>;
  readonly digest: Promise<string>;
}> {
  const format = options.format ?? "zip";
  const { name, files } = await collect(dir, options);
  const chunks = format === "zip"
    ? zipChunks(name, files, options.signal)
    : tarGzChunks(name, files, options.signal);
  const hashing = hashingStream();
  return {
    name,
    stream: ReadableStream.from(chunks).pipeThrough(hashing.stream),
    digest: hashing.digest,
  };
}

async function collect(
  dir: string,
  options: Omit<PackSkillOptions, "output">,
): Promise<{ name: string; files: SkillFileEntry[] }> {
  let text: string;
  try {
    text = await Deno.readTextFile(hostPath.join(dir, "SKILL.md"));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      try {
        await Deno.stat(dir);
      } catch {
        throw new Deno.errors.NotFound(`Cannot pack "${dir}": no such folder`);
      }
      throw new PackageError(
        "no-skill",
        `"${dir}" has no SKILL.md, so it is not a skill`,
      );
    }
    throw error;
  }
  let name: string | undefined;
  try {
    name = parseSkillMd(text).name;
  } catch {
    name = undefined;
  }
  name ||= hostPath.basename(hostPath.resolve(dir));
  checkSkillFolderName(name);
  const files: SkillFileEntry[] = [];
  for await (
    const file of walkSkillFiles(dir, options.policy, {
      ...(options.signal ? { signal: options.signal } : {}),
      onSkipped(entry) {
        throw new PackageError(
          entry.kind === "symlink" ? "link" : "special-file",
          entry.kind === "symlink"
            ? "a skill package cannot hold links; replace it with the file it points to"
            : "a skill package holds regular files only (not sockets, pipes or devices)",
          { entry: entry.relativePath },
        );
      },
    })
  ) files.push(file);
  files.sort((a, b) => comparePaths(a.relativePath, b.relativePath));
  return { name, files };
}

function modeOf(file: SkillFileEntry): number {
  return file.mode === null
    ? (file.executable ? 0o755 : 0o644)
    : file.mode & 0o777;
}

async function* fileChunks(
  file: SkillFileEntry,
  signal: AbortSignal | undefined,
): AsyncGenerator<Uint8Array> {
  if (file.size <= WHOLE_FILE_BYTES) {
    // Small files are read synchronously: an asynchronous read costs a hop to
    // the thread pool, several times the read itself for files this small.
    yield Deno.readFileSync(file.path);
    return;
  }
  using handle = await Deno.open(file.path);
  for await (const chunk of handle.readable) {
    signal?.throwIfAborted();
    yield chunk;
  }
}

async function* zipChunks(
  name: string,
  files: readonly SkillFileEntry[],
  signal: AbortSignal | undefined,
): AsyncGenerator<Uint8Array> {
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  let failure: Error | null = null;
  const zip = new Zip((error, data) => {
    if (error) failure = error;
    else {
      pending.push(data);
      pendingBytes += data.byteLength;
    }
  });
  const take = (): Uint8Array => {
    const out = concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    return out;
  };
  for (const file of files) {
    signal?.throwIfAborted();
    // fflate's container, fed with data compressed here: fflate's streaming
    // deflate corrupts some inputs (seen with fflate 0.8.2 and 0.8.3 on the
    // fonts of canvas-design). Files read whole go through the runtime's
    // zlib in one call (about three times faster than fflate's deflateSync
    // on small files), larger ones through its deflate-raw stream.
    const entry: ZipInputFile = {
      filename: `${name}/${file.relativePath}`,
      compression: 8,
      mtime: FIXED_TIME,
      os: 3, // Unix: the external attributes hold the mode
      attrs: ((0o100000 | modeOf(file)) << 16) >>> 0,
      size: 0,
      crc: 0,
      terminate() {},
    };
    zip.add(entry);
    const push = entry.ondata!;
    if (file.size <= WHOLE_FILE_BYTES) {
      const data = Deno.readFileSync(file.path);
      entry.crc = crc32(data);
      entry.size = data.byteLength;
      push(
        null,
        deflateRawSync(data, { level: 6 }) as Uint8Array<ArrayBuffer>,
        true,
      );
    } else {
      let crc = 0;
      let size = 0;
      using handle = await Deno.open(file.path);
      const compressed = handle.readable.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            signal?.throwIfAborted();
            crc = crc32(chunk, crc);
            size += chunk.byteLength;
            controller.enqueue(chunk);
          },
        }),
      ).pipeThrough(
        new CompressionStream("deflate-raw") as unknown as TransformStream<
          Uint8Array,
          Uint8Array
        >,
      );
      for await (const chunk of compressed) {
        push(null, chunk as Uint8Array<ArrayBuffer>, false);
        if (failure) throw failure;
        if (pendingBytes >= CHUNK_BYTES) yield take();
      }
      entry.crc = crc;
      entry.size = size;
      push(null, new Uint8Array(0), true);
    }
    if (failure) throw failure;
    if (pendingBytes >= CHUNK_BYTES) yield take();
  }
  zip.end();
  if (failure) throw failure;
  if (pendingBytes > 0) yield take();
}

function tarGzChunks(
  name: string,
  files: readonly SkillFileEntry[],
  signal: AbortSignal | undefined,
): AsyncIterable<Uint8Array> {
  const { readable, controller } = createTarPacker();
  (async () => {
    for (const file of files) {
      signal?.throwIfAborted();
      const writer = controller.add({
        name: `${name}/${file.relativePath}`,
        size: file.size,
        mode: modeOf(file),
        mtime: FIXED_TIME,
        type: "file",
        uid: 0,
        gid: 0,
        uname: "",
        gname: "",
      }).getWriter();
      let written = 0;
      for await (const chunk of fileChunks(file, signal)) {
        written += chunk.byteLength;
        if (written > file.size) {
          throw new Error(
            `Cannot pack "${file.path}": it grew while being packed`,
          );
        }
        await writer.write(chunk);
      }
      if (written !== file.size) {
        throw new Error(
          `Cannot pack "${file.path}": it changed size while being packed`,
        );
      }
      await writer.close();
    }
    controller.finalize();
  })().catch((error) => controller.error(error));
  return readable.pipeThrough(
    new CompressionStream("gzip") as unknown as TransformStream<
      Uint8Array,
      Uint8Array
    >,
  );
}

function concat(chunks: readonly Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
