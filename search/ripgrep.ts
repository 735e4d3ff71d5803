/**
 * The ripgrep search engine for local runtimes: spawns `rg` (arguments as an
 * array, never a shell) with options that make it agree with the fallback:
 * hidden files searched, ignore files not honoured, heavy folders excluded
 * below the root, globs relative to the searched folder, no transcoding, and
 * binary files (a NUL byte in the first 8 KiB) dropped afterwards.
 *
 * Why one long file: building rg's arguments, its passes (parallel, then
 * files in path order, or sorted when matches are dense) and parsing its
 * JSON output share the bounds and skip reporting of one search.
 *
 * @module
 */
import type { SearchFileSystem } from "./types.ts";
import { finishGlob, listFolder } from "./fallback.ts";
import { cutLine, type MatchedLine } from "./_match.ts";
import {
  type FileFound,
  GrepCollector,
  type GrepPlan,
  planGlob,
  planGrep,
  SearchSlots,
  startDeadline,
} from "./_plan.ts";
import {
  BINARY_SNIFF_BYTES,
  comparePaths,
  HEAVY_FOLDERS,
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
        const output = await new Deno.Command(path, {
          args: ["--version"],
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
        }).output();
        if (!output.success) return null;
        const text = new TextDecoder().decode(output.stdout);
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

/** Arguments shared by every ripgrep run. */
export const COMMON_ARGS: readonly string[] = [
  "--no-config",
  "--hidden",
  "--no-ignore",
  "--no-messages",
  "--color",
  "never",
  "--null",
];

/** The `--glob` arguments that skip heavy folders below the root. */
export function heavyGlobs(): string[] {
  return [...HEAVY_FOLDERS].flatMap((name) => ["--glob", `!${name}/`]);
}

/** Splits ripgrep's `--null` output into records: a path, then (optionally) the rest of the line. */
export class RecordParser {
  readonly #withRest: boolean;
  readonly #maxRestBytes: number;
  #parts: Uint8Array[] = [];
  #size = 0;
  #path: Uint8Array | null = null;

  constructor(withRest: boolean, maxRestBytes: number) {
    this.#withRest = withRest;
    this.#maxRestBytes = maxRestBytes;
  }

  #take(): Uint8Array {
    const parts = this.#parts;
    this.#parts = [];
    this.#size = 0;
    if (parts.length === 1) return parts[0]!;
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let offset = 0;
    for (const p of parts) {
      out.set(p, offset);
      offset += p.length;
    }
    return out;
  }

  push(chunk: Uint8Array, out: [Uint8Array, Uint8Array][]): void {
    let start = 0;
    while (start < chunk.length) {
      if (this.#path === null) {
        const zero = chunk.indexOf(0, start);
        if (zero === -1) {
          this.#parts.push(chunk.subarray(start));
          return;
        }
        this.#parts.push(chunk.subarray(start, zero));
        const path = this.#take();
        start = zero + 1;
        if (this.#withRest) this.#path = path;
        else out.push([path, new Uint8Array(0)]);
      } else {
        const newline = chunk.indexOf(10, start);
        const end = newline === -1 ? chunk.length : newline;
        if (this.#size < this.#maxRestBytes) {
          const piece = chunk.subarray(
            start,
            Math.min(end, start + this.#maxRestBytes - this.#size),
          );
          this.#parts.push(piece);
          this.#size += piece.length;
        }
        if (newline === -1) return;
        out.push([this.#path, this.#take()]);
        this.#path = null;
        start = newline + 1;
      }
    }
  }
}

/** Options of {@linkcode ripgrepGrepArgs}. */
export interface RipgrepGrepArgsOptions {
  /**
   * Content mode: the files to search (relative to the root folder), instead
   * of walking the root; their output comes unsorted, each file's lines
   * together.
   */
  readonly files?: readonly string[];
  /**
   * Add `--debug`, whose lines name the files rg skipped (too large, not a
   * regular file); read them with the engine's debug reader.
   */
  readonly debug?: boolean;
  /**
   * Content mode over the root: search in parallel, without `--sort path`
   * (each file's lines still come together; the caller sorts the files).
   */
  readonly unsorted?: boolean;
}

/**
 * The ripgrep arguments of a `grep` (shared with the engine that runs rg in a
 * sandbox): the search root is `.` (run in the root folder) or the root file;
 * content mode sorts by path unless given the files to search.
 *
 * @param plan The checked request.
 * @param options The files to search instead of the root.
 * @returns The arguments, ending with the root (or the files).
 */
export function ripgrepGrepArgs(
  plan: GrepPlan,
  options: RipgrepGrepArgsOptions = {},
): string[] {
  const files = options.files;
  // Bounds: files over the limit are skipped (rg's line buffer would hold a
  // whole line of them).
  const args = [
    ...COMMON_ARGS,
    "--text",
    "--encoding",
    "none",
    "--max-filesize",
    String(plan.maxFileBytes),
    ...(options.debug ? ["--debug"] : []),
  ];
  args.push(plan.caseInsensitive ? "--ignore-case" : "--case-sensitive");
  if (plan.multiline) args.push("--multiline", "--multiline-dotall");
  if (!plan.root.isFile && !files) {
    if (plan.filters.glob !== null) args.push("--glob", plan.filters.glob);
    args.push(...heavyGlobs());
    if (plan.filters.extensions !== null) {
      for (const extension of plan.filters.extensions) {
        args.push("--type-add", `skillrun:*.${extension}`);
      }
      args.push("--type", "skillrun");
    }
  }
  switch (plan.mode) {
    case "files_with_matches":
      args.push("--files-with-matches");
      break;
    case "count":
      args.push("--count", "--with-filename");
      break;
    case "content":
      args.push(
        "--line-number",
        "--with-filename",
        "--no-heading",
        "--no-context-separator",
        ...(files || options.unsorted ? [] : ["--sort", "path"]),
        "--before-context",
        String(plan.before),
        "--after-context",
        String(plan.after),
      );
      break;
  }
  args.push("--regexp", plan.regex.ripgrepPattern, "--");
  if (files) args.push(...files);
  else args.push(plan.root.isFile ? plan.root.path : ".");
  return args;
}

/** Whether a local file is binary (or unreadable); synchronous: fast. */
function binaryFileSync(path: string, buffer: Uint8Array): boolean {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(path);
  } catch {
    return true;
  }
  try {
    let length = 0;
    while (length < buffer.length) {
      const n = file.readSync(buffer.subarray(length));
      if (n === null || n === 0) break;
      length += n;
    }
    return isBinary(buffer.subarray(0, length));
  } catch {
    return true;
  } finally {
    file.close();
  }
}

/** The relative path of a ripgrep output path (`./x` under a folder). */
function relativeOf(path: string, rootIsFile: boolean): string {
  if (rootIsFile) return "";
  return path.startsWith("./") ? path.slice(2) : path;
}

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
    if (plan.root.isFile && plan.root.size > plan.maxFileBytes) {
      const skipped = new GrepCollector(plan);
      skipped.skip("", "too-large", plan.root.size);
      return skipped.result("ripgrep");
    }
    const what = `Search for "${plan.regex.pattern}"`;
    const deadline = startDeadline(plan.timeoutMs, plan.signal);
    // One slot per search, whatever number of rg runs it takes.
    let release: () => void;
    try {
      release = await this.#slots.acquire(deadline.signal);
    } catch (error) {
      deadline.clear();
      throw deadline.signal.aborted ? deadline.error(what) : error;
    }
    try {
      if (plan.mode === "content" && !plan.root.isFile) {
        return await this.#grepContent(plan, deadline);
      }
      return await this.#grepOnce(plan, deadline);
    } finally {
      release();
      deadline.clear();
    }
  }

  /** One rg run: files, counts, or the content of a single file. */
  async #grepOnce(
    plan: GrepPlan,
    deadline: ReturnType<typeof startDeadline>,
  ): Promise<GrepResult> {
    const args = ripgrepGrepArgs(plan, { debug: true });
    const collector = new GrepCollector(plan);
    const what = `Search for "${plan.regex.pattern}"`;
    const child = new Deno.Command(this.#rg, {
      args,
      ...(plan.root.isFile ? {} : { cwd: plan.root.path }),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const kill = killer(child);
    deadline.signal.addEventListener("abort", kill, { once: true });
    const stderrText = readDebugOutput(
      child.stderr,
      (path, reason, size) =>
        collector.skip(relativeOf(path, plan.root.isFile), reason, size),
    );
    let killedEarly = false;
    const sniff = new Uint8Array(BINARY_SNIFF_BYTES);
    try {
      const parser = new RecordParser(
        plan.mode !== "files_with_matches",
        plan.maxLineChars * 3 + 32,
      );
      const decoder = new TextDecoder();
      const records: [Uint8Array, Uint8Array][] = [];
      const perFile: FileFound[] = [];
      // Content mode: the current file's lines (records come sorted by path).
      let currentPath: string | null = null;
      let currentLines: MatchedLine[] = [];
      let stop = false;
      const flushFile = (): void => {
        if (currentPath === null) return;
        const path = currentPath;
        const lines = currentLines;
        currentPath = null;
        currentLines = [];
        if (binaryFileSync(joinPath(plan.root.path, path), sniff)) return;
        if (!collector.add({ path, count: lines.length, lines })) stop = true;
      };
      const reader = child.stdout.getReader();
      try {
        while (!stop) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.push(value, records);
          for (const [pathBytes, rest] of records) {
            const path = relativeOf(
              decoder.decode(pathBytes),
              plan.root.isFile,
            );
            if (plan.mode !== "content") {
              // Sniffed as paths arrive, while rg is still searching.
              if (binaryFileSync(joinPath(plan.root.path, path), sniff)) {
                continue;
              }
              perFile.push({
                path,
                count: plan.mode === "count" ? Number(decoder.decode(rest)) : 0,
                lines: [],
              });
            } else {
              if (path !== currentPath) {
                flushFile();
                if (stop) break;
                currentPath = path;
              }
              if (currentLines.length < plan.maxLinesPerFile) {
                currentLines.push(parseLine(rest, decoder, plan));
              }
            }
          }
          records.length = 0;
        }
        if (!stop) flushFile();
      } finally {
        if (stop) {
          killedEarly = true;
          kill();
        }
        await reader.cancel().catch(() => {});
      }
      const status = await child.status;
      const stderr = await stderrText;
      if (deadline.signal.aborted) throw deadline.error(what);
      // Exit code 2 also reports unreadable files (not printed under
      // --no-messages): only an error message means the search failed.
      if (
        !killedEarly && status.code === 2 && !status.signal &&
        stderr.trim() !== ""
      ) {
        throw ripgrepError(plan, stderr);
      }
      if (plan.mode !== "content") {
        perFile.sort((a, b) => comparePaths(a.path, b.path));
        for (const file of perFile) collector.add(file);
      }
      return collector.result("ripgrep");
    } catch (error) {
      kill();
      await child.status.catch(() => {});
      await stderrText.catch(() => "");
      if (deadline.signal.aborted) throw deadline.error(what);
      throw error;
    } finally {
      deadline.signal.removeEventListener("abort", kill);
    }
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
    deadline: ReturnType<typeof startDeadline>,
  ): Promise<GrepResult> {
    const what = `Search for "${plan.regex.pattern}"`;
    // What the pass skipped (each file once).
    const skipped: [string, "too-large" | "not-regular", number | undefined][] =
      [];
    const cwd = plan.root.path;
    const sniff = new Uint8Array(BINARY_SNIFF_BYTES);
    const firstPass = new AbortController();
    // One parallel, unsorted content pass; each file's lines are kept (up to
    // a budget), then the files are put in path order.
    const found = new Map<string, MatchedLine[]>();
    const budget = Math.max(
      CONTENT_MIN_BUDGET_BYTES,
      plan.maxOutputChars * CONTENT_BUDGET_FACTOR,
    );
    let bytes = 0;
    let overBudget = false;
    let onDense: (() => void) | undefined;
    const listing = this.#runRipgrep(
      ripgrepGrepArgs(plan, { debug: true, unsorted: true }),
      cwd,
      plan,
      AbortSignal.any([deadline.signal, firstPass.signal]),
      true,
      (path, rest, decoder) => {
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
      (path, reason, size) => skipped.push([path, reason, size]),
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
        await listing;
        dense = overBudget;
      }
      if (dense) {
        firstPass.abort();
        await listing.catch(() => {});
        return await this.#sortedContent(plan, deadline.signal, sniff);
      }
      const collector = new GrepCollector(plan);
      for (const [path, reason, size] of skipped) {
        collector.skip(path, reason, size);
      }
      const paths = [...found.keys()].sort(comparePaths);
      for (const path of paths) {
        if (binaryFileSync(joinPath(cwd, path), sniff)) continue;
        const lines = found.get(path)!;
        if (!collector.add({ path, count: lines.length, lines })) break;
      }
      return collector.result("ripgrep");
    } catch (error) {
      firstPass.abort();
      await listing.catch(() => {});
      if (deadline.signal.aborted) throw deadline.error(what);
      throw error;
    }
  }

  /** The sorted search (`--sort path`, streamed), until the output cap. */
  async #sortedContent(
    plan: GrepPlan,
    signal: AbortSignal,
    sniff: Uint8Array,
  ): Promise<GrepResult> {
    const collector = new GrepCollector(plan);
    let path: string | null = null;
    let lines: MatchedLine[] = [];
    const flush = (): boolean => {
      if (path === null) return true;
      const file = { path, count: lines.length, lines };
      path = null;
      lines = [];
      if (binaryFileSync(joinPath(plan.root.path, file.path), sniff)) {
        return true;
      }
      return collector.add(file);
    };
    await this.#runRipgrep(
      ripgrepGrepArgs(plan, { debug: true }),
      plan.root.path,
      plan,
      signal,
      true,
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
      (skippedPath, reason, size) => collector.skip(skippedPath, reason, size),
    );
    if (!collector.stopped) flush();
    return collector.result("ripgrep");
  }

  /**
   * Runs rg in `cwd` and hands each record (a path relative to `cwd`, and
   * the rest of its line) to `onRecord` until it returns `false`. The signal
   * kills rg; its reason is thrown.
   */
  async #runRipgrep(
    args: string[],
    cwd: string,
    plan: GrepPlan,
    signal: AbortSignal,
    withRest: boolean,
    onRecord: (path: string, rest: Uint8Array, decoder: TextDecoder) => boolean,
    onSkip?: (
      path: string,
      reason: "too-large" | "not-regular",
      size?: number,
    ) => void,
  ): Promise<void> {
    signal.throwIfAborted();
    const child = new Deno.Command(this.#rg, {
      args,
      cwd,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const kill = killer(child);
    signal.addEventListener("abort", kill, { once: true });
    const stderrText = readDebugOutput(
      child.stderr,
      (path, reason, size) => onSkip?.(relativeOf(path, false), reason, size),
    );
    let stopped = false;
    try {
      const parser = new RecordParser(withRest, plan.maxLineChars * 3 + 32);
      const decoder = new TextDecoder();
      const records: [Uint8Array, Uint8Array][] = [];
      const reader = child.stdout.getReader();
      try {
        while (!stopped) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.push(value, records);
          for (const [pathBytes, rest] of records) {
            const path = relativeOf(decoder.decode(pathBytes), false);
            if (!onRecord(path, rest, decoder)) {
              stopped = true;
              break;
            }
          }
          records.length = 0;
        }
      } finally {
        if (stopped) kill();
        await reader.cancel().catch(() => {});
      }
      const status = await child.status;
      const stderr = await stderrText;
      signal.throwIfAborted();
      if (
        !stopped && status.code === 2 && !status.signal && stderr.trim() !== ""
      ) {
        throw ripgrepError(plan, stderr);
      }
    } catch (error) {
      kill();
      await child.status.catch(() => {});
      await stderrText.catch(() => "");
      throw error;
    } finally {
      signal.removeEventListener("abort", kill);
    }
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
    const deadline = startDeadline(plan.timeoutMs, plan.signal);
    const what = `Glob "${request.pattern}"`;
    let release: () => void;
    try {
      release = await this.#slots.acquire(deadline.signal);
    } catch (error) {
      deadline.clear();
      throw deadline.signal.aborted ? deadline.error(what) : error;
    }
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(this.#rg, {
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
        stdin: "null",
        stdout: "piped",
        stderr: "null",
      }).spawn();
    } catch (error) {
      deadline.clear();
      release();
      throw error;
    }
    const kill = killer(child);
    deadline.signal.addEventListener("abort", kill, { once: true });
    try {
      const parser = new RecordParser(false, 0);
      const records: [Uint8Array, Uint8Array][] = [];
      const decoder = new TextDecoder();
      const files: GlobFile[] = [];
      // Stat each file as its path arrives, while rg is still walking.
      for await (const chunk of child.stdout) {
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
      }
      await child.status;
      if (deadline.signal.aborted) throw deadline.error(what);
      return finishGlob(plan, files, "ripgrep");
    } catch (error) {
      kill();
      await child.status.catch(() => {});
      if (deadline.signal.aborted) throw deadline.error(what);
      throw error;
    } finally {
      deadline.signal.removeEventListener("abort", kill);
      deadline.clear();
      release();
    }
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

/** Parses the rest of a content record: `12:text` (match) or `12-text` (context). */
export function parseLine(
  rest: Uint8Array,
  decoder: TextDecoder,
  plan: GrepPlan,
): MatchedLine {
  // `12:text` for a match, `12-text` for context.
  let i = 0;
  let lineNumber = 0;
  while (i < rest.length && rest[i]! >= 0x30 && rest[i]! <= 0x39) {
    lineNumber = lineNumber * 10 + rest[i]! - 0x30;
    i++;
  }
  const match = rest[i] === 0x3a;
  const { text, cut } = cutLine(
    decoder.decode(rest.subarray(i + 1)),
    plan.maxLineChars,
  );
  return { lineNumber, text, match, cut };
}

/** File types in a mode (`st_mode & S_IFMT`). */
const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

/** A file rg skipped, read from one of its `--debug` lines. */
export interface RipgrepSkip {
  /** The path as rg printed it (relative to its folder, maybe `./`). */
  readonly path: string;
  /** Why: over `--max-filesize`, or not a regular file. */
  readonly reason: "too-large" | "not-regular";
  /** Its size, for a file too large. */
  readonly size?: number;
}

/**
 * Reads one line of rg's `--debug` output: the file it skipped for its size
 * or for not being a regular file (a symlink, not followed, is not one), or
 * `null` for any other line. Shared with the engine that runs rg in a
 * sandbox.
 *
 * @param text One line of rg's stderr.
 * @returns The skipped file, or `null`.
 */
export function parseDebugSkip(text: string): RipgrepSkip | null {
  const large = /^DEBUG\|ignore::walk\|\S* ignoring (.*): (\d+) bytes$/
    .exec(text);
  if (large) {
    return { path: large[1]!, reason: "too-large", size: Number(large[2]) };
  }
  const subject =
    /^DEBUG\|rg::subject\|\S* ignoring (.*): failed to pass subject filter: file type: Some\(FileType\(FileType \{ mode: (\d+) \}\)\)/
      .exec(text);
  if (subject && (Number(subject[2]) & S_IFMT) !== S_IFLNK) {
    return { path: subject[1]!, reason: "not-regular" };
  }
  return null;
}

/**
 * Reads rg's stderr under `--debug`: reports each file rg skipped for its
 * size or for not being a regular file (symlinks, not followed, are not
 * reported), and returns the other lines (errors), at most 64 KiB of them.
 */
async function readDebugOutput(
  stderr: ReadableStream<Uint8Array>,
  onSkip: (
    path: string,
    reason: "too-large" | "not-regular",
    size?: number,
  ) => void,
): Promise<string> {
  const decoder = new TextDecoder();
  const errors: string[] = [];
  let errorChars = 0;
  let pending = "";
  const line = (text: string): void => {
    if (!text.startsWith("DEBUG|")) {
      if (errorChars < 65536 && text.trim() !== "") {
        errors.push(text);
        errorChars += text.length + 1;
      }
      return;
    }
    const skipped = parseDebugSkip(text);
    if (skipped) onSkip(skipped.path, skipped.reason, skipped.size);
  };
  for await (const chunk of stderr) {
    pending += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = pending.indexOf("\n")) !== -1) {
      line(pending.slice(0, newline));
      pending = pending.slice(newline + 1);
    }
  }
  if (pending !== "") line(pending);
  return errors.join("\n");
}

/** The error of a failed rg run, from its stderr. */
export function ripgrepError(plan: GrepPlan, stderr: string): Error {
  const lines = stderr.trim().split("\n").map((l) => l.trim()).filter((l) => l);
  const reason = lines.at(-1)?.replace(/^error:\s*/, "") ?? "unknown error";
  if (/regex|literal/i.test(stderr)) {
    return new TypeError(`Invalid regex "${plan.regex.pattern}": ${reason}`);
  }
  if (/glob/i.test(stderr)) {
    return new TypeError(`Invalid glob "${plan.filters.glob}": ${reason}`);
  }
  return new Error(
    `Cannot search "${plan.root.path}": ripgrep failed: ${reason}`,
  );
}

/** A function that kills rg at once, and does nothing once it has exited. */
function killer(child: Deno.ChildProcess): () => void {
  return () => {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  };
}
