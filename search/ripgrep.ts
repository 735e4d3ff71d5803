/**
 * The ripgrep search engine for local runtimes: spawns `rg` (arguments as an
 * array, never a shell; through the one runner of `_ripgrep_run.ts`) with
 * options that make it agree with the fallback: hidden files searched, ignore
 * files not honoured, heavy folders excluded below the root, globs relative
 * to the searched folder, no transcoding, and binary files (a NUL byte in the
 * first 8 KiB) dropped afterwards. Its arguments and the parsing of its output
 * are `_ripgrep_protocol.ts`, shared with the sandbox engine.
 *
 * The size limit: rg's `--max-filesize` makes it stat every file it walks (a
 * fifth of its time over many small files), so a folder is searched without
 * it; each matching file is checked after (one `open`, `fstat` and read of its
 * first 8 KiB, the binary sniff), and one over the limit is dropped and listed
 * as skipped. rg holds a whole line in memory, so its memory is watched: past
 * a bound (a huge file without line breaks), it is killed and the search runs
 * again with `--max-filesize`. Without `/proc` (no watch) and for multiline
 * searches (rg reads whole files), `--max-filesize` is always passed.
 *
 * Why one long file: the passes of a search (parallel, then files in path
 * order, or sorted when matches are dense) share the bounds and skip
 * reporting of one search.
 *
 * @module
 */
import { concatBytes } from "../_internal/std.ts";
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
        const chunks: Uint8Array[] = [];
        const run = await runRipgrep({
          command: path,
          args: ["--version"],
          onStdout: (chunk) => void chunks.push(chunk),
        });
        if (run.code !== 0) return null;
        const text = new TextDecoder().decode(concatBytes(chunks));
        const version = /ripgrep (\S+)/.exec(text)?.[1];
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

/**
 * For how long the parallel first pass of a content search is watched for
 * dense matches, in ms: a common pattern shows itself in that time. Nothing
 * runs beside the first pass (on 2 cores, a sorted search run beside it for
 * 60 ms cost about 50 ms of a 600 ms search: measured).
 */
const SORTED_ATTEMPT_MS = 60;
/**
 * Matching files the parallel pass must find within `sortedAttemptMs` for
 * the sorted search to take over: matches that dense soon fill the output in
 * path order.
 */
const DENSE_MATCHES = 256;
/**
 * The bytes of matched lines a content search holds before it gives up its
 * parallel pass for the sorted one: this many times the output cap...
 */
const CONTENT_BUDGET_FACTOR = 8;
/** ...and at least this much. */
const CONTENT_MIN_BUDGET_BYTES = 1024 * 1024;
/**
 * The parallel content pass reads rg's output at most this often while it
 * comes in small pieces (one per matching file): each read wakes this
 * process, whose CPU then competes with rg's threads; 15 ms took 4 % off a
 * search of 20,000 small files (wall time, interleaved runs) and delays the
 * dense-match watch by as much at most.
 */
const GATHER_MS = 15;
/**
 * The most matching files a content pass checks while rg still searches
 * (the rest after it): the output cap shows fewer in most searches, and
 * these checks are lost when the sorted search takes over.
 */
const EARLY_CHECKS = 1024;
/**
 * The memory rg may hold when a search runs without `--max-filesize`, in
 * bytes: this much, or twice the file size limit and this much more (a line
 * of a file under the limit, as rg's buffer doubles).
 */
const MIN_MEMORY_BOUND_BYTES = 256 * 1024 * 1024;

/** The memory bound of an rg run without `--max-filesize`. */
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
 * The check of each matching file (one per search), in one open: its size
 * (`fstat`; nothing is read of a file over the limit), whether it is binary
 * (a NUL in its first bytes, read without a last read to its end) and, when
 * asked, the line numbers of the byte offsets rg gave (counted in the bytes
 * the sniff read, then in the rest up to the last offset). Binary, unreadable
 * and too large files are not shown. Synchronous: fast.
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
        // --max-filesize where rg's memory can be watched (module doc).
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
   * One rg run with the search's arguments, its records handed to
   * `onRecord` (a path relative to the root, `""` for the root file, and the
   * rest of its line) until it returns `false`; `watched`: without
   * `--max-filesize`, rg's memory watched. Throws rg's error.
   */
  async #run(
    plan: GrepPlan,
    signal: AbortSignal,
    watched: boolean,
    options: { readonly unsorted?: boolean; readonly byteOffsets?: boolean },
    onRecord: (path: string, rest: Uint8Array, decoder: TextDecoder) => boolean,
    onSkip: GrepCollector["skip"],
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
      args: ripgrepGrepArgs(plan, {
        debug: true,
        sizeLimit: !watched,
        ...options,
      }),
      ...(isFile ? {} : { cwd: plan.root.path }),
      signal,
      ...(watched && !isFile ? { maxMemoryBytes: memoryBound(plan) } : {}),
      ...(options.unsorted ? { gatherMs: GATHER_MS } : {}),
      onSkip: (skip) =>
        onSkip(relativeOf(skip.path, isFile), skip.reason, skip.size),
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
      (path, reason, size) => collector.skip(path, reason, size),
    );
    if (run.overMemory) return OVER_MEMORY;
    perFile.sort((a, b) => comparePaths(a.path, b.path));
    for (const file of perFile) if (!collector.add(file)) break;
    return collector.result("ripgrep");
  }

  /**
   * Content mode over a folder, in path order without `--sort path` (which
   * makes ripgrep single-threaded): one parallel, unsorted pass collects each
   * matching file's lines (one rg run, as a bare `rg -n` would), then the
   * files are put in path order and kept until the output cap. When that
   * pass finds matching files densely (a common pattern) within a moment, or
   * its lines outgrow a budget (a multiple of the output cap), a sorted
   * search takes its place: the first files in path order then soon fill
   * the output, and memory stays bounded.
   */
  async #grepContent(
    plan: GrepPlan,
    signal: AbortSignal,
    watched: boolean,
  ): Promise<GrepResult | typeof OVER_MEMORY> {
    // What the pass skipped (each file once).
    const skipped: Parameters<GrepCollector["skip"]>[] = [];
    const firstPass = new AbortController();
    // One parallel, unsorted pass; each file's lines are kept (up to a
    // budget), then the files are put in path order.
    const found = new Map<string, MatchedLine[]>();
    const budget = Math.max(
      CONTENT_MIN_BUDGET_BYTES,
      plan.maxOutputChars * CONTENT_BUDGET_FACTOR,
    );
    let bytes = 0;
    let overBudget = false;
    let onDense: (() => void) | undefined;
    // Byte offsets instead of line numbers: rg need not count the lines of
    // every file; those of the files shown are counted after.
    const byteOffsets = !plan.multiline;
    // rg writes each file's records together: once the next file's come, a
    // file is checked (and its lines numbered) while rg still searches, up
    // to EARLY_CHECKS files; a file whose lines grew after is checked again.
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
      (...skip) => skipped.push(skip),
    );
    listing.catch(() => {});
    try {
      let dense = false;
      if (this.#sortedAttemptMs > 0) {
        // Dense matches, the end of the watch or the end of the pass: first wins.
        const decided = Promise.withResolvers<boolean>();
        onDense = () => decided.resolve(true);
        const timer = setTimeout(
          () => decided.resolve(false),
          this.#sortedAttemptMs,
        );
        listing.then(
          () => decided.resolve(false),
          () => decided.resolve(false),
        );
        dense = await decided.promise;
        clearTimeout(timer);
        onDense = undefined;
      }
      if (!dense) {
        if ((await listing).overMemory) return OVER_MEMORY;
        dense = overBudget;
      }
      if (dense) {
        firstPass.abort();
        await listing.catch(() => {});
        return await this.#sortedContent(plan, signal, watched);
      }
      const collector = new GrepCollector(plan);
      for (const skip of skipped) collector.skip(...skip);
      const paths = [...found.keys()].sort(comparePaths);
      for (const path of paths) {
        const lines = found.get(path)!;
        const checked = early.get(path);
        const verdict = checked?.count === lines.length
          ? checked.verdict
          : check.judge(path, lines, byteOffsets);
        if (verdict.tooLarge !== undefined) {
          collector.skip(path, "too-large", verdict.tooLarge);
        }
        if (verdict.lines === null) continue;
        const shown = verdict.lines;
        if (!collector.add({ path, count: shown.length, lines: shown })) break;
      }
      return collector.result("ripgrep");
    } catch (error) {
      firstPass.abort();
      await listing.catch(() => {});
      throw error;
    }
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
      (skipPath, reason, size) => collector.skip(skipPath, reason, size),
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
