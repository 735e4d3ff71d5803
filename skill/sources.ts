/**
 * The standard places of skills (the Agent Skills client guide's scopes) and
 * the lock files the `skills` command-line tool (npm `skills`) writes beside
 * them.
 *
 * - project: `<cwd>/.agents/skills`, then `<cwd>/.claude/skills`
 * - user: `$HOME/.agents/skills`, then `$HOME/.claude/skills`
 *
 * A `.claude/skills` folder is searched only for what is not already reached
 * through `.agents/skills`: the `skills` tool links `.claude/skills/<name>` to
 * `../../.agents/skills/<name>`, and each such skill is loaded once, without a
 * warning.
 *
 * @module
 */
import { hostPath } from "../_internal/std.ts";
import { toPermissionError } from "../_internal/permissions.ts";
import type { Skill } from "./types.ts";

/** A standard place of skills: the project's (`<cwd>`) or the user's (`$HOME`). */
export type SkillScope = "project" | "user";

/** The scopes {@linkcode loadSkills} knows, in the order they are searched. */
export const SKILL_SCOPES: readonly SkillScope[] = Object.freeze([
  "project",
  "user",
]);

/** Options of the standard places (part of `LoadSkillsOptions`). */
export interface ScopeOptions {
  /**
   * Standard places to search after the roots given: `"project"` is
   * `<cwd>/.agents/skills` and `<cwd>/.claude/skills`, `"user"` is
   * `$HOME/.agents/skills` and `$HOME/.claude/skills`. Missing folders are
   * skipped quietly. Project skills come first, so on a name collision the
   * project's copy wins and a warning names both files. Default: none.
   */
  scopes?: readonly SkillScope[];
  /**
   * Whether the project's skills may be loaded. Default `true`: naming
   * `"project"` in `scopes` is the application's own choice to use the
   * project it runs in. A host that opens folders it does not know (an editor,
   * a agent working on a cloned repository) passes `false` until the user
   * trusts the folder: project skills are then left out with a warning.
   */
  trustProject?: boolean;
  /** The project folder; default the current working folder. */
  cwd?: string;
  /**
   * The user's home folder; default `$HOME` (`%USERPROFILE%` on Windows),
   * read with `--allow-env=HOME`.
   */
  home?: string;
}

/** Where the scopes of one {@linkcode loadSkills} call are, and what they hold. */
export interface ScopeRoots {
  /** Folders to search, in order (only those that exist). */
  readonly roots: readonly string[];
  /** Lock files to check the loaded skills against. */
  readonly locks: readonly LockFile[];
  /** What was left out and why. */
  readonly warnings: readonly string[];
}

/** One lock file of the `skills` tool and the folders its skills are in. */
export interface LockFile {
  /** The lock file's path. */
  readonly path: string;
  /** The key of the hash in an entry: `computedHash` or `skillFolderHash`. */
  readonly field: "computedHash" | "skillFolderHash";
  /** The folders its skills are installed in (`<root>/<name>`). */
  readonly folders: readonly string[];
}

const PROJECT_LOCK = "skills-lock.json";
const USER_LOCK = ".skill-lock.json";
const HEX64 = /^[0-9a-f]{64}$/;

function checkScopes(scopes: unknown): SkillScope[] {
  if (!Array.isArray(scopes)) {
    throw new TypeError(
      `Cannot load skills: scopes must be a list of "project" and "user"`,
    );
  }
  const seen = new Set<SkillScope>();
  for (const scope of scopes) {
    if (scope !== "project" && scope !== "user") {
      throw new TypeError(
        `Cannot load skills from scope ${
          typeof scope === "string" ? `"${scope}"` : String(scope)
        }: expected "project" or "user"`,
      );
    }
    seen.add(scope);
  }
  // Project before user, whatever the order given: the project wins.
  return SKILL_SCOPES.filter((scope) => seen.has(scope));
}

function homeFolder(): string | undefined {
  const name = Deno.build.os === "windows" ? "USERPROFILE" : "HOME";
  try {
    return Deno.env.get(name) || undefined;
  } catch (error) {
    throw toPermissionError(error, {
      operation: "find the user's skills in",
      path: `$${name}`,
    });
  }
}

async function realFolder(path: string): Promise<string | undefined> {
  try {
    const real = await Deno.realPath(path);
    return (await Deno.stat(real)).isDirectory ? real : undefined;
  } catch (error) {
    if (
      error instanceof Deno.errors.NotFound ||
      error instanceof Deno.errors.NotADirectory
    ) return undefined;
    throw toPermissionError(error, { operation: "load skills from", path });
  }
}

function inside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder + hostPath.SEPARATOR);
}

/**
 * The folders and lock files of the scopes asked for. `.claude/skills` is
 * given as its entries (those not leading into the scope's `.agents/skills`),
 * so the `skills` tool's links are not loaded twice.
 *
 * Needs `--allow-read` of the folders and `--allow-env=HOME` for `"user"`
 * without `home`.
 *
 * @param options The scopes, the trust of the project, `cwd` and `home`.
 * @returns The folders to search, the lock files, and warnings.
 * @throws {TypeError} A scope is neither `"project"` nor `"user"`.
 *
 * @example The project's and the user's folders
 * ```ts
 * import { assert } from "@std/assert";
 * import { scopeRoots } from "./sources.ts";
 * const cwd = await Deno.makeTempDir();
 * const home = await Deno.makeTempDir();
 * await Deno.mkdir(`${cwd}/.agents/skills`, { recursive: true });
 * await Deno.mkdir(`${home}/.agents/skills`, { recursive: true });
 * const { roots } = await scopeRoots({ scopes: ["user", "project"], cwd, home });
 * assert(roots.length === 2 && roots[0]!.startsWith(await Deno.realPath(cwd)));
 * const untrusted = await scopeRoots({ scopes: ["project"], cwd, trustProject: false });
 * assert(untrusted.roots.length === 0 && untrusted.warnings.length === 1);
 * await Deno.remove(cwd, { recursive: true });
 * await Deno.remove(home, { recursive: true });
 * ```
 */
export async function scopeRoots(options: ScopeOptions): Promise<ScopeRoots> {
  const scopes = checkScopes(options.scopes ?? []);
  const roots: string[] = [];
  const locks: LockFile[] = [];
  const warnings: string[] = [];
  for (const scope of scopes) {
    let base: string;
    if (scope === "project") {
      base = hostPath.resolve(options.cwd ?? Deno.cwd());
      if (options.trustProject === false) {
        warnings.push(
          `Skipped the project's skills in "${
            hostPath.join(base, ".agents", "skills")
          }": the project is not trusted (trustProject: false)`,
        );
        continue;
      }
    } else {
      const home = options.home ?? homeFolder();
      if (home === undefined) {
        warnings.push(
          `Skipped the user's skills: no home folder ($HOME is not set)`,
        );
        continue;
      }
      base = hostPath.resolve(home);
    }
    const agents = await realFolder(hostPath.join(base, ".agents", "skills"));
    const claude = await realFolder(hostPath.join(base, ".claude", "skills"));
    const folders: string[] = [];
    if (agents !== undefined) {
      roots.push(agents);
      folders.push(agents);
    }
    if (claude !== undefined && claude !== agents) {
      folders.push(claude);
      for (const entry of await childFolders(claude)) {
        if (agents !== undefined && inside(entry.real, agents)) continue;
        roots.push(entry.path);
      }
    }
    if (scope === "project") {
      locks.push({
        path: hostPath.join(base, PROJECT_LOCK),
        field: "computedHash",
        folders,
      });
    } else {
      const state = options.home === undefined ? stateHome() : undefined;
      locks.push({
        path: state
          ? hostPath.join(state, "skills", USER_LOCK)
          : hostPath.join(base, ".agents", USER_LOCK),
        field: "skillFolderHash",
        folders,
      });
    }
  }
  return Object.freeze({
    roots: Object.freeze(roots),
    locks: Object.freeze(locks),
    warnings: Object.freeze(warnings),
  });
}

function stateHome(): string | undefined {
  try {
    return Deno.env.get("XDG_STATE_HOME") || undefined;
  } catch {
    return undefined;
  }
}

async function childFolders(
  folder: string,
): Promise<{ path: string; real: string }[]> {
  const children: { path: string; real: string }[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(folder));
  } catch {
    return children;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (!entry.isDirectory && !entry.isSymlink) continue;
    const path = hostPath.join(folder, entry.name);
    const real = await realFolder(path).catch(() => undefined);
    if (real !== undefined) children.push({ path, real });
  }
  return children;
}

/**
 * The hash the `skills` tool records for a skill folder (`computedHash` in
 * `skills-lock.json`, `skillFolderHash` in `~/.agents/.skill-lock.json` for
 * local sources): SHA-256 over its regular files (symlinks left out, `.git`
 * and `node_modules` folders skipped), sorted by relative path with
 * `localeCompare`, each as its `/`-separated relative path then its bytes;
 * 64 lower-case hex digits.
 *
 * Needs `--allow-read` of the folder.
 *
 * @param folder The skill folder.
 * @returns The hash as 64 hex digits.
 *
 * @example Hashing a skill folder as the `skills` tool does
 * ```ts
 * import { assert } from "@std/assert";
 * import { skillFolderHash } from "./sources.ts";
 * const folder = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${folder}/SKILL.md`, "x");
 * assert(/^[0-9a-f]{64}$/.test(await skillFolderHash(folder)));
 * await Deno.remove(folder, { recursive: true });
 * ```
 */
export async function skillFolderHash(folder: string): Promise<string> {
  const files: { path: string; full: string }[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const full = hostPath.join(dir, entry.name);
      const path = prefix + entry.name;
      if (entry.isDirectory) {
        if (entry.name === ".git" || entry.name === "node_modules") continue;
        await walk(full, `${path}/`);
      } else if (entry.isFile) files.push({ path, full });
    }
  };
  await walk(folder, "");
  files.sort((a, b) => a.path.localeCompare(b.path));
  // Loaded here, not at import (Node's modules cost every cold start).
  const { createHash } = await import("node:crypto");
  const hash = createHash("sha256");
  for (const file of files) {
    hash.update(file.path);
    hash.update(await Deno.readFile(file.full));
  }
  return hash.digest("hex");
}

/**
 * Checks loaded skills against the lock files of their scopes: a skill whose
 * folder is `<root>/<name>` for a lock entry `<name>` that records a SHA-256
 * (64 hex digits; GitHub installs record a git tree hash, which is not
 * checked) is hashed the way the `skills` tool does, and a mismatch is a
 * warning naming the skill, the lock file and both hashes. Unreadable lock
 * files are warnings too; missing ones are not.
 *
 * Needs `--allow-read` of the lock files and the skill folders.
 *
 * @param skills The loaded skills.
 * @param locks The lock files of {@linkcode scopeRoots}.
 * @returns The warnings.
 *
 * @example A skill changed after `skills add`
 * ```ts
 * import { assert } from "@std/assert";
 * import { checkLocks } from "./sources.ts";
 * import { loadSkills } from "./load.ts";
 * const cwd = await Deno.realPath(await Deno.makeTempDir());
 * const folder = `${cwd}/.agents/skills/hi`;
 * await Deno.mkdir(folder, { recursive: true });
 * await Deno.writeTextFile(`${folder}/SKILL.md`, "---\nname: hi\ndescription: d\n---\n");
 * await Deno.writeTextFile(`${cwd}/skills-lock.json`, JSON.stringify({
 *   version: 1, skills: { hi: { computedHash: "0".repeat(64) } },
 * }));
 * const { skills } = await loadSkills(`${cwd}/.agents/skills`);
 * const warnings = await checkLocks(skills, [{
 *   path: `${cwd}/skills-lock.json`, field: "computedHash", folders: [`${cwd}/.agents/skills`],
 * }]);
 * assert(warnings.length === 1 && warnings[0]!.includes("does not match"));
 * await Deno.remove(cwd, { recursive: true });
 * ```
 */
export async function checkLocks(
  skills: readonly Skill[],
  locks: readonly LockFile[],
): Promise<string[]> {
  const warnings: string[] = [];
  for (const lock of locks) {
    let entries: Record<string, unknown>;
    try {
      const parsed = JSON.parse(await Deno.readTextFile(lock.path));
      entries = parsed?.skills;
      if (!entries || typeof entries !== "object") {
        throw new Error(`it has no "skills" object`);
      }
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue;
      warnings.push(
        `Cannot check skills against "${lock.path}": ${
          error instanceof Error ? error.message : String(error)
        }`,
      );
      continue;
    }
    for (const skill of skills) {
      const parent = hostPath.dirname(skill.basePath);
      const folderName = hostPath.basename(skill.basePath);
      if (!lock.folders.includes(parent)) continue;
      if (!Object.hasOwn(entries, folderName)) continue;
      const entry = entries[folderName] as Record<string, unknown> | null;
      const expected = entry?.[lock.field];
      if (typeof expected !== "string" || !HEX64.test(expected)) continue;
      let actual: string;
      try {
        actual = await skillFolderHash(skill.basePath);
      } catch (error) {
        warnings.push(
          `Cannot check skill "${skill.name}" against "${lock.path}": ${
            error instanceof Error ? error.message : String(error)
          }`,
        );
        continue;
      }
      if (actual !== expected) {
        warnings.push(
          `Skill "${skill.name}" in "${skill.basePath}" does not match "${lock.path}": its files hash to ${actual}, the lock records ${expected} (changed since it was installed)`,
        );
      }
    }
  }
  return warnings;
}
