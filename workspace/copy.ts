/**
 * The copy and upload policy of skill folders: which files go (regular files
 * only, symlinks never followed, obvious secrets excluded), a fast local copy
 * that keeps the executable bit, and a stable folder name for a skill's copy.
 *
 * Why one long file: the policy (what goes) and the two walks that apply it
 * (the local copy, the upload list) must agree file for file.
 *
 * @module
 */
import { checkPathText } from "../_internal/path_text.ts";
import { hostPath } from "../_internal/std.ts";
import { toPermissionError } from "../_internal/permissions.ts";
import { isInside, realLocation } from "./_paths.ts";
import { mapLimited } from "../_internal/pool.ts";
import { compareNames } from "../_internal/compare.ts";

/**
 * What is never copied or uploaded unless the application says otherwise:
 * `.git` anywhere, `.env`, `.env.*`, names starting with `credentials`,
 * `.git-credentials`, `*.pem`, `*.key`, `*.p12`, `*.pfx`, SSH keys (`id_rsa*`,
 * `id_ed25519*`, `id_ecdsa*`, `id_dsa*`), `.npmrc`, `.pypirc`, `.netrc`, and
 * the folders `.ssh/` and `.aws/`.
 * See {@linkcode CopyPolicy} for the pattern syntax.
 *
 * @example Reading the defaults
 * ```ts
 * import { assert } from "@std/assert";
 * import { DEFAULT_COPY_EXCLUDES } from "@skillrun/skillrun/runtime";
 * assert(DEFAULT_COPY_EXCLUDES.includes(".env.*"));
 * ```
 */
export const DEFAULT_COPY_EXCLUDES: readonly string[] = Object.freeze([
  ".git",
  ".env",
  ".env.*",
  "credentials*",
  ".git-credentials",
  "*.pem",
  "*.key",
  "*.p12",
  "*.pfx",
  "id_rsa*",
  "id_ed25519*",
  "id_ecdsa*",
  "id_dsa*",
  ".npmrc",
  ".pypirc",
  ".netrc",
  ".ssh/",
  ".aws/",
]);

/**
 * Which files of a skill are copied or uploaded.
 *
 * Patterns, matched without regard to case (secrets hide as `ID_RSA` too):
 * - `*` matches any characters but `/`, `?` one character but `/`, `**` any
 *   characters including `/`; everything else is literal;
 * - a pattern without `/` matches the name of a file or folder at any depth
 *   (`.git`, `*.pem`);
 * - a pattern ending in `/` matches folders only (`.ssh/`);
 * - any other pattern with a `/` matches the path from the skill's folder
 *   (`assets/private/**`, `/notes.txt`).
 *
 * An excluded folder excludes all it holds.
 *
 * @example Widening and narrowing the defaults
 * ```ts
 * import { assert } from "@std/assert";
 * import { type CopyPolicy } from "@skillrun/skillrun/runtime";
 * import { isExcluded } from "./copy.ts";
 * const policy: CopyPolicy = {
 *   extraExcludes: ["*.log", "node_modules/"],
 *   includes: [".env.example"],
 * };
 * assert(isExcluded("logs/run.log", policy));
 * assert(!isExcluded(".env.example", policy));
 * assert(isExcluded(".env.local", policy));
 * ```
 */
export interface CopyPolicy {
  /** Patterns that replace {@linkcode DEFAULT_COPY_EXCLUDES}; `[]` excludes nothing. */
  readonly excludes?: readonly string[];
  /** Patterns excluded on top of `excludes` (or the defaults). */
  readonly extraExcludes?: readonly string[];
  /** Patterns copied even when an exclude matches them, e.g. `.env.example`. */
  readonly includes?: readonly string[];
}

/** Options of {@linkcode isExcluded}. */
export interface IsExcludedOptions {
  /** Whether the path is a folder (so `name/` patterns apply to it). */
  readonly directory?: boolean;
}

/**
 * Whether a path of a skill is left out by a policy: the path itself or one of
 * its parent folders matches an exclude pattern and no include pattern.
 *
 * Needs no permission.
 *
 * @param relativePath The path from the skill's folder, `/`-separated (the
 * host's separator is accepted too).
 * @param policy The policy; default: {@linkcode DEFAULT_COPY_EXCLUDES}.
 * @param options Whether the path itself is a folder.
 * @returns Whether it is excluded.
 * @throws {TypeError} A pattern of the policy is empty or not a string.
 *
 * @example Default exclusions
 * ```ts
 * import { assert } from "@std/assert";
 * import { isExcluded } from "./copy.ts";
 * assert(isExcluded("sub/.git/config"));
 * assert(isExcluded("keys/server.pem"));
 * assert(isExcluded(".aws/credentials"));
 * assert(!isExcluded("scripts/run.py"));
 * ```
 */
export function isExcluded(
  relativePath: string,
  policy?: CopyPolicy,
  options: IsExcludedOptions = {},
): boolean {
  const compiled = compilePolicy(policy);
  const segments = relativePath.split(SEPARATORS).filter((s) =>
    s !== "" && s !== "."
  );
  let path = "";
  for (let i = 0; i < segments.length; i++) {
    const name = segments[i]!;
    path = path === "" ? name : `${path}/${name}`;
    const directory = i < segments.length - 1 || options.directory === true;
    if (excludes(compiled, name, path, directory)) return true;
  }
  return false;
}

/** A regular file of a skill, as {@linkcode walkSkillFiles} finds it. */
export interface SkillFileEntry {
  /** The path from the skill's folder, always `/`-separated. */
  readonly relativePath: string;
  /** The absolute path on this host. */
  readonly path: string;
  /** Size in bytes. */
  readonly size: number;
  /** The permission bits (`0o755`), or `null` where the host has none. */
  readonly mode: number | null;
  /** Whether the owner may execute it. */
  readonly executable: boolean;
}

/** Options of {@linkcode walkSkillFiles}. */
export interface WalkSkillFilesOptions {
  /** Stops the walk. */
  readonly signal?: AbortSignal;
  /**
   * Called for each entry the walk leaves out because it is not a regular
   * file or a folder (a symlink, a socket, a pipe, a device) and the policy
   * does not exclude it anyway; throwing stops the walk (a package refuses
   * links this way).
   */
  readonly onSkipped?: (entry: SkippedEntry) => void;
}

/** An entry {@linkcode walkSkillFiles} leaves out: not a regular file or folder. */
export interface SkippedEntry {
  /** The path from the skill's folder, always `/`-separated. */
  readonly relativePath: string;
  /** A symlink, or something else (socket, pipe, device). */
  readonly kind: "symlink" | "other";
}

/**
 * Walks the files of a skill folder that a policy lets through, for uploads:
 * regular files only (symlinks are skipped, never followed; sockets and pipes
 * too), in a stable order (each folder's names sorted, depth first).
 *
 * Needs `--allow-read` for the skill folder.
 *
 * @param source The skill's folder.
 * @param policy The policy; default: {@linkcode DEFAULT_COPY_EXCLUDES}.
 * @param options A signal.
 * @returns The files, one by one.
 * @throws {Deno.errors.NotFound} The folder does not exist.
 * @throws {Deno.errors.NotADirectory} The path is not a folder.
 * @throws {RuntimePermissionError} Reading is not allowed.
 *
 * @example Listing what an upload would send
 * ```ts
 * import { assert } from "@std/assert";
 * import { walkSkillFiles } from "@skillrun/skillrun/runtime";
 * const skill = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${skill}/SKILL.md`, "---\nname: x\n---\n");
 *   await Deno.writeTextFile(`${skill}/.env`, "TOKEN=secret");
 *   const names = [];
 *   for await (const file of walkSkillFiles(skill)) names.push(file.relativePath);
 *   assert(names.join() === "SKILL.md");
 * } finally {
 *   await Deno.remove(skill, { recursive: true });
 * }
 * ```
 */
export async function* walkSkillFiles(
  source: string,
  policy?: CopyPolicy,
  options: WalkSkillFilesOptions = {},
): AsyncGenerator<SkillFileEntry> {
  for await (
    const { relativePath, path } of walkSkillPaths(
      source,
      policy,
      options,
    )
  ) {
    let info: Deno.FileInfo;
    try {
      info = Deno.lstatSync(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue; // vanished
      throw toPermissionError(error, { operation: "read", path });
    }
    if (!info.isFile) continue; // replaced
    const mode = info.mode === null ? null : info.mode & 0o7777;
    yield {
      relativePath,
      path,
      size: info.size,
      mode,
      executable: mode !== null && (mode & 0o100) !== 0,
    };
  }
}

/** A file {@linkcode walkSkillPaths} finds: its paths, not yet opened. */
export interface SkillFilePath {
  /** The path from the skill's folder, always `/`-separated. */
  readonly relativePath: string;
  /** The absolute path on this host. */
  readonly path: string;
}

/**
 * {@linkcode walkSkillFiles} without the `lstat` of each file, for a caller
 * that opens every file anyway (and takes its size and mode from the open
 * file): the regular files as the folder listing shows them, in the same
 * order, the policy applied.
 *
 * Needs `--allow-read` for the skill folder.
 *
 * @param source The skill's folder.
 * @param policy The policy; default: {@linkcode DEFAULT_COPY_EXCLUDES}.
 * @param options A signal, what to do with links and special files.
 * @returns The files' paths, one by one.
 *
 * @example Listing the paths an upload would send
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { walkSkillPaths } from "./copy.ts";
 * const skill = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${skill}/SKILL.md`, "---\nname: x\n---\n");
 *   await Deno.writeTextFile(`${skill}/.env`, "TOKEN=secret");
 *   const names = [];
 *   for await (const file of walkSkillPaths(skill)) names.push(file.relativePath);
 *   assertEquals(names, ["SKILL.md"]);
 * } finally {
 *   await Deno.remove(skill, { recursive: true });
 * }
 * ```
 */
export async function* walkSkillPaths(
  source: string,
  policy?: CopyPolicy,
  options: WalkSkillFilesOptions = {},
): AsyncGenerator<SkillFilePath> {
  const { signal, onSkipped } = options;
  const compiled = compilePolicy(policy);
  const root = await sourceFolder(source, "walk");
  const pending: { dir: string; rel: string }[] = [{ dir: root, rel: "" }];
  // The walk lists synchronously, and its caller's work between two files
  // is synchronous too (an `lstat`, an open): an asynchronous listing or
  // stat costs a hop to Deno's thread pool, several times the call itself
  // (5,000 lstats: 50-80 ms asynchronous, 15-25 ms synchronous; 100 folders
  // listed: about 50 ms asynchronous, 3 ms synchronous). The event loop
  // runs (timers, I/O) once the walk has held it for a few milliseconds; a
  // turn of it costs 1-4 ms here (timers are clamped), so one per slice of
  // work is the cheapest bound on how long the loop waits.
  let held = performance.now();
  while (pending.length > 0) {
    signal?.throwIfAborted();
    const { dir, rel } = pending.pop()!;
    const entries = readEntriesSync(dir, source);
    entries.sort((a, b) => compareNames(a.name, b.name));
    const folders: { dir: string; rel: string }[] = [];
    for (const entry of entries) {
      const entryRel = rel === "" ? entry.name : `${rel}/${entry.name}`;
      if (entry.isSymlink || (!entry.isDirectory && !entry.isFile)) {
        if (onSkipped && !excludes(compiled, entry.name, entryRel, false)) {
          onSkipped({
            relativePath: entryRel,
            kind: entry.isSymlink ? "symlink" : "other",
          });
        }
        continue;
      }
      if (entry.isDirectory) {
        if (!excludes(compiled, entry.name, entryRel, true)) {
          folders.push({ dir: hostPath.join(dir, entry.name), rel: entryRel });
        }
      } else if (!excludes(compiled, entry.name, entryRel, false)) {
        if (performance.now() - held >= WALK_SLICE_MS) {
          signal?.throwIfAborted();
          await nextTask();
          held = performance.now();
        }
        yield { relativePath: entryRel, path: hostPath.join(dir, entry.name) };
      }
    }
    // Depth first, in sorted order: push the folders reversed.
    for (let i = folders.length - 1; i >= 0; i--) pending.push(folders[i]!);
  }
}

/** What {@linkcode copySkillFolder} did. */
export interface CopyStats {
  /** Regular files copied. */
  readonly files: number;
  /** Folders created or reused below the target. */
  readonly directories: number;
  /** Files and folders left out by the policy. */
  readonly excluded: number;
  /** Symlinks skipped (never followed). */
  readonly skippedSymlinks: number;
  /** Sockets, pipes and devices skipped. */
  readonly skippedOther: number;
  /**
   * Bytes of the files copied: counted when an `onProgress` listener is
   * given (one `stat` of each copy), else absent.
   */
  readonly bytes?: number;
}

/** Options of {@linkcode copySkillFolder}. */
export interface CopySkillFolderOptions {
  /** Which files to copy; default: {@linkcode DEFAULT_COPY_EXCLUDES} left out. */
  readonly policy?: CopyPolicy;
  /** Stops the copy (files already copied stay). */
  readonly signal?: AbortSignal;
  /** Called now and then with the counts so far, and once at the end. */
  readonly onProgress?: (stats: CopyStats) => void;
}

/** Files copied at once. */
const COPY_CONCURRENCY = 32;
/** How long the walk holds the event loop before letting it run, in ms. */
const WALK_SLICE_MS = 10;

/** Lets the event loop run (timers, I/O) before going on. */
function nextTask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}
/** Files between two progress reports. */
const PROGRESS_EVERY = 256;

/**
 * Copies a skill folder into a target folder: regular files only, with their
 * permission bits (so scripts stay executable) and byte for byte; symlinks,
 * sockets and pipes are skipped, never followed; the policy's exclusions are
 * left out. Files of the same name in the target are replaced (a symlink there
 * is replaced, not written through); files only in the target are kept. The
 * source is never modified.
 *
 * Copies in parallel with `Deno.copyFile` (copy-on-write or in-kernel copy
 * where the system offers it).
 *
 * Needs `--allow-read` for the source and `--allow-read` and `--allow-write`
 * for the target.
 *
 * @param source The skill's folder.
 * @param target The folder to copy into (created when missing).
 * @param options Policy, signal and progress callback.
 * @returns What was copied and skipped.
 * @throws {TypeError} The target is the source or lies inside it.
 * @throws {Deno.errors.NotFound} The source does not exist.
 * @throws {Deno.errors.NotADirectory} The source or the target is not a folder.
 * @throws {RuntimePermissionError} Deno or the system refused a read or write.
 *
 * @example Copying a skill
 * ```ts
 * import { assert } from "@std/assert";
 * import { copySkillFolder } from "@skillrun/skillrun/runtime";
 * const base = await Deno.makeTempDir();
 * try {
 *   await Deno.mkdir(`${base}/skill/scripts`, { recursive: true });
 *   await Deno.writeTextFile(`${base}/skill/SKILL.md`, "---\nname: skill\n---\n");
 *   await Deno.writeTextFile(`${base}/skill/scripts/run.sh`, "echo hi\n", { mode: 0o755 });
 *   await Deno.writeTextFile(`${base}/skill/.env`, "TOKEN=secret");
 *   const stats = await copySkillFolder(`${base}/skill`, `${base}/copy`);
 *   assert(stats.files === 2 && stats.excluded === 1);
 * } finally {
 *   await Deno.remove(base, { recursive: true });
 * }
 * ```
 */
export async function copySkillFolder(
  source: string,
  target: string,
  options: CopySkillFolderOptions = {},
): Promise<CopyStats> {
  const { signal, onProgress } = options;
  signal?.throwIfAborted();
  const compiled = compilePolicy(options.policy);
  const sourceRoot = await sourceFolder(source, "copy");
  const targetAbsolute = hostPath.resolve(target);
  let targetRoot: string;
  try {
    targetRoot = (await realLocation(targetAbsolute)) ?? targetAbsolute;
  } catch (error) {
    throw toPermissionError(error, { operation: "copy to", path: target });
  }
  if (isInside(targetRoot, sourceRoot)) {
    throw new TypeError(
      `Cannot copy "${source}" to "${target}": the target is inside the source`,
    );
  }
  const stats: {
    files: number;
    directories: number;
    excluded: number;
    skippedSymlinks: number;
    skippedOther: number;
    bytes?: number;
  } = {
    files: 0,
    directories: 0,
    excluded: 0,
    skippedSymlinks: 0,
    skippedOther: 0,
    ...(onProgress ? { bytes: 0 } : {}),
  };
  const fresh = await ensureFolder(targetRoot, null);

  // Walk the source, creating the target's folders, then copy the files with
  // the folders interleaved (parallel creates in one folder contend).
  const jobsByFolder: CopyJob[][] = [];
  async function visit(
    from: string,
    to: string,
    rel: string,
    toIsFresh: boolean,
  ): Promise<void> {
    signal?.throwIfAborted();
    const [entries, existing] = await Promise.all([
      readEntries(from, source),
      toIsFresh ? null : readExisting(to, target),
    ]);
    const jobs: CopyJob[] = [];
    const folders: Promise<void>[] = [];
    for (const entry of entries) {
      const entryRel = rel === "" ? entry.name : `${rel}/${entry.name}`;
      if (entry.isSymlink) {
        stats.skippedSymlinks++;
      } else if (entry.isDirectory) {
        if (excludes(compiled, entry.name, entryRel, true)) {
          stats.excluded++;
          continue;
        }
        const childFrom = hostPath.join(from, entry.name);
        const childTo = hostPath.join(to, entry.name);
        folders.push((async () => {
          const childFresh = await ensureFolder(
            childTo,
            existing?.get(entry.name) ?? null,
          );
          stats.directories++;
          await visit(childFrom, childTo, entryRel, childFresh);
        })());
      } else if (entry.isFile) {
        if (excludes(compiled, entry.name, entryRel, false)) {
          stats.excluded++;
          continue;
        }
        jobs.push({
          from: hostPath.join(from, entry.name),
          to: hostPath.join(to, entry.name),
          existing: existing?.get(entry.name) ?? null,
        });
      } else {
        stats.skippedOther++;
      }
    }
    if (jobs.length > 0) jobsByFolder.push(jobs);
    await settleAll(folders);
  }
  await visit(sourceRoot, targetRoot, "", fresh);

  const jobs = interleave(jobsByFolder);
  await mapLimited(jobs, COPY_CONCURRENCY, async (job) => {
    await copyOne(job, source, target);
    if (stats.bytes !== undefined) {
      // Read first, then add: `a += await b` would add to a stale `a`.
      const size = (await Deno.stat(job.to)).size;
      stats.bytes += size;
    }
    stats.files++;
    if (onProgress && stats.files % PROGRESS_EVERY === 0) {
      onProgress({ ...stats });
    }
  }, signal ? { signal } : {});
  const result: CopyStats = Object.freeze({ ...stats });
  onProgress?.(result);
  return result;
}

/**
 * A folder name for a skill's copy, derived from its name and source path:
 * the name made safe (ASCII letters, digits, `.`, `_`, `-`; at most 48
 * characters), a `-`, and 12 hex digits of a 64-bit FNV-1a hash of the
 * absolute source path. The same skill gets the same name in every process;
 * two skills of the same name from different folders get different names.
 *
 * Needs no permission.
 *
 * @param skill The skill's name and folder (`basePath`, made absolute).
 * @returns The folder name.
 *
 * @example A stable folder name
 * ```ts
 * import { assert } from "@std/assert";
 * import { stableSkillFolderName } from "@skillrun/skillrun/runtime";
 * const name = stableSkillFolderName({ name: "pdf", basePath: "/skills/pdf" });
 * assert(/^pdf-[0-9a-f]{12}$/.test(name));
 * assert(name === stableSkillFolderName({ name: "pdf", basePath: "/skills/pdf/" }));
 * ```
 */
export function stableSkillFolderName(
  skill: { readonly name: string; readonly basePath: string },
): string {
  const safe = skill.name.normalize("NFKC")
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^[.\-_]+/, "")
    .slice(0, 48)
    .replace(/[.\-_]+$/, "") || "skill";
  let path = hostPath.resolve(skill.basePath);
  while (path.length > 1 && /[\\/]$/.test(path)) path = path.slice(0, -1);
  return `${safe}-${fnv1a64(path).slice(0, 12)}`;
}

// ---------------------------------------------------------------------------

const SEPARATORS = Deno.build.os === "windows" ? /[\\/]/ : /\//;

interface CompiledPattern {
  readonly regex: RegExp;
  readonly directoryOnly: boolean;
  readonly anchored: boolean;
}

interface CompiledPolicy {
  readonly excludes: readonly CompiledPattern[];
  readonly includes: readonly CompiledPattern[];
}

const compiledPolicies = new WeakMap<CopyPolicy, CompiledPolicy>();
let compiledDefault: CompiledPolicy | undefined;

function compilePolicy(policy: CopyPolicy | undefined): CompiledPolicy {
  if (policy === undefined) {
    return compiledDefault ??= {
      excludes: DEFAULT_COPY_EXCLUDES.map(compilePattern),
      includes: [],
    };
  }
  let compiled = compiledPolicies.get(policy);
  if (!compiled) {
    compiled = {
      excludes: [
        ...(policy.excludes ?? DEFAULT_COPY_EXCLUDES),
        ...(policy.extraExcludes ?? []),
      ].map(compilePattern),
      includes: (policy.includes ?? []).map(compilePattern),
    };
    compiledPolicies.set(policy, compiled);
  }
  return compiled;
}

function compilePattern(pattern: string): CompiledPattern {
  if (typeof pattern !== "string" || pattern.trim() === "") {
    throw new TypeError(
      `Cannot use copy pattern ${
        JSON.stringify(pattern)
      }: it must be a non-empty string`,
    );
  }
  let body = pattern.replaceAll("\\", "/");
  const directoryOnly = body.endsWith("/");
  body = body.replace(/\/+$/, "");
  const anchored = body.includes("/");
  body = body.replace(/^\/+/, "");
  if (body === "") {
    throw new TypeError(
      `Cannot use copy pattern "${pattern}": it matches nothing`,
    );
  }
  let source = "";
  for (let i = 0; i < body.length; i++) {
    const char = body[i]!;
    if (char === "*" && body[i + 1] === "*") {
      // `**/` matches zero or more folders; `**` elsewhere anything.
      if (body[i + 2] === "/") {
        source += "(?:.*/)?";
        i += 2;
      } else {
        source += ".*";
        i += 1;
      }
    } else if (char === "*") {
      source += "[^/]*";
    } else if (char === "?") {
      source += "[^/]";
    } else {
      source += char.replace(/[.+^${}()|[\]\\]/g, "\\$&");
    }
  }
  return {
    regex: new RegExp(`^${source}$`, "i"),
    directoryOnly,
    anchored,
  };
}

function matches(
  pattern: CompiledPattern,
  name: string,
  path: string,
  directory: boolean,
): boolean {
  if (pattern.directoryOnly && !directory) return false;
  return pattern.regex.test(pattern.anchored ? path : name);
}

function excludes(
  policy: CompiledPolicy,
  name: string,
  path: string,
  directory: boolean,
): boolean {
  return policy.excludes.some((p) => matches(p, name, path, directory)) &&
    !policy.includes.some((p) => matches(p, name, path, directory));
}

async function sourceFolder(source: string, operation: string) {
  checkPathText(source, operation);
  let root: string;
  let info: Deno.FileInfo;
  try {
    root = await Deno.realPath(source);
    info = await Deno.stat(root);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Deno.errors.NotFound(
        `Cannot ${operation} "${source}": no such folder`,
      );
    }
    throw toPermissionError(error, { operation: "read", path: source });
  }
  if (!info.isDirectory) {
    throw new Deno.errors.NotADirectory(
      `Cannot ${operation} "${source}": it is not a folder`,
    );
  }
  return root;
}

async function readEntries(
  dir: string,
  shown: string,
): Promise<Deno.DirEntry[]> {
  const entries: Deno.DirEntry[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) entries.push(entry);
  } catch (error) {
    throw toPermissionError(error, {
      operation: "read",
      path: dir === shown ? shown : dir,
    });
  }
  return entries;
}

function readEntriesSync(dir: string, shown: string): Deno.DirEntry[] {
  try {
    return [...Deno.readDirSync(dir)];
  } catch (error) {
    throw toPermissionError(error, {
      operation: "read",
      path: dir === shown ? shown : dir,
    });
  }
}

async function readExisting(
  dir: string,
  shown: string,
): Promise<Map<string, Deno.DirEntry>> {
  const existing = new Map<string, Deno.DirEntry>();
  for (const entry of await readEntries(dir, shown)) {
    existing.set(entry.name, entry);
  }
  return existing;
}

/**
 * Makes sure `path` is a real folder (never a symlink to one); returns whether
 * it was created now (so it is empty and needs no look-up of what it holds).
 */
async function ensureFolder(
  path: string,
  existing: Deno.DirEntry | null,
): Promise<boolean> {
  try {
    if (existing?.isDirectory) return false;
    if (existing) await Deno.remove(path, { recursive: true });
    try {
      await Deno.mkdir(path);
      return true;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        await Deno.mkdir(path, { recursive: true });
        return true;
      }
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
    if ((await Deno.lstat(path)).isDirectory) return false;
    throw new Deno.errors.NotADirectory(
      `Cannot copy to "${path}": it is not a folder`,
    );
  } catch (error) {
    throw toPermissionError(error, { operation: "write", path });
  }
}

interface CopyJob {
  readonly from: string;
  readonly to: string;
  /** What the target folder held under this name, when it was not fresh. */
  readonly existing: Deno.DirEntry | null;
}

async function copyOne(
  job: CopyJob,
  source: string,
  target: string,
): Promise<void> {
  try {
    // Unlink what was there first: never write through a symlink or a hard
    // link, and a read-only file is no obstacle.
    if (job.existing) {
      await Deno.remove(job.to, { recursive: job.existing.isDirectory });
    }
    await Deno.copyFile(job.from, job.to);
  } catch (error) {
    const mapped = toPermissionError(error, {
      operation: "copy",
      path: job.to,
    });
    if (mapped !== error) throw mapped;
    throw new Error(
      `Cannot copy "${source}" to "${target}": ${
        error instanceof Error ? error.message : String(error)
      }`,
      { cause: error },
    );
  }
}

function interleave<T>(lists: readonly (readonly T[])[]): T[] {
  const out: T[] = [];
  const longest = Math.max(0, ...lists.map((list) => list.length));
  for (let i = 0; i < longest; i++) {
    for (const list of lists) if (i < list.length) out.push(list[i]!);
  }
  return out;
}

/** Awaits every promise, then rethrows the first failure. */
async function settleAll(promises: readonly Promise<void>[]): Promise<void> {
  const results = await Promise.allSettled(promises);
  const rejected = results.find((r) => r.status === "rejected");
  if (rejected) throw (rejected as PromiseRejectedResult).reason;
}

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK_64 = 0xffffffffffffffffn;

function fnv1a64(text: string): string {
  let hash = FNV_OFFSET;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= BigInt(byte);
    hash = (hash * FNV_PRIME) & MASK_64;
  }
  return hash.toString(16).padStart(16, "0");
}
