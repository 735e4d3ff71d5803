/**
 * Every search and glob rg run of the local engine. rg
 * starts no children: it is spawned plainly (not detached, the cheaper spawn)
 * and killed by its own id.
 *
 * @module
 */
import { TextLineStream } from "../_internal/std.ts";
import { parseDebugSkip } from "./_ripgrep_protocol.ts";
import type { SkippedFile } from "./types.ts";

/** Options of {@linkcode runRipgrep}. */
export interface RipgrepRunOptions {
  /** The rg command. */
  readonly command: string;
  /** Its arguments. */
  readonly args: readonly string[];
  /** The folder it runs in (default: this process's). */
  readonly cwd?: string;
  /** Kills rg when aborted (the caller throws the reason). */
  readonly signal?: AbortSignal;
  /**
   * Each chunk of stdout, in order; returning `false` stops the run (rg is
   * killed, the rest of its output dropped).
   */
  readonly onStdout: (chunk: Uint8Array) => boolean | void;
  /** Each file a `--debug` line names as skipped. */
  readonly onSkip?: (skip: SkippedFile) => void;
  /**
   * Kills rg when its resident memory passes this many bytes (where
   * {@linkcode canWatchMemory}) and answers `overMemory`.
   */
  readonly maxMemoryBytes?: number;
  /**
   * After a chunk of stdout under {@linkcode GATHER_BELOW_BYTES}, wait this
   * many ms (or until rg ends) before reading on, so that what rg writes
   * meanwhile comes in one read. Default 0.
   */
  readonly gatherMs?: number;
}

/** What one rg run ended with. */
export interface RipgrepRunResult {
  /** The exit code (meaningless when `stopped` or `overMemory`). */
  readonly code: number;
  /** The signal that ended it, if any. */
  readonly signal: Deno.Signal | null;
  /** Its stderr, `--debug` lines left out, at most 64 KiB. */
  readonly errors: string;
  /** Whether `onStdout` stopped it. */
  readonly stopped: boolean;
  /** Whether it was killed for passing `maxMemoryBytes`. */
  readonly overMemory: boolean;
}

/** How often rg's memory is looked at, in ms (one read of `/proc/<pid>/status`, about 50 µs). */
export const MEMORY_CHECK_MS = 25;

/** Under `gatherMs`, a chunk smaller than this is followed by a pause. */
export const GATHER_BELOW_BYTES = 4096;

/** Whether rg's memory can be watched here (Linux: `/proc/<pid>/status`). */
export const canWatchMemory: boolean = residentBytes("self") !== null;

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
 * Runs rg once: streams its stdout to `onStdout`, its `--debug` skips to
 * `onSkip`, and kills it on the signal, on `false` from `onStdout`, or past
 * `maxMemoryBytes`. Throws the signal's reason when aborted, the spawn's
 * error when rg cannot start.
 */
export async function runRipgrep(
  options: RipgrepRunOptions,
): Promise<RipgrepRunResult> {
  const signal = options.signal;
  signal?.throwIfAborted();
  const child = new Deno.Command(options.command, {
    args: [...options.args],
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
  signal?.addEventListener("abort", kill, { once: true });
  let overMemory = false;
  let watch: ReturnType<typeof setInterval> | undefined;
  const limit = options.maxMemoryBytes;
  if (limit !== undefined && canWatchMemory) {
    watch = setInterval(() => {
      const bytes = residentBytes(child.pid);
      if (bytes !== null && bytes > limit) {
        overMemory = true;
        kill();
      }
    }, MEMORY_CHECK_MS);
  }
  const errors = readStderr(child.stderr, options.onSkip);
  let stopped = false;
  try {
    const reader = child.stdout.getReader();
    const exited = child.status.then(() => {}, () => {});
    const gather = options.gatherMs ?? 0;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (options.onStdout(value) === false) {
          stopped = true;
          kill();
          break;
        }
        if (gather > 0 && value.length < GATHER_BELOW_BYTES) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, gather);
            exited.then(() => {
              clearTimeout(timer);
              resolve();
            });
          });
        }
      }
    } finally {
      await reader.cancel().catch(() => {});
    }
    const status = await child.status;
    const text = await errors;
    signal?.throwIfAborted();
    return {
      code: status.code,
      signal: status.signal,
      errors: text,
      stopped,
      overMemory,
    };
  } catch (error) {
    kill();
    await child.status.catch(() => {});
    await errors.catch(() => "");
    signal?.throwIfAborted();
    throw error;
  } finally {
    if (watch !== undefined) clearInterval(watch);
    signal?.removeEventListener("abort", kill);
  }
}

/**
 * Reads rg's stderr: `--debug` lines naming a skipped file go to `onSkip`,
 * other `--debug` lines are dropped, the rest (errors) are returned, at most
 * 64 KiB of them.
 */
async function readStderr(
  stderr: ReadableStream<Uint8Array>,
  onSkip: ((skip: SkippedFile) => void) | undefined,
): Promise<string> {
  const errors: string[] = [];
  let errorChars = 0;
  const lines = stderr.pipeThrough(new TextDecoderStream())
    .pipeThrough(new TextLineStream());
  for await (const text of lines) {
    if (text.startsWith("DEBUG|")) {
      const skipped = onSkip && parseDebugSkip(text);
      if (skipped) onSkip(skipped);
    } else if (errorChars < 65536 && text.trim() !== "") {
      errors.push(text);
      errorChars += text.length + 1;
    }
  }
  return errors.join("\n");
}
