/**
 * The rules every entry of a package must follow, shared by the ZIP and the
 * tar.gz readers: safe relative paths, no links or special files, no
 * duplicates (also by case), bounded count and size.
 *
 * @module
 */
import { PackageError } from "./errors.ts";

/** The two archive formats of a package. */
export type PackageFormat = "zip" | "tar.gz";

/** Limits of what a package may hold; every limit is checked while reading. */
export interface PackageLimits {
  /** Entries (files and folders) at most. Default 20,000. */
  readonly maxEntries?: number;
  /** Uncompressed bytes of all files together at most. Default 2 GiB. */
  readonly maxBytes?: number;
  /**
   * Uncompressed bytes per archive byte at most, checked once the
   * uncompressed total passes `ratioFloorBytes`. Default 200.
   */
  readonly maxRatio?: number;
  /** Below this many uncompressed bytes, the ratio is not checked. Default 32 MiB. */
  readonly ratioFloorBytes?: number;
}

/** The limits with their defaults filled in. */
export interface ResolvedLimits {
  /** Entries at most. */
  readonly maxEntries: number;
  /** Uncompressed bytes at most. */
  readonly maxBytes: number;
  /** Uncompressed bytes per archive byte at most. */
  readonly maxRatio: number;
  /** Below this many uncompressed bytes, the ratio is not checked. */
  readonly ratioFloorBytes: number;
}

/** Default limits of a package. */
export const DEFAULT_PACKAGE_LIMITS: Readonly<ResolvedLimits> = Object.freeze({
  maxEntries: 20_000,
  maxBytes: 2 * 1024 ** 3,
  maxRatio: 200,
  ratioFloorBytes: 32 * 1024 ** 2,
});

/** Fills in the defaults and checks the values. */
export function resolveLimits(limits: PackageLimits = {}): ResolvedLimits {
  const out = { ...DEFAULT_PACKAGE_LIMITS, ...limits };
  for (const [key, value] of Object.entries(out)) {
    if (typeof value !== "number" || !(value > 0)) {
      throw new RangeError(
        `Cannot use package limit ${key}: ${value} is not a positive number`,
      );
    }
  }
  return out;
}

/** Detects the format from the first bytes, or `undefined`. */
export function sniffFormat(head: Uint8Array): PackageFormat | undefined {
  if (head[0] === 0x50 && head[1] === 0x4b) return "zip";
  if (head[0] === 0x1f && head[1] === 0x8b) return "tar.gz";
  return undefined;
}

const DRIVE = /^[A-Za-z]:/;
// C0 and C1 controls, DEL.
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Checks one entry's path and returns it normalised (a leading `./` dropped,
 * a trailing `/` dropped), or throws a {@linkcode PackageError} naming it.
 */
export function checkEntryPath(raw: string): string {
  const refuse = (reason: string): never => {
    throw new PackageError("unsafe-path", reason, { entry: raw });
  };
  if (raw.includes("\uFFFD")) refuse("its name is not valid UTF-8");
  if (raw === "") refuse("its name is empty");
  if (CONTROL.test(raw)) refuse("its name holds a control character");
  if (raw.includes("\\")) refuse("its name holds a backslash");
  if (raw.startsWith("/")) refuse("its path is absolute");
  if (DRIVE.test(raw)) refuse("its path starts with a drive letter");
  let path = raw;
  while (path.startsWith("./")) path = path.slice(2);
  path = path.replace(/\/$/, "");
  if (path === "" || path === ".") return "";
  for (const segment of path.split("/")) {
    if (segment === "..") refuse("its path climbs out of the package (..)");
    if (segment === "" || segment === ".") {
      refuse("its path has an empty or '.' segment");
    }
    if (new TextEncoder().encode(segment).length > 255) {
      refuse("a name in its path is longer than 255 bytes");
    }
  }
  return path;
}

/** Checks a skill name used as the package's top folder. */
export function checkSkillFolderName(name: string): void {
  if (
    name === "" || name === "." || name === ".." || /[/\\]/.test(name) ||
    CONTROL.test(name) || new TextEncoder().encode(name).length > 255
  ) {
    throw new PackageError(
      "bad-name",
      `the skill name ${
        JSON.stringify(name)
      } cannot name a folder (no slashes, backslashes or control characters, not "." or "..")`,
    );
  }
}

/**
 * The entries seen so far: refuses duplicates (also by case and Unicode
 * normalisation, which fold together on macOS and Windows), a file where a
 * folder is (or the other way round), and more than `maxEntries`.
 */
export class EntrySet {
  readonly #limits: ResolvedLimits;
  /** Folded path → kind. */
  readonly #seen = new Map<string, "file" | "folder">();
  /** Real paths of files, in order. */
  readonly files: string[] = [];
  /** Real paths of folders. */
  readonly folders = new Set<string>();
  #count = 0;

  constructor(limits: ResolvedLimits) {
    this.#limits = limits;
  }

  /** Adds an entry (already through {@linkcode checkEntryPath}). */
  add(path: string, kind: "file" | "folder", raw: string): void {
    if (path === "") return;
    this.#count++;
    if (this.#count > this.#limits.maxEntries) {
      throw new PackageError(
        "too-many-entries",
        `it holds more than ${this.#limits.maxEntries} entries`,
        { entry: raw },
      );
    }
    const folded = fold(path);
    const before = this.#seen.get(folded);
    if (before !== undefined) {
      if (before === "folder" && kind === "folder") {
        if (this.folders.has(path)) return; // a folder named twice is harmless
      }
      throw new PackageError(
        "duplicate",
        `another entry has the same name (names are compared without regard to case)`,
        { entry: raw },
      );
    }
    // Its parents are folders: none of them may be a file.
    const parts = path.split("/");
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join("/");
      const parentFolded = fold(parent);
      const seen = this.#seen.get(parentFolded);
      if (seen === "file") {
        throw new PackageError(
          "duplicate",
          `its parent "${parent}" is also a file`,
          { entry: raw },
        );
      }
      if (seen === undefined) {
        this.#seen.set(parentFolded, "folder");
        this.folders.add(parent);
      } else if (!this.folders.has(parent)) {
        throw new PackageError(
          "duplicate",
          `its folder "${parent}" differs only by case from another entry`,
          { entry: raw },
        );
      }
    }
    this.#seen.set(folded, kind);
    if (kind === "file") this.files.push(path);
    else this.folders.add(path);
  }
}

function fold(path: string): string {
  return path.normalize("NFC").toLowerCase();
}

/**
 * Where the skill is in a package: `SKILL.md` at the root (then the package
 * is the skill), or in its one top folder (every entry below it). Returns the
 * prefix to strip (`""` or `"<folder>/"`).
 */
export function locateSkill(set: EntrySet): string {
  const files = set.files;
  if (files.includes("SKILL.md")) return "";
  const tops = new Set<string>();
  for (const file of files) tops.add(file.split("/")[0]!);
  for (const folder of set.folders) tops.add(folder.split("/")[0]!);
  const withSkill = [...tops].filter((top) =>
    files.includes(`${top}/SKILL.md`)
  );
  if (withSkill.length === 0) {
    throw new PackageError(
      "no-skill",
      "it holds no SKILL.md, neither at its root nor in a top-level folder",
    );
  }
  if (withSkill.length > 1 || tops.size > 1) {
    throw new PackageError(
      "several-skills",
      `it must hold exactly one skill in one top-level folder, and holds ${
        [...tops].sort().map((top) => JSON.stringify(top)).join(", ")
      }`,
    );
  }
  return `${withSkill[0]}/`;
}
