/**
 * Messages between the fallback engine and its workers.
 *
 * @module
 */
import type { MatchedLine } from "./_match.ts";

/** The walk's filters, compiled for a worker (plain data). */
export interface WorkerFilters {
  /** Folder names skipped below the root. */
  readonly heavy: readonly string[];
  /** The glob filter as a regular expression, if any. */
  readonly glob: {
    readonly source: string;
    readonly flags: string;
    readonly negated: boolean;
    readonly dirOnly: boolean;
  } | null;
  /** The type filter as name suffixes (`.ts`), if any. */
  readonly suffixes: readonly string[] | null;
}

/** Configuration of a worker for a `grep`. */
export interface GrepWorkerConfig {
  /** The operation. */
  readonly kind: "grep";
  /** The search root (absolute; a file when searching one file). */
  readonly root: string;
  /** The JavaScript regex source. */
  readonly source: string;
  /** The JavaScript regex flags (without `g`). */
  readonly flags: string;
  /** Multiline mode. */
  readonly multiline: boolean;
  /** What to compute per file. */
  readonly mode: "files" | "count" | "content";
  /** Context lines before. */
  readonly before: number;
  /** Context lines after. */
  readonly after: number;
  /** The most characters of a line. */
  readonly maxLineChars: number;
  /** The most lines per file (content mode). */
  readonly maxLinesPerFile: number;
  /** Folders with at most this many files are searched by the dir job. */
  readonly inlineFiles: number;
  /** The walk's filters. */
  readonly filters: WorkerFilters;
  /** Files larger than this are skipped (and reported). */
  readonly maxFileBytes: number;
  /**
   * A flag shared with an in-process `Worker` (a `SharedArrayBuffer`): set to
   * 1 when the search ends, the matcher stops at its next check (a `Worker`
   * busy in JavaScript is not stopped by `terminate()` in Deno 2.9.6).
   */
  readonly stop?: Int32Array;
}

/** Configuration of a worker for a `glob`. */
export interface GlobWorkerConfig {
  /** The operation. */
  readonly kind: "glob";
  /** The search root (absolute). */
  readonly root: string;
  /** Unused for glob. */
  readonly inlineFiles: number;
  /** The walk's filters. */
  readonly filters: WorkerFilters;
}

/** A worker's configuration. */
export type WorkerConfig = GrepWorkerConfig | GlobWorkerConfig;

/** List a folder (relative to the root) and maybe search its files. */
export interface DirJob {
  /** The job kind. */
  readonly kind: "dir";
  /** Correlation id. */
  readonly id: number;
  /** The folder, relative to the root (`""` for the root). */
  readonly path: string;
}

/** Search files (relative to the root), read locally or given as bytes. */
export interface FilesJob {
  /** The job kind. */
  readonly kind: "files";
  /** Correlation id. */
  readonly id: number;
  /** The files, relative to the root. */
  readonly files: readonly string[];
  /** Their bytes, when the main thread read them. */
  readonly bytes?: readonly (Uint8Array | null)[];
}

/** A job for a worker. */
export type WorkerJob = DirJob | FilesJob;

/** What was found in one file. */
export interface FileOutcome {
  /** The file, relative to the root. */
  readonly path: string;
  /** Matching line groups. */
  readonly count: number;
  /** Lines (content mode). */
  readonly lines: readonly MatchedLine[];
  /** Last modification (glob). */
  readonly modifiedMs?: number | null;
}

/** A file left out by a worker. */
export interface WorkerSkip {
  /** The file, relative to the root. */
  readonly path: string;
  /** Why. */
  readonly reason: "too-large" | "not-regular";
  /** Its size (`too-large`). */
  readonly size?: number;
}

/** What a worker answers to a job. */
export interface WorkerReply {
  /** Correlation id. */
  readonly id: number;
  /** Sub-folders to walk. */
  readonly dirs: readonly string[];
  /** Files still to search (a big folder's). */
  readonly files: readonly string[];
  /** What was found. */
  readonly outcomes: readonly FileOutcome[];
  /** Files left out, relative to the root (grep only). */
  readonly skipped?: readonly WorkerSkip[];
  /** An unexpected failure. */
  readonly error?: string;
}
