/**
 * ripgrep as the shell engine runs it, on the host and in a sandbox: the
 * arguments of a search, the parsing of what rg prints (`--null` records,
 * `--debug` lines naming skipped files, errors), and on this host its
 * detection and its run with its arguments as an array (no shell: a search of
 * a small folder is one process, 5 ms, not a pipeline of five, 12 ms).
 *
 * @module
 */
import { concatBytes, TextLineStream } from "../_internal/std.ts";
import { cutLine, type MatchedLine } from "./_match.ts";
import type { GrepPlan } from "./_plan.ts";
import { HEAVY_FOLDERS } from "./rules.ts";
import type { SkippedFile } from "./types.ts";

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

const NO_BYTES = new Uint8Array(0);

/**
 * A reader of rg's `--null` output (or any NUL-ended records) as it streams
 * by: each whole record, a path and (when `withRest`) the rest of its line
 * cut at `maxRestBytes`, goes to `onRecord`; a record cut short waits for the
 * next chunk (after the last, it is left out: a cut output's).
 */
export function recordReader(
  withRest: boolean,
  maxRestBytes: number,
  onRecord: (path: Uint8Array, rest: Uint8Array) => void,
): (chunk: Uint8Array) => void {
  let pending = new Uint8Array(0);
  return (chunk) => {
    const bytes = pending.length ? concatBytes([pending, chunk]) : chunk;
    let start = 0;
    for (let zero; (zero = bytes.indexOf(0, start)) !== -1;) {
      const end = withRest ? bytes.indexOf(10, zero + 1) : zero;
      if (end === -1) break;
      const rest = withRest
        ? bytes.subarray(zero + 1, Math.min(end, zero + 1 + maxRestBytes))
        : NO_BYTES;
      onRecord(bytes.subarray(start, zero), rest);
      start = end + 1;
    }
    pending = bytes.slice(start);
  };
}

/** The records of a whole output (see {@linkcode recordReader}). */
export function splitRecords(
  bytes: Uint8Array,
  withRest: boolean,
  maxRestBytes: number,
): [Uint8Array, Uint8Array][] {
  const out: [Uint8Array, Uint8Array][] = [];
  recordReader(withRest, maxRestBytes, (...record) => out.push(record))(bytes);
  return out;
}

/**
 * The ripgrep arguments of a `grep`, with `--debug` (whose lines name the
 * files rg skipped): the search root is `.` (run in the root folder) or the
 * root file; content mode sorts by path unless `unsorted` (the caller sorts
 * the files).
 */
export function ripgrepGrepArgs(
  plan: GrepPlan,
  options: { readonly unsorted?: boolean; readonly sizeLimit?: boolean } = {},
): string[] {
  // Bounds: files over the limit are skipped (rg's line buffer would hold a
  // whole line of them), unless `sizeLimit` is `false` (the caller bounds
  // rg's memory and checks sizes itself).
  const args = [
    ...COMMON_ARGS,
    "--text",
    "--encoding",
    "none",
    ...(options.sizeLimit === false
      ? []
      : ["--max-filesize", String(plan.maxFileBytes)]),
    "--debug",
  ];
  args.push(plan.caseInsensitive ? "--ignore-case" : "--case-sensitive");
  if (plan.multiline) args.push("--multiline", "--multiline-dotall");
  if (!plan.root.isFile) {
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
        ...(options.unsorted ? [] : ["--sort", "path"]),
        // rg's default is no context (its config files are not read).
        ...(plan.before > 0 ? ["--before-context", String(plan.before)] : []),
        ...(plan.after > 0 ? ["--after-context", String(plan.after)] : []),
      );
      break;
  }
  args.push("--regexp", plan.regex.ripgrepPattern, "--");
  args.push(plan.root.isFile ? plan.root.path : ".");
  return args;
}

/** The relative path of a ripgrep output path (`./x` under a folder). */
export function relativeOf(path: string, rootIsFile: boolean): string {
  if (rootIsFile) return "";
  return path.startsWith("./") ? path.slice(2) : path;
}

/** Parses the rest of a content record: `12:text` (match) or `12-text` (context). */
export function parseLine(
  rest: Uint8Array,
  decoder: TextDecoder,
  plan: GrepPlan,
): MatchedLine {
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

/**
 * Reads one line of rg's `--debug` output: the file it skipped for its size
 * or for not being a regular file (a symlink, not followed, is not one), or
 * `null` for any other line (its path as rg printed it, maybe `./`). Shared
 * with the engine that runs rg in a sandbox.
 *
 * @param text One line of rg's stderr.
 * @returns The skipped file, or `null`.
 */
export function parseDebugSkip(text: string): SkippedFile | null {
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
 * An `awk` program that keeps, of rg's stderr under `--debug`, the lines
 * {@linkcode parseDebugSkip} reads and the errors (for a shell that pipes
 * rg's stderr through it, so that the rest of the debug output is not sent).
 */
export const DEBUG_SKIP_AWK =
  "!/^DEBUG[|]/ || / ignoring .*(: [0-9]+ bytes$|failed to pass subject filter)/";

/**
 * The rg arguments (the files follow) that print, for each file holding a NUL
 * byte, its path and the offset of its first NUL (`path\0offset:\0\n`):
 * the binary sniff where files cannot be opened directly (a sandbox).
 */
export const FIRST_NUL_ARGS: readonly string[] = [
  "--no-config",
  "--text",
  "--no-messages",
  "--null",
  "--with-filename",
  "--only-matching",
  "--byte-offset",
  "--max-count",
  "1",
  "--regexp",
  "\\x00",
  "--",
];

/** Reads the output of {@linkcode FIRST_NUL_ARGS}: each path and its first NUL's offset. */
export function parseFirstNul(bytes: Uint8Array): Map<string, number> {
  const decoder = new TextDecoder();
  const found = new Map<string, number>();
  for (const [pathBytes, rest] of splitRecords(bytes, true, 64)) {
    const path = decoder.decode(pathBytes);
    if (!found.has(path)) {
      found.set(path, Number.parseInt(decoder.decode(rest)));
    }
  }
  return found;
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

/** Parses ripgrep's `--null` output into files, in output order. */
export function parseRipgrepOutput(
  bytes: Uint8Array,
  plan: GrepPlan,
): { path: string; count: number; lines: MatchedLine[] }[] {
  const records = splitRecords(
    bytes,
    plan.mode !== "files_with_matches",
    plan.maxLineChars * 3 + 32,
  );
  const decoder = new TextDecoder();
  const files: ReturnType<typeof parseRipgrepOutput> = [];
  let current: (typeof files)[number] | null = null;
  for (const [pathBytes, rest] of records) {
    const path = relativeOf(decoder.decode(pathBytes), plan.root.isFile);
    if (plan.mode !== "content") {
      files.push({
        path,
        count: plan.mode === "count" ? Number(decoder.decode(rest)) : 0,
        lines: [],
      });
      continue;
    }
    if (current === null || current.path !== path) {
      current = { path, count: 0, lines: [] };
      files.push(current);
    }
    if (current.lines.length < plan.maxLinesPerFile) {
      current.count = current.lines.push(parseLine(rest, decoder, plan));
    }
  }
  return files;
}

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

/** What one rg run printed (as the shell engine's framed commands answer). */
export interface RipgrepOutput {
  /** Its stdout, at most `cap` bytes. */
  readonly bytes: Uint8Array;
  /** Whether stdout reached the cap (rg was killed there). */
  readonly truncated: boolean;
  /** The exit code (128 and the signal's number when it was killed). */
  readonly status: number;
  /** Its stderr: errors (at most 64 KiB) and the `--debug` lines naming a skipped file. */
  readonly stderr: string;
}

/** How often rg's memory is looked at, in ms (one read of `/proc/<pid>/status`, about 50 µs). */
const MEMORY_CHECK_MS = 25;

let watchable: boolean | undefined;

/**
 * Whether rg's resident memory can be watched here: Linux's
 * `/proc/<pid>/status`, readable without a permission prompt (asked once, on
 * the first search: importing the module reads nothing).
 */
export function canWatchMemory(): boolean {
  return watchable ??= Deno.permissions.querySync({
        name: "read",
        path: "/proc/self/status",
      }).state === "granted" && residentBytes("self") !== null;
}

/** The resident memory of a process in bytes, or `null` once it is gone. */
function residentBytes(pid: number | "self"): number | null {
  try {
    const kib = /VmRSS:\s+(\d+) kB/.exec(
      Deno.readTextFileSync(`/proc/${pid}/status`),
    )?.[1];
    return kib === undefined ? null : Number(kib) * 1024;
  } catch {
    return null;
  }
}

/**
 * Runs rg on this host, killed at `cap` bytes of stdout, on the signal (whose
 * reason is thrown) or once its resident memory passes `maxMemoryBytes`
 * (where {@linkcode canWatchMemory}). Throws the spawn's error when rg cannot
 * start.
 */
export async function runHostRipgrep(
  command: string,
  args: readonly string[],
  options: {
    readonly cwd?: string | undefined;
    readonly cap: number;
    readonly signal: AbortSignal;
    readonly maxMemoryBytes?: number | undefined;
    /** Sees each chunk of stdout as it comes. */
    readonly onStdout?: (chunk: Uint8Array) => void;
  },
): Promise<RipgrepOutput> {
  const { cap, signal, maxMemoryBytes: limit } = options;
  signal.throwIfAborted();
  const child = new Deno.Command(command, {
    args: [...args],
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const kill = (): void => {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  };
  signal.addEventListener("abort", kill, { once: true });
  const watch = limit === undefined || !canWatchMemory()
    ? undefined
    : setInterval(() => {
      if ((residentBytes(child.pid) ?? 0) > limit) kill();
    }, MEMORY_CHECK_MS);
  const errors = (async (): Promise<string> => {
    const kept: string[] = [];
    let errorChars = 0;
    const lines = child.stderr.pipeThrough(new TextDecoderStream())
      .pipeThrough(new TextLineStream());
    for await (const line of lines) {
      if (line.startsWith("DEBUG|")) {
        if (parseDebugSkip(line)) kept.push(line);
      } else if (errorChars < 65_536) {
        kept.push(line);
        errorChars += line.length + 1;
      }
    }
    return kept.join("\n");
  })();
  // Read into one buffer (BYOB): rg's parallel output comes in hundreds of
  // small reads, each a new 64 KiB buffer otherwise (18 MiB for a search of
  // the 100k-file tree: 12 MiB more at peak).
  const reader = child.stdout.getReader({ mode: "byob" });
  let buffer = new Uint8Array(64 * 1024);
  let size = 0;
  try {
    while (size < cap) {
      if (size === buffer.length) {
        const grown = new Uint8Array(size * 2);
        grown.set(buffer);
        buffer = grown;
      }
      const { value, done } = await reader.read(buffer.subarray(size));
      if (value) buffer = new Uint8Array(value.buffer); // the same, moved
      if (done || !value) break;
      options.onStdout?.(value);
      size += value.length;
    }
    if (size >= cap) kill();
    const status = await child.status;
    const stderr = await errors;
    signal.throwIfAborted();
    return {
      bytes: buffer.subarray(0, Math.min(size, cap)),
      truncated: size >= cap,
      status: status.code,
      stderr,
    };
  } catch (error) {
    kill();
    await child.status.catch(() => {});
    await errors.catch(() => "");
    signal.throwIfAborted();
    throw error;
  } finally {
    reader.cancel().catch(() => {});
    clearInterval(watch);
    signal.removeEventListener("abort", kill);
  }
}
