/**
 * The pure TypeScript search engine: walks folders, reads files and matches
 * them in workers, with ripgrep's semantics (see `regex.ts`, `glob.ts`,
 * `rules.ts`). It runs over any {@linkcode SearchFileSystem} (remote
 * runtimes), or over local paths directly when the file system's paths are
 * the host's (faster: the workers list and read files themselves).
 *
 * Why one long file: the walk, the two job pools (child processes, Workers)
 * and the bounds that stop them share one search's state.
 *
 * @module
 */
import type { SearchFileInfo, SearchFileSystem } from "./types.ts";
import { type FilterSpec, makeFilters, workerFilters } from "./_filter.ts";
import { workerProcessSource, workerUrl } from "./_worker.ts";
import { compileLinear } from "./_linear.ts";
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
import type {
  FileOutcome,
  WorkerConfig,
  WorkerJob,
  WorkerReply,
  WorkerSkip,
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

/** Runs worker jobs: in `Worker`s, or in child processes that can be killed. */
interface JobPool {
  run(job: WorkerJob, transfer?: Transferable[]): Promise<WorkerReply>;
  close(): Promise<void>;
}

/** How the fallback can start a child Deno process, found once. */
let spawnMode: "direct" | "bash" | "none" | undefined;

function childSpawnMode(): "direct" | "bash" | "none" {
  if (spawnMode !== undefined) return spawnMode;
  const granted = (command: string): boolean => {
    try {
      return Deno.permissions.querySync({ name: "run", command }).state ===
        "granted";
    } catch {
      return false;
    }
  };
  let exec: string | null = null;
  try {
    exec = Deno.execPath();
  } catch {
    exec = null;
  }
  spawnMode = exec === null || Deno.build.os === "windows"
    ? "none"
    : granted(exec)
    ? "direct"
    : granted("bash")
    ? "bash"
    : "none";
  return spawnMode;
}

/** The heap of one child process, in MiB (a file's text and its matches). */
const CHILD_HEAP_MIB = 1024;

/**
 * Child Deno processes running the worker code, one job at a time each. A
 * process can be killed, so a runaway regular expression stops with the
 * search. Each child may read the searched root only (local mode) or nothing
 * (remote mode: bytes come with the jobs), gets an empty environment and a
 * bounded heap.
 */
class ProcessPool implements JobPool {
  readonly #children: Deno.ChildProcess[] = [];
  readonly #writers: WritableStreamDefaultWriter<Uint8Array>[] = [];
  readonly #busy: number[] = [];
  readonly #pending = new Map<
    number,
    {
      resolve: (r: WorkerReply) => void;
      reject: (e: unknown) => void;
      worker: number;
    }
  >();
  readonly #encoder = new TextEncoder();
  readonly #reading: Promise<void>[] = [];
  #failure: unknown = null;
  #closed = false;

  /**
   * @param readRoots The paths the children may read: the root as given and
   *   its real path (Deno checks `FsFile.stat` against the real path, the
   *   flags against the path as written), or `null` for none.
   */
  constructor(
    size: number,
    config: WorkerConfig,
    readRoots: readonly string[] | null,
  ) {
    const source = workerProcessSource();
    const url = `data:application/javascript;base64,${
      base64(this.#encoder.encode(source))
    }`;
    const read = readRoots === null ? [] : [
      readRoots.some((root) => root.includes(","))
        ? "--allow-read"
        : `--allow-read=${[...new Set(readRoots)].join(",")}`,
    ];
    const denoArgs = [
      "run",
      "--no-config",
      "--no-lock",
      "--no-prompt",
      "--no-remote",
      "--quiet",
      `--v8-flags=--max-old-space-size=${CHILD_HEAP_MIB}`,
      ...read,
      url,
    ];
    const exec = Deno.execPath();
    const [command, args] = childSpawnMode() === "direct"
      ? [exec, denoArgs]
      : ["bash", ["-c", 'exec "$0" "$@"', exec, ...denoArgs]];
    for (let i = 0; i < size; i++) {
      const child = new Deno.Command(command, {
        args,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
        clearEnv: true,
        env: { NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
      }).spawn();
      const index = i;
      this.#children.push(child);
      this.#busy.push(0);
      const writer = child.stdin.getWriter();
      this.#writers.push(writer);
      this.#send(index, config);
      this.#reading.push(
        this.#readReplies(child),
        // Drained, so a chatty child never blocks.
        child.stderr.pipeTo(new WritableStream()).catch(() => {}),
      );
    }
  }

  async #readReplies(child: Deno.ChildProcess): Promise<void> {
    const decoder = new TextDecoder();
    let pending = "";
    try {
      for await (const chunk of child.stdout) {
        pending += decoder.decode(chunk, { stream: true });
        let newline: number;
        while ((newline = pending.indexOf("\n")) !== -1) {
          const reply = JSON.parse(pending.slice(0, newline)) as WorkerReply;
          pending = pending.slice(newline + 1);
          const waiter = this.#pending.get(reply.id);
          if (!waiter) continue;
          this.#pending.delete(reply.id);
          this.#busy[waiter.worker]!--;
          if (reply.error !== undefined) {
            waiter.reject(new Error(`Search worker failed: ${reply.error}`));
          } else {
            waiter.resolve(reply);
          }
        }
      }
    } catch {
      // Killed: the status below says so.
    }
    const status = await child.status;
    if (!this.#closed) {
      this.#fail(
        new Error(
          `Search worker failed: its process ended (${
            status.signal
              ? `signal ${status.signal}`
              : `exit code ${status.code}`
          }; it may have passed its ${CHILD_HEAP_MIB} MiB memory bound)`,
        ),
      );
    }
  }

  #send(index: number, message: unknown): void {
    this.#writers[index]!.write(
      this.#encoder.encode(`${JSON.stringify(message)}\n`),
    ).catch((error) => this.#fail(error));
  }

  #fail(error: unknown): void {
    this.#failure ??= error;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }

  run(job: WorkerJob): Promise<WorkerReply> {
    if (this.#failure !== null) return Promise.reject(this.#failure);
    let index = 0;
    for (let i = 1; i < this.#busy.length; i++) {
      if (this.#busy[i]! < this.#busy[index]!) index = i;
    }
    this.#busy[index]!++;
    return new Promise((resolve, reject) => {
      this.#pending.set(job.id, { resolve, reject, worker: index });
      if (job.kind === "files" && job.bytes) {
        const { bytes, ...rest } = job;
        this.#send(index, {
          ...rest,
          bytes64: bytes.map((b) => b === null ? null : base64(b)),
        });
      } else {
        this.#send(index, job);
      }
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const child of this.#children) {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
    }
    this.#fail(new Error("Search stopped"));
    await Promise.all(this.#writers.map((w) => w.abort().catch(() => {})));
    await Promise.all(this.#children.map((c) => c.status.catch(() => {})));
    await Promise.all(this.#reading);
  }
}

function base64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(text);
}

class WorkerPool implements JobPool {
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
  /**
   * Set when the pool closes: the workers' matcher stops at its next check.
   * `terminate()` alone does not stop a Worker busy in JavaScript (Deno
   * 2.9.6, measured: the core kept burning).
   */
  readonly #stop = new Int32Array(new SharedArrayBuffer(4));

  constructor(size: number, config: WorkerConfig) {
    if (config.kind === "grep") config = { ...config, stop: this.#stop };
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

  /** Terminates the workers (at the end, the time limit or an abort). */
  close(): Promise<void> {
    Atomics.store(this.#stop, 0, 1);
    for (const worker of this.#workers) worker.terminate();
    this.#fail(new Error("Search stopped"));
    return Promise.resolve();
  }
}

/**
 * The pure TypeScript engine. Same answers as {@linkcode RipgrepSearch}.
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
  readonly #workers: number;
  readonly #slots = new SearchSlots();

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
    if (!this.#local || childSpawnMode() === "none") {
      // Workers match with the linear-time matcher: refuse here what it
      // cannot compile (a pattern past its size bound).
      try {
        compileLinear(plan.regex.source, plan.regex.flags);
      } catch (error) {
        const message = (error as Error).message;
        throw new TypeError(
          `Invalid regex "${plan.regex.pattern}": ${
            message.slice(message.indexOf('": ') + 3)
          }`,
        );
      }
    }
    const collector = new GrepCollector(plan);
    if (plan.root.isFile && plan.root.size > plan.maxFileBytes) {
      collector.skip("", "too-large", plan.root.size);
      return collector.result("fallback");
    }
    const skipped: WorkerSkip[] = [];
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
        maxFileBytes: plan.maxFileBytes,
      },
      plan.filters,
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
      [],
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
    skipped: WorkerSkip[],
  ): Promise<(FileFound & { modifiedMs?: number | null })[]> {
    const deadline = startDeadline(plan.timeoutMs, plan.signal);
    let release: (() => void) | undefined;
    try {
      release = await this.#slots.acquire(deadline.signal);
    } catch (error) {
      deadline.clear();
      throw deadline.signal.aborted ? deadline.error(what) : error;
    }
    const contentMode = "mode" in plan && plan.mode === "content";
    const needed = "mode" in plan ? plan.maxLinesPerFile : Infinity;
    const useWorkers = config.kind === "grep" || this.#local;
    let pool: JobPool | null = null;
    try {
      if (useWorkers) {
        // Local grep: a process when one may start (it can be killed, and
        // matches with V8's RegExp), else Workers. Over a file system
        // interface (remote runtimes) the bytes go to Workers without a copy
        // (through a process they cost five times the CPU). Workers match
        // with the linear-time matcher (`_linear.ts`): no pattern runs away,
        // and it stops at the time limit on a flag the pool sets (neither
        // V8's RegExp nor a JavaScript loop stops on `terminate()`). glob
        // matches names (at most 255 bytes a segment).
        pool = config.kind === "glob" || !this.#local ||
            childSpawnMode() === "none"
          ? new WorkerPool(this.#workers, config)
          : new ProcessPool(
            this.#workers,
            config,
            this.#local ? await readRootsOf(plan.root.path) : null,
          );
      }
    } catch (error) {
      deadline.clear();
      release();
      throw error;
    }
    const maxFileBytes = config.kind === "grep"
      ? config.maxFileBytes
      : Infinity;
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
            maxBytes: Math.min(maxFileBytes, Number.MAX_SAFE_INTEGER),
          }).catch((error) => {
            if (error instanceof RangeError) {
              skipped.push({ path: f, reason: "too-large" });
            } else if (
              error instanceof TypeError && /regular file/.test(error.message)
            ) {
              skipped.push({ path: f, reason: "not-regular" });
            }
            return null;
          })
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
              if (reply.skipped) skipped.push(...reply.skipped);
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
      await pool?.close();
      release();
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
    const outcomesSkipped: WorkerSkip[] = [];
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
      } else if (entry.type === "other") {
        if (
          config.kind === "grep" && filters.include(relativePath, entry.name)
        ) {
          outcomesSkipped.push({ path: relativePath, reason: "not-regular" });
        }
      } else if (entry.type === "file") {
        if (!filters.include(relativePath, entry.name)) continue;
        if (config.kind === "grep" && entry.size > config.maxFileBytes) {
          outcomesSkipped.push({
            path: relativePath,
            reason: "too-large",
            size: entry.size,
          });
          continue;
        }
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
    return { id: job.id, dirs, files, outcomes, skipped: outcomesSkipped };
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

/** A local root as given and its real path, when that can be found. */
async function readRootsOf(root: string): Promise<string[]> {
  try {
    return [root, await Deno.realPath(root)];
  } catch {
    return [root];
  }
}
