/**
 * Installed packages: their manifest, finding one by digest, and checking
 * that what is on disk is still what was installed. No archive code here, so
 * loading installed skills costs no archive library.
 *
 * @module
 */
import { hostPath } from "../_internal/std.ts";
import { comparePaths } from "../_internal/compare.ts";
import { PackageError } from "./errors.ts";
import { checkDigest, Sha256, sha256Of } from "./_digest.ts";

/** The manifest file beside an installed skill folder. */
export const MANIFEST_FILE = ".skillrun-package.json";

/**
 * The archive's file name beside an installed skill folder and its manifest.
 *
 * @param format The archive's format.
 * @returns `.skillrun-package.zip` or `.skillrun-package.tar.gz`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { archiveFileName } from "@skillrun/skillrun/package";
 * assert(archiveFileName("zip") === ".skillrun-package.zip");
 * ```
 */
export function archiveFileName(format: "zip" | "tar.gz"): string {
  return `.skillrun-package.${format}`;
}

/** One file of an installed package. */
export interface PackageFile {
  /** Path from the skill's folder, `/`-separated. */
  readonly path: string;
  /** Size in bytes. */
  readonly size: number;
  /** Permission bits from the archive. */
  readonly mode: number;
  /** `sha256:` of its content. */
  readonly digest: string;
}

/** What an installed package's manifest records. */
export interface PackageManifest {
  /** The skill's folder name. */
  readonly name: string;
  /** The archive's digest. */
  readonly digest: string;
  /** The archive's format. */
  readonly format: "zip" | "tar.gz";
  /** Where it came from, when known. */
  readonly source?: string;
  /**
   * The digest the source published for what it served, when that is not
   * the package's: a `skill-md` entry of a well-known index gives the digest
   * of its `SKILL.md`, which skillrun wraps into a package of its own.
   */
  readonly sourceDigest?: string;
  /** The digest of the extracted files (see {@linkcode treeDigest}). */
  readonly tree: string;
  /** The archive's file name beside the manifest (packages installed before it was kept have none). */
  readonly archive?: string;
  /** Every file, sorted by path. */
  readonly files: readonly PackageFile[];
}

/** An installed skill package, as {@linkcode installPackage} returns it. */
export interface InstalledSkillPackage {
  /** Always `"installed-skill-package"`: tells it apart from other skill inputs. */
  readonly kind: "installed-skill-package";
  /** The skill's folder name (its name, as packed). */
  readonly name: string;
  /** The archive's digest. */
  readonly digest: string;
  /** The digest of the extracted files. */
  readonly tree: string;
  /** The skill's folder (holding `SKILL.md`). */
  readonly path: string;
  /** The package's folder, `<root>/sha256-<hex>`. */
  readonly packagePath: string;
  /** Where it came from, when known. */
  readonly source?: string;
  /**
   * The digest the source published for what it served, when that is not
   * the package's: a `skill-md` entry of a well-known index gives the digest
   * of its `SKILL.md`, which skillrun wraps into a package of its own.
   */
  readonly sourceDigest?: string;
  /**
   * The archive itself, kept beside the skill (a remote runtime streams it
   * into its sandbox); absent for packages installed before it was kept.
   */
  readonly archivePath?: string;
  /** Every file with its size, mode and digest. */
  readonly files: readonly PackageFile[];
}

/**
 * The digest of a skill's extracted files: SHA-256 over one line per file,
 * sorted by path, `<digest> <x or -> <path>\n` (`x` when the owner may
 * execute it). Names, content and the executable bit count; times do not.
 *
 * @param files The files.
 * @returns `sha256:` and 64 hex digits.
 *
 * @example The same files give the same tree digest
 * ```ts
 * import { assert } from "@std/assert";
 * import { treeDigest } from "@skillrun/skillrun/package";
 * const file = { path: "SKILL.md", size: 1, mode: 0o644, digest: "sha256:" + "0".repeat(64) };
 * assert(treeDigest([file]) === treeDigest([{ ...file }]));
 * assert(treeDigest([file]) !== treeDigest([{ ...file, mode: 0o755 }]));
 * ```
 */
export function treeDigest(files: readonly PackageFile[]): string {
  const lines = [...files]
    .sort((a, b) => comparePaths(a.path, b.path))
    .map((file) =>
      `${file.digest} ${(file.mode & 0o100) !== 0 ? "x" : "-"} ${file.path}\n`
    );
  return sha256Of(lines.join(""));
}

/**
 * Finds an installed package by digest, or `undefined` when it is not there.
 *
 * Needs `--allow-read` of `root`.
 *
 * @param root The folder of installed packages.
 * @param digest The archive's digest.
 * @returns The package, or `undefined`.
 *
 * @example A digest that is not installed
 * ```ts
 * import { assert } from "@std/assert";
 * import { readInstalled } from "@skillrun/skillrun/package";
 * const root = await Deno.makeTempDir();
 * assert(await readInstalled(root, "sha256:" + "0".repeat(64)) === undefined);
 * await Deno.remove(root);
 * ```
 */
export async function readInstalled(
  root: string,
  digest: string,
): Promise<InstalledSkillPackage | undefined> {
  checkDigest(digest);
  const packagePath = hostPath.resolve(
    root,
    `sha256-${digest.slice("sha256:".length)}`,
  );
  let text: string;
  try {
    text = await Deno.readTextFile(hostPath.join(packagePath, MANIFEST_FILE));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
  const manifest = JSON.parse(text) as PackageManifest;
  if (manifest.digest !== digest || typeof manifest.name !== "string") {
    throw new PackageError(
      "digest-mismatch",
      `the manifest in "${packagePath}" names ${manifest.digest}, not ${digest}`,
    );
  }
  return Object.freeze({
    kind: "installed-skill-package",
    name: manifest.name,
    digest,
    tree: manifest.tree,
    path: hostPath.join(packagePath, manifest.name),
    packagePath,
    ...(manifest.source !== undefined ? { source: manifest.source } : {}),
    ...(typeof manifest.archive === "string" &&
        (manifest.archive === archiveFileName("zip") ||
          manifest.archive === archiveFileName("tar.gz"))
      ? { archivePath: hostPath.join(packagePath, manifest.archive) }
      : {}),
    files: Object.freeze(manifest.files.map((f) => Object.freeze({ ...f }))),
  });
}

/** What {@linkcode verifyInstalled} found. */
export interface VerifyResult {
  /** Whether the files on disk are exactly the package's. */
  readonly ok: boolean;
  /** The tree digest of what is on disk. */
  readonly tree: string;
  /** What differs, one line each (file added, missing, changed...). */
  readonly problems: readonly string[];
}

/**
 * Checks that an installed package's files on disk are exactly what was
 * installed: the same names, contents and executable bits, nothing added,
 * no link; and, when `expectedTree` is given (from a lock), that the tree
 * digest is that one.
 *
 * Needs `--allow-read` of the package's folder.
 *
 * @param pkg The installed package.
 * @param expectedTree The tree digest a lock recorded.
 * @returns Whether it holds, and what differs.
 *
 * @example A changed file is found
 * ```ts
 * import { assert } from "@std/assert";
 * import { installPackage, packSkill, verifyInstalled } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\n");
 *   const packed = await packSkill(dir);
 *   const pkg = await installPackage(packed.bytes!, { root: `${dir}/.installed` });
 *   assert((await verifyInstalled(pkg)).ok);
 *   await Deno.chmod(`${pkg.path}/SKILL.md`, 0o644);
 *   await Deno.writeTextFile(`${pkg.path}/SKILL.md`, "changed");
 *   const result = await verifyInstalled(pkg);
 *   assert(!result.ok && result.problems[0]!.includes("SKILL.md"));
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function verifyInstalled(
  pkg: InstalledSkillPackage,
  expectedTree?: string,
): Promise<VerifyResult> {
  const problems: string[] = [];
  const byPath = new Map(pkg.files.map((file) => [file.path, file]));
  const found: PackageFile[] = [];
  const pending = [""];
  while (pending.length > 0) {
    const rel = pending.pop()!;
    const dir = rel === "" ? pkg.path : hostPath.join(pkg.path, rel);
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(dir));
    } catch (error) {
      problems.push(
        `${rel || "."}: cannot be read (${
          error instanceof Error ? error.message : error
        })`,
      );
      continue;
    }
    for (const entry of entries) {
      const path = rel === "" ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory) {
        pending.push(path);
        continue;
      }
      if (!entry.isFile) {
        problems.push(
          `${path}: is not a regular file (a link or special file)`,
        );
        continue;
      }
      const full = hostPath.join(pkg.path, path);
      const info = await Deno.lstat(full);
      const digest = await fileDigest(full);
      const mode = info.mode === null ? 0o644 : info.mode & 0o777;
      const file = { path, size: info.size, mode, digest };
      found.push(file);
      const expected = byPath.get(path);
      if (!expected) problems.push(`${path}: added`);
      else if (expected.digest !== digest) problems.push(`${path}: changed`);
      else if ((expected.mode & 0o100) !== (mode & 0o100)) {
        problems.push(`${path}: its executable bit changed`);
      }
    }
  }
  const seen = new Set(found.map((file) => file.path));
  for (const file of pkg.files) {
    if (!seen.has(file.path)) problems.push(`${file.path}: missing`);
  }
  const tree = treeDigest(found);
  if (tree !== pkg.tree && problems.length === 0) {
    problems.push(`the tree digest is ${tree}, the manifest says ${pkg.tree}`);
  }
  if (expectedTree !== undefined && tree !== expectedTree) {
    problems.push(`the tree digest is ${tree}, the lock says ${expectedTree}`);
  }
  problems.sort();
  return Object.freeze({ ok: problems.length === 0, tree, problems });
}

async function fileDigest(path: string): Promise<string> {
  const info = await Deno.stat(path);
  if (info.size <= 1 << 20) return sha256Of(await Deno.readFile(path));
  const hash = new Sha256();
  using file = await Deno.open(path);
  for await (const chunk of file.readable) hash.update(chunk);
  return hash.digest();
}
