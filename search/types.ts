/**
 * Requests and results of the search engine behind the `grep`, `glob` and `ls`
 * tools. Every engine (ripgrep, the shell engine, the fallback) takes these
 * requests and returns results in this format.
 *
 * Paths in requests are as the runtime sees them (relative ones are resolved
 * by the runtime's file system); paths in `grep` and `glob` results are
 * absolute, paths in `ls` results are relative to the listed folder.
 *
 * @module
 */

/** What a path is. */
export type FileType = "file" | "directory" | "symlink" | "other";

/** Which engine answered a search. */
export type SearchEngineName = "ripgrep" | "fallback";

/** Facts about one path, as the search engine needs them. */
export interface SearchFileInfo {
  /** The path (absolute, as the file system sees it). */
  readonly path: string;
  /** The last segment of the path. */
  readonly name: string;
  /** What it is (symlinks are not followed). */
  readonly type: FileType;
  /** Size in bytes. */
  readonly size: number;
  /** Last modification, when known. */
  readonly modifiedAt: Date | null;
}

/** Options of {@linkcode SearchFileSystem.list}. */
export interface SearchListOptions {
  /** How deep to descend; 1 lists the folder's own entries. */
  readonly depth?: number;
  /** The most entries to return. */
  readonly limit?: number;
  /** Only files, no folders. */
  readonly filesOnly?: boolean;
  /** Stops the listing. */
  readonly signal?: AbortSignal;
}

/**
 * The narrow file-system interface the search engine needs. Every runtime's
 * file system (`SkillRuntimeFileSystem`) satisfies it structurally.
 */
export interface SearchFileSystem {
  /** Resolves a path: relative ones against the default folder; fenced ones checked. */
  resolve(path: string): Promise<string>;
  /** Facts about a path, or `null` when it does not exist. */
  stat(
    path: string,
    options?: { readonly signal?: AbortSignal },
  ): Promise<SearchFileInfo | null>;
  /** Lists a folder. */
  list(
    path: string,
    options?: SearchListOptions,
  ): Promise<{
    readonly entries: readonly SearchFileInfo[];
    readonly truncated: boolean;
  }>;
  /** Reads a file's bytes, refusing one over `maxBytes` when given. */
  readBytes(
    path: string,
    options?: { readonly signal?: AbortSignal; readonly maxBytes?: number },
  ): Promise<Uint8Array>;
}

/** What `grep` returns: matching lines, matching files, or counts per file. */
export type GrepOutputMode = "content" | "files_with_matches" | "count";

/** The default cap of `grep` output, in characters. */
export const DEFAULT_GREP_MAX_OUTPUT_CHARS = 100_000;

/** The default cap of a line's length in `grep` content, in characters. */
export const DEFAULT_GREP_MAX_LINE_CHARS = 2_000;

/** The default time limit of one search, in ms. */
export const DEFAULT_SEARCH_TIMEOUT_MS = 30_000;

/**
 * The default size above which `grep` skips a file (and says so), in bytes:
 * 64 MiB. It bounds the memory one file can take (ripgrep holds a whole line,
 * the fallback a whole file).
 */
export const DEFAULT_GREP_MAX_FILE_BYTES = 64 * 1024 * 1024;

/** Why a search left a file out. */
export type SkipReason = "too-large" | "not-regular";

/** A file a search left out, and why. */
export interface SkippedFile {
  /** The file (absolute). */
  readonly path: string;
  /**
   * `too-large`: over the size limit (`size` says how big);
   * `not-regular`: a pipe, a device or a socket, never opened.
   */
  readonly reason: SkipReason;
  /** Its size in bytes (`too-large` only). */
  readonly size?: number;
}

/** The default cap of `glob` results. */
export const DEFAULT_GLOB_LIMIT = 100;

/** The default cap of `ls` entries. */
export const DEFAULT_LS_LIMIT = 1_000;

/** What {@linkcode SearchEngine.grep} takes. */
export interface GrepRequest {
  /** The regular expression (ripgrep's syntax; see `search/README.md` for each engine's dialect). */
  readonly pattern: string;
  /** A file or folder; default the runtime's default working folder. */
  readonly path?: string;
  /**
   * Only files matching this glob (ripgrep `-g`): without a slash it matches
   * file names at any depth (`*.{ts,tsx}`); with one, paths relative to the
   * searched folder (`src/**\/*.ts`); a leading `!` excludes. Ignored when
   * `path` is a file.
   */
  readonly glob?: string;
  /** Only files of this type (`ts`, `py`, `md`...; see `FILE_TYPES`). */
  readonly type?: string;
  /** Default `files_with_matches`. */
  readonly outputMode?: GrepOutputMode;
  /** Lines of context before each match (content mode); overrides `context`. */
  readonly before?: number;
  /** Lines of context after each match (content mode); overrides `context`. */
  readonly after?: number;
  /** Lines of context before and after each match (content mode). */
  readonly context?: number;
  /** Match letters regardless of case. */
  readonly caseInsensitive?: boolean;
  /** Let a match span lines; `.` then matches `\n`. */
  readonly multiline?: boolean;
  /** Skip this many output entries first (lines, files or counts). Default 0. */
  readonly offset?: number;
  /** Return at most this many entries (after `offset`). Default: no limit. */
  readonly headLimit?: number;
  /** Stop collecting once the entries' text passes this. Default 100 000. */
  readonly maxOutputChars?: number;
  /** Cut lines longer than this (content mode). Default 2 000. */
  readonly maxLineChars?: number;
  /** Time limit in ms. Default 30 000. */
  readonly timeoutMs?: number;
  /**
   * Files larger than this many bytes are never shown: they are skipped and
   * listed in `skipped`. Default {@linkcode DEFAULT_GREP_MAX_FILE_BYTES}.
   * Local ripgrep searches a folder without a size filter (one that makes it
   * stat every file) and checks the matching files after: there, a file over
   * the limit is listed when it holds a match, and one without a match may be
   * searched and not listed.
   */
  readonly maxFileBytes?: number;
  /** Stops the search. */
  readonly signal?: AbortSignal;
}

/** One line of `content` output. */
export interface GrepLine {
  /** The file (absolute). */
  readonly path: string;
  /** 1-based line number. */
  readonly lineNumber: number;
  /** The line without its line break (a trailing `\r` dropped). */
  readonly text: string;
  /** Whether the line is part of a match (else it is context). */
  readonly match: boolean;
  /** Whether `text` was cut at `maxLineChars`. */
  readonly cut: boolean;
}

/** The count of matching lines in one file. */
export interface GrepCount {
  /** The file (absolute). */
  readonly path: string;
  /** How many matching lines (a multiline match counts once). */
  readonly count: number;
}

/** What every `grep` result has. */
export interface GrepResultBase {
  /** The searched file or folder (absolute). */
  readonly path: string;
  /** Which engine answered. */
  readonly engine: SearchEngineName;
  /**
   * How many entries there are in all (before `offset` and `headLimit`), or
   * `null` when the output cap stopped the search before the end.
   */
  readonly totalEntries: number | null;
  /** The entries skipped by `offset`. */
  readonly offset: number;
  /** Whether `headLimit` left entries out. */
  readonly headLimitReached: boolean;
  /** Whether the output cap (`maxOutputChars`) left entries out. */
  readonly outputLimitReached: boolean;
  /**
   * Files left out (too large, or not regular files: pipes, devices,
   * sockets), sorted by path. Symlinks are not followed and not listed.
   */
  readonly skipped: readonly SkippedFile[];
}

/** `grep` in `files_with_matches` mode. */
export interface GrepFilesResult extends GrepResultBase {
  /** The mode. */
  readonly mode: "files_with_matches";
  /** The matching files, sorted by path. */
  readonly files: readonly string[];
}

/** `grep` in `count` mode. */
export interface GrepCountResult extends GrepResultBase {
  /** The mode. */
  readonly mode: "count";
  /** The counts, sorted by path. */
  readonly counts: readonly GrepCount[];
}

/** `grep` in `content` mode. */
export interface GrepContentResult extends GrepResultBase {
  /** The mode. */
  readonly mode: "content";
  /** Matching and context lines, files sorted by path, lines in order. */
  readonly lines: readonly GrepLine[];
}

/** What {@linkcode SearchEngine.grep} returns. */
export type GrepResult = GrepFilesResult | GrepCountResult | GrepContentResult;

/** What {@linkcode SearchEngine.glob} takes. */
export interface GlobRequest {
  /**
   * The glob (ripgrep `--files -g` semantics): `*`, `?`, `[...]`, `{a,b}`,
   * `**`; without a slash it matches file names at any depth.
   */
  readonly pattern: string;
  /** The folder; default the runtime's default working folder. */
  readonly path?: string;
  /** The most files returned. Default 100. */
  readonly limit?: number;
  /** Time limit in ms. Default 30 000. */
  readonly timeoutMs?: number;
  /** Stops the search. */
  readonly signal?: AbortSignal;
}

/** One file found by `glob`. */
export interface GlobFile {
  /** The file (absolute). */
  readonly path: string;
  /** Last modification in ms since the epoch, when known. */
  readonly modifiedMs: number | null;
}

/** What {@linkcode SearchEngine.glob} returns. */
export interface GlobResult {
  /** The searched folder (absolute). */
  readonly path: string;
  /** Which engine answered. */
  readonly engine: SearchEngineName;
  /** Files, newest first (then by path), at most `limit`. */
  readonly files: readonly GlobFile[];
  /** How many files matched in all. */
  readonly totalFiles: number;
  /** Whether `limit` left files out. */
  readonly truncated: boolean;
}

/** What {@linkcode SearchEngine.ls} takes. */
export interface LsRequest {
  /** The folder; default the runtime's default working folder. */
  readonly path?: string;
  /** How deep to descend; 1 lists the folder's own entries. Default 1. */
  readonly depth?: number;
  /** The most entries returned. Default 1 000. */
  readonly limit?: number;
  /** Stops the listing. */
  readonly signal?: AbortSignal;
}

/** One entry of `ls`. */
export interface LsEntry {
  /** The path relative to the listed folder, `/`-separated. */
  readonly path: string;
  /** What it is (symlinks are not followed). */
  readonly type: FileType;
  /** Size in bytes. */
  readonly size: number;
  /** A heavy folder (`node_modules`, `.git`...) that was not descended into. */
  readonly skipped: boolean;
}

/** What {@linkcode SearchEngine.ls} returns. */
export interface LsResult {
  /** The listed folder (absolute). */
  readonly path: string;
  /** Folders first, then the rest, each sorted by path. */
  readonly entries: readonly LsEntry[];
  /** Whether `limit` left entries out. */
  readonly truncated: boolean;
}

/**
 * The search engine contract: what a runtime offers behind the `grep`, `glob`
 * and `ls` tools (`SkillRuntime.search`), and what `createSearch` returns.
 */
export interface SearchEngine {
  /** Searches file contents. */
  grep(request: GrepRequest): Promise<GrepResult>;
  /** Finds files by name. */
  glob(request: GlobRequest): Promise<GlobResult>;
  /** Lists a folder. */
  ls(request: LsRequest): Promise<LsResult>;
}
