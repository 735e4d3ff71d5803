/**
 * ripgrep on this host: found once per command, and run with its arguments
 * as an array (no shell: a search of a small folder is one process, 5 ms, not
 * a pipeline of five, 12 ms), its stdout read up to a cap.
 *
 * @module
 */
import { concatBytes, TextLineStream } from "../_internal/std.ts";
import { parseDebugSkip } from "./_ripgrep_protocol.ts";

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
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of child.stdout) {
      options.onStdout?.(chunk);
      chunks.push(chunk);
      size += chunk.length;
      if (size >= cap) break;
    }
    if (size >= cap) kill();
    const status = await child.status;
    const stderr = await errors;
    signal.throwIfAborted();
    const bytes = concatBytes(chunks);
    return {
      bytes: size > cap ? bytes.subarray(0, cap) : bytes,
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
    clearInterval(watch);
    signal.removeEventListener("abort", kill);
  }
}
