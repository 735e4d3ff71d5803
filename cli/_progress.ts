/**
 * The progress line of `pack` and `add` on a terminal: bytes, files and rate,
 * one line rewritten in place once the work has taken more than a second,
 * cleared at the end. Nothing at all when stderr is not a terminal.
 *
 * @module
 */
import type { PackageProgress } from "../package/mod.ts";
import { escapeControl } from "../_internal/escape_text.ts";

/** Options of {@linkcode packageProgress}. */
export interface PackageProgressOptions {
  /** What is being worked on (a folder, a file, a URL); shown escaped. */
  readonly subject: string;
  /** Whether stderr is a terminal; without one nothing is written. */
  readonly terminal: boolean;
  /** Writes text to stderr as it is. */
  readonly write: (text: string) => void;
  /** How long the work runs before the line shows (default 1000 ms). */
  readonly quietMs?: number;
  /** How often the line is rewritten at most (default 200 ms). */
  readonly everyMs?: number;
}

/** What {@linkcode packageProgress} gives. */
export interface PackageProgressLine {
  /** The `onProgress` to hand to the pack or install; absent off a terminal. */
  readonly onProgress?: (progress: PackageProgress) => void;
  /** Clears the line (when it was shown). */
  done(): void;
}

const STAGE_WORDS: Readonly<Record<PackageProgress["stage"], string>> = {
  pack: "packing",
  read: "reading",
  extract: "unpacking",
};

/**
 * Makes the progress line of a long `pack` or `add`.
 *
 * @param options The subject, whether stderr is a terminal, the writer.
 * @returns The `onProgress` to pass on and `done` to clear the line.
 *
 * @example Nothing off a terminal
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { packageProgress } from "./_progress.ts";
 * const written: string[] = [];
 * const line = packageProgress({
 *   subject: "big",
 *   terminal: false,
 *   write: (text) => written.push(text),
 * });
 * assertEquals(line.onProgress, undefined);
 * line.done();
 * assertEquals(written, []);
 * ```
 */
export function packageProgress(
  options: PackageProgressOptions,
): PackageProgressLine {
  if (!options.terminal) return { done() {} };
  const quietMs = options.quietMs ?? 1000;
  const everyMs = options.everyMs ?? 200;
  const started = performance.now();
  let stage: PackageProgress["stage"] | undefined;
  let stageStarted = started;
  let shownAt = -Infinity;
  let shown = false;
  return {
    onProgress(progress) {
      const now = performance.now();
      if (progress.stage !== stage) {
        stage = progress.stage;
        stageStarted = now;
      }
      if (now - started < quietMs || now - shownAt < everyMs) return;
      shownAt = now;
      shown = true;
      const seconds = (now - stageStarted) / 1000;
      // A rate needs a little time of its stage to mean something.
      const rate = seconds >= 0.1
        ? `, ${formatBytes(progress.bytes / seconds)}/s`
        : "";
      const files = progress.stage === "read"
        ? ""
        : `, ${progress.files} file${progress.files === 1 ? "" : "s"}`;
      options.write(
        `\r\x1b[K${
          escapeControl(
            `skillrun: ${STAGE_WORDS[progress.stage]} "${options.subject}" (${
              formatBytes(progress.bytes)
            }${files}${rate}) [${((now - started) / 1000).toFixed(1)} s]`,
          )
        }`,
      );
    },
    done() {
      if (shown) options.write("\r\x1b[K");
    },
  };
}

/** Bytes as people read them: `512 B`, `1.5 KB`, `412.3 MB` (powers of 1000). */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${Math.round(bytes)} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = "B";
  for (const next of units) {
    if (value < 1000) break;
    value /= 1000;
    unit = next;
  }
  return `${value.toFixed(1)} ${unit}`;
}
