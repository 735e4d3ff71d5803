/**
 * Installing a package: spooled while its digest is checked, extracted safely
 * into a temporary folder, then renamed into a folder named after its digest.
 *
 * @module
 */
import { hostPath } from "../_internal/std.ts";
import { parseSkillMd } from "../skill/parse.ts";
import { PackageError } from "./errors.ts";
import { checkDigest, Sha256 } from "./_digest.ts";
import {
  checkSkillFolderName,
  locateSkill,
  type PackageFormat,
  type PackageLimits,
  resolveLimits,
  sniffFormat,
} from "./_entries.ts";
import { extractArchive } from "./_extract.ts";
import type { PackageProgress } from "./pack.ts";
import {
  archiveFileName,
  type InstalledSkillPackage,
  MANIFEST_FILE,
  type PackageManifest,
  readInstalled,
  treeDigest,
} from "./installed.ts";

/** What a package can be read from. */
export type PackageInput =
  | ReadableStream<Uint8Array>
  | Uint8Array
  | { readonly path: string };

/** Options of {@linkcode installPackage}. */
export interface InstallPackageOptions {
  /**
   * The folder of installed packages (the cache): each package goes to
   * `<root>/sha256-<hex>/<skill name>/`, beside its manifest.
   */
  readonly root: string;
  /** The digest the package must have; a mismatch installs nothing. */
  readonly digest?: string;
  /** Where it came from, recorded in the manifest (e.g. a URL). */
  readonly source?: string;
  /** Limits of entries, size and ratio. */
  readonly limits?: PackageLimits;
  /** Stops the install; nothing is left behind. */
  readonly signal?: AbortSignal;
  /**
   * Told as the package is read and unpacked (often: every chunk); the CLI
   * shows it on a terminal.
   */
  readonly onProgress?: (progress: PackageProgress) => void;
}

/**
 * Installs a skill package: reads it to a temporary file while computing its
 * SHA-256 (so a wrong digest is refused before anything is extracted),
 * extracts it under the rules of a safe package (see {@linkcode PackageError}),
 * checks it holds exactly one skill, makes its files read-only, and renames
 * the whole into `<root>/sha256-<hex>` in one step. A package already there
 * (installed before, or by another process at the same moment) is reused: two
 * installs of one digest end with one copy. A failure leaves nothing.
 *
 * Needs `--allow-read` and `--allow-write` of `root`.
 *
 * @param input The archive: a stream, bytes, or `{ path }` of a file.
 * @param options The root folder, expected digest, source, limits, signal.
 * @returns The installed package.
 * @throws {PackageError} The package is unsafe, corrupt, not exactly one
 * skill, or does not have the expected digest.
 *
 * @example Packing and installing a skill
 * ```ts
 * import { assert } from "@std/assert";
 * import { installPackage, packSkill } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.mkdir(`${dir}/hello`);
 *   await Deno.writeTextFile(`${dir}/hello/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\n");
 *   const packed = await packSkill(`${dir}/hello`);
 *   const installed = await installPackage(packed.bytes!, {
 *     root: `${dir}/installed`,
 *     digest: packed.digest,
 *   });
 *   assert(installed.name === "hello");
 *   assert((await Deno.readTextFile(`${installed.path}/SKILL.md`)).includes("Hi."));
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function installPackage(
  input: PackageInput,
  options: InstallPackageOptions,
): Promise<InstalledSkillPackage> {
  const stream = toStream(input);
  const { root, signal } = options;
  const expected = options.digest === undefined
    ? undefined
    : checkDigest(options.digest);
  const limits = resolveLimits(options.limits);
  if (expected !== undefined) {
    const existing = await readInstalled(root, expected).catch(() => undefined);
    if (existing) {
      await stream.cancel().catch(() => {});
      return existing;
    }
  }
  await Deno.mkdir(root, { recursive: true });
  const temp = await Deno.makeTempDir({ dir: root, prefix: ".install-" });
  try {
    // 1. Spool while hashing: nothing is extracted before the digest is known.
    const spool = hostPath.join(temp, "package");
    const hash = new Sha256();
    let archiveBytes = 0;
    try {
      using file = await Deno.open(spool, {
        write: true,
        createNew: true,
        mode: 0o600,
      });
      // A plain loop, one buffer reused for a file: streaming 1 GiB leaves
      // no garbage behind (peak memory stays flat).
      for await (const chunk of chunksOf(input, stream, signal)) {
        archiveBytes += chunk.byteLength;
        if (archiveBytes > limits.maxBytes) {
          throw new PackageError(
            "too-large",
            `the archive is larger than ${limits.maxBytes} bytes`,
          );
        }
        hash.update(chunk);
        options.onProgress?.({ stage: "read", bytes: archiveBytes, files: 0 });
        let offset = 0;
        while (offset < chunk.byteLength) {
          offset += await file.write(chunk.subarray(offset));
        }
      }
    } catch (error) {
      await stream.cancel().catch(() => {});
      if (error instanceof PackageError) throw error;
      if (signal?.aborted) throw signal.reason;
      throw new PackageError(
        "source",
        `reading it failed: ${error instanceof Error ? error.message : error}`,
        { cause: error },
      );
    }
    const digest = hash.digest();
    if (expected !== undefined && digest !== expected) {
      throw new PackageError(
        "digest-mismatch",
        `its digest is ${digest}, expected ${expected}`,
      );
    }
    const hex = digest.slice("sha256:".length);
    const existing = await readInstalled(root, digest).catch(() => undefined);
    if (existing) return existing;

    // 2. Extract into an empty folder under the rules.
    const head = new Uint8Array(4);
    {
      using file = await Deno.open(spool);
      await file.read(head);
    }
    const format = sniffFormat(head);
    if (format === undefined) {
      throw new PackageError(
        "bad-format",
        "it is neither a ZIP nor a tar.gz archive",
      );
    }
    const tree = hostPath.join(temp, "tree");
    await Deno.mkdir(tree);
    const extracted = await extractArchive(
      spool,
      archiveBytes,
      format,
      tree,
      limits,
      signal,
      undefined,
      options.onProgress,
    );
    const prefix = locateSkill(extracted.set);

    // 3. Lay it out as <out>/<name>/ beside the manifest and the archive
    //    (kept: a remote runtime streams it into its sandbox).
    const out = hostPath.join(temp, "out");
    await Deno.mkdir(out);
    const archive = archiveFileName(format);
    await Deno.rename(spool, hostPath.join(out, archive));
    await Deno.chmod(hostPath.join(out, archive), 0o444);
    const skillMd = await Deno.readTextFile(
      hostPath.join(tree, prefix, "SKILL.md"),
    );
    let name: string;
    if (prefix !== "") name = prefix.slice(0, -1);
    else {
      try {
        name = parseSkillMd(skillMd).name ?? "";
      } catch {
        name = "";
      }
      name ||= "skill";
      checkSkillFolderName(name);
    }
    await Deno.rename(
      prefix === "" ? tree : hostPath.join(tree, name),
      hostPath.join(out, name),
    );
    const files = [...extracted.files.values()]
      .map((file) => ({
        path: file.path.slice(prefix.length),
        size: file.size,
        mode: file.mode,
        digest: file.digest,
      }))
      .sort((a, b) => a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
    // Files were created read-only: installed files are never changed in place.
    const manifest: PackageManifest = {
      name,
      digest,
      format: format satisfies PackageFormat,
      ...(options.source !== undefined ? { source: options.source } : {}),
      tree: treeDigest(files),
      archive,
      files,
    };
    await Deno.writeTextFile(
      hostPath.join(out, MANIFEST_FILE),
      JSON.stringify(manifest, null, 2) + "\n",
      { mode: 0o444 },
    );

    // 4. One rename makes it visible; a concurrent install may have won.
    const final = hostPath.join(root, `sha256-${hex}`);
    try {
      await Deno.rename(out, final);
    } catch (error) {
      const other = await readInstalled(root, digest).catch(() => undefined);
      if (other) return other;
      throw error;
    }
    return await readInstalled(root, digest) as InstalledSkillPackage;
  } finally {
    await removeTree(temp);
  }
}

/** Removes a folder whose files or folders may be read-only. */
export async function removeTree(path: string): Promise<void> {
  try {
    await Deno.remove(path, { recursive: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    // Read-only folders: make them writable, then remove.
    await makeWritable(path).catch(() => {});
    await Deno.remove(path, { recursive: true }).catch(() => {});
  }
}

async function makeWritable(path: string): Promise<void> {
  const info = await Deno.lstat(path);
  if (info.isDirectory) {
    await Deno.chmod(path, 0o755);
    for await (const entry of Deno.readDir(path)) {
      await makeWritable(hostPath.join(path, entry.name));
    }
  }
}

function toStream(input: PackageInput): ReadableStream<Uint8Array> {
  if (input instanceof ReadableStream) return input;
  if (input instanceof Uint8Array) {
    return ReadableStream.from([input]);
  }
  if (input && typeof input === "object" && typeof input.path === "string") {
    const path = input.path;
    let file: Deno.FsFile | undefined;
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        file ??= await Deno.open(path);
        const buffer = new Uint8Array(1 << 16);
        const n = await file.read(buffer);
        if (n === null) {
          file.close();
          controller.close();
        } else controller.enqueue(buffer.subarray(0, n));
      },
      cancel() {
        file?.close();
      },
    });
  }
  throw new TypeError(
    "Cannot install a package: give a stream, bytes or { path }",
  );
}

/**
 * The bytes of the input: a file is read into one reused buffer (each chunk
 * is consumed before the next read), a stream chunk by chunk.
 */
async function* chunksOf(
  input: PackageInput,
  stream: ReadableStream<Uint8Array>,
  signal: AbortSignal | undefined,
): AsyncGenerator<Uint8Array> {
  if (
    !(input instanceof ReadableStream) && !(input instanceof Uint8Array)
  ) {
    await stream.cancel().catch(() => {});
    using file = await Deno.open(input.path);
    const buffer = new Uint8Array(256 * 1024);
    while (true) {
      signal?.throwIfAborted();
      const n = await file.read(buffer);
      if (n === null) return;
      yield buffer.subarray(0, n);
    }
  }
  const reader = stream.getReader();
  try {
    while (true) {
      signal?.throwIfAborted();
      const { value, done } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}
