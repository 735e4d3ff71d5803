/**
 * Packing a skill folder into a reproducible archive: ZIP (the container
 * written by `_zip_writer.ts`, the data deflated by the runtime's zlib) or
 * tar.gz (ustar written by `modern-tar`, gzip by the runtime's
 * `CompressionStream`).
 *
 * @module
 */
import { crc32, deflateRawSync } from "node:zlib";
import { createTarPacker } from "modern-tar";
import { hostPath } from "../_internal/std.ts";
import { comparePaths } from "../_internal/compare.ts";
import { writeStreamAtomically } from "../_internal/atomic_write.ts";
import {
  type CopyPolicy,
  type SkillFilePath,
  walkSkillPaths,
} from "../workspace/copy.ts";
import { parseSkillMd } from "../skill/parse.ts";
import { PackageError } from "./errors.ts";
import { hashingStream } from "./_digest.ts";
import { checkSkillFolderName, type PackageFormat } from "./_entries.ts";
import { ZipWriter } from "./_zip_writer.ts";

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
  /**
   * Told as the archive is made (often: every chunk of it); the CLI shows it
   * on a terminal.
   */
  readonly onProgress?: (progress: PackageProgress) => void;
}

/**
 * How far a pack or an install has come: `"pack"` the archive made so far,
 * `"read"` the archive read (downloaded) so far, `"extract"` what has been
 * unpacked so far.
 */
export interface PackageProgress {
  /** What is going on. */
  readonly stage: "pack" | "read" | "extract";
  /** Bytes so far: of the archive (`pack`, `read`) or unpacked (`extract`). */
  readonly bytes: number;
  /** Files so far (0 while an archive is read). */
  readonly files: number;
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
  const counts = { files: 0 };
  const chunks = format === "zip"
    ? zipChunks(name, files, options.signal, counts)
    : tarGzChunks(name, files, options.signal, counts);
  const hashing = hashingStream();
  let stream = ReadableStream.from(chunks).pipeThrough(hashing.stream);
  const onProgress = options.onProgress;
  if (onProgress) {
    let made = 0;
    stream = stream.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          made += chunk.byteLength;
          onProgress({ stage: "pack", bytes: made, files: counts.files });
          controller.enqueue(chunk);
        },
      }),
    );
  }
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
    files: counts.files,
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
  const counts = { files: 0 };
  const chunks = format === "zip"
    ? zipChunks(name, files, options.signal, counts)
    : tarGzChunks(name, files, options.signal, counts);
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
): Promise<{ name: string; files: SkillFilePath[] }> {
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
  const files: SkillFilePath[] = [];
  for await (
    const file of walkSkillPaths(dir, options.policy, {
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

/** A file of the skill, opened: its size and mode from the open file. */
interface OpenFile extends Disposable {
  readonly file: Deno.FsFile;
  readonly size: number;
  /** The permission bits to record (`0o644` where the host has none). */
  readonly mode: number;
}

/**
 * Opens a file of the skill once (its size and mode from the open file, no
 * separate `stat`); `null` when it vanished or is no longer a regular file
 * since the walk (it is left out, as the walk leaves out what it no longer
 * finds).
 */
function openFile(entry: SkillFilePath): OpenFile | null {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(entry.path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
  try {
    const info = file.statSync();
    if (!info.isFile) {
      file.close();
      return null;
    }
    return {
      file,
      size: info.size,
      mode: info.mode === null ? 0o644 : info.mode & 0o777,
      [Symbol.dispose]: () => {
        try {
          file.close();
        } catch {
          // Already closed: a file read to its end through its stream.
        }
      },
    };
  } catch (error) {
    file.close();
    throw error;
  }
}

/**
 * Reads a small file whole into `buffer` (at least its size plus one byte):
 * one read in the common case, as a regular file gives all that is asked up
 * to its end (a shorter read is the end), and asking one byte more than its
 * size shows whether it grew.
 */
function readWhole(
  entry: SkillFilePath,
  opened: OpenFile,
  buffer: Uint8Array,
): Uint8Array {
  let length = 0;
  for (;;) {
    const asked = opened.size + 1 - length;
    const n = opened.file.readSync(buffer.subarray(length, opened.size + 1));
    if (n === null || n === 0) break;
    length += n;
    if (length > opened.size) throw grew(entry);
    if (n < asked) break;
  }
  if (length !== opened.size) throw changedSize(entry);
  return buffer.subarray(0, length);
}

/** The chunks of a large file, streamed. */
async function* streamedChunks(
  entry: SkillFilePath,
  opened: OpenFile,
  signal: AbortSignal | undefined,
): AsyncGenerator<Uint8Array> {
  let written = 0;
  for await (const chunk of opened.file.readable) {
    signal?.throwIfAborted();
    written += chunk.byteLength;
    if (written > opened.size) throw grew(entry);
    yield chunk;
  }
  if (written !== opened.size) throw changedSize(entry);
}

function grew(entry: SkillFilePath): Error {
  return new Error(`Cannot pack "${entry.path}": it grew while being packed`);
}

function changedSize(entry: SkillFilePath): Error {
  return new Error(
    `Cannot pack "${entry.path}": it changed size while being packed`,
  );
}

async function* zipChunks(
  name: string,
  files: readonly SkillFilePath[],
  signal: AbortSignal | undefined,
  counts: { files: number },
): AsyncGenerator<Uint8Array> {
  const ready: Uint8Array[] = [];
  const zip = new ZipWriter((chunk) => ready.push(chunk), CHUNK_BYTES);
  // One buffer for every small file: its bytes are compressed and their
  // CRC taken before the next file is read.
  let buffer = new Uint8Array(0);
  for (const file of files) {
    signal?.throwIfAborted();
    using opened = openFile(file);
    if (opened === null) continue;
    counts.files++;
    const entryName = `${name}/${file.relativePath}`;
    if (opened.size <= WHOLE_FILE_BYTES) {
      if (buffer.length <= opened.size) {
        buffer = new Uint8Array(
          Math.min(WHOLE_FILE_BYTES, opened.size * 2) + 1,
        );
      }
      // Files read whole go through the runtime's zlib in one call (about
      // three times faster than fflate's deflateSync on small files).
      const data = readWhole(file, opened, buffer);
      zip.add(
        entryName,
        opened.mode,
        crc32(data),
        data.byteLength,
        deflateRawSync(data, {
          level: 6,
          // An output buffer the size of the file (deflate's worst case is a
          // few bytes more): the default, 16 KiB, is allocated anew for every
          // file and makes packing many small files twice as slow.
          chunkSize: data.byteLength + (data.byteLength >>> 10) + 64,
        }),
      );
    } else {
      // Larger ones through the runtime's deflate-raw stream.
      const entry = zip.addStreamed(entryName, opened.mode);
      let crc = 0;
      let size = 0;
      const compressed = ReadableStream.from(
        streamedChunks(file, opened, signal),
      ).pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
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
        entry.push(chunk);
        yield* ready.splice(0);
      }
      entry.end(crc, size);
    }
    zip.flushIfFull();
    if (ready.length > 0) yield* ready.splice(0);
  }
  zip.end();
  yield* ready.splice(0);
}

function tarGzChunks(
  name: string,
  files: readonly SkillFilePath[],
  signal: AbortSignal | undefined,
  counts: { files: number },
): AsyncIterable<Uint8Array> {
  const { readable, controller } = createTarPacker();
  (async () => {
    for (const file of files) {
      signal?.throwIfAborted();
      using opened = openFile(file);
      if (opened === null) continue;
      counts.files++;
      const writer = controller.add({
        name: `${name}/${file.relativePath}`,
        size: opened.size,
        mode: opened.mode,
        mtime: FIXED_TIME,
        type: "file",
        uid: 0,
        gid: 0,
        uname: "",
        gname: "",
      }).getWriter();
      if (opened.size <= WHOLE_FILE_BYTES) {
        // Read whole (the writer keeps the chunk: a buffer of its own).
        await writer.write(
          readWhole(file, opened, new Uint8Array(opened.size + 1)),
        );
      } else {
        for await (const chunk of streamedChunks(file, opened, signal)) {
          await writer.write(chunk);
        }
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
