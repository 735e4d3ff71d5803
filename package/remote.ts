/**
 * Packages that are never extracted on this host: a skill loaded from a
 * package as it streams (in memory, no disk), and prepared straight inside a
 * remote sandbox: the archive streams from its source (a store, a URL, a
 * file, bytes) into the sandbox while its digest and entries are checked,
 * and is extracted there only once both hold. Runs where there is no disk
 * worth the name (an edge function): nothing here writes a local file.
 *
 * @module
 */
import { posix } from "../_internal/std.ts";
import { shellQuote } from "../_internal/shell_quote.ts";
import { parseSkillMd } from "../skill/parse.ts";
import type { Skill } from "../skill/types.ts";
import type {
  RemoteMaterializeTarget,
  RemoteSkillOrigin,
  SkillWithOrigin,
} from "../runtimes/remote/origin.ts";
import { PackageError } from "./errors.ts";
import { checkDigest } from "./_digest.ts";
import {
  checkSkillFolderName,
  type PackageLimits,
  resolveLimits,
} from "./_entries.ts";
import { type CheckedPackage, StreamCheck } from "./_stream_check.ts";
import type { SkillPackageStore } from "./store.ts";

/** Where a package's archive is read from, each time it is needed. */
export interface PackageArchiveSource {
  /** The digest the archive must have. */
  readonly digest: string;
  /** Where it is, for messages (a URL, `store:<digest>`, a path). */
  readonly source: string;
  /** Opens the archive as a stream (again on each call). */
  open(signal?: AbortSignal): Promise<ReadableStream<Uint8Array>>;
}

/** What {@linkcode packageSource} takes: a store, a URL, a file or bytes, with the digest. */
export type PackageSourceInput =
  | { readonly store: SkillPackageStore; readonly digest: string }
  | {
    readonly url: string;
    readonly digest: string;
    /** The `fetch` to use. */
    readonly fetch?: typeof fetch;
  }
  | { readonly path: string; readonly digest: string }
  | { readonly bytes: Uint8Array; readonly digest: string };

/**
 * A package's archive source: a store (by digest), an `https://` URL (or
 * `http://` on loopback), a local file, or bytes; always with the digest it
 * must have, checked wherever it is read.
 *
 * @param input Where, and the digest.
 * @returns The source.
 * @throws {TypeError} A malformed digest, or a URL that is not https.
 *
 * @example A source over bytes
 * ```ts
 * import { assert } from "@std/assert";
 * import { packageSource, packSkill } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\n");
 *   const packed = await packSkill(dir);
 *   const source = packageSource({ bytes: packed.bytes!, digest: packed.digest });
 *   const bytes = await new Response(await source.open()).bytes();
 *   assert(bytes.length === packed.size);
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export function packageSource(input: PackageSourceInput): PackageArchiveSource {
  const digest = checkDigest(input?.digest);
  if ("store" in input) {
    const store = input.store;
    return {
      digest,
      source: `store:${digest}`,
      open: () => store.open(digest),
    };
  }
  if ("url" in input) {
    const url = new URL(input.url);
    const loopback = ["127.0.0.1", "[::1]", "localhost"].includes(
      url.hostname,
    );
    if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) {
      throw new TypeError(
        `Cannot fetch "${url.href}": only https:// URLs (or http:// on loopback) are allowed`,
      );
    }
    const fetcher = input.fetch ?? fetch;
    return {
      digest,
      source: url.href,
      async open(signal) {
        let response: Response;
        try {
          response = await fetcher(url.href, signal ? { signal } : {});
        } catch (error) {
          throw new PackageError(
            "source",
            `fetching "${url.href}" failed: ${
              error instanceof Error ? error.message : error
            }`,
            { cause: error },
          );
        }
        if (!response.ok || !response.body) {
          await response.body?.cancel();
          throw new PackageError(
            "source",
            `fetching "${url.href}" answered HTTP ${response.status}`,
          );
        }
        return response.body;
      },
    };
  }
  if ("path" in input) {
    const path = input.path;
    return {
      digest,
      source: path,
      open: async () => (await Deno.open(path)).readable,
    };
  }
  if ("bytes" in input && input.bytes instanceof Uint8Array) {
    const bytes = input.bytes;
    return {
      digest,
      source: "bytes",
      open: () => Promise.resolve(ReadableStream.from([bytes])),
    };
  }
  throw new TypeError(
    "Cannot make a package source: give { store, digest }, { url, digest }, { path, digest } or { bytes, digest }",
  );
}

/** Options of {@linkcode loadPackageSkill}. */
export interface LoadPackageSkillOptions {
  /** Limits of entries, size and ratio. */
  readonly limits?: PackageLimits;
  /**
   * A ZIP is held in memory while it is checked, to read its `SKILL.md`, up
   * to this size. Default 64 MiB. (A tar.gz needs no such room.)
   */
  readonly maxZipBytes?: number;
  /** Options of the preparation in a sandbox (see {@linkcode preparePackageInSandbox}). */
  readonly prepare?: PrepareInSandboxOptions;
  /** Stops the load. */
  readonly signal?: AbortSignal;
}

/** A skill loaded from a package that is not extracted on this host. */
export interface PackageSkill extends SkillWithOrigin {
  /** The package: its source, digest, size, format and files. */
  readonly package: {
    /** Where it is read from. */
    readonly source: string;
    /** The archive's digest. */
    readonly digest: string;
    /** The archive's size in bytes. */
    readonly size: number;
    /** The archive's format. */
    readonly format: "zip" | "tar.gz";
    /** How many files the skill has. */
    readonly files: number;
  };
}

/**
 * Loads a skill from a package without extracting it on this host: the
 * archive streams once through memory while its digest and every entry are
 * checked (the rules of a safe package) and its `SKILL.md` is read. The
 * skill carries its package as its origin, so a remote runtime prepares it
 * straight inside its sandbox ({@linkcode preparePackageInSandbox}); its
 * `basePath` is a virtual `/.skillrun-packages/sha256-<hex>/<name>`, never a
 * folder of this host (give a local runtime an installed package instead).
 * Pass it to `buildSkillTools({ skills })`.
 *
 * Needs `--allow-net` for a URL or store, `--allow-read` for a file; no write.
 *
 * @param from The package's source (or what {@linkcode packageSource} takes).
 * @param options Limits, the memory for a ZIP, a signal.
 * @returns The skill.
 * @throws {PackageError} A wrong digest, an unsafe entry, not exactly one
 * skill, or a `SKILL.md` without name or description.
 *
 * @example Loading a skill from package bytes
 * ```ts
 * import { assert } from "@std/assert";
 * import { loadPackageSkill, packSkill } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\nSay hi.\n");
 *   const packed = await packSkill(dir, { format: "tar.gz" });
 *   const skill = await loadPackageSkill({ bytes: packed.bytes!, digest: packed.digest });
 *   assert(skill.name === "hello" && skill.instructions === "Say hi.\n");
 *   assert(skill.package.digest === packed.digest);
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function loadPackageSkill(
  from: PackageArchiveSource | PackageSourceInput,
  options: LoadPackageSkillOptions = {},
): Promise<PackageSkill> {
  const source = "open" in from && typeof from.open === "function"
    ? from
    : packageSource(from as PackageSourceInput);
  const limits = resolveLimits(options.limits);
  const check = new StreamCheck({
    limits,
    expected: source.digest,
    readSkillMd: true,
    keepZipBytes: options.maxZipBytes ?? 64 * 1024 * 1024,
  });
  const { signal } = options;
  const stream = await source.open(signal);
  const reader = stream.getReader();
  const onAbort = () => reader.cancel(signal?.reason).catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    while (true) {
      signal?.throwIfAborted();
      const { value, done } = await reader.read();
      signal?.throwIfAborted();
      if (done) break;
      await check.push(value);
    }
  } catch (error) {
    check.abort(error);
    await reader.cancel(error).catch(() => {});
    throw sourceError(error, signal);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    reader.releaseLock();
  }
  const checked = await check.finish();
  const folder = checked.prefix === ""
    ? undefined
    : checked.prefix.slice(0, -1);
  let doc;
  try {
    doc = parseSkillMd(checked.skillMd ?? "");
  } catch (error) {
    throw new PackageError(
      "no-skill",
      `its SKILL.md cannot be read (${
        error instanceof Error ? error.message : error
      })`,
      { entry: `${checked.prefix}SKILL.md`, cause: error },
    );
  }
  if (!doc.name || !doc.description) {
    throw new PackageError(
      "no-skill",
      `its SKILL.md has no usable ${doc.name ? "description" : "name"}`,
      { entry: `${checked.prefix}SKILL.md` },
    );
  }
  const name = folder ?? doc.name;
  checkSkillFolderName(name);
  const hex = checked.digest.slice("sha256:".length);
  const basePath = `/.skillrun-packages/sha256-${hex}/${name}`;
  const skill: { -readonly [K in keyof Skill]: Skill[K] } = {
    name: doc.name,
    description: doc.description,
    basePath,
    location: `${basePath}/SKILL.md`,
    instructions: doc.body,
    frontMatter: doc.frontMatter,
    warnings: Object.freeze([...doc.warnings]),
  };
  if (doc.license !== undefined) skill.license = doc.license;
  if (doc.compatibility !== undefined) skill.compatibility = doc.compatibility;
  if (doc.metadata !== undefined) skill.metadata = doc.metadata;
  if (doc.allowedTools !== undefined) skill.allowedTools = doc.allowedTools;
  return Object.freeze({
    ...skill,
    remoteOrigin: packageOrigin(source, {
      ...options.prepare,
      ...(options.limits ? { limits: options.limits } : {}),
    }),
    package: Object.freeze({
      source: source.source,
      digest: checked.digest,
      size: checked.size,
      format: checked.format,
      files: checked.files.filter((f) => f.path.startsWith(checked.prefix))
        .length,
    }),
  });
}

/** Options of {@linkcode preparePackageInSandbox}. */
export interface PrepareInSandboxOptions {
  /** Limits of entries, size and ratio. */
  readonly limits?: PackageLimits;
  /**
   * The archive goes into the sandbox in uploads of this many bytes (held
   * in memory: one gathering while the one before is sent). Default 8 MiB.
   */
  readonly pieceBytes?: number;
  /** The deadline of the extraction command in the sandbox, ms. Default 10 minutes. */
  readonly extractTimeoutMs?: number;
}

/**
 * The origin of a skill whose files are a package: a remote runtime calls it
 * to prepare the skill straight inside its sandbox.
 *
 * @param source The package's source.
 * @param options Limits, the upload piece size.
 * @returns The origin.
 *
 * @example An origin names its package
 * ```ts
 * import { assert } from "@std/assert";
 * import { packageOrigin, packageSource } from "@skillrun/skillrun/package";
 * const digest = "sha256:" + "0".repeat(64);
 * const origin = packageOrigin(packageSource({ bytes: new Uint8Array(), digest }));
 * assert(origin.digest === digest);
 * ```
 */
export function packageOrigin(
  source: PackageArchiveSource,
  options: PrepareInSandboxOptions = {},
): RemoteSkillOrigin {
  return Object.freeze({
    digest: source.digest,
    materialize: async (target: RemoteMaterializeTarget) => {
      await preparePackageInSandbox(source, target, options);
    },
  });
}

/** What {@linkcode preparePackageInSandbox} did. */
export interface PreparedInSandbox {
  /** The folder in the sandbox. */
  readonly basePath: string;
  /** The archive's digest. */
  readonly digest: string;
  /** The archive's size. */
  readonly size: number;
  /** How many files the skill has. */
  readonly files: number;
}

const DEFAULT_PIECE_BYTES = 8 * 1024 * 1024;

/**
 * Prepares a skill in a remote sandbox straight from its package, with no
 * local extraction and no local disk:
 *
 * 1. the archive streams from its source into a staging folder beside the
 *    target, in pieces, while its SHA-256 and its entries are checked in
 *    the stream (the rules of a safe package: no slip paths, links,
 *    devices, duplicates, bombs; exactly one skill);
 * 2. only when both hold, the sandbox joins the pieces, checks the
 *    archive's size and SHA-256 again (`sha256sum`, when there), and
 *    extracts it into the staging folder (`tar`; for a ZIP `unzip`, else
 *    `python3`, else `bsdtar`) with each file capped at its declared size;
 * 3. what was extracted must be exactly the checked entries (regular files
 *    and folders, same names and sizes), then the skill's folder is renamed
 *    into `target.basePath` in one step (replacing a folder there).
 *
 * On any failure (a wrong digest, a digest that changes mid-stream, an
 * unsafe entry, a failed upload) the staging folder is removed and nothing
 * is left in the sandbox.
 *
 * @param source The package's source.
 * @param target The sandbox (a remote runtime lends it).
 * @param options Limits, the piece size, the extraction deadline.
 * @returns The folder, digest, size and file count.
 * @throws {PackageError} The package was refused.
 * @throws {Error} The sandbox failed (upload or command).
 *
 * @example Used through a remote runtime (see `loadPackageSkill`)
 * ```ts ignore
 * const skill = await loadPackageSkill({ url, digest });
 * await runtime.prepare({ skills: [{ skill }] }); // streams into the sandbox
 * ```
 */
export async function preparePackageInSandbox(
  source: PackageArchiveSource,
  target: RemoteMaterializeTarget,
  options: PrepareInSandboxOptions = {},
): Promise<PreparedInSandbox> {
  const limits = resolveLimits(options.limits);
  const pieceBytes = options.pieceBytes ?? DEFAULT_PIECE_BYTES;
  if (!Number.isSafeInteger(pieceBytes) || pieceBytes < 1) {
    throw new RangeError(
      `Cannot use pieceBytes ${pieceBytes}: it must be a positive integer`,
    );
  }
  const { signal } = target;
  const basePath = target.basePath;
  const staging = posix.join(
    posix.dirname(basePath),
    `.skillrun-package-${crypto.randomUUID()}`,
  );
  const check = new StreamCheck({ limits, expected: source.digest });
  let staged = false;
  try {
    // 1. Stream into the sandbox in pieces, checking as the bytes pass.
    target.onProgress?.({
      skillName: target.skillName,
      stage: "upload",
      detail: `streaming package ${source.digest} into ${basePath}`,
    });
    const stream = await source.open(signal);
    const reader = stream.getReader();
    // A read waiting on a stalled source ends at the abort.
    const onAbort = () => reader.cancel(signal?.reason).catch(() => {});
    signal?.addEventListener("abort", onAbort, { once: true });
    let pieces = 0;
    let uploading: Promise<void> | undefined;
    // The chunks of the piece being gathered (sent as one upload).
    let gathered: Uint8Array[] = [];
    let filled = 0;
    const send = async () => {
      const piece = new Uint8Array(filled);
      let offset = 0;
      for (const chunk of gathered) {
        piece.set(chunk, offset);
        offset += chunk.byteLength;
      }
      gathered = [];
      filled = 0;
      const path = posix.join(
        staging,
        "parts",
        String(pieces++).padStart(8, "0"),
      );
      // One upload at a time; the next piece gathers meanwhile.
      await uploading;
      staged = true;
      uploading = target.files.upload(
        [{ remotePath: path, content: piece, mode: 0o600 }],
        signal,
      );
      // Its failure is seen at the next await; never unhandled meanwhile.
      uploading.catch(() => {});
    };
    try {
      while (true) {
        signal?.throwIfAborted();
        const { value, done } = await reader.read();
        signal?.throwIfAborted();
        if (done) break;
        await check.push(value);
        let offset = 0;
        while (offset < value.byteLength) {
          const take = Math.min(value.byteLength - offset, pieceBytes - filled);
          gathered.push(value.subarray(offset, offset + take));
          filled += take;
          offset += take;
          if (filled === pieceBytes) await send();
        }
      }
      if (filled > 0 || pieces === 0) await send();
      await uploading;
    } catch (error) {
      check.abort(error);
      await reader.cancel(error).catch(() => {});
      await uploading?.catch(() => {});
      throw sourceError(error, signal);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      reader.releaseLock();
    }
    // The digest and the rest of the entries: nothing is extracted before.
    const checked = await check.finish();

    // 2. Join, check again inside, extract into the staging folder, list.
    const extracted = await target.run(
      extractScript(staging, checked, pieces),
      {
        timeoutMs: options.extractTimeoutMs ?? 600_000,
        maxOutputBytes: 64 * 1024 * 1024,
        ...(signal ? { signal } : {}),
      },
    );
    if (extracted.exitCode !== 0) {
      throw new PackageError(
        "corrupt",
        `extracting it in the sandbox failed: ${
          (extracted.stderr.trim() || extracted.stdout.trim()).slice(-500) ||
          `exit code ${extracted.exitCode}`
        }`,
      );
    }
    // 3. Exactly the checked entries, then one rename into place.
    const fixes = compareListing(extracted.stdout, checked);
    const from = checked.prefix === ""
      ? posix.join(staging, "x")
      : posix.join(staging, "x", checked.prefix.slice(0, -1));
    const S = shellQuote(staging);
    const F = shellQuote(basePath);
    const placed = await target.run(
      [
        "set -eu",
        ...fixes.map(({ path, executable }) =>
          `chmod ${executable ? "u+x,go+rx" : "a-x"} -- ${
            shellQuote(posix.join(staging, "x", path))
          }`
        ),
        `if [ -e ${F} ] || [ -L ${F} ]; then mv -f -- ${F} ${S}/old; fi`,
        `mv -- ${shellQuote(from)} ${F}`,
        `rm -rf -- ${S}`,
      ].join("\n"),
      { timeoutMs: 120_000, ...(signal ? { signal } : {}) },
    );
    if (placed.exitCode !== 0) {
      throw new Error(
        `Cannot put the package into "${basePath}": ${
          placed.stderr.trim().slice(-500) || `exit code ${placed.exitCode}`
        }`,
      );
    }
    staged = false;
    return {
      basePath,
      digest: checked.digest,
      size: checked.size,
      files: checked.files.filter((f) => f.path.startsWith(checked.prefix))
        .length,
    };
  } finally {
    if (staged) {
      await target.run(`rm -rf -- ${shellQuote(staging)}`, {
        timeoutMs: 120_000,
      }).catch(() => {});
    }
  }
}

/** The command that joins, checks and extracts the archive, then lists it. */
function extractScript(
  staging: string,
  checked: CheckedPackage,
  pieces: number,
): string {
  const S = shellQuote(staging);
  const hex = checked.digest.slice("sha256:".length);
  const largest = checked.files.reduce((max, f) => Math.max(max, f.size), 0);
  // ulimit -f counts blocks of 512 or 1024 bytes: this caps each file at
  // its declared size or twice it, never more.
  const blocks = Math.ceil(largest / 512) + 2;
  const extract = checked.format === "tar.gz" ? `tar -x -z -o -f "$a" -C x` : [
    `if command -v unzip >/dev/null 2>&1; then unzip -qq "$a" -d x`,
    `elif command -v python3 >/dev/null 2>&1; then python3 -c ${
      shellQuote(PYTHON_UNZIP)
    } "$a" x`,
    `elif command -v bsdtar >/dev/null 2>&1; then bsdtar -x -o -f "$a" -C x`,
    `else echo "the sandbox has neither unzip, python3 nor bsdtar to extract a ZIP package (a tar.gz package needs only tar)" >&2; exit 69; fi`,
  ].join("\n");
  // Few processes: each one costs a spawn in the sandbox, which dominates
  // on a busy machine. One piece is used where it lies.
  const join = pieces === 1
    ? `a=parts/00000000`
    : `a=archive; cat parts/* > archive`;
  return [
    "set -eu",
    "umask 022",
    `cd ${S}`,
    join,
    `if command -v sha256sum >/dev/null 2>&1; then h=$(sha256sum "$a"); h=\${h%% *}; [ "$h" = ${hex} ] || { echo "the archive in the sandbox has digest sha256:$h, not ${checked.digest}" >&2; exit 65; }; else n=$(wc -c < "$a" | tr -d ' '); [ "$n" = ${checked.size} ] || { echo "the archive in the sandbox has $n bytes, not ${checked.size}" >&2; exit 65; }; fi`,
    `mkdir x`,
    `( ulimit -f ${blocks}\n${extract}\n)`,
    // GNU find prints the listing itself; elsewhere stat does.
    `cd x && { find . -mindepth 1 -printf '%y %m %s ./%P\\n' 2>/dev/null || find . -mindepth 1 -exec stat -c '%f %s %n' {} +; }`,
  ].join("\n");
}

/** Extracts a ZIP with Python's zipfile, keeping the permission bits. */
const PYTHON_UNZIP = `import os, sys, zipfile
a, d = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(a) as z:
    for i in z.infolist():
        p = os.path.join(d, i.filename)
        if i.is_dir():
            os.makedirs(p, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with z.open(i) as s, open(p, "xb") as o:
            while True:
                b = s.read(1 << 20)
                if not b:
                    break
                o.write(b)
        m = (i.external_attr >> 16) & 0o777
        if m:
            os.chmod(p, m)
`;

/**
 * Checks the sandbox's listing of what was extracted against the checked
 * entries: the same folders and regular files with the same sizes, nothing
 * else. Returns the files whose executable bit must be set right.
 */
function compareListing(
  listing: string,
  checked: CheckedPackage,
): { path: string; executable: boolean }[] {
  const files = new Map(checked.files.map((f) => [f.path, f]));
  const seen = new Set<string>();
  const fixes: { path: string; executable: boolean }[] = [];
  const refuse = (path: string, reason: string): never => {
    throw new PackageError(
      "corrupt",
      `what was extracted in the sandbox is not what was checked: ${reason}`,
      { entry: path },
    );
  };
  for (const line of listing.split("\n")) {
    if (line === "") continue;
    // GNU find: "<type letter> <octal mode> <size> ./<path>"; stat:
    // "<hex st_mode> <size> ./<path>".
    const gnu = /^([a-zA-Z]) ([0-7]+) (\d+) \.\/(.+)$/.exec(line);
    const match = gnu ?? /^([0-9a-f]{4,}) (\d+) \.\/(.+)$/.exec(line);
    if (!match) refuse(line, "an unexpected name");
    let mode: number, type: number, rawSize: string, path: string;
    if (gnu) {
      mode = parseInt(gnu[2]!, 8);
      type = gnu[1] === "d" ? 0o040000 : gnu[1] === "f" ? 0o100000 : -1;
      rawSize = gnu[3]!;
      path = gnu[4]!;
    } else {
      mode = parseInt(match![1]!, 16);
      type = mode & 0o170000;
      rawSize = match![2]!;
      path = match![3]!;
    }
    if (type === 0o040000) {
      if (!checked.set.folders.has(path)) refuse(path, "an extra folder");
      continue;
    }
    if (type !== 0o100000) refuse(path, "not a regular file or folder");
    const file = files.get(path);
    if (!file) refuse(path, "an extra file");
    if (Number(rawSize) !== file!.size) {
      refuse(path, `${rawSize} bytes instead of ${file!.size}`);
    }
    seen.add(path);
    const executable = (file!.mode & 0o100) !== 0;
    if (((mode & 0o100) !== 0) !== executable) {
      fixes.push({ path, executable });
    }
  }
  for (const path of files.keys()) {
    if (!seen.has(path)) refuse(path, "missing");
  }
  return fixes;
}

function sourceError(error: unknown, signal: AbortSignal | undefined): unknown {
  if (error instanceof PackageError) return error;
  if (signal?.aborted) return signal.reason;
  if (error instanceof DOMException && error.name === "AbortError") {
    return error;
  }
  return new PackageError(
    "source",
    `streaming it failed: ${error instanceof Error ? error.message : error}`,
    { cause: error },
  );
}
