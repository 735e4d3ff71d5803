/**
 * The pure TypeScript search engine: walks folders, reads files and matches
 * them in workers, with ripgrep's semantics (see `regex.ts`, `glob.ts`,
 * `rules.ts`). It runs over any {@linkcode SearchFileSystem} (remote
 * runtimes), or over local paths directly when the file system's paths are
 * the host's (faster: the workers list and read files themselves).
 *
 * @module
 */
import type { SearchFileInfo, SearchFileSystem } from "./types.ts";
import { type FilterSpec, makeFilters, workerFilters } from "./_filter.ts";
import { workerUrl } from "./_worker.ts";
import {
  type FileFound,
  type GlobPlan,
  GrepCollector,
  type GrepPlan,
  planGlob,
  planGrep,
  resolveRoot,
  startDeadline,
} from "./_plan.ts";
import type {
  FileOutcome,
  WorkerConfig,
  WorkerJob,
  WorkerReply,
} from "./_protocol.ts";
import { comparePaths, HEAVY_FOLDERS, joinPath } from "./rules.ts";
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
} from "./types.ts";

/** Options of {@linkcode FallbackSearch}. */
export interface FallbackSearchOptions {
  /** The runtime's file system. */
  readonly fs: SearchFileSystem;
  /**
   * Whether the file system's paths are host paths, so that files may be
   * listed and read with `Deno.*` directly (faster). Default `false`.
   */
  readonly local?: boolean;
  /** How many workers match files. Default: the CPU count, 1 to 4. */
  readonly workers?: number;
}

/** Files per job. */
const CHUNK = 64;
/** Jobs in flight per worker. */
const DEPTH = 2;

class WorkerPool {
  readonly #workers: Worker[] = [];
  readonly #busy: number[] = [];
  readonly #pending = new Map<
    number,
    {
      resolve: (r: WorkerReply) => void;
      reject: (e: unknown) => void;
      worker: number;
    }
  >();
  #failure: unknown = null;

  constructor(size: number, config: WorkerConfig) {
    for (let i = 0; i < size; i++) {
      const worker = new Worker(workerUrl(), { type: "module" });
      worker.onmessage = (event: MessageEvent<WorkerReply>): void => {
        const reply = event.data;
        const pending = this.#pending.get(reply.id);
        if (!pending) return;
        this.#pending.delete(reply.id);
        this.#busy[pending.worker]!--;
        if (reply.error !== undefined) {
          pending.reject(new Error(`Search worker failed: ${reply.error}`));
        } else {
          pending.resolve(reply);
        }
      };
      worker.onerror = (event: ErrorEvent): void => {
        event.preventDefault();
        this.#fail(new Error(`Search worker failed: ${event.message}`));
      };
      worker.postMessage(config);
      this.#workers.push(worker);
      this.#busy.push(0);
    }
  }

  #fail(error: unknown): void {
    this.#failure ??= error;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }

  run(job: WorkerJob, transfer: Transferable[] = []): Promise<WorkerReply> {
    if (this.#failure !== null) return Promise.reject(this.#failure);
    let index = 0;
    for (let i = 1; i < this.#busy.length; i++) {
      if (this.#busy[i]! < this.#busy[index]!) index = i;
    }
    this.#busy[index]!++;
    return new Promise((resolve, reject) => {
      this.#pending.set(job.id, { resolve, reject, worker: index });
      this.#workers[index]!.postMessage(job, transfer);
    });
  }

  close(): void {
    for (const worker of this.#workers) worker.terminate();
    this.#fail(new Error("Search stopped"));
  }
}

/**
 * The pure TypeScript engine. Same answers as {@linkcode RipgrepSearch}.
 *
 * @example Searching a folder
 * ```ts
 * import { assert } from "@std/assert";
 * import { FallbackSearch } from "./fallback.ts";
 * import { LocalFileSystem } from "../runtimes/local/fs.ts";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/a.txt`, "one\ntwo\n");
 *   const search = new FallbackSearch({ fs: new LocalFileSystem({ root: dir }) });
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
  readonly #workers: number;

  /**
   * Makes the engine.
   *
   * @param options The file system, whether its paths are local, workers.
   */
  constructor(options: FallbackSearchOptions) {
    this.#fs = options.fs;
    this.#local = options.local ?? false;
    const cpus = typeof navigator !== "undefined"
      ? navigator.hardwareConcurrency ?? 2
      : 2;
    this.#workers = options.workers ?? Math.max(1, Math.min(4, cpus));
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
   *
   * Needs read access to the searched files (local mode).
   */
  async grep(request: GrepRequest): Promise<GrepResult> {
    const plan = await planGrep(this.#fs, request, this.#local);
    const found = await this.#walk(
      plan,
      {
        kind: "grep",
        root: plan.root.path,
        source: plan.regex.source,
        flags: plan.regex.flags,
        multiline: plan.multiline,
        mode: plan.mode === "files_with_matches"
          ? "files"
          : plan.mode === "count"
          ? "count"
          : "content",
        before: plan.before,
        after: plan.after,
        maxLineChars: plan.maxLineChars,
        maxLinesPerFile: plan.maxLinesPerFile,
        inlineFiles: 16,
        filters: workerFilters(plan.filters),
      },
      plan.filters,
      `Search for "${plan.regex.pattern}"`,
    );
    const collector = new GrepCollector(plan);
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
   *
   * Needs read access to the searched folder (local mode).
   */
  async glob(request: GlobRequest): Promise<GlobResult> {
    const plan = await planGlob(this.#fs, request, this.#local);
    const found = await this.#walk(
      plan,
      {
        kind: "glob",
        root: plan.root.path,
        inlineFiles: 0,
        filters: workerFilters(plan.filters),
      },
      plan.filters,
      `Glob "${request.pattern}"`,
    );
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
   *
   * Needs read access to the listed folder.
   */
  ls(request: LsRequest): Promise<LsResult> {
    return listFolder(this.#fs, request, this.#local);
  }

  /**
   * Walks the root (in workers, or with the file system on this thread) and
   * returns what was found, sorted by path.
   */
  async #walk(
    plan: GrepPlan | GlobPlan,
    config: WorkerConfig,
    spec: FilterSpec,
    what: string,
  ): Promise<(FileFound & { modifiedMs?: number | null })[]> {
    const deadline = startDeadline(plan.timeoutMs, plan.signal);
    const contentMode = "mode" in plan && plan.mode === "content";
    const needed = "mode" in plan ? plan.maxLinesPerFile : Infinity;
    const useWorkers = config.kind === "grep" || this.#local;
    const pool = useWorkers ? new WorkerPool(this.#workers, config) : null;
    const filters = makeFilters(spec);
    const found: FileOutcome[] = [];
    let retainedLines = 0;
    let cutoff: string | null = null;
    let nextId = 0;

    const prune = (): void => {
      // Content mode: only the first files (in path order) can be shown.
      found.sort((a, b) => comparePaths(a.path, b.path));
      let sum = 0;
      let keep = found.length;
      for (let i = 0; i < found.length; i++) {
        sum += found[i]!.lines.length;
        if (sum >= needed) {
          keep = i + 1;
          break;
        }
      }
      if (keep < found.length) {
        found.length = keep;
        cutoff = found[keep - 1]!.path;
      }
      retainedLines = found.reduce((n, f) => n + f.lines.length, 0);
    };
    const accept = (outcomes: readonly FileOutcome[]): void => {
      for (const outcome of outcomes) {
        if (cutoff !== null && comparePaths(outcome.path, cutoff) > 0) continue;
        found.push(outcome);
        retainedLines += outcome.lines.length;
      }
      if (contentMode && retainedLines > 4 * needed + 1000) prune();
    };

    const run = async (job: WorkerJob): Promise<WorkerReply> => {
      if (this.#local) return await pool!.run(job);
      if (job.kind === "dir") {
        return await this.#listWithFs(
          config,
          job,
          filters,
          deadline.signal,
        );
      }
      const bytes = await Promise.all(
        job.files.map((f) =>
          this.#fs.readBytes(joinPath(config.root, f), {
            signal: deadline.signal,
          }).catch(() => null)
        ),
      );
      const transfer = [
        ...new Set(
          bytes.flatMap((b) =>
            b !== null && b.buffer instanceof ArrayBuffer ? [b.buffer] : []
          ),
        ),
      ];
      return await pool!.run({ ...job, bytes }, transfer);
    };

    try {
      const queue: WorkerJob[] = plan.root.isFile
        ? [{ kind: "files", id: nextId++, files: [""] }]
        : [{ kind: "dir", id: nextId++, path: "" }];
      const concurrency = this.#local
        ? this.#workers * DEPTH
        : Math.max(4, this.#workers * DEPTH);
      await new Promise<void>((resolve, reject) => {
        let active = 0;
        let done = false;
        const finish = (error?: unknown): void => {
          if (done) return;
          done = true;
          deadline.signal.removeEventListener("abort", onAbort);
          if (error === undefined) resolve();
          else reject(error);
        };
        const onAbort = (): void => finish(deadline.error(what));
        deadline.signal.addEventListener("abort", onAbort, { once: true });
        if (deadline.signal.aborted) return onAbort();
        const pump = (): void => {
          while (!done && active < concurrency && queue.length > 0) {
            const job = queue.shift()!;
            active++;
            run(job).then((reply) => {
              active--;
              if (done) return;
              for (let i = reply.dirs.length - 1; i >= 0; i--) {
                queue.unshift({
                  kind: "dir",
                  id: nextId++,
                  path: reply.dirs[i]!,
                });
              }
              for (let i = 0; i < reply.files.length; i += CHUNK) {
                queue.push({
                  kind: "files",
                  id: nextId++,
                  files: reply.files.slice(i, i + CHUNK),
                });
              }
              accept(reply.outcomes);
              pump();
            }, (error) => {
              active--;
              finish(deadline.signal.aborted ? deadline.error(what) : error);
            });
          }
          if (!done && active === 0 && queue.length === 0) finish();
        };
        pump();
      });
    } finally {
      deadline.clear();
      pool?.close();
    }
    found.sort((a, b) => comparePaths(a.path, b.path));
    return found;
  }

  /** Lists one folder with the file system (remote mode). */
  async #listWithFs(
    config: WorkerConfig,
    job: WorkerJob & { kind: "dir" },
    filters: ReturnType<typeof makeFilters>,
    signal: AbortSignal,
  ): Promise<WorkerReply> {
    const dirs: string[] = [];
    const files: string[] = [];
    const outcomes: FileOutcome[] = [];
    let entries: readonly SearchFileInfo[] = [];
    try {
      entries = (await this.#fs.list(joinPath(config.root, job.path), {
        depth: 1,
        limit: Number.MAX_SAFE_INTEGER,
        signal,
      })).entries;
    } catch (error) {
      if (signal.aborted) throw error;
      // Unreadable folder: skipped, as ripgrep does.
    }
    const prefix = job.path === "" ? "" : `${job.path}/`;
    for (const entry of entries) {
      const relativePath = prefix + entry.name;
      if (entry.type === "directory") {
        if (filters.descend(relativePath, entry.name)) dirs.push(relativePath);
      } else if (entry.type === "file") {
        if (!filters.include(relativePath, entry.name)) continue;
        if (config.kind === "glob") {
          outcomes.push({
            path: relativePath,
            count: 0,
            lines: [],
            modifiedMs: entry.modifiedAt?.getTime() ?? null,
          });
        } else {
          files.push(relativePath);
        }
      }
    }
    return { id: job.id, dirs, files, outcomes };
  }
}

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
