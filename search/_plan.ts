/**
 * What both engines share around the search itself: checking and normalising
 * requests, resolving the root, the time limit, and collecting ordered results
 * into the result types (offset, head limit, output cap).
 *
 * @module
 */
import type { SearchFileSystem } from "./types.ts";
import { timeoutError } from "./errors.ts";
import type { FilterSpec } from "./_filter.ts";
import { compileGlob } from "./glob.ts";
import type { MatchedLine } from "./_match.ts";
import { checkPattern, type SearchPattern } from "./_regex.ts";
import { comparePaths, extensionsOfType, joinPath } from "./rules.ts";
import {
  DEFAULT_GLOB_LIMIT,
  DEFAULT_GREP_MAX_FILE_BYTES as MAX_FILE,
  DEFAULT_GREP_MAX_LINE_CHARS as MAX_LINE,
  DEFAULT_GREP_MAX_OUTPUT_CHARS as MAX_OUTPUT,
  DEFAULT_SEARCH_TIMEOUT_MS,
  type GlobRequest,
  type GrepCount,
  type GrepLine,
  type GrepOutputMode,
  type GrepRequest,
  type GrepResult,
  type SearchEngineName,
  type SkippedFile,
  type SkipReason,
} from "./types.ts";

/** A resolved search root. */
export interface SearchRoot {
  /** The absolute path, without a trailing slash. */
  readonly path: string;
  /** Whether it is a file (else a folder). */
  readonly isFile: boolean;
  /** A file's size in bytes (0 for a folder). */
  readonly size: number;
}

/** A checked `grep` request (numbers defaulted, see {@linkcode GrepRequest}). */
export interface GrepPlan {
  readonly root: SearchRoot;
  /** The pattern, checked and compiled for `re2js`. */
  readonly regex: SearchPattern;
  readonly filters: FilterSpec;
  readonly mode: GrepOutputMode;
  readonly before: number;
  readonly after: number;
  readonly caseInsensitive: boolean;
  readonly multiline: boolean;
  readonly offset: number;
  readonly headLimit: number;
  readonly maxOutputChars: number;
  readonly maxLineChars: number;
  /** The most lines any one file can contribute to the output. */
  readonly maxLinesPerFile: number;
  readonly timeoutMs: number;
  readonly maxFileBytes: number;
  readonly signal: AbortSignal | undefined;
}

/** A checked `glob` request (the pattern as the walk's glob filter). */
export interface GlobPlan {
  readonly root: SearchRoot;
  readonly filters: FilterSpec;
  readonly limit: number;
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
}

/** A request's number, checked: an integer of at least `min`. */
export function num(
  name: string,
  value: number | undefined,
  fallback: number,
  min = 1,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
    throw new RangeError(
      `Invalid ${name} "${value}": expected an integer of at least ${min}`,
    );
  }
  return value;
}

/**
 * Resolves and checks the root of a search (a symlink followed with
 * `Deno.stat` when `local`, else tried as a folder).
 *
 * @throws {Deno.errors.NotFound} When nothing is there.
 * @throws {TypeError} For a pipe, a device or a socket.
 */
export async function resolveRoot(
  fs: SearchFileSystem,
  path: string | undefined,
  local: boolean,
): Promise<SearchRoot> {
  const given = path ?? ".";
  if (typeof given !== "string" || given.length === 0) {
    throw new TypeError(`Invalid path "${given}": expected a non-empty string`);
  }
  let resolved = await fs.resolve(given);
  if (resolved.length > 1) resolved = resolved.replace(/\/+$/, "") || "/";
  const info = await fs.stat(resolved);
  let type = info?.type;
  let size = info?.size ?? 0;
  if (type === "symlink" && local) {
    const target = await Deno.stat(resolved).catch(() => null);
    type = !target
      ? "symlink"
      : target.isDirectory
      ? "directory"
      : target.isFile
      ? "file"
      : "other";
    size = target?.size ?? 0;
  } else if (type === "symlink") {
    const listed = await fs.list(resolved, { depth: 1, limit: 1 })
      .then(() => true, () => false);
    type = listed ? "directory" : "file";
    size = 0;
  }
  if (type === "other") {
    throw new TypeError(
      `Cannot search "${given}": it is not a regular file or a folder (a pipe, a device or a socket)`,
    );
  }
  if (type !== "file" && type !== "directory") {
    throw new Deno.errors.NotFound(
      `Cannot search "${given}": ${
        info ? "not a file or folder" : "no such file or folder"
      }`,
    );
  }
  const isFile = type === "file";
  return { path: resolved, isFile, size: isFile ? size : 0 };
}

/** The smallest size an entry counts for against the output cap. */
const MIN_ENTRY_CHARS = 16;

/**
 * Checks a `grep` request and resolves its root.
 *
 * @throws {TypeError} For a bad pattern, glob, type or mode.
 * @throws {RangeError} For bad numbers.
 */
export async function planGrep(
  fs: SearchFileSystem,
  request: GrepRequest,
  local: boolean,
): Promise<GrepPlan> {
  if (typeof request !== "object" || request === null) {
    throw new TypeError("Invalid grep request: expected an object");
  }
  const r = request;
  const mode = r.outputMode ?? "files_with_matches";
  if (!["content", "files_with_matches", "count"].includes(mode)) {
    throw new TypeError(
      `Invalid output mode "${mode}": expected content, files_with_matches or count`,
    );
  }
  const caseInsensitive = r.caseInsensitive ?? false;
  const multiline = r.multiline ?? false;
  const regex = checkPattern(r.pattern, { caseInsensitive, multiline });
  if (r.glob !== undefined) compileGlob(r.glob);
  const extensions = r.type === undefined ? null : extensionsOfType(r.type);
  const context = num("context", r.context, 0, 0);
  const offset = num("offset", r.offset, 0, 0);
  const headLimit = num("head limit", r.headLimit, Number.MAX_SAFE_INTEGER);
  const maxOutputChars = num("output cap", r.maxOutputChars, MAX_OUTPUT);
  const plan = {
    regex,
    filters: { glob: r.glob ?? null, extensions },
    mode,
    before: num("before", r.before, context, 0),
    after: num("after", r.after, context, 0),
    caseInsensitive,
    multiline,
    offset,
    headLimit,
    maxOutputChars,
    maxLineChars: num("line cap", r.maxLineChars, MAX_LINE),
    maxLinesPerFile: offset + 1 +
      Math.min(headLimit, Math.ceil(maxOutputChars / MIN_ENTRY_CHARS) + 1),
    timeoutMs: num("timeout", r.timeoutMs, DEFAULT_SEARCH_TIMEOUT_MS),
    maxFileBytes: num("file size limit", r.maxFileBytes, MAX_FILE, 0),
    signal: r.signal,
  };
  r.signal?.throwIfAborted();
  return { ...plan, root: await resolveRoot(fs, r.path, local) };
}

/**
 * Checks a `glob` request and resolves its root (a folder).
 *
 * @throws {TypeError} For a bad glob or a root that is a file.
 */
export async function planGlob(
  fs: SearchFileSystem,
  request: GlobRequest,
  local: boolean,
): Promise<GlobPlan> {
  if (typeof request !== "object" || request === null) {
    throw new TypeError("Invalid glob request: expected an object");
  }
  compileGlob(request.pattern);
  const limit = num("limit", request.limit, DEFAULT_GLOB_LIMIT);
  const timeoutMs = num(
    "timeout",
    request.timeoutMs,
    DEFAULT_SEARCH_TIMEOUT_MS,
  );
  request.signal?.throwIfAborted();
  const root = await resolveFolder(fs, request.path, local, "glob in");
  const filters = { glob: request.pattern, extensions: null };
  return { root, filters, limit, timeoutMs, signal: request.signal };
}

/** Resolves a root that must be a folder (`verb` names the refused action). */
export async function resolveFolder(
  fs: SearchFileSystem,
  path: string | undefined,
  local: boolean,
  verb: string,
): Promise<SearchRoot> {
  const root = await resolveRoot(fs, path, local);
  if (root.isFile) {
    throw new TypeError(`Cannot ${verb} "${path ?? "."}": not a folder`);
  }
  return root;
}

/**
 * Runs a search under its time limit and the caller's signal, in one of the
 * engine's slots: `stop` throws once the time passed (for synchronous work,
 * which the timer cannot interrupt); an abort becomes the timeout error or
 * the caller's reason.
 */
export async function runSearch<T>(
  limits: {
    readonly timeoutMs: number;
    readonly signal: AbortSignal | undefined;
  },
  what: string,
  slots: SearchSlots | null,
  run: (signal: AbortSignal, stop: () => void) => Promise<T>,
): Promise<T> {
  const { timeoutMs, signal } = limits;
  const timeout = AbortSignal.timeout(timeoutMs);
  const limit = signal ? AbortSignal.any([signal, timeout]) : timeout;
  const endAt = performance.now() + timeoutMs;
  const stop = (): void => {
    limit.throwIfAborted();
    if (performance.now() > endAt) throw timeoutError(what, timeoutMs);
  };
  // Work still in flight once the answer is known (a read ahead) is stopped.
  const done = new AbortController();
  let release: (() => void) | undefined;
  try {
    release = await slots?.acquire(limit);
    return await run(AbortSignal.any([limit, done.signal]), stop);
  } catch (error) {
    if (!limit.aborted) throw error;
    throw !timeout.aborted && signal?.aborted
      ? signal.reason
      : timeoutError(what, timeoutMs);
  } finally {
    done.abort();
    release?.();
  }
}

/** What was found in one file, relative path and all. */
export interface FileFound {
  /** The file, relative to the root (`""` when the root is the file). */
  readonly path: string;
  /** Matching line groups. */
  readonly count: number;
  /** Lines (content mode). */
  readonly lines: readonly MatchedLine[];
}

/**
 * Collects per-file findings, in path order, into a `grep` result: applies
 * the offset, the head limit and the output cap. Files and counts are all
 * counted; content stops at the first entry past a limit.
 */
export class GrepCollector {
  readonly #plan: GrepPlan;
  #total = 0;
  #chars = 0;
  #stopped = false;
  #headLimitReached = false;
  #outputLimitReached = false;
  readonly #files: string[] = [];
  readonly #counts: GrepCount[] = [];
  readonly #lines: GrepLine[] = [];
  readonly #skipped: SkippedFile[] = [];

  constructor(plan: GrepPlan) {
    this.#plan = plan;
  }

  /** Whether content collection stopped (no more entries are wanted). */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Takes one entry of `size` chars; returns whether to keep it. */
  #take(size: number): boolean {
    this.#total++;
    if (this.#total <= this.#plan.offset) return false;
    if (this.#headLimitReached || this.#outputLimitReached) return false;
    const kept = this.#total - this.#plan.offset - 1;
    if (kept >= this.#plan.headLimit) {
      this.#headLimitReached = true;
      return false;
    }
    if (this.#chars + size > this.#plan.maxOutputChars && kept > 0) {
      this.#outputLimitReached = true;
      return false;
    }
    this.#chars += size;
    return true;
  }

  /** Adds one file's findings (in path order); returns whether more are wanted. */
  add(found: FileFound): boolean {
    if (this.#stopped) return false;
    const path = joinPath(this.#plan.root.path, found.path);
    switch (this.#plan.mode) {
      case "files_with_matches":
        if (this.#take(path.length + 1)) this.#files.push(path);
        return true;
      case "count":
        if (this.#take(path.length + 12)) {
          this.#counts.push({ path, count: found.count });
        }
        return true;
      case "content":
        for (const line of found.lines) {
          const keep = this.#take(
            Math.max(MIN_ENTRY_CHARS, path.length + line.text.length + 12),
          );
          if (keep) this.#lines.push({ path, ...line });
          else if (this.#headLimitReached || this.#outputLimitReached) {
            this.#stopped = true;
            return false;
          }
        }
        return true;
    }
  }

  /** Records a file left out (relative to the root, `""` for the root). */
  skip(path: string, reason: SkipReason, size?: number): void {
    this.#skipped.push({
      path: joinPath(this.#plan.root.path, path),
      reason,
      ...(size === undefined ? {} : { size }),
    });
  }

  /** The `grep` result. */
  result(engine: SearchEngineName): GrepResult {
    const base = {
      path: this.#plan.root.path,
      engine,
      totalEntries: this.#stopped ? null : this.#total,
      offset: this.#plan.offset,
      headLimitReached: this.#headLimitReached,
      outputLimitReached: this.#outputLimitReached,
      skipped: this.#skipped.sort((a, b) => comparePaths(a.path, b.path)),
    };
    switch (this.#plan.mode) {
      case "files_with_matches":
        return { ...base, mode: "files_with_matches", files: this.#files };
      case "count":
        return { ...base, mode: "count", counts: this.#counts };
      case "content":
        return { ...base, mode: "content", lines: this.#lines };
    }
  }
}

/** The answer when the root is a file over the size limit (rg is not run), else `null`. */
export function tooLargeRoot(plan: GrepPlan): GrepResult | null {
  if (!plan.root.isFile || plan.root.size <= plan.maxFileBytes) return null;
  const collector = new GrepCollector(plan);
  collector.skip("", "too-large", plan.root.size);
  return collector.result("ripgrep");
}

/** How many searches one engine runs at once; the others wait their turn. */
export const MAX_CONCURRENT_SEARCHES = 4;

/**
 * The search slots of one engine (so of one runtime): at most
 * {@linkcode MAX_CONCURRENT_SEARCHES} searches run at once, so that a thousand
 * concurrent calls cannot start a thousand ripgrep processes or worker pools.
 * The wait counts against each search's time limit.
 */
export class SearchSlots {
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  /** Waits for a slot (until `signal` aborts); returns its release. */
  async acquire(signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    if (this.#running >= MAX_CONCURRENT_SEARCHES) {
      await new Promise<void>((resolve, reject) => {
        const wake = (): void => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        };
        const onAbort = (): void => {
          const at = this.#waiting.indexOf(wake);
          if (at !== -1) this.#waiting.splice(at, 1);
          reject(signal.reason);
        };
        signal.addEventListener("abort", onAbort, { once: true });
        this.#waiting.push(wake);
      });
    } else {
      this.#running++;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next) next(); // the slot passes on
      else this.#running--;
    };
  }
}
