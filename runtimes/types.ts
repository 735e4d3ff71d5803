/**
 * The contracts every runtime implements: {@linkcode SkillRuntime} and its
 * {@linkcode SkillRuntimeFileSystem}, with their request and result types.
 *
 * @module
 */
import type { Skill } from "../skill/types.ts";
import type { SkillRuntimeConfig } from "./config.ts";
import type { FileType, SearchEngine } from "../search/types.ts";

export type { FileType, SearchEngine };

/** The default timeout of {@linkcode SkillRuntime.execute}: 120 000 ms. */
export const DEFAULT_EXECUTE_TIMEOUT_MS = 120_000;

/** The default cap of output kept in memory per stream: 1 MiB. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

/** One skill to prepare, with its configuration. */
export interface SkillToPrepare {
  /** The loaded skill. */
  readonly skill: Skill;
  /** Its runtime configuration, when the application gave one. */
  readonly config?: SkillRuntimeConfig;
}

/** Progress reported during a long preparation. */
export interface PrepareProgress {
  /** The skill being prepared. */
  readonly skillName: string;
  /** What is happening. */
  readonly stage: "copy" | "upload" | "bootstrap" | "done";
  /** A short human-readable detail (never environment values). */
  readonly detail?: string;
  /** Files copied or uploaded so far (copy, upload), when known. */
  readonly files?: number;
  /** Bytes copied (copy), to upload or uploaded (upload), when known. */
  readonly bytes?: number;
  /** The bootstrap command under way, 1-based (bootstrap). */
  readonly step?: number;
  /** How many bootstrap commands there are (bootstrap). */
  readonly steps?: number;
  /** The end of a failed bootstrap command's output (bootstrap). */
  readonly outputTail?: string;
}

/** What {@linkcode SkillRuntime.prepare} takes. */
export interface PrepareRequest {
  /** The skills to prepare, in order. */
  readonly skills: readonly SkillToPrepare[];
  /** Stops the preparation. */
  readonly signal?: AbortSignal;
  /** Called as preparation advances (for a CLI's progress on stderr). */
  readonly onProgress?: (progress: PrepareProgress) => void;
  /**
   * Receives the bootstrap commands' output as it comes (failed or not);
   * `buildSkillTools` turns it into `command_output` events.
   */
  readonly onOutput?: (stream: "stdout" | "stderr", chunk: Uint8Array) => void;
}

/** A skill as prepared inside a runtime. */
export interface PreparedSkill {
  /** The skill's name. */
  readonly name: string;
  /** Where the skill's folder is, as seen inside the runtime. */
  readonly basePath: string;
  /** The skill as loaded. */
  readonly skill: Skill;
}

/** What {@linkcode SkillRuntime.execute} takes. */
export interface ExecuteRequest {
  /** The shell command, run with `bash -c` (Windows: `cmd.exe /c`). */
  readonly command: string;
  /** Where it runs; default {@linkcode SkillRuntime.cwd}. */
  readonly cwd?: string;
  /**
   * How long it may run, in ms (> 0); default 120 000. Longer than about 24.8
   * days (`MAX_EXECUTE_TIMEOUT_MS`, the longest timer) is clamped to it, on
   * every runtime.
   */
  readonly timeoutMs?: number;
  /** Variables for this execution alone; they override every other source. */
  readonly env?: Readonly<Record<string, string>>;
  /** Stops the command (and everything it started). */
  readonly signal?: AbortSignal;
  /** The most bytes of each stream kept in memory; the rest is counted. */
  readonly maxOutputBytes?: number;
  /** See {@linkcode ExecuteStreams.onStdout}. */
  readonly onStdout?: (chunk: Uint8Array) => void;
  /** See {@linkcode ExecuteStreams.onStderr}. */
  readonly onStderr?: (chunk: Uint8Array) => void;
  /** See {@linkcode ExecuteStreams.stdin}. */
  readonly stdin?: ReadableStream<Uint8Array>;
}

/**
 * Live streams of one execution, beside the bounded output of its result
 * (what a command line needs to show a command's output as it runs).
 */
export interface ExecuteStreams {
  /**
   * Receives standard output as the command writes it, in order, besides the
   * bounded copy kept for the result. The chunk is only valid during the
   * call. A runtime that cannot stream calls it once, at the end, with the
   * output it kept.
   */
  readonly onStdout?: (chunk: Uint8Array) => void;
  /** The same for standard error. */
  readonly onStderr?: (chunk: Uint8Array) => void;
  /**
   * The command's standard input (default: none, closed). The local runtime
   * pipes it in; a runtime that cannot refuses the request with a
   * `TypeError`.
   */
  readonly stdin?: ReadableStream<Uint8Array>;
}

/** What {@linkcode SkillRuntime.execute} returns. */
export interface ExecuteResult {
  /** Standard output as text (its middle cut when over the cap). */
  readonly stdout: string;
  /** Standard error as text (its middle cut when over the cap). */
  readonly stderr: string;
  /** The exit code; `-1` when timed out or aborted or killed by a signal. */
  readonly exitCode: number;
  /** Whether the timeout stopped the command. */
  readonly timedOut: boolean;
  /** Whether the caller's signal stopped the command. */
  readonly aborted: boolean;
  /** Total bytes the command wrote to stdout. */
  readonly stdoutBytes: number;
  /** Total bytes the command wrote to stderr. */
  readonly stderrBytes: number;
  /** Whether `stdout` lacks part of the output (its middle was dropped). */
  readonly stdoutTruncated: boolean;
  /** Whether `stderr` lacks part of the output (its middle was dropped). */
  readonly stderrTruncated: boolean;
  /** Wall time in ms. */
  readonly durationMs: number;
}

/** Facts about one path in a runtime's file system. */
export interface FileInfo {
  /** The path as the runtime sees it (absolute). */
  readonly path: string;
  /** The last segment of the path. */
  readonly name: string;
  /** What it is (symlinks are not followed). */
  readonly type: FileType;
  /** Size in bytes. */
  readonly size: number;
  /** Last modification, when known. */
  readonly modifiedAt: Date | null;
  /** Whether the owner may execute it, when known. */
  readonly executable?: boolean;
}

/** Options of {@linkcode SkillRuntimeFileSystem.readText}. */
export interface ReadTextOptions {
  /** The most bytes to read; more is an error naming the limit. Mandatory. */
  readonly maxBytes: number;
  /** Stops the read. */
  readonly signal?: AbortSignal;
}

/** What {@linkcode SkillRuntimeFileSystem.openFile} returns. */
export interface OpenFileResult {
  /**
   * Facts about what was opened (a symbolic link the runtime follows is
   * followed: the facts are its target's).
   */
  readonly info: FileInfo;
  /**
   * The file's bytes, for a regular file (cancel it when not read); none for
   * a folder or a special file, which are not opened for reading.
   */
  readonly stream?: ReadableStream<Uint8Array>;
}

/** Options of {@linkcode SkillRuntimeFileSystem.list}. */
export interface ListOptions {
  /** How deep to descend; 1 lists the folder's own entries. Default 1. */
  readonly depth?: number;
  /** The most entries to return. Default 1000. */
  readonly limit?: number;
  /** Only files, no folders. */
  readonly filesOnly?: boolean;
  /** Stops the listing. */
  readonly signal?: AbortSignal;
}

/** What {@linkcode SkillRuntimeFileSystem.list} returns. */
export interface ListResult {
  /** Entries, in a stable order. */
  readonly entries: readonly FileInfo[];
  /** Whether the limit cut the listing. */
  readonly truncated: boolean;
}

/** What {@linkcode SkillRuntimeFileSystem.download} returns. */
export interface DownloadResult {
  /** The local file written. */
  readonly localPath: string;
  /** How many bytes it has. */
  readonly bytes: number;
}

/** Options of the file system's simple calls. */
export interface SignalOptions {
  /** Stops the operation. */
  readonly signal?: AbortSignal;
}

/**
 * The file system a runtime exposes, in the runtime's own path format. In a
 * conversation workspace every path is fenced inside the workspace.
 */
export interface SkillRuntimeFileSystem {
  /**
   * Resolves a path as the runtime sees it: relative paths against the default
   * working directory; in a workspace, a path outside is refused.
   */
  resolve(path: string): Promise<string>;
  /** Reads a UTF-8 text file, refusing (while streaming) one over `maxBytes`. */
  readText(path: string, options: ReadTextOptions): Promise<string>;
  /** Reads a file's bytes, refusing one over `maxBytes` when given. */
  readBytes(
    path: string,
    options?: SignalOptions & { maxBytes?: number },
  ): Promise<Uint8Array>;
  /** Writes a UTF-8 text file, creating its parents, overwriting it. */
  writeText(
    path: string,
    content: string,
    options?: SignalOptions,
  ): Promise<void>;
  /**
   * Optional: replaces a text file only while it still holds `expected`, as
   * one step that other processes writing the same way cannot interleave
   * with (`edit` uses it; without it, `edit` compares and then writes).
   * Returns `false` when the file changed.
   */
  writeTextIfUnchanged?(
    path: string,
    expected: Uint8Array,
    content: string,
    options?: SignalOptions,
  ): Promise<boolean>;
  /** Facts about a path, or `null` when it does not exist. */
  stat(path: string, options?: SignalOptions): Promise<FileInfo | null>;
  /** Lists a folder. */
  list(path: string, options?: ListOptions): Promise<ListResult>;
  /**
   * Optional: opens a file and returns its facts with its stream, in one
   * step (`read` uses it: one walk of a workspace's fence on the local
   * machine, one request to a sandbox; without it, `read` calls `stat`, then
   * `readStream`). `null` when nothing is there.
   */
  openFile?(
    path: string,
    options?: SignalOptions,
  ): Promise<OpenFileResult | null>;
  /** Opens a file as a byte stream. */
  readStream(
    path: string,
    options?: SignalOptions,
  ): Promise<ReadableStream<Uint8Array>>;
  /**
   * Downloads a file to a local path: streams into a temporary file beside the
   * target and renames it into place only when complete.
   */
  download(
    path: string,
    localPath: string,
    options?: SignalOptions,
  ): Promise<DownloadResult>;
}

/** The state of a {@linkcode BackgroundProcess} after a poll. */
export interface BackgroundState {
  /** Whether it is still running. */
  readonly running: boolean;
  /** Its exit code once finished (`-1` when a signal stopped it). */
  readonly exitCode?: number;
  /** Whether its timeout stopped it. */
  readonly timedOut?: boolean;
  /** Why it failed to run at all, when it did. */
  readonly error?: string;
}

/**
 * A command a runtime runs in the background with its server's own
 * facility (see {@linkcode SkillRuntime.startBackground}).
 */
export interface BackgroundProcess {
  /** The server's id of the command. */
  readonly id: string;
  /**
   * Fetches the output written since the last poll (handed to the request's
   * `onStdout`/`onStderr`, never kept here) and the state.
   */
  poll(): Promise<BackgroundState>;
  /**
   * Stops the command and everything it started (its process group);
   * resolves once it has ended. Nothing when it already has.
   */
  kill(): Promise<void>;
}

/**
 * A place where skills are prepared and commands run: the local machine or a
 * remote sandbox.
 */
export interface SkillRuntime extends AsyncDisposable {
  /** The runtime's name, e.g. `local`, `opensandbox`, `aio-sandbox`. */
  readonly name: string;
  /** Where commands run when a request names no working directory. */
  readonly cwd: string;
  /** The runtime's file system. */
  readonly fs: SkillRuntimeFileSystem;
  /**
   * The runtime's own search engine behind the `grep`, `glob` and `ls` tools
   * (the local runtime's uses ripgrep when installed). Without one, the tools
   * use the pure TypeScript fallback over {@linkcode SkillRuntime.fs}
   * (`createSearch({ fs })` from `search/`), with the same answers.
   */
  readonly search?: SearchEngine;
  /**
   * Prepares skills (copy or upload, then bootstrap) and returns them in the
   * same number and order. Idempotent per skill; concurrent calls prepare once.
   * A different configuration for a skill already prepared is refused with a
   * `SkillPreparationError` rather than ignored.
   */
  prepare(request: PrepareRequest): Promise<PreparedSkill[]>;
  /**
   * Where a skill's `SKILL.md` is once prepared, as this runtime's commands
   * and file tools see it (a workspace copy, a sandbox path); known before
   * preparing. The catalog shows it to the model. Without it, the catalog
   * shows the skill's own `location`.
   */
  skillLocation?(skill: Skill): string;
  /** Runs one command. Never throws for a failing command: see the result. */
  execute(request: ExecuteRequest): Promise<ExecuteResult>;
  /**
   * Starts a command in the background with the server's own facility and
   * returns once the server has it (its id). Its output goes to the
   * request's `onStdout`/`onStderr` as {@linkcode BackgroundProcess.poll}
   * fetches it. Answers `undefined` when the runtime has no such facility:
   * background commands then run on {@linkcode SkillRuntime.execute}.
   */
  startBackground?(
    request: ExecuteRequest,
  ): Promise<BackgroundProcess | undefined>;
  /**
   * Finds a background command by its id when this runtime object did not
   * start it (another instance attached to the same sandbox did): the
   * command's state lives in the sandbox. `undefined` when there is none.
   */
  attachBackground?(
    id: string,
    streams?: Pick<ExecuteRequest, "onStdout" | "onStderr">,
  ): Promise<
    | { process: BackgroundProcess; command: string; startedAt: Date }
    | undefined
  >;
  /** The merged runtime environment (base excluded) that every command gets. */
  environment(): Readonly<Record<string, string>>;
  /** Releases what the runtime owns. Idempotent. */
  close(): Promise<void>;
}
