/**
 * `skills.lock.json`: the installed skills of a folder, each with where it
 * came from, its package digest and the digest of its files; read back to
 * load exactly those packages, re-verified.
 *
 * @module
 */
import { hostPath } from "../_internal/std.ts";
import { writeFileAtomically } from "../_internal/atomic_write.ts";
import { PackageError } from "./errors.ts";
import { checkDigest, sha256Of } from "./_digest.ts";
import {
  type InstalledSkillPackage,
  readInstalled,
  verifyInstalled,
} from "./installed.ts";

/** The lock file's name. */
export const LOCK_FILE = "skills.lock.json";

/** One skill of a lock. */
export interface LockEntry {
  /** Where it came from (a path, a URL, `<index>#<name>`, `store:<digest>`). */
  readonly source: string;
  /** The package's digest. */
  readonly digest: string;
  /** The digest of its extracted files. */
  readonly tree: string;
  /**
   * The digest the source published, when it is not the package's (a
   * `skill-md` entry of an index: its `SKILL.md`'s digest, as the index gives
   * it); {@linkcode verifyLock} checks the installed `SKILL.md` against it.
   */
  readonly sourceDigest?: string;
}

/** The content of `skills.lock.json`. */
export interface SkillsLock {
  /** Always 1. */
  readonly lockfileVersion: 1;
  /** The skills, by name. */
  readonly skills: Readonly<Record<string, LockEntry>>;
}

/**
 * Reads a folder's lock (an empty lock when there is none).
 *
 * Needs `--allow-read` of the folder.
 *
 * @param dir The folder holding `skills.lock.json` and the packages.
 * @returns The lock.
 * @throws {SyntaxError} The lock is not valid.
 *
 * @example A folder without a lock
 * ```ts
 * import { assert } from "@std/assert";
 * import { readLock } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * assert(Object.keys((await readLock(dir)).skills).length === 0);
 * await Deno.remove(dir);
 * ```
 */
export async function readLock(dir: string): Promise<SkillsLock> {
  let text: string;
  try {
    text = await Deno.readTextFile(hostPath.join(dir, LOCK_FILE));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return { lockfileVersion: 1, skills: {} };
    }
    throw error;
  }
  const lock = JSON.parse(text) as SkillsLock;
  if (
    lock?.lockfileVersion !== 1 || typeof lock.skills !== "object" ||
    lock.skills === null
  ) {
    throw new SyntaxError(
      `"${
        hostPath.join(dir, LOCK_FILE)
      }" is not a skills lock (lockfileVersion 1)`,
    );
  }
  for (const [name, entry] of Object.entries(lock.skills)) {
    checkDigest(entry?.digest, `the digest of "${name}" in the lock`);
    checkDigest(entry?.tree, `the tree digest of "${name}" in the lock`);
    if (entry?.sourceDigest !== undefined) {
      checkDigest(
        entry.sourceDigest,
        `the source digest of "${name}" in the lock`,
      );
    }
  }
  return lock;
}

/**
 * Records an installed package in a folder's lock (replacing the entry of
 * the same name); the lock is written atomically.
 *
 * Needs `--allow-read` and `--allow-write` of the folder.
 *
 * @param dir The folder of the lock.
 * @param pkg The installed package.
 * @param source Where it came from.
 * @returns The new lock.
 *
 * @example Locking an installed package
 * ```ts
 * import { assert } from "@std/assert";
 * import { installFromPath, lockPackage } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.mkdir(`${dir}/hello`);
 *   await Deno.writeTextFile(`${dir}/hello/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\n");
 *   const pkg = await installFromPath(`${dir}/hello`, { root: `${dir}/skills` });
 *   const lock = await lockPackage(`${dir}/skills`, pkg, "./hello");
 *   assert(lock.skills.hello?.digest === pkg.digest);
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function lockPackage(
  dir: string,
  pkg: InstalledSkillPackage,
  source: string,
): Promise<SkillsLock> {
  const lock = await readLock(dir);
  const skills: Record<string, LockEntry> = { ...lock.skills };
  skills[pkg.name] = {
    source,
    digest: pkg.digest,
    tree: pkg.tree,
    ...(pkg.sourceDigest !== undefined
      ? { sourceDigest: pkg.sourceDigest }
      : {}),
  };
  const sorted: Record<string, LockEntry> = {};
  for (const name of Object.keys(skills).sort()) sorted[name] = skills[name]!;
  const next: SkillsLock = { lockfileVersion: 1, skills: sorted };
  const bytes = new TextEncoder().encode(JSON.stringify(next, null, 2) + "\n");
  await writeFileAtomically(hostPath.join(dir, LOCK_FILE), async (file) => {
    let offset = 0;
    while (offset < bytes.length) {
      offset += await file.write(bytes.subarray(offset));
    }
    return bytes.length;
  });
  return next;
}

/** An installed package together with what the lock says of it. */
export interface LockedSkillPackage extends InstalledSkillPackage {
  /** The lock's entry. */
  readonly locked: LockEntry;
}

/**
 * The packages a folder's lock names, each found on disk and matched to the
 * lock's digest (not yet re-verified file by file: {@linkcode verifyLock} and
 * `buildSkillTools` do that).
 *
 * Needs `--allow-read` of the folder.
 *
 * @param dir The folder of the lock and the packages.
 * @returns The packages, sorted by name.
 * @throws {PackageError} A locked package is missing or its manifest
 * disagrees with the lock.
 *
 * @example Handing the locked skills to buildSkillTools
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildSkillTools } from "@skillrun/skillrun";
 * import { installFromPath, loadLockedPackages, lockPackage } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.mkdir(`${dir}/hello`);
 *   await Deno.writeTextFile(`${dir}/hello/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\nSay hi.\n");
 *   const pkg = await installFromPath(`${dir}/hello`, { root: `${dir}/skills` });
 *   await lockPackage(`${dir}/skills`, pkg, "./hello");
 *   await using kit = await buildSkillTools({ skills: await loadLockedPackages(`${dir}/skills`) });
 *   assert(kit.skills[0]?.name === "hello");
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function loadLockedPackages(
  dir: string,
): Promise<LockedSkillPackage[]> {
  const lock = await readLock(dir);
  const out: LockedSkillPackage[] = [];
  for (const name of Object.keys(lock.skills).sort()) {
    const locked = lock.skills[name]!;
    const pkg = await readInstalled(dir, locked.digest);
    if (!pkg) {
      throw new PackageError(
        "digest-mismatch",
        `the lock names "${name}" at ${locked.digest}, which is not installed in "${dir}"; run \`cli.ts add\` again`,
      );
    }
    if (pkg.name !== name) {
      throw new PackageError(
        "digest-mismatch",
        `the lock names "${name}" at ${locked.digest}, but that package holds "${pkg.name}"`,
      );
    }
    out.push(Object.freeze({ ...pkg, locked }));
  }
  return out;
}

/** What {@linkcode verifyLock} found for one skill. */
export interface LockCheck {
  /** The skill's name. */
  readonly name: string;
  /** Whether it is exactly what the lock says. */
  readonly ok: boolean;
  /** What differs. */
  readonly problems: readonly string[];
}

/**
 * Checks every skill of a folder's lock against what is on disk: the package
 * is there, its files have the lock's tree digest (nothing changed, added or
 * removed).
 *
 * Needs `--allow-read` of the folder.
 *
 * @param dir The folder of the lock and the packages.
 * @returns One check per skill, sorted by name.
 *
 * @example An untouched install verifies
 * ```ts
 * import { assert } from "@std/assert";
 * import { installFromPath, lockPackage, verifyLock } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.mkdir(`${dir}/hello`);
 *   await Deno.writeTextFile(`${dir}/hello/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\n");
 *   const pkg = await installFromPath(`${dir}/hello`, { root: `${dir}/skills` });
 *   await lockPackage(`${dir}/skills`, pkg, "./hello");
 *   assert((await verifyLock(`${dir}/skills`)).every((check) => check.ok));
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export async function verifyLock(dir: string): Promise<LockCheck[]> {
  const lock = await readLock(dir);
  const checks: LockCheck[] = [];
  for (const name of Object.keys(lock.skills).sort()) {
    const locked = lock.skills[name]!;
    let pkg: InstalledSkillPackage | undefined;
    try {
      pkg = await readInstalled(dir, locked.digest);
    } catch (error) {
      checks.push({
        name,
        ok: false,
        problems: [error instanceof Error ? error.message : String(error)],
      });
      continue;
    }
    if (!pkg) {
      checks.push({
        name,
        ok: false,
        problems: [`package ${locked.digest} is not installed`],
      });
      continue;
    }
    const result = await verifyInstalled(pkg, locked.tree);
    const problems = [...result.problems];
    if (locked.sourceDigest !== undefined) {
      // The source's own digest: the one SKILL.md the index published.
      let got: string;
      try {
        got = sha256Of(
          await Deno.readFile(hostPath.join(pkg.path, "SKILL.md")),
        );
      } catch (error) {
        got = error instanceof Error ? error.message : String(error);
      }
      if (got !== locked.sourceDigest) {
        problems.push(
          `SKILL.md has digest ${got}, the source published ${locked.sourceDigest}`,
        );
      }
    }
    checks.push({ name, ok: problems.length === 0, problems });
  }
  return checks;
}
