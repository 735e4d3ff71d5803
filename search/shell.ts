/**
 * The search engine, through a shell (a sandbox's, or the host's launcher) so
 * that `grep`, `glob` and `ls` on a remote runtime never download the tree:
 * ripgrep where it runs (detected once), else one `find` listing and a
 * `grep -E` prefilter, walked and matched by `_walk.ts`; without a shell, rg
 * spawned on this host or the file-system interface alone. Every command's
 * output is framed with `base64` (any channel that carries text carries it
 * exactly: paths with newlines, invalid UTF-8, NUL bytes), and every value put
 * into a command line is quoted by `shellQuote`.
 *
 * @module
 */
import { formatBytes } from "../_internal/format.ts";
import { shellQuote } from "../_internal/shell_quote.ts";
import {
  type FileSource,
  finishGlob,
  fsSource,
  globFiles,
  grepFiles,
  type Listed,
  type ListFolder,
  listFolder,
  readThrough,
  takeBatch,
} from "./_walk.ts";
import {
  type GlobPlan,
  GrepCollector,
  type GrepPlan,
  planGlob,
  planGrep,
  runSearch,
  type SearchRoot,
  SearchSlots,
  tooLargeRoot,
} from "./_plan.ts";
import {
  canWatchMemory,
  COMMON_ARGS,
  DEBUG_SKIP_AWK,
  detectRipgrep,
  FIRST_NUL_ARGS,
  heavyGlobs,
  parseDebugSkip,
  parseFirstNul,
  parseRipgrepOutput,
  recordReader,
  relativeOf,
  ripgrepError,
  ripgrepGrepArgs,
  type RipgrepOutput,
  runHostRipgrep,
} from "./_ripgrep_protocol.ts";
import {
  BINARY_SNIFF_BYTES,
  comparePaths,
  HEAVY_FOLDERS,
  isBinary,
  joinPath,
} from "./rules.ts";
import type {
  FileType,
  GlobFile,
  GlobRequest,
  GlobResult,
  GrepRequest,
  GrepResult,
  LsRequest,
  LsResult,
  SearchEngine,
  SearchFileSystem,
  SkipReason,
} from "./types.ts";

/** Options of {@linkcode SearchShell.exec}. */
export interface SearchShellExecOptions {
  /** How long the command may run, in ms. */
  readonly timeoutMs: number;
  /** Stops the command. */
  readonly signal?: AbortSignal;
  /** The most bytes of stdout (and of stderr) to keep. */
  readonly maxOutputBytes?: number;
}

/** What {@linkcode SearchShell.exec} returns (a subset of `ExecuteResult`). */
export interface SearchShellResult {
  /** Standard output as text. */
  readonly stdout: string;
  /** Standard error as text. */
  readonly stderr: string;
  /** The exit code (`-1` when stopped). */
  readonly exitCode: number;
  /** Whether the time limit stopped the command. */
  readonly timedOut: boolean;
  /** Whether the caller's signal stopped the command. */
  readonly aborted?: boolean;
  /** Whether part of stdout was dropped (over `maxOutputBytes`). */
  readonly stdoutTruncated: boolean;
}

/**
 * Runs a command line with a POSIX shell (`bash -c` or `sh -c`) in the
 * sandbox whose files are searched. A runtime adapts its `execute` to it.
 */
export interface SearchShell {
  /** Runs one command line. */
  exec(
    command: string,
    options: SearchShellExecOptions,
  ): Promise<SearchShellResult>;
}

/** Options of {@linkcode ShellSearch}. */
export interface ShellSearchOptions {
  /**
   * Runs commands in the sandbox. Without it: `rg` spawned on this host
   * (`readFilesDirectly`, unless `useRipgrep` is `false`), else the
   * file-system interface alone (`FallbackSearch`).
   */
  readonly shell?: SearchShell;
  /**
   * The sandbox's file system (paths resolved and checked there; the last
   * resort engine reads through it).
   */
  readonly fs: SearchFileSystem;
  /**
   * `"auto"` (default): ripgrep when the sandbox has it; `true`: ripgrep,
   * failing when it is missing; `false`: never ripgrep.
   */
  readonly useRipgrep?: "auto" | boolean;
  /** The ripgrep command. Default `rg`. */
  readonly ripgrepPath?: string;
  /**
   * The most bytes one command may send back (before `base64`); more is an
   * error asking for a narrower search. Default 32 MiB.
   */
  readonly maxOutputBytes?: number;
  /** Folders listed at once (files read at once: 8 times as many without framing). */
  readonly workers?: number;
  /**
   * The shell runs on this host: the files the commands keep are read (and
   * sniffed for binary content) through `fs` and the host rather than
   * through the shell; with `rg`, `glob` lists with `rg --files`.
   * Default `false`.
   */
  readonly readFilesDirectly?: boolean;
}

/** What the sandbox has, found once. */
interface Capabilities {
  readonly rg: boolean;
  /** `base64`, `head` and GNU `find -printf`: the in-sandbox engine works. */
  readonly framing: boolean;
  readonly grep: boolean;
  /** `grep` reads UTF-8 under `LC_ALL=C.UTF-8` (`.` matches `é`). */
  readonly utf8: boolean;
}

const DEFAULT_MAX_OUTPUT_BYTES = 32 * 1024 * 1024;
/** The first output cap of a content search (its output is sorted: a prefix). */
const CONTENT_FIRST_BYTES = 1024 * 1024;
const STATUS_MARK = "skillrun-status";
const DETECT_TIMEOUT_MS = 30_000;
/** Added to a search's time limit for the shell's own limit (a backstop). */
const EXEC_SLACK_MS = 5_000;
/** The shell's limit for one batch of file reads (the search's signal stops it first). */
const READ_TIMEOUT_MS = 600_000;

/**
 * The search engine: through a shell (a sandbox's, or the local runtime's
 * launcher), else with rg on this host ({@linkcode RipgrepSearch}) or the
 * file-system interface alone ({@linkcode FallbackSearch}). `engine` in a
 * result says `ripgrep` when ripgrep answered, `fallback` otherwise.
 *
 * @example Searching through a local bash
 * ```ts
 * import { assert } from "@std/assert";
 * import { ShellSearch, type SearchShell } from "@skillrun/skillrun/search";
 * import { LocalFileSystem } from "@skillrun/skillrun/runtime";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/a.txt`, "one\nneedle two\n");
 *   const shell: SearchShell = {
 *     async exec(command) {
 *       const out = await new Deno.Command("bash", { args: ["-c", command] }).output();
 *       const text = (b: Uint8Array) => new TextDecoder().decode(b);
 *       return { stdout: text(out.stdout), stderr: text(out.stderr), exitCode: out.code,
 *         timedOut: false, stdoutTruncated: false };
 *     },
 *   };
 *   const search = new ShellSearch({ shell, fs: new LocalFileSystem({ cwd: dir }) });
 *   const result = await search.grep({ pattern: "needle", outputMode: "count" });
 *   assert(result.mode === "count" && result.counts[0]?.count === 1);
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export class ShellSearch implements SearchEngine {
  readonly #shell: SearchShell | undefined;
  readonly #fs: SearchFileSystem;
  readonly #useRipgrep: "auto" | boolean;
  readonly #rgPath: string;
  readonly #maxBytes: number;
  readonly #workers: number;
  readonly #direct: boolean;
  readonly #slots = new SearchSlots();
  #caps: Promise<Capabilities> | null = null;

  /**
   * Makes the engine (nothing runs until the first search).
   *
   * @throws {RangeError} `maxOutputBytes` is not a positive integer.
   */
  constructor(options: ShellSearchOptions) {
    this.#shell = options.shell;
    this.#fs = options.fs;
    this.#useRipgrep = options.useRipgrep ?? "auto";
    this.#rgPath = options.ripgrepPath ?? "rg";
    const max = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    if (!Number.isInteger(max) || max < 1024) {
      throw new RangeError(
        `Invalid output cap "${max}": expected an integer of at least 1024`,
      );
    }
    this.#maxBytes = max;
    this.#workers = Math.max(1, options.workers ?? 2);
    this.#direct = options.readFilesDirectly ?? false;
  }

  /**
   * Searches file contents (see {@linkcode GrepRequest}).
   *
   * @throws {TypeError} For a bad pattern, glob, type or mode.
   * @throws {RangeError} For bad numbers.
   * @throws {Deno.errors.NotFound} When the path does not exist.
   * @throws {SearchTimeoutError} When the time limit passes.
   * @throws {Error} When the sandbox's answer passes the output cap.
   */
  async grep(request: GrepRequest): Promise<GrepResult> {
    const caps = await this.#capabilities(request.signal);
    if (caps.rg) return await this.#grepRipgrep(request);
    return await grepFiles(
      this.#fs,
      request,
      this.#direct,
      this.#slots,
      this.#source(caps),
    );
  }

  /**
   * Finds files by glob, newest first (see {@linkcode GlobRequest}), from one
   * `find` listing of the folder.
   *
   * @throws {TypeError} For a bad glob or a path that is a file.
   * @throws {Deno.errors.NotFound} When the path does not exist.
   * @throws {SearchTimeoutError} When the time limit passes.
   */
  async glob(request: GlobRequest): Promise<GlobResult> {
    const caps = await this.#capabilities(request.signal);
    const plan = await planGlob(this.#fs, request, this.#direct);
    if (caps.rg && this.#direct) return await this.#globRipgrep(plan, request);
    const engine = caps.rg ? "ripgrep" : "fallback";
    return await globFiles(plan, this.#slots, this.#source(caps), engine);
  }

  /**
   * Lists a folder, folders first (see {@linkcode LsRequest}), from one
   * `find` listing to the requested depth.
   *
   * @throws {TypeError} For a path that is a file.
   * @throws {RangeError} For bad numbers.
   * @throws {Deno.errors.NotFound} When the path does not exist.
   */
  async ls(request: LsRequest): Promise<LsResult> {
    const caps = await this.#capabilities(request.signal);
    return await listFolder(
      this.#fs,
      request,
      this.#direct,
      this.#source(caps).listing,
    );
  }

  /** The find engine's file source, or the file-system interface's without framing. */
  #source(caps: Capabilities): FileSource {
    if (!caps.framing) return fsSource(this.#fs, this.#workers);
    return {
      workers: this.#workers,
      batchFiles: this.#direct ? 64 : Infinity,
      listing: (...args) => this.#listing(...args),
      candidates: (plan, signal) => {
        const grep = caps.grep ? grepPrefilter(plan, caps.utf8) : null;
        return grep
          ? this.#filesMatching(plan.root, grep, plan, signal)
          : Promise.resolve(null);
      },
      read: (plan, signal) =>
        this.#direct
          ? readThrough(this.#fs, plan, signal)
          : (paths) => this.#readFiles(plan, paths, signal),
    };
  }

  /** Finds out once what the sandbox has; a failed detection is not cached. */
  #capabilities(signal: AbortSignal | undefined): Promise<Capabilities> {
    signal?.throwIfAborted();
    this.#caps ??= (async (): Promise<Capabilities> => {
      if (!this.#shell) {
        // rg spawned on this host, else the file-system interface alone.
        const rg = this.#direct && this.#useRipgrep !== false &&
          await detectRipgrep(this.#rgPath) !== null;
        if (!rg && this.#useRipgrep === true) {
          throw new Error(
            `Cannot use ripgrep "${this.#rgPath}": ${
              this.#direct ? "it is not installed or does not run" : "no shell"
            }; install it or use useRipgrep: "auto"`,
          );
        }
        return { rg, framing: false, grep: false, utf8: false };
      }
      const result = await this.#shell.exec(
        [
          `for c in base64 head grep; do command -v "$c" >/dev/null 2>&1 && printf '%s\\n' "$c"; done`,
          `${
            shellQuote(this.#rgPath)
          } --version >/dev/null 2>&1 && printf 'rg\\n'`,
          `find . -maxdepth 0 -printf 'find-printf\\n' 2>/dev/null`,
          `printf '\\303\\251\\n' | LC_ALL=C.UTF-8 grep -q -E '^.$' 2>/dev/null && printf 'grep-utf8\\n'`,
          `true`,
        ].join("; "),
        { timeoutMs: DETECT_TIMEOUT_MS, ...(signal ? { signal } : {}) },
      );
      signal?.throwIfAborted();
      if (result.exitCode !== 0 || result.timedOut) {
        throw new Error(
          `Cannot search in the sandbox: the detection of its tools failed (exit code ${result.exitCode})`,
        );
      }
      const found = new Set(result.stdout.split("\n"));
      // rg needs only `base64` and `head` (no GNU `find`: macOS has rg).
      const framed = found.has("base64") && found.has("head");
      const rg = found.has("rg");
      const framing = framed && found.has("find-printf");
      if (this.#useRipgrep === true && !(rg && framed)) {
        throw new Error(
          `Cannot use ripgrep in the sandbox: ${
            rg ? "base64 or head is missing" : "rg is not installed"
          }; install it or use useRipgrep: "auto"`,
        );
      }
      return {
        rg: rg && framed && this.#useRipgrep !== false,
        framing,
        grep: found.has("grep"),
        utf8: found.has("grep-utf8"),
      };
    })();
    const caps = this.#caps;
    caps.catch(() => {
      if (this.#caps === caps) this.#caps = null;
    });
    return caps;
  }

  /** Runs `body` with its stdout through `head -c cap | base64`, its status on stderr. */
  async #framed(
    body: string,
    cap: number,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<RipgrepOutput> {
    const command =
      `{ ${body}; printf '\\n${STATUS_MARK} %s\\n' "$?" >&2; } | head -c ${cap} | base64`;
    // Stopped by the caller: its reason, not the shell's exit code.
    signal.throwIfAborted();
    const result = await this.#shell!.exec(command, {
      // The deadline's signal stops it first; this is a backstop.
      timeoutMs: timeoutMs + EXEC_SLACK_MS,
      signal,
      maxOutputBytes: Math.ceil(cap / 3) * 4 + Math.ceil(cap / 57) + 1024,
    });
    signal.throwIfAborted();
    if (result.timedOut || result.aborted) {
      throw new Error("Cannot search in the sandbox: the command was stopped");
    }
    if (result.stdoutTruncated) {
      throw new Error(
        "Cannot search in the sandbox: the shell cut the command's output",
      );
    }
    const marker = result.stderr.lastIndexOf(`${STATUS_MARK} `);
    const status = marker === -1
      ? -1
      : Number.parseInt(result.stderr.slice(marker + STATUS_MARK.length + 1));
    const stderr =
      (marker === -1 ? result.stderr : result.stderr.slice(0, marker))
        .trim();
    if (result.exitCode !== 0) {
      throw new Error(
        `Cannot search in the sandbox: the command failed (exit code ${result.exitCode})${
          stderr ? `: ${stderr.split("\n").at(-1)}` : ""
        }`,
      );
    }
    const bytes = Uint8Array.fromBase64(result.stdout);
    return { bytes, truncated: bytes.length >= cap, status, stderr };
  }

  async #grepRipgrep(request: GrepRequest): Promise<GrepResult> {
    const plan = await planGrep(this.#fs, request, this.#direct);
    const root = plan.root;
    // On a Linux host, rg runs without `--max-filesize` (which makes it stat
    // every file), its memory watched instead; past the bound, again with
    // `--max-filesize` (README). Multiline, rg reads whole files.
    let watched = this.#direct && canWatchMemory() && !root.isFile &&
      !plan.multiline;
    // Content over a folder: one parallel, unsorted pass first (as a bare
    // `rg -n`; `--sort path` makes rg single-threaded), its files put in path
    // order after; when its output passes a budget (8 times the output cap, at
    // least 1 MiB), the sorted search, cut at 1 MiB: its first files in path
    // order.
    let unsorted = plan.mode === "content" && !root.isFile;
    const sortedCap = Math.min(CONTENT_FIRST_BYTES, this.#maxBytes);
    let cap = plan.mode !== "content"
      ? this.#maxBytes
      : unsorted
      ? Math.min(this.#maxBytes, Math.max(sortedCap, plan.maxOutputChars * 8))
      : sortedCap;
    return tooLargeRoot(plan) ?? await runSearch(
      plan,
      `Search for "${plan.regex.pattern}"`,
      this.#slots,
      async (signal) => {
        // On the host, files and counts (every matching file shown) are
        // checked as rg names them, while it still searches (a count of
        // 25k matching files took 1.6 times as long checked after).
        const checked = new Map<string, boolean | number>();
        for (;;) {
          const check = this.#direct && plan.mode !== "content"
            ? recordReader(plan.mode === "count", 0, (found) => {
              const path = relativeOf(utf8.decode(found), root.isFile);
              checked.set(path, checkHostFile(root, path, plan.maxFileBytes));
            })
            : undefined;
          const run = await this.#ripgrep(
            ripgrepGrepArgs(plan, { unsorted, sizeLimit: !watched }),
            root,
            cap,
            signal,
            plan.timeoutMs,
            // Room for a line of a file under the size limit as rg's
            // buffer doubles, at least 256 MiB.
            watched
              ? Math.max(256 << 20, 2 * plan.maxFileBytes + (64 << 20))
              : undefined,
            check,
          );
          if (watched && !run.truncated && ![0, 1, 2].includes(run.status)) {
            watched = false;
            continue;
          }
          if (unsorted && run.truncated) {
            unsorted = false;
            cap = sortedCap;
            continue;
          }
          const collector = new GrepCollector(plan);
          const errors: string[] = [];
          for (const line of run.stderr.split("\n")) {
            const skipped = parseDebugSkip(line);
            if (skipped) {
              const path = relativeOf(skipped.path, root.isFile);
              collector.skip(path, skipped.reason, skipped.size);
            } else if (line.trim() !== "") errors.push(line);
          }
          // Status 2 also reports unreadable files (not printed under
          // --no-messages): only an error message means the search failed.
          const failed = run.status === 2
            ? errors.length > 0
            : ![0, 1].includes(run.status);
          if (!run.truncated && failed) {
            throw ripgrepError(
              plan,
              errors.join("\n") || `status ${run.status}`,
            );
          }
          const files = parseRipgrepOutput(run.bytes, plan);
          // A cut output's last file may lack lines: it is not used.
          if (run.truncated) files.pop();
          if (plan.mode !== "content" && run.truncated) {
            throw this.#tooMuch(root.path);
          }
          if (plan.mode !== "content" || unsorted) {
            files.sort((a, b) => comparePaths(a.path, b.path));
          }
          for (let next = 0; next < files.length && !collector.stopped;) {
            const batch = takeBatch(files, next, (f) => f.path.length + 8);
            next += batch.length;
            const binary = await this.#binaryFiles(
              plan,
              batch.map((f) => f.path),
              signal,
              collector,
              checked,
            );
            for (const file of batch) {
              if (!binary.has(file.path) && !collector.add(file)) break;
            }
          }
          if (!run.truncated || collector.stopped) {
            return collector.result("ripgrep");
          }
          if (cap >= this.#maxBytes) throw this.#tooMuch(root.path);
          cap = this.#maxBytes;
        }
      },
    );
  }

  /**
   * One rg run in the root folder: spawned on this host (`readFilesDirectly`),
   * else framed in the sandbox, where only its debug lines that name a
   * skipped file (over the size limit, not a regular file) and its errors
   * reach stderr.
   */
  #ripgrep(
    args: readonly string[],
    root: SearchRoot,
    cap: number,
    signal: AbortSignal,
    timeoutMs: number,
    maxMemoryBytes?: number,
    onStdout?: (chunk: Uint8Array) => void,
  ): Promise<RipgrepOutput> {
    const cwd = root.isFile ? undefined : root.path;
    if (this.#direct) {
      return runHostRipgrep(this.#rgPath, args, {
        cwd,
        cap,
        signal,
        maxMemoryBytes,
        ...(onStdout ? { onStdout } : {}),
      });
    }
    const rg = `( ${shellQuote(this.#rgPath)} ${
      args.map(shellQuote).join(" ")
    } 2>&1 1>&3 | awk ${
      shellQuote(DEBUG_SKIP_AWK)
    } >&2; exit "\${PIPESTATUS[0]}" ) 3>&1`;
    const body = cwd === undefined ? rg : `cd -- ${shellQuote(cwd)} && ${rg}`;
    return this.#framed(body, cap, signal, timeoutMs);
  }

  #tooMuch(path: string): Error {
    return new Error(
      `Cannot search "${path}": the answer ${
        this.#direct ? "of rg" : "in the sandbox"
      } passed the ${
        formatBytes(this.#maxBytes)
      } output cap; narrow the search with a path, a glob or a type`,
    );
  }

  /** `glob` on the host with rg: `rg --files` spawned, each file's time from the host. */
  async #globRipgrep(
    plan: GlobPlan,
    request: GlobRequest,
  ): Promise<GlobResult> {
    return await runSearch(
      plan,
      `Glob "${request.pattern}"`,
      this.#slots,
      async (signal) => {
        const args = [
          "--files",
          ...COMMON_ARGS,
          "--glob",
          request.pattern,
          ...heavyGlobs(),
          "--",
          ".",
        ];
        const files: GlobFile[] = [];
        await runHostRipgrep(this.#rgPath, args, {
          cwd: plan.root.path,
          cap: Infinity,
          signal,
          // Each file timed as its path comes, while rg still walks (a
          // glob of 100k files took 1.15 times as long timed after).
          onStdout: recordReader(false, 0, (found) => {
            const path = joinPath(
              plan.root.path,
              relativeOf(utf8.decode(found), false),
            );
            let modifiedMs: number | null = null;
            try {
              modifiedMs = Deno.lstatSync(path).mtime?.getTime() ?? null;
            } catch {
              // Gone since: listed without a time.
            }
            files.push({ path, modifiedMs });
          }),
        });
        return finishGlob(plan, files, "ripgrep");
      },
    );
  }

  /**
   * Which of these files (relative to the root) are not shown: binary (read
   * on the host, or by rg in the sandbox), or over the size limit (on the
   * host, listed as skipped).
   */
  async #binaryFiles(
    plan: GrepPlan,
    paths: readonly string[],
    signal: AbortSignal,
    collector: GrepCollector,
    checked: ReadonlyMap<string, boolean | number>,
  ): Promise<Set<string>> {
    const root = plan.root;
    const binary = new Set<string>();
    if (this.#direct) {
      for (const path of paths) {
        const fate = checked.get(path) ??
          checkHostFile(root, path, plan.maxFileBytes);
        if (fate === true) continue;
        binary.add(path);
        if (fate !== false) collector.skip(path, "too-large", fate);
      }
    }
    if (paths.length === 0 || this.#direct) return binary;
    const shown = (path: string): string =>
      root.isFile ? root.path : `./${path}`;
    const run = await this.#ripgrep(
      [...FIRST_NUL_ARGS, ...paths.map(shown)],
      root,
      this.#maxBytes,
      signal,
      plan.timeoutMs,
    );
    const byShown = new Map(paths.map((p) => [shown(p), p]));
    for (const [shownPath, offset] of parseFirstNul(run.bytes)) {
      const path = byShown.get(shownPath);
      if (path !== undefined && offset < BINARY_SNIFF_BYTES) binary.add(path);
    }
    return binary;
  }

  /** The files (relative) with a line `grep -E` matches, by `find -exec grep -l`. */
  async #filesMatching(
    root: SearchRoot,
    grep: { pattern: string; flags: string; locale: string },
    plan: GrepPlan,
    signal: AbortSignal,
  ): Promise<Set<string> | null> {
    // Heavy folders are not descended into, and files over the size limit
    // are not read (grep -r would read a sparse file of gigabytes whole):
    // they, and files that are not regular, are listed as candidates, for
    // the search to report them as skipped.
    const body = `cd -- ${
      shellQuote(root.path)
    } && LC_ALL=C find . -mindepth 1 -type d \\( ${HEAVY_NAMES} \\) -prune -o -type f -size -${
      plan.maxFileBytes + 1
    }c -exec env LC_ALL=${grep.locale} grep -l ${grep.flags} -a -Z -e ${
      shellQuote(grep.pattern)
    } -- {} + -o ! -type d ! -type l -print0`;
    const run = await this.#framed(
      body,
      this.#maxBytes,
      signal,
      plan.timeoutMs,
    );
    // Status 2 (an error) may mean files were missed: no narrowing then.
    if (run.truncated || (run.status !== 0 && run.status !== 1)) return null;
    const files = new Set<string>();
    recordReader(false, 0, (path) => {
      files.add(relativeOf(utf8.decode(path), false));
    })(run.bytes);
    return files;
  }

  /** One `find` listing of a folder, served to the walk from memory. */
  async #listing(
    root: SearchRoot,
    depth: number,
    signal: AbortSignal,
    timeoutMs: number,
    names: readonly string[] | null,
  ): Promise<ListFolder> {
    const format = "%y %s %T@ %P\\0";
    const kept = names === null
      ? ""
      : `\\( -type d -o ${
        names.map((n) => `-name ${shellQuote(n)}`).join(" -o ")
      } \\) `;
    const body = `cd -- ${
      shellQuote(root.path)
    } && LC_ALL=C find . -mindepth 1${
      Number.isFinite(depth) ? ` -maxdepth ${depth}` : ""
    } \\( -type d \\( ${HEAVY_NAMES} \\) -printf '${format}' -prune \\) -o ${kept}-printf '${format}'`;
    const run = await this.#framed(body, this.#maxBytes, signal, timeoutMs);
    if (run.truncated) {
      throw new Error(
        `Cannot list "${root.path}": the listing in the sandbox passed the ${
          formatBytes(this.#maxBytes)
        } output cap; search a narrower folder`,
      );
    }
    const dirs = new Map<string, Listed[]>([["", []]]);
    // One record at a time (an array of 100k records' views took 45 MiB).
    recordReader(false, 0, (bytes) => {
      const record = utf8.decode(bytes);
      const [type, size, time] = record.split(" ", 3);
      if (time === undefined) return;
      const path = record.slice(type!.length + size!.length + time.length + 3);
      if (path === "") return;
      const slash = path.lastIndexOf("/");
      const parent = slash === -1 ? "" : path.slice(0, slash);
      if (!dirs.has(parent)) dirs.set(parent, []);
      dirs.get(parent)!.push({
        path,
        name: path.slice(slash + 1),
        type: FIND_TYPES[type!] ?? "other",
        size: Number(size),
        modifiedMs: parseFindTime(time),
      });
    })(run.bytes);
    return (folder) => Promise.resolve(dirs.get(folder) ?? []);
  }

  /**
   * Reads files (relative to the root) in one command: one `cat` of them all
   * between two `find` listings of their sizes (a few processes, not one per
   * file: a process start costs milliseconds in a sandbox); when the two
   * listings differ or the bytes do not add up (a file changed meanwhile),
   * through the file-system interface.
   */
  async #readFiles(
    plan: GrepPlan,
    paths: readonly string[],
    signal: AbortSignal,
  ): Promise<(Uint8Array | SkipReason | null)[]> {
    const cap = this.#maxBytes * 2;
    // Per path, in order: `+<size>` for a regular file (not a link) that can
    // be read, else `-`. The same `find` picks the files for `cat`. Paths are
    // absolute: `find` would read a leading `-`, `(` or `!` as an expression.
    const sizes =
      `find "$@" -maxdepth 0 \\( -type f -readable -printf '+%s\\n' \\) -o -printf '-\\n'`;
    const run = await this.#framed(
      `set -- ${
        paths.map((path) => shellQuote(joinPath(plan.root.path, path))).join(
          " ",
        )
      }; ${sizes} && find "$@" -maxdepth 0 -type f -readable -exec cat -- {} + && ${sizes}`,
      cap,
      signal,
      READ_TIMEOUT_MS,
    );
    if (run.truncated) {
      throw new Error(
        `Cannot read files under "${plan.root.path}" in the sandbox: more than ${
          formatBytes(cap)
        }`,
      );
    }
    return splitConcatenated(run.bytes, paths.length) ??
      await readThrough(this.#fs, plan, signal)(paths);
  }
}

/**
 * The files of {@linkcode ShellSearch}'s one-`cat` read: a line per path
 * (`+<size>` when read, `-` when not), their bytes, the lines per path
 * again. `null` when they do not agree (a file changed or went away).
 */
function splitConcatenated(
  bytes: Uint8Array,
  count: number,
): (Uint8Array | null)[] | null {
  let offset = 0;
  const listed: string[] = [];
  while (listed.length < count) {
    const end = bytes.indexOf(10, offset);
    if (end === -1) return null;
    listed.push(String.fromCharCode(...bytes.subarray(offset, end)));
    offset = end + 1;
  }
  const out: (Uint8Array | null)[] = [];
  for (const line of listed) {
    if (!/^(?:\+\d+|-)$/.test(line)) return null;
    const size = Number(line.slice(1));
    out.push(line === "-" ? null : bytes.slice(offset, offset += size));
  }
  const rest = new TextDecoder().decode(bytes.subarray(offset));
  return offset <= bytes.length && rest === `${listed.join("\n")}\n`
    ? out
    : null;
}

/**
 * The `grep -E` prefilter of a search, when `grep` finds at least every file
 * the pattern matches: the pattern keeps to the syntax both read alike; `.`
 * and negated classes only where `grep` reads UTF-8; case folding only of
 * letters that fold alike (RE2 folds `k` with the Kelvin sign, `s` with `ſ`).
 */
function grepPrefilter(
  plan: GrepPlan,
  utf8: boolean,
): { pattern: string; flags: string; locale: string } | null {
  const pattern = plan.regex.grepPattern;
  if (pattern === null) return null;
  if (!utf8 && /(^|[^\\])(\\\\)*(\.|\[\^)/.test(pattern)) return null;
  if (plan.caseInsensitive && /[ks]/i.test(pattern)) return null;
  return {
    pattern,
    flags: plan.caseInsensitive ? "-E -i" : "-E",
    locale: utf8 ? "C.UTF-8" : "C",
  };
}

/** The bytes {@linkcode checkHostFile} sniffs (one buffer: it runs synchronously). */
const SNIFF_BUFFER = new Uint8Array(BINARY_SNIFF_BYTES);

/**
 * A host file rg matched: `true` when shown, `false` when binary (a NUL in its
 * first bytes) or unreadable, its size when over the limit.
 */
function checkHostFile(
  root: SearchRoot,
  path: string,
  maxFileBytes: number,
): boolean | number {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(joinPath(root.path, path));
  } catch {
    return false;
  }
  try {
    const size = file.statSync().size;
    if (size > maxFileBytes) return size;
    const buffer = SNIFF_BUFFER;
    // A size of 0 may be a pseudo-file (`/proc`) whose bytes are read anyway.
    const want = size === 0 ? buffer.length : Math.min(size, buffer.length);
    let length = 0;
    while (length < want) {
      const n = file.readSync(buffer.subarray(length));
      if (!n) break;
      length += n;
    }
    return !isBinary(buffer.subarray(0, length));
  } catch {
    return false;
  } finally {
    file.close();
  }
}

const utf8 = new TextDecoder();

/** The types of `find -printf %y`. */
const FIND_TYPES: Readonly<Record<string, FileType>> = {
  f: "file",
  d: "directory",
  l: "symlink",
};

/** `find` tests of the heavy folders' names. */
const HEAVY_NAMES = [...HEAVY_FOLDERS].map((name) =>
  `-name ${shellQuote(name)}`
)
  .join(" -o ");

/** `find -printf %T@` (`1700000000.1234567890`) in ms, truncated. */
function parseFindTime(text: string): number | null {
  const match = /^(-?)(\d+)(?:\.(\d*))?$/.exec(text);
  if (!match) return null;
  const ms = Number(match[2]) * 1000 +
    Number((match[3] ?? "").slice(0, 3).padEnd(3, "0"));
  return match[1] === "-" ? -ms : ms;
}
