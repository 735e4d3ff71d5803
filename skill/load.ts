/**
 * Lenient discovery and loading of skills from folders, and selection by name.
 *
 * @module
 */
import { checkNumber } from "../_internal/check_number.ts";
import { hostPath } from "../_internal/std.ts";
import { HEAVY_FOLDER_NAMES } from "../_internal/heavy_folders.ts";
import { mapLimited } from "../_internal/pool.ts";
import { toPermissionError } from "../_internal/permissions.ts";
import type { Skill } from "./types.ts";
import { parseSkillMd, type SkillDocument } from "./parse.ts";
import { checkFrontMatter, describeValue } from "./_fields.ts";
import { readSkillMdBytes } from "./_read.ts";
import { checkLocks, type ScopeOptions, scopeRoots } from "./sources.ts";

/** Folder names never searched for skills (heavy or generated folders). */

/** How deep below a root folder skills are searched by default. */
export const DEFAULT_MAX_DEPTH = 5;

/** How many folders one {@linkcode loadSkills} call scans at most by default. */
export const DEFAULT_MAX_FOLDERS = 10_000;

/**
 * Options of {@linkcode loadSkills} and {@linkcode findSkillFolders}; the
 * standard places (`scopes`, `trustProject`, `cwd`, `home`) are described in
 * `sources.ts`.
 */
export interface LoadSkillsOptions extends ScopeOptions {
  /**
   * How many folder levels below a root are searched (the root is level 0).
   * Default {@linkcode DEFAULT_MAX_DEPTH}.
   */
  maxDepth?: number;
  /**
   * How many folders are scanned at most over all roots; when reached, the
   * rest are left out with a warning. Default {@linkcode DEFAULT_MAX_FOLDERS}.
   */
  maxFolders?: number;
  /** Folder names never searched. Default: the heavy folders (`HEAVY_FOLDERS`: `.git`, `node_modules`...), the same list search skips. */
  ignore?: readonly string[];
  /** Stops the search; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** What {@linkcode loadSkills} found. */
export interface LoadResult {
  /** The skills, sorted by name, then by location. Names are unique. */
  readonly skills: readonly Skill[];
  /** What was skipped and why; each names the file or folder. */
  readonly warnings: readonly string[];
}

/** What {@linkcode findSkillFolders} found. */
export interface FindResult {
  /** Real paths of the folders with a `SKILL.md`, in search order. */
  readonly folders: readonly string[];
  /** What was skipped and why; each names the file or folder. */
  readonly warnings: readonly string[];
}

interface Settings {
  maxDepth: number;
  maxFolders: number;
  ignore: ReadonlySet<string>;
  signal: AbortSignal | undefined;
}

interface Found {
  folder: string;
  location: string;
  text: string | undefined;
}

const SKILL_FILE = "SKILL.md";
const CONCURRENCY = 64;

/**
 * Finds and loads skills leniently. A root is a skill folder itself (a folder
 * with a `SKILL.md`; a path to a `SKILL.md` also works) or a folder of skills,
 * searched to `maxDepth` levels, skipping ignored folders, never looking inside
 * a skill folder for more skills. A symlinked folder is followed once: folders
 * are tracked by real path, so a link loop or a second link to the same skill
 * is skipped with a warning. Each skill's `basePath` is its real path.
 *
 * Rule-breaking skills are loaded with per-skill `warnings` (a name that breaks
 * the rules or differs from its folder, a description over 1024 characters,
 * unknown fields, a value that had to be quoted...). A skill is skipped, with
 * a warning naming its file, only when its front matter cannot be read (even
 * after retrying unquoted `": "` values, or using a YAML alias of a map or
 * list), it has no usable name or description, or its `SKILL.md` is not a
 * regular file (a FIFO, a device...) or is larger than `SKILL_MD_MAX_BYTES`
 * (4 MiB; read streamed, never past the bound). One bad skill never stops
 * the others.
 *
 * Duplicate names: the first skill found wins (roots in the order given, then
 * shallower folders first, then by path); every later one is skipped with a
 * warning naming both files.
 *
 * Standard places: with `scopes: ["project", "user"]` the project's
 * `<cwd>/.agents/skills` and `<cwd>/.claude/skills`, then the user's
 * `$HOME/.agents/skills` and `$HOME/.claude/skills`, are searched after the
 * roots given (missing ones skipped), so the project's copy of a skill wins
 * over the user's, with a warning naming both. `trustProject: false` leaves
 * the project's out with a warning. Folders written by the `skills` tool load
 * as they are: its `.claude/skills` links to `.agents/skills` give each skill
 * once, and where its lock file (`skills-lock.json`, `~/.agents/.skill-lock.json`)
 * records a skill's SHA-256, the folder is hashed the tool's way and a
 * mismatch is a warning.
 *
 * Needs `--allow-read` of the roots (and of the current folder for relative
 * roots).
 *
 * @param roots One root folder or several.
 * @param options Search depth, folder cap, ignored folder names and a signal.
 * @returns The skills, sorted by name then location, and warnings.
 * @throws {TypeError} A root is not a string or is a file other than a `SKILL.md`.
 * @throws {RangeError} `maxDepth` or `maxFolders` is not a non-negative integer.
 * @throws {Deno.errors.NotFound} A root does not exist.
 * @throws {RuntimePermissionError} Deno or the system denies reading a root
 * (the message names the `--allow-read` flag to add).
 *
 * @example Loading a folder of skills
 * ```ts
 * import { assert } from "@std/assert";
 * import { loadSkills } from "@skillrun/skillrun";
 * const root = await Deno.makeTempDir();
 * await Deno.mkdir(`${root}/hello`);
 * await Deno.writeTextFile(
 *   `${root}/hello/SKILL.md`,
 *   "---\nname: hello\ndescription: Says hello.\nversion: 2\n---\nRun `echo hello`.\n",
 * );
 * const { skills, warnings } = await loadSkills(root);
 * assert(skills.length === 1 && warnings.length === 0);
 * assert(skills[0]!.instructions === "Run `echo hello`.\n");
 * assert(skills[0]!.warnings[0]!.startsWith("version: unknown field"));
 * await Deno.remove(root, { recursive: true });
 * ```
 */
export async function loadSkills(
  roots: string | readonly string[],
  options: LoadSkillsOptions = {},
): Promise<LoadResult> {
  const scoped = options.scopes === undefined
    ? undefined
    : await scopeRoots(options);
  const { found, warnings } = await search(
    scoped && (typeof roots === "string" || Array.isArray(roots))
      ? [...rootList(roots), ...scoped.roots]
      : roots,
    options,
    true,
  );
  if (scoped) warnings.unshift(...scoped.warnings);
  const byName = new Map<string, Skill>();
  for (const item of found) {
    const skill = toSkill(item, warnings);
    if (!skill) continue;
    const first = byName.get(skill.name);
    if (first) {
      warnings.push(
        `Skipped "${skill.location}": the skill name "${skill.name}" is already used by "${first.location}"`,
      );
      continue;
    }
    byName.set(skill.name, skill);
  }
  const skills = [...byName.values()].sort(compareSkills);
  if (scoped) warnings.push(...await checkLocks(skills, scoped.locks));
  return Object.freeze({
    skills: Object.freeze(skills),
    warnings: Object.freeze(warnings),
  });
}

/**
 * Finds skill folders (folders with a `SKILL.md`) the way
 * {@linkcode loadSkills} does, without reading or judging the files: what a
 * validator needs to check every skill, broken ones included.
 *
 * Needs `--allow-read` of the roots.
 *
 * @param roots One root folder or several.
 * @param options Search depth, folder cap, ignored folder names and a signal.
 * @returns Real paths of the skill folders, in search order, and warnings.
 * @throws {TypeError} A root is not a string or is a file other than a `SKILL.md`.
 * @throws {RangeError} `maxDepth` or `maxFolders` is not a non-negative integer.
 * @throws {Deno.errors.NotFound} A root does not exist.
 * @throws {RuntimePermissionError} Deno or the system denies reading a root
 * (the message names the `--allow-read` flag to add).
 *
 * @example Finding skill folders
 * ```ts
 * import { assert } from "@std/assert";
 * import { findSkillFolders } from "./load.ts";
 * const root = await Deno.makeTempDir();
 * await Deno.mkdir(`${root}/broken`);
 * await Deno.writeTextFile(`${root}/broken/SKILL.md`, "no front matter");
 * const { folders } = await findSkillFolders(root);
 * assert(folders.length === 1 && folders[0]!.endsWith("broken"));
 * await Deno.remove(root, { recursive: true });
 * ```
 */
export async function findSkillFolders(
  roots: string | readonly string[],
  options: LoadSkillsOptions = {},
): Promise<FindResult> {
  const { found, warnings } = await search(roots, options, false);
  return Object.freeze({
    folders: Object.freeze(found.map((f) => f.folder)),
    warnings: Object.freeze(warnings),
  });
}

/**
 * Picks skills by name, in the order of `names`. Names are trimmed and
 * compared case-sensitively.
 *
 * Needs no permission.
 *
 * @param skills The loaded skills.
 * @param names The names to keep.
 * @returns The selected skills, in the order of `names`.
 * @throws {TypeError} `names` is not a list of strings, a name is blank, or a
 * name is selected twice.
 * @throws {RangeError} No skill has a name; the message lists the available ones.
 *
 * @example Selecting skills by name
 * ```ts
 * import { assert } from "@std/assert";
 * import { selectSkills } from "@skillrun/skillrun";
 * import type { Skill } from "@skillrun/skillrun";
 * const skill = (name: string): Skill => ({
 *   name, description: "d", basePath: `/s/${name}`, location: `/s/${name}/SKILL.md`,
 *   instructions: "", frontMatter: { name, description: "d" }, warnings: [],
 * });
 * const picked = selectSkills([skill("pdf"), skill("csv")], [" csv "]);
 * assert(picked.length === 1 && picked[0]!.name === "csv");
 * try {
 *   selectSkills([skill("pdf")], ["PDF"]);
 * } catch (error) {
 *   assert(error instanceof RangeError);
 * }
 * ```
 */
export function selectSkills(
  skills: readonly Skill[],
  names: readonly string[],
): Skill[] {
  if (!Array.isArray(names)) {
    throw new TypeError(
      `Cannot select skills: names must be a list of strings`,
    );
  }
  const byName = new Map<string, Skill>();
  for (const skill of skills) {
    if (!byName.has(skill.name)) byName.set(skill.name, skill);
  }
  const seen = new Set<string>();
  const selected: Skill[] = [];
  for (const raw of names) {
    if (typeof raw !== "string") {
      throw new TypeError(
        `Cannot select skill ${String(raw)}: a name must be a string`,
      );
    }
    const name = raw.trim();
    if (name === "") {
      throw new TypeError(`Cannot select skill "${raw}": the name is blank`);
    }
    if (seen.has(name)) {
      throw new TypeError(
        `Cannot select skill "${name}": it is selected more than once`,
      );
    }
    seen.add(name);
    const skill = byName.get(name);
    if (!skill) {
      const available = [...byName.keys()].sort();
      throw new RangeError(
        `Cannot select skill "${name}": no such skill (available: ${
          available.length ? available.map((n) => `"${n}"`).join(", ") : "none"
        })`,
      );
    }
    selected.push(skill);
  }
  return selected;
}

function rootList(roots: string | readonly string[]): readonly string[] {
  return typeof roots === "string" ? [roots] : roots;
}

function compareSkills(a: Skill, b: Skill): number {
  return compareStrings(a.name, b.name) ||
    compareStrings(a.location, b.location);
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function settingsOf(options: LoadSkillsOptions): Settings {
  const maxDepth = checkNumber(
    options.maxDepth ?? DEFAULT_MAX_DEPTH,
    "maxDepth",
    "non-negative integer",
    "load skills with",
  );
  const maxFolders = checkNumber(
    options.maxFolders ?? DEFAULT_MAX_FOLDERS,
    "maxFolders",
    "positive integer",
    "load skills with",
  );
  return {
    maxDepth,
    maxFolders,
    ignore: new Set(options.ignore ?? HEAVY_FOLDER_NAMES),
    signal: options.signal,
  };
}

interface Folder {
  /** Real path. */
  path: string;
  depth: number;
}

interface Scan {
  found?: Found;
  children?: Folder[];
  links?: { path: string; depth: number }[];
  warnings?: string[];
}

async function search(
  roots: string | readonly string[],
  options: LoadSkillsOptions,
  read: boolean,
): Promise<{ found: Found[]; warnings: string[] }> {
  const list = typeof roots === "string" ? [roots] : roots;
  if (!Array.isArray(list)) {
    throw new TypeError(
      `Cannot load skills: roots must be a path or a list of paths`,
    );
  }
  for (const root of list) {
    if (typeof root !== "string" || root.trim() === "") {
      throw new TypeError(
        `Cannot load skills from ${
          typeof root === "string" ? `"${root}"` : String(root)
        }: a root must be a non-empty path`,
      );
    }
  }
  const settings = settingsOf(options);
  settings.signal?.throwIfAborted();

  const found: Found[] = [];
  const warnings: string[] = [];
  const visited = new Set<string>();
  let scanned = 0;
  let capped = false;

  for (const root of list) {
    const start = await resolveRoot(root);
    if (visited.has(start)) {
      warnings.push(`Skipped root "${root}": its folder was already searched`);
      continue;
    }
    visited.add(start);
    let level: Folder[] = [{ path: start, depth: 0 }];
    while (level.length > 0) {
      settings.signal?.throwIfAborted();
      if (scanned + level.length > settings.maxFolders) {
        const kept = Math.max(0, settings.maxFolders - scanned);
        if (!capped) {
          warnings.push(
            `Stopped searching at "${
              level[kept]!.path
            }": the limit of ${settings.maxFolders} folders scanned was reached`,
          );
          capped = true;
        }
        level = level.slice(0, kept);
      }
      scanned += level.length;
      const scans = await mapLimited(
        level,
        CONCURRENCY,
        (folder) => scanFolder(folder, settings, read),
      );
      const next: Folder[] = [];
      const links: { path: string; depth: number }[] = [];
      for (const scan of scans) {
        if (scan.warnings) warnings.push(...scan.warnings);
        if (scan.found) found.push(scan.found);
        for (const child of scan.children ?? []) {
          if (visited.has(child.path)) continue;
          visited.add(child.path);
          next.push(child);
        }
        if (scan.links) links.push(...scan.links);
      }
      // Links after real folders, so a skill is reached by its own path first.
      const resolved = await mapLimited(
        links,
        CONCURRENCY,
        (link) => resolveLink(link),
      );
      for (const [index, result] of resolved.entries()) {
        const link = links[index]!;
        if (typeof result === "string") {
          warnings.push(result);
        } else if (result === undefined) {
          continue;
        } else if (visited.has(result.path)) {
          warnings.push(
            `Skipped symlink "${link.path}": it leads to "${result.path}", a folder already searched`,
          );
        } else {
          visited.add(result.path);
          next.push(result);
        }
      }
      level = next;
    }
  }
  return { found, warnings };
}

async function resolveRoot(root: string): Promise<string> {
  const absolute = hostPath.resolve(root);
  let real: string;
  let info: Deno.FileInfo;
  try {
    real = await Deno.realPath(absolute);
    info = await Deno.stat(real);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Deno.errors.NotFound(
        `Cannot load skills from "${root}": no such file or folder`,
        { cause: error },
      );
    }
    throw toPermissionError(error, {
      operation: "load skills from",
      path: root,
    });
  }
  if (info.isDirectory) return real;
  if (info.isFile && hostPath.basename(real).toUpperCase() === "SKILL.MD") {
    return hostPath.dirname(real);
  }
  throw new TypeError(
    `Cannot load skills from "${root}": it is a file, not a folder or a SKILL.md`,
  );
}

async function scanFolder(
  folder: Folder,
  settings: Settings,
  read: boolean,
): Promise<Scan> {
  const location = childPath(folder.path, SKILL_FILE);
  const skillFile = read
    ? await readSkillFile(location)
    : await statSkillFile(location);
  if (skillFile.kind === "found") {
    return {
      found: { folder: folder.path, location, text: skillFile.text },
    };
  }
  if (skillFile.kind === "error") {
    return { warnings: [`Skipped "${location}": ${skillFile.reason}`] };
  }
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(folder.path));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return {};
    return {
      warnings: [`Skipped folder "${folder.path}": ${reasonOf(error)}`],
    };
  }
  // A lower-case `skill.md` is accepted too.
  const lower = entries.find((e) => e.name === "skill.md" && !e.isDirectory);
  if (lower) {
    const path = childPath(folder.path, lower.name);
    const file = read ? await readSkillFile(path) : await statSkillFile(path);
    if (file.kind === "found") {
      return {
        found: { folder: folder.path, location: path, text: file.text },
      };
    }
    if (file.kind === "error") {
      return { warnings: [`Skipped "${path}": ${file.reason}`] };
    }
  }
  if (folder.depth >= settings.maxDepth) return {};
  entries.sort((a, b) => compareStrings(a.name, b.name));
  const children: Folder[] = [];
  const links: { path: string; depth: number }[] = [];
  for (const entry of entries) {
    if (settings.ignore.has(entry.name)) continue;
    const path = childPath(folder.path, entry.name);
    if (entry.isSymlink) links.push({ path, depth: folder.depth + 1 });
    else if (entry.isDirectory) {
      children.push({ path, depth: folder.depth + 1 });
    }
  }
  return { children, links };
}

/** `dir` + separator + `name`, without `join`'s normalising (`dir` is already real). */
function childPath(dir: string, name: string): string {
  return dir.endsWith(hostPath.SEPARATOR)
    ? dir + name
    : dir + hostPath.SEPARATOR + name;
}

type SkillFile =
  | { kind: "found"; text: string | undefined }
  | { kind: "missing" }
  | { kind: "error"; reason: string };

async function readSkillFile(path: string): Promise<SkillFile> {
  try {
    // Only a regular file, at most SKILL_MD_MAX_BYTES (a FIFO or a link to
    // /dev/zero is skipped with a warning); bad bytes replaced, as readTextFile does.
    const bytes = await readSkillMdBytes(path);
    return { kind: "found", text: new TextDecoder().decode(bytes) };
  } catch (error) {
    if (
      error instanceof Deno.errors.NotFound ||
      error instanceof Deno.errors.NotADirectory
    ) return { kind: "missing" };
    return { kind: "error", reason: reasonOf(error) };
  }
}

async function statSkillFile(path: string): Promise<SkillFile> {
  try {
    const info = await Deno.stat(path);
    return info.isFile
      ? { kind: "found", text: undefined }
      : { kind: "error", reason: "it is not a file" };
  } catch (error) {
    if (
      error instanceof Deno.errors.NotFound ||
      error instanceof Deno.errors.NotADirectory
    ) return { kind: "missing" };
    return { kind: "error", reason: reasonOf(error) };
  }
}

/** A link's real folder, `undefined` when it is not a folder, or a warning. */
async function resolveLink(
  link: { path: string; depth: number },
): Promise<Folder | string | undefined> {
  try {
    const real = await Deno.realPath(link.path);
    const info = await Deno.stat(real);
    return info.isDirectory ? { path: real, depth: link.depth } : undefined;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return `Skipped symlink "${link.path}": its target does not exist`;
    }
    return `Skipped symlink "${link.path}": ${reasonOf(error)}`;
  }
}

function reasonOf(error: unknown): string {
  if (error instanceof Deno.errors.IsADirectory) return "it is a folder";
  if (
    error instanceof Deno.errors.PermissionDenied ||
    error instanceof Deno.errors.NotCapable
  ) return "permission denied";
  if (error instanceof Deno.errors.FilesystemLoop) return "symlink loop";
  if (error instanceof Deno.errors.InvalidData) return "it is not UTF-8 text";
  if (error instanceof Error) return error.message;
  return String(error);
}

// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const REPAIRED = /: the unquoted value containing/;
const PARSE_PREFIX = "Cannot parse SKILL.md: ";

function toSkill(found: Found, warnings: string[]): Skill | undefined {
  let doc: SkillDocument;
  try {
    doc = parseSkillMd(found.text ?? "");
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const reason = message.startsWith(PARSE_PREFIX)
      ? message.slice(PARSE_PREFIX.length)
      : message;
    warnings.push(`Skipped "${found.location}": ${reason}`);
    return undefined;
  }
  const { frontMatter } = doc;
  if (!doc.name || CONTROL.test(doc.name)) {
    const raw = frontMatter["name"];
    warnings.push(
      `Skipped "${found.location}": no usable "name" (${
        raw === undefined ? "missing" : `got ${describeValue(raw)}`
      })`,
    );
    return undefined;
  }
  if (!doc.description) {
    const raw = frontMatter["description"];
    warnings.push(
      `Skipped "${found.location}": no usable "description" (${
        raw === undefined ? "missing" : `got ${describeValue(raw)}`
      })`,
    );
    return undefined;
  }
  const problems = checkFrontMatter(
    frontMatter,
    hostPath.basename(found.folder),
  );
  const fields = new Set(problems.map((p) => p.field));
  const skillWarnings = [
    ...doc.warnings.filter((w) =>
      REPAIRED.test(w) || !fields.has(w.slice(0, w.indexOf(":")))
    ),
    ...problems.map((p) => p.message),
  ];
  if (hostPath.basename(found.location) !== SKILL_FILE) {
    skillWarnings.push(`file: named "skill.md" rather than "SKILL.md"`);
  }
  const skill: { -readonly [K in keyof Skill]: Skill[K] } = {
    name: doc.name,
    description: doc.description,
    basePath: found.folder,
    location: found.location,
    instructions: doc.body,
    frontMatter: deepFreeze(frontMatter),
    warnings: Object.freeze(skillWarnings),
  };
  if (doc.license !== undefined) skill.license = doc.license;
  if (doc.compatibility !== undefined) skill.compatibility = doc.compatibility;
  if (doc.metadata !== undefined) {
    skill.metadata = Object.freeze({ ...doc.metadata });
  }
  if (doc.allowedTools !== undefined) {
    skill.allowedTools = Object.freeze([...doc.allowedTools]);
  }
  return Object.freeze(skill);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}
