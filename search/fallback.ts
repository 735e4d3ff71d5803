/**
 * The engine over the file-system interface alone (a runtime that cannot run
 * commands): walks folders with `list`, reads files with `readBytes` and
 * matches them with `re2js` (linear time: no pattern runs away), on this
 * thread, a few files read at a time. The time limit and the caller's signal
 * stop it between files.
 *
 * @module
 */
import type { SearchFileInfo, SearchFileSystem } from "./types.ts";
import { timeoutError } from "./errors.ts";
import { makeFilters } from "./_filter.ts";
import { matchText } from "./_match.ts";
import {
  type FileFound,
  type GlobPlan,
  GrepCollector,
  type GrepPlan,
  planGlob,
  planGrep,
  resolveRoot,
  SearchSlots,
  startDeadline,
} from "./_plan.ts";
import { comparePaths, HEAVY_FOLDERS, isBinary, joinPath } from "./rules.ts";
import {
  DEFAULT_LS_LIMIT,
  type GlobFile,
  type GlobRequest,
  type GlobResult,
  type GrepRequest,
  type GrepResult,
  type LsEntry,
  type LsRequest,
  type LsResult,
  type SearchEngine,
  type SkipReason,
} from "./types.ts";

/** Options of {@linkcode FallbackSearch}. */
export interface FallbackSearchOptions {
  /** The runtime's file system. */
  readonly fs: SearchFileSystem;
  /**
   * Whether the file system's paths are host paths (a symlinked root is then
   * followed with `Deno.stat`). Default `false`.
   */
  readonly local?: boolean;
  /** How many files are read at once. Default 8. */
  readonly workers?: number;
}

/** A file found by the walk, relative to the root. */
interface Found extends FileFound {
  readonly modifiedMs?: number | null;
}

/**
 * The engine over the file-system interface. Same result format as the other
 * engines; see `README.md` for where its regex dialect (RE2) differs from
 * ripgrep's.
 *
 * @example Searching a folder
 * ```ts
 * import { assert } from "@std/assert";
 * import { FallbackSearch } from "@skillrun/skillrun/search";
 * import { LocalFileSystem } from "@skillrun/skillrun/runtime";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/a.txt`, "one\ntwo\n");
 *   const search = new FallbackSearch({ fs: new LocalFileSystem({ cwd: dir }) });
 *   const result = await search.grep({ pattern: "tw.", outputMode: "count" });
 *   assert(result.mode === "count" && result.counts[0]?.count === 1);
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export class FallbackSearch implements SearchEngine {
  /** Which engine this is. */
  readonly engine = "fallback" as const;
  readonly #fs: SearchFileSystem;
  readonly #local: boolean;
  readonly #reads: number;
  readonly #slots = new SearchSlots();

  /**
   * Makes the engine.
   *
   * @param options The file system, whether its paths are local, reads at once.
   */
  constructor(options: FallbackSearchOptions) {
    this.#fs = options.fs;
    this.#local = options.local ?? false;
    this.#reads = Math.max(1, options.workers ?? 8);
  }

  /**
   * Searches file contents (see {@linkcode GrepRequest}).
   *
   * @param request What to search.
   * @returns The matches.
   * @throws {TypeError} For a bad pattern, glob, type or mode.
   * @throws {RangeError} For bad numbers.
   * @throws {Deno.errors.NotFound} When the path does not exist.
   * @throws {SearchTimeoutError} When the time limit passes.
   */
  async grep(request: GrepRequest): Promise<GrepResult> {
    const plan = await planGrep(this.#fs, request, this.#local);
    const collector = new GrepCollector(plan);
    if (plan.root.isFile && plan.root.size > plan.maxFileBytes) {
      collector.skip("", "too-large", plan.root.size);
      return collector.result("fallback");
    }
    const skipped: { path: string; reason: SkipReason; size?: number }[] = [];
    const found = await this.#walk(
      plan,
      `Search for "${plan.regex.pattern}"`,
      skipped,
    );
    for (const skip of skipped) {
      collector.skip(skip.path, skip.reason, skip.size);
    }
    for (const file of found) {
      if (!collector.add(file)) break;
    }
    return collector.result("fallback");
  }

  /**
   * Finds files by glob, newest first (see {@linkcode GlobRequest}).
   *
   * @param request What to find.
   * @returns The files.
   * @throws {TypeError} For a bad glob or a path that is a file.
   * @throws {Deno.errors.NotFound} When the path does not exist.
   * @throws {SearchTimeoutError} When the time limit passes.
   */
  async glob(request: GlobRequest): Promise<GlobResult> {
    const plan = await planGlob(this.#fs, request, this.#local);
    const found = await this.#walk(plan, `Glob "${request.pattern}"`, []);
    const files = found.map((f): GlobFile => ({
      path: joinPath(plan.root.path, f.path),
      modifiedMs: f.modifiedMs ?? null,
    }));
    return finishGlob(plan, files, "fallback");
  }

  /**
   * Lists a folder, folders first (see {@linkcode LsRequest}).
   *
   * @param request What to list.
   * @returns The entries.
   * @throws {TypeError} For a path that is a file.
   * @throws {RangeError} For bad numbers.
   * @throws {Deno.errors.NotFound} When the path does not exist.
   */
  ls(request: LsRequest): Promise<LsResult> {
    return listFolder(this.#fs, request, this.#local);
  }

  /** Walks the root and returns what was found, sorted by path. */
  async #walk(
    plan: GrepPlan | GlobPlan,
    what: string,
    skipped: { path: string; reason: SkipReason; size?: number }[],
  ): Promise<Found[]> {
    const deadline = startDeadline(plan.timeoutMs, plan.signal);
    const signal = deadline.signal;
    // Matching is synchronous: the time limit is checked between windows.
    const endAt = performance.now() + plan.timeoutMs;
    const stop = (): void => {
      signal.throwIfAborted();
      if (performance.now() > endAt) throw timeoutError(what, plan.timeoutMs);
    };
    let release: (() => void) | undefined;
    try {
      release = await this.#slots.acquire(signal);
      const grep = "mode" in plan ? plan : null;
      const filters = makeFilters(plan.filters);
      const found: Found[] = [];
      // Content mode: only the first files (in path order) can be shown.
      const needed = grep?.mode === "content" ? grep.maxLinesPerFile : Infinity;
      let retained = 0;
      let cutoff: string | null = null;
      const keep = (file: Found): void => {
        if (cutoff !== null && comparePaths(file.path, cutoff) > 0) return;
        found.push(file);
        retained += file.lines.length;
        if (retained <= 4 * needed + 1000) return;
        found.sort((a, b) => comparePaths(a.path, b.path));
        let sum = 0;
        for (let i = 0; i < found.length; i++) {
          sum += found[i]!.lines.length;
          if (sum >= needed) {
            found.length = i + 1;
            cutoff = found[i]!.path;
            break;
          }
        }
        retained = found.reduce((n, f) => n + f.lines.length, 0);
      };
      const search = async (relativePath: string): Promise<void> => {
        let bytes: Uint8Array;
        try {
          bytes = await this.#fs.readBytes(
            joinPath(plan.root.path, relativePath),
            { signal, maxBytes: grep!.maxFileBytes },
          );
        } catch (error) {
          if (signal.aborted) throw error;
          if (error instanceof RangeError) {
            skipped.push({ path: relativePath, reason: "too-large" });
          } else if (
            error instanceof TypeError && /regular file/.test(error.message)
          ) {
            skipped.push({ path: relativePath, reason: "not-regular" });
          }
          return;
        }
        signal.throwIfAborted();
        if (isBinary(bytes)) return;
        const matches = matchText(
          decoder.decode(bytes),
          grep!.regex.matcher(stop),
          {
            multiline: grep!.multiline,
            mode: grep!.mode === "files_with_matches"
              ? "files"
              : grep!.mode === "count"
              ? "count"
              : "content",
            before: grep!.before,
            after: grep!.after,
            maxLineChars: grep!.maxLineChars,
            maxLines: grep!.maxLinesPerFile,
          },
        );
        if (matches) keep({ path: relativePath, ...matches });
      };
      // Folders are listed, files read, a few at a time.
      const folders: string[] = plan.root.isFile ? [] : [""];
      const files: string[] = plan.root.isFile ? [""] : [];
      const running = new Set<Promise<void>>();
      let failure: { error: unknown } | null = null;
      const start = (task: Promise<void>): void => {
        const tracked = task.catch((error) => {
          failure ??= { error };
        }).finally(() => running.delete(tracked));
        running.add(tracked);
      };
      while (folders.length > 0 || files.length > 0 || running.size > 0) {
        if (failure !== null) {
          await Promise.all(running);
          throw (failure as { error: unknown }).error;
        }
        signal.throwIfAborted();
        while (running.size < this.#reads && (folders.length || files.length)) {
          // Folders first, then files in batches (a shell engine's snapshot
          // lists from memory and reads a batch with one command).
          if (folders.length > 0) {
            const folder = folders.pop()!;
            const into = { folders, files, skipped, keep };
            start(this.#list(plan, folder, filters, signal, !!grep, into));
          } else {
            const batch = files.splice(-64);
            start(Promise.all(batch.map(search)).then(() => {}));
          }
        }
        if (running.size > 0) await Promise.race(running);
      }
      if (failure !== null) throw (failure as { error: unknown }).error;
      found.sort((a, b) => comparePaths(a.path, b.path));
      return found;
    } catch (error) {
      throw signal.aborted ? deadline.error(what) : error;
    } finally {
      deadline.clear();
      release?.();
    }
  }

  /** Lists one folder: sub-folders and files to visit, skips, glob finds. */
  async #list(
    plan: GrepPlan | GlobPlan,
    folder: string,
    filters: ReturnType<typeof makeFilters>,
    signal: AbortSignal,
    grep: boolean,
    into: {
      folders: string[];
      files: string[];
      skipped: { path: string; reason: SkipReason; size?: number }[];
      keep: (file: Found) => void;
    },
  ): Promise<void> {
    let entries: readonly SearchFileInfo[] = [];
    try {
      entries = (await this.#fs.list(joinPath(plan.root.path, folder), {
        depth: 1,
        limit: Number.MAX_SAFE_INTEGER,
        signal,
      })).entries;
    } catch (error) {
      if (signal.aborted) throw error;
      // Unreadable folder: skipped, as ripgrep does.
    }
    const maxFileBytes = "maxFileBytes" in plan ? plan.maxFileBytes : Infinity;
    const prefix = folder === "" ? "" : `${folder}/`;
    for (const entry of entries) {
      const path = prefix + entry.name;
      if (entry.type === "directory") {
        if (filters.descend(path, entry.name)) into.folders.push(path);
      } else if (entry.type === "other" || entry.type === "file") {
        if (!filters.include(path, entry.name)) continue;
        if (!grep) {
          if (entry.type === "file") {
            into.keep({
              path,
              count: 0,
              lines: [],
              modifiedMs: entry.modifiedAt?.getTime() ?? null,
            });
          }
        } else if (entry.type === "other") {
          into.skipped.push({ path, reason: "not-regular" });
        } else if (entry.size > maxFileBytes) {
          into.skipped.push({ path, reason: "too-large", size: entry.size });
        } else {
          into.files.push(path);
        }
      }
    }
  }
}

const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * Sorts found files newest first (then by path) and applies the limit.
 *
 * @param plan The checked request.
 * @param files The files found.
 * @param engine Which engine answered.
 * @returns The result.
 */
export function finishGlob(
  plan: GlobPlan,
  files: GlobFile[],
  engine: "ripgrep" | "fallback",
): GlobResult {
  files.sort((a, b) => {
    const x = a.modifiedMs ?? -Infinity;
    const y = b.modifiedMs ?? -Infinity;
    if (x !== y) return y - x;
    return comparePaths(a.path, b.path);
  });
  return {
    path: plan.root.path,
    engine,
    files: files.slice(0, plan.limit),
    totalFiles: files.length,
    truncated: files.length > plan.limit,
  };
}

/**
 * Lists a folder to a depth, folders first, heavy folders below the root
 * shown but not descended into.
 *
 * @param fs The runtime's file system.
 * @param request What to list.
 * @param local Whether the file system's paths are local.
 * @returns The entries.
 */
export async function listFolder(
  fs: SearchFileSystem,
  request: LsRequest,
  local: boolean,
): Promise<LsResult> {
  const depth = request.depth ?? 1;
  const limit = request.limit ?? DEFAULT_LS_LIMIT;
  if (!Number.isInteger(depth) || depth < 1) {
    throw new RangeError(
      `Invalid depth "${depth}": expected an integer of at least 1`,
    );
  }
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError(
      `Invalid limit "${limit}": expected an integer of at least 1`,
    );
  }
  request.signal?.throwIfAborted();
  const root = await resolveRoot(fs, request.path, local);
  if (root.isFile) {
    throw new TypeError(`Cannot list "${request.path ?? "."}": not a folder`);
  }
  const entries: LsEntry[] = [];
  let truncated = false;
  // Breadth first, so that a limit keeps the shallow entries.
  let level: string[] = [""];
  for (let d = 1; d <= depth && level.length > 0 && !truncated; d++) {
    const next: string[] = [];
    for (const folder of level) {
      request.signal?.throwIfAborted();
      let listed: readonly SearchFileInfo[];
      try {
        listed = (await fs.list(joinPath(root.path, folder), {
          depth: 1,
          limit: Number.MAX_SAFE_INTEGER,
          ...(request.signal ? { signal: request.signal } : {}),
        })).entries;
      } catch (error) {
        if (folder === "") throw error;
        continue;
      }
      const sorted = [...listed].sort((a, b) => comparePaths(a.name, b.name));
      for (const info of sorted) {
        if (entries.length >= limit) {
          truncated = true;
          break;
        }
        const path = folder === "" ? info.name : `${folder}/${info.name}`;
        const heavy = info.type === "directory" && HEAVY_FOLDERS.has(info.name);
        entries.push({
          path,
          type: info.type,
          size: info.size,
          skipped: heavy && d < depth,
        });
        if (info.type === "directory" && !heavy) next.push(path);
      }
      if (truncated) break;
    }
    level = next;
  }
  entries.sort((a, b) => {
    const x = a.type === "directory" ? 0 : 1;
    const y = b.type === "directory" ? 0 : 1;
    return x - y || comparePaths(a.path, b.path);
  });
  return { path: root.path, entries, truncated };
}
