/**
 * The ripgrep engine of local runtimes: `rg` spawned with arguments as an
 * array (through `_ripgrep_run.ts`), its arguments and output shared with the
 * sandbox engine (`_ripgrep_protocol.ts`). How it bounds file sizes and memory
 * and keeps content in path order without `--sort path` is in
 * `search/README.md` ("The local ripgrep engine").
 *
 * @module
 */
import type { SearchFileSystem } from "./types.ts";
import { finishGlob, listFolder } from "./fallback.ts";
import type { MatchedLine } from "./_match.ts";
import {
  type FileFound,
  GrepCollector,
  type GrepPlan,
  planGlob,
  planGrep,
  runSearch,
  SearchSlots,
  tooLargeRoot,
} from "./_plan.ts";
import {
  COMMON_ARGS,
  heavyGlobs,
  lineNumbersIn,
  parseLine,
  RecordParser,
  relativeOf,
  ripgrepError,
  ripgrepGrepArgs,
} from "./_ripgrep_protocol.ts";
import {
  canWatchMemory,
  type RipgrepRunResult,
  runRipgrep,
} from "./_ripgrep_run.ts";
import {
  BINARY_SNIFF_BYTES,
  comparePaths,
  isBinary,
  joinPath,
} from "./rules.ts";
import type {
  GlobFile,
  GlobRequest,
  GlobResult,
  GrepRequest,
  GrepResult,
  LsRequest,
  LsResult,
  SearchEngine,
} from "./types.ts";

/** What {@linkcode detectRipgrep} found. */
export interface RipgrepInfo {
  /** The command that ran. */
  readonly path: string;
  /** The version, e.g. `13.0.0`. */
  readonly version: string;
}

const detected = new Map<string, Promise<RipgrepInfo | null>>();

/**
 * Finds out whether ripgrep can run (once per command; the answer is cached).
 *
 * @param path The command. Default `rg`.
 * @returns Its version, or `null` when it cannot run.
 *
 * Needs `--allow-run` for the command.
 *
 * @example Detecting ripgrep
 * ```ts
 * import { assert } from "@std/assert";
 * import { detectRipgrep } from "@skillrun/skillrun/search";
 * const rg = await detectRipgrep();
 * assert(rg === null || /^\d+\./.test(rg.version));
 * ```
 */
export function detectRipgrep(path = "rg"): Promise<RipgrepInfo | null> {
  let found = detected.get(path);
  if (!found) {
    found = (async (): Promise<RipgrepInfo | null> => {
      try {
        const run = await new Deno.Command(path, {
          args: ["--version"],
          stdin: "null",
          stderr: "null",
        }).output();
        const text = new TextDecoder().decode(run.stdout);
        const version = run.success && /ripgrep (\S+)/.exec(text)?.[1];
        return version ? { path, version } : null;
      } catch {
        return null;
      }
    })();
    detected.set(path, found);
  }
  return found;
}

/** Options of {@linkcode RipgrepSearch}. */
export interface RipgrepSearchOptions {
  /** The local runtime's file system (its paths are host paths). */
  readonly fs: SearchFileSystem;
  /** The ripgrep command. Default `rg`. */
  readonly ripgrepPath?: string;
  /**
   * Content mode over a folder: for how long (ms) the parallel first pass is
   * watched for dense matches; when it finds many matching files (256) in
   * that time, a sorted search (`--sort path`) takes its place, because the
   * first files in path order will soon fill the output. Default 60; `0`
   * never switches.
   */
  readonly sortedAttemptMs?: number;
}

/** The sorted attempt's default watch, in ms (see `sortedAttemptMs`). */
const SORTED_ATTEMPT_MS = 60;
/** Matching files within the watch that make the sorted search take over. */
const DENSE_MATCHES = 256;
/** The bytes of lines a parallel content pass may hold: this many times the output cap, at least 1 MiB. */
const CONTENT_BUDGET_FACTOR = 8;
const CONTENT_MIN_BUDGET_BYTES = 1024 * 1024;
/** How long a parallel content pass lets rg's small outputs gather, in ms. */
const GATHER_MS = 15;
/** The most matching files a content pass checks while rg still searches. */
const EARLY_CHECKS = 1024;
/** The least memory rg may hold without `--max-filesize`, in bytes. */
const MIN_MEMORY_BOUND_BYTES = 256 * 1024 * 1024;

/** rg's memory bound without `--max-filesize`: room for a line under the size limit, as its buffer doubles. */
function memoryBound(plan: GrepPlan): number {
  return Math.max(
    MIN_MEMORY_BOUND_BYTES,
    2 * plan.maxFileBytes + MIN_MEMORY_BOUND_BYTES / 4,
  );
}

/** What the check of one matching file decided. */
interface Verdict {
  /** The lines to show, or `null`: the file is not shown. */
  readonly lines: MatchedLine[] | null;
  /** The file's size, when it is over the limit (listed as skipped). */
  readonly tooLarge?: number;
}

/**
 * The check of each matching file, in one synchronous open: its size
 * (`fstat`), the binary sniff and, when asked, the line numbers of the byte
 * offsets rg gave (counted from the sniffed bytes on, up to the last offset).
 */
class MatchCheck {
  readonly #root: string;
  readonly #maxFileBytes: number;
  readonly #buffer = new Uint8Array(BINARY_SNIFF_BYTES);

  constructor(plan: GrepPlan) {
    this.#root = plan.root.path;
    this.#maxFileBytes = plan.maxFileBytes;
  }

  /**
   * Checks a file (relative to the root; `""` for the root file): the lines
   * to show, their `lineNumber` turned from byte offsets of line starts into
   * line numbers when `offsets`.
   */
  judge(
    path: string,
    lines: readonly MatchedLine[],
    offsets: boolean,
  ): Verdict {
    let file: Deno.FsFile;
    try {
      file = Deno.openSync(joinPath(this.#root, path));
    } catch {
      return { lines: null };
    }
    try {
      const size = file.statSync().size;
      if (size > this.#maxFileBytes) return { lines: null, tooLarge: size };
      const buffer = this.#buffer;
      // A size of 0 may be a pseudo-file (`/proc`) whose bytes are read anyway.
      const want = size === 0 ? buffer.length : Math.min(size, buffer.length);
      let length = 0;
      while (length < want) {
        const n = file.readSync(buffer.subarray(length));
        if (n === null || n === 0) break;
        length += n;
      }
      const head = buffer.subarray(0, length);
      if (isBinary(head)) return { lines: null };
      if (!offsets) return { lines: [...lines] };
      const numbers = lineNumbersIn(
        head,
        lines.map((line) => line.lineNumber),
        (b) => file.readSync(b),
      );
      return {
        lines: numbers &&
          lines.map((line, i) => ({ ...line, lineNumber: numbers[i]! })),
      };
    } catch {
      return { lines: null };
    } finally {
      file.close();
    }
  }

  /** Whether a file is shown; one too large is listed as skipped. */
  shown(path: string, collector: GrepCollector): boolean {
    const verdict = this.judge(path, [], false);
    if (verdict.tooLarge !== undefined) {
      collector.skip(path, "too-large", verdict.tooLarge);
    }
    return verdict.lines !== null;
  }
}

/** A rg run killed for its memory: the search runs again with `--max-filesize`. */
const OVER_MEMORY = Symbol("over memory");

/**
 * The ripgrep engine. Same answers as {@linkcode FallbackSearch}; local only.
 *
 * @example Searching with ripgrep
 * ```ts ignore
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * import { RipgrepSearch } from "@skillrun/skillrun/search";
 * await using runtime = new LocalSkillRuntime();
 * const search = new RipgrepSearch({ fs: runtime.fs });
 * const result = await search.grep({ pattern: "TODO", outputMode: "count" });
 * ```
 */
export class RipgrepSearch implements SearchEngine {
  /** Which engine this is. */
  readonly engine = "ripgrep" as const;
  readonly #fs: SearchFileSystem;
  readonly #rg: string;
  readonly #sortedAttemptMs: number;
  readonly #slots = new SearchSlots();

  /**
   * Makes the engine (it does not check that ripgrep runs: see
   * {@linkcode detectRipgrep}).
   *
   * @param options The local file system, the ripgrep command, the sorted
   *   attempt of content searches.
   * @throws {RangeError} `sortedAttemptMs` is negative or not a number.
   */
  constructor(options: RipgrepSearchOptions) {
    this.#fs = options.fs;
    this.#rg = options.ripgrepPath ?? "rg";
    const attempt = options.sortedAttemptMs ?? SORTED_ATTEMPT_MS;
    if (!Number.isFinite(attempt) || attempt < 0) {
      throw new RangeError(
        `Invalid sorted attempt "${attempt}": expected a number of ms, at least 0`,
      );
    }
    this.#sortedAttemptMs = attempt;
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
   * Needs `--allow-run` for `rg` and read access to the searched files.
   */
  async grep(request: GrepRequest): Promise<GrepResult> {
    const plan = await planGrep(this.#fs, request, true);
    return tooLargeRoot(plan) ?? await runSearch(
      plan,
      `Search for "${plan.regex.pattern}"`,
      this.#slots,
      async (signal) => {
        // A single file was checked above; a folder is searched without
        // --max-filesize where rg's memory can be watched (README).
        let watched = plan.root.isFile ||
          (canWatchMemory && !plan.multiline);
        for (;;) {
          const result = plan.mode !== "content"
            ? await this.#grepFiles(plan, signal, watched)
            : plan.root.isFile
            ? await this.#sortedContent(plan, signal, watched)
            : await this.#grepContent(plan, signal, watched);
          if (result !== OVER_MEMORY) return result;
          watched = false;
        }
      },
    );
  }

  /**
   * One rg run, its records (a path relative to the root, `""` for the root
   * file, and the rest of its line) handed to `onRecord` until it returns
   * `false`, its skips to `collector`; `watched`: without `--max-filesize`,
   * rg's memory watched. Throws rg's error.
   */
  async #run(
    plan: GrepPlan,
    signal: AbortSignal,
    watched: boolean,
    options: { readonly unsorted?: boolean; readonly byteOffsets?: boolean },
    onRecord: (path: string, rest: Uint8Array, decoder: TextDecoder) => boolean,
    collector: GrepCollector,
  ): Promise<RipgrepRunResult> {
    const parser = new RecordParser(
      plan.mode !== "files_with_matches",
      plan.maxLineChars * 3 + 32,
    );
    const decoder = new TextDecoder();
    const records: [Uint8Array, Uint8Array][] = [];
    const isFile = plan.root.isFile;
    const run = await runRipgrep({
      command: this.#rg,
      args: ripgrepGrepArgs(plan, { sizeLimit: !watched, ...options }),
      ...(isFile ? {} : { cwd: plan.root.path }),
      signal,
      ...(watched && !isFile ? { maxMemoryBytes: memoryBound(plan) } : {}),
      ...(options.unsorted ? { gatherMs: GATHER_MS } : {}),
      onSkip: (skip) =>
        collector.skip(relativeOf(skip.path, isFile), skip.reason, skip.size),
      onStdout: (chunk) => {
        parser.push(chunk, records);
        try {
          for (const [pathBytes, rest] of records) {
            const path = relativeOf(decoder.decode(pathBytes), isFile);
            if (!onRecord(path, rest, decoder)) return false;
          }
          return true;
        } finally {
          records.length = 0;
        }
      },
    });
    // Exit code 2 also reports unreadable files (not printed under
    // --no-messages): only an error message means the search failed.
    if (
      !run.stopped && !run.overMemory && run.code === 2 && !run.signal &&
      run.errors.trim() !== ""
    ) {
      throw ripgrepError(plan, run.errors);
    }
    return run;
  }

  /** Files or counts: one parallel rg run, the files put in path order. */
  async #grepFiles(
    plan: GrepPlan,
    signal: AbortSignal,
    watched: boolean,
  ): Promise<GrepResult | typeof OVER_MEMORY> {
    const collector = new GrepCollector(plan);
    const check = new MatchCheck(plan);
    const perFile: FileFound[] = [];
    const run = await this.#run(
      plan,
      signal,
      watched,
      {},
      (path, rest, decoder) => {
        // Checked as paths arrive, while rg is still searching.
        if (check.shown(path, collector)) {
          perFile.push({
            path,
            count: plan.mode === "count" ? Number(decoder.decode(rest)) : 0,
            lines: [],
          });
        }
        return true;
      },
      collector,
    );
    if (run.overMemory) return OVER_MEMORY;
    perFile.sort((a, b) => comparePaths(a.path, b.path));
    for (const file of perFile) if (!collector.add(file)) break;
    return collector.result("ripgrep");
  }

  /**
   * Content mode over a folder: one parallel, unsorted pass, its files put in
   * path order after; the sorted search instead when matches come densely or
   * outgrow the budget (README).
   */
  async #grepContent(
    plan: GrepPlan,
    signal: AbortSignal,
    watched: boolean,
  ): Promise<GrepResult | typeof OVER_MEMORY> {
    // Left behind when the sorted search takes over.
    const collector = new GrepCollector(plan);
    const firstPass = new AbortController();
    const found = new Map<string, MatchedLine[]>();
    const budget = Math.max(
      CONTENT_MIN_BUDGET_BYTES,
      plan.maxOutputChars * CONTENT_BUDGET_FACTOR,
    );
    let bytes = 0;
    let overBudget = false;
    let onDense: (() => void) | undefined;
    const byteOffsets = !plan.multiline;
    // A file is checked once the next file's records come (rg writes each
    // file's together), again if its lines grew after.
    const check = new MatchCheck(plan);
    const early = new Map<string, { count: number; verdict: Verdict }>();
    let last: string | null = null;
    const listing = this.#run(
      plan,
      AbortSignal.any([signal, firstPass.signal]),
      watched,
      { unsorted: true, byteOffsets },
      (path, rest, decoder) => {
        if (path !== last) {
          if (last !== null && early.size < EARLY_CHECKS) {
            const lines = found.get(last)!;
            early.set(last, {
              count: lines.length,
              verdict: check.judge(last, lines, byteOffsets),
            });
          }
          last = path;
        }
        let lines = found.get(path);
        if (!lines) {
          found.set(path, lines = []);
          if (found.size === DENSE_MATCHES) onDense?.();
        }
        bytes += path.length + rest.length + 16;
        if (bytes > budget) {
          // Too much to hold: the sorted search stops at the output cap.
          overBudget = true;
          return false;
        }
        if (lines.length < plan.maxLinesPerFile) {
          lines.push(parseLine(rest, decoder, plan));
        }
        return true;
      },
      collector,
    );
    let dense = false;
    try {
      if (this.#sortedAttemptMs > 0) {
        // Dense matches, the end of the watch or the end of the pass: first wins.
        const decided = Promise.withResolvers<boolean>();
        const end = () => decided.resolve(false);
        onDense = () => decided.resolve(true);
        const timer = setTimeout(end, this.#sortedAttemptMs);
        listing.then(end, end);
        dense = await decided.promise;
        clearTimeout(timer);
        onDense = undefined;
      }
      if (!dense) {
        if ((await listing).overMemory) return OVER_MEMORY;
        dense = overBudget;
      }
    } finally {
      firstPass.abort();
      await listing.catch(() => {});
    }
    if (dense) return await this.#sortedContent(plan, signal, watched);
    for (const path of [...found.keys()].sort(comparePaths)) {
      const lines = found.get(path)!;
      const checked = early.get(path);
      const verdict = checked?.count === lines.length
        ? checked.verdict
        : check.judge(path, lines, byteOffsets);
      if (verdict.tooLarge !== undefined) {
        collector.skip(path, "too-large", verdict.tooLarge);
      }
      const shown = verdict.lines;
      if (
        shown && !collector.add({ path, count: shown.length, lines: shown })
      ) {
        break;
      }
    }
    return collector.result("ripgrep");
  }

  /**
   * The sorted search (`--sort path`, streamed), until the output cap; also
   * the content of a single file.
   */
  async #sortedContent(
    plan: GrepPlan,
    signal: AbortSignal,
    watched: boolean,
  ): Promise<GrepResult | typeof OVER_MEMORY> {
    const collector = new GrepCollector(plan);
    const check = new MatchCheck(plan);
    let path: string | null = null;
    let lines: MatchedLine[] = [];
    const flush = (): boolean => {
      if (path === null) return true;
      const file = { path, count: lines.length, lines };
      path = null;
      lines = [];
      return !check.shown(file.path, collector) || collector.add(file);
    };
    const run = await this.#run(
      plan,
      signal,
      watched,
      {},
      (recordPath, rest, decoder) => {
        if (recordPath !== path) {
          if (!flush()) return false;
          path = recordPath;
        }
        if (lines.length < plan.maxLinesPerFile) {
          lines.push(parseLine(rest, decoder, plan));
        }
        return true;
      },
      collector,
    );
    if (run.overMemory) return OVER_MEMORY;
    if (!collector.stopped) flush();
    return collector.result("ripgrep");
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
   * Needs `--allow-run` for `rg` and read access to the searched folder.
   */
  async glob(request: GlobRequest): Promise<GlobResult> {
    const plan = await planGlob(this.#fs, request, true);
    return await runSearch(
      plan,
      `Glob "${request.pattern}"`,
      this.#slots,
      async (signal) => {
        const parser = new RecordParser(false, 0);
        const records: [Uint8Array, Uint8Array][] = [];
        const decoder = new TextDecoder();
        const files: GlobFile[] = [];
        await runRipgrep({
          command: this.#rg,
          args: [
            "--files",
            ...COMMON_ARGS,
            "--glob",
            request.pattern,
            ...heavyGlobs(),
            "--",
            ".",
          ],
          cwd: plan.root.path,
          signal,
          // Stat each file as its path arrives, while rg is still walking.
          onStdout: (chunk) => {
            parser.push(chunk, records);
            for (const [bytes] of records) {
              const path = joinPath(
                plan.root.path,
                relativeOf(decoder.decode(bytes), false),
              );
              try {
                const info = Deno.lstatSync(path);
                files.push({ path, modifiedMs: info.mtime?.getTime() ?? null });
              } catch {
                files.push({ path, modifiedMs: null });
              }
            }
            records.length = 0;
          },
        });
        return finishGlob(plan, files, "ripgrep");
      },
    );
  }

  /**
   * Lists a folder, folders first (see {@linkcode LsRequest}); ripgrep is not
   * needed for this.
   *
   * @param request What to list.
   * @returns The entries.
   * @throws {TypeError} For a path that is a file.
   * @throws {Deno.errors.NotFound} When the path does not exist.
   *
   * Needs read access to the listed folder.
   */
  ls(request: LsRequest): Promise<LsResult> {
    return listFolder(this.#fs, request, true);
  }
}
