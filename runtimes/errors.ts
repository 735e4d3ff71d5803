/**
 * The errors that callers of a runtime catch.
 *
 * @module
 */

/** Options of {@linkcode SkillPreparationError}. */
export interface SkillPreparationErrorOptions {
  /** The skill that failed to prepare. */
  skillName: string;
  /** The exit code of the failing bootstrap command (`-1` on timeout), if one failed. */
  exitCode?: number;
  /** Whether the failing bootstrap command timed out. */
  timedOut?: boolean;
  /** 0-based index of the failing bootstrap command, if one failed. */
  commandIndex?: number;
  /** The underlying error. */
  cause?: unknown;
}

/**
 * A skill could not be prepared: copying or uploading failed, or a bootstrap
 * command exited non-zero or timed out. Nothing was cached: a later call retries.
 *
 * @example Catching a preparation failure
 * ```ts
 * import { assert } from "@std/assert";
 * import { SkillPreparationError } from "./errors.ts";
 * const error = new SkillPreparationError(
 *   'Cannot prepare skill "pdf": bootstrap command 1 of 2 exited with code 3',
 *   { skillName: "pdf", exitCode: 3, commandIndex: 0 },
 * );
 * assert(error.exitCode === 3 && !error.timedOut);
 * ```
 */
export class SkillPreparationError extends Error {
  /** The error's name. */
  override readonly name = "SkillPreparationError";
  /** The skill that failed to prepare. */
  readonly skillName: string;
  /** Exit code of the failing command (`-1` on timeout), or `undefined`. */
  readonly exitCode: number | undefined;
  /** Whether the failing command timed out. */
  readonly timedOut: boolean;
  /** 0-based index of the failing bootstrap command, or `undefined`. */
  readonly commandIndex: number | undefined;

  /**
   * Makes the error.
   *
   * @param message What failed, without secrets.
   * @param options Details for callers.
   */
  constructor(message: string, options: SkillPreparationErrorOptions) {
    super(
      message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.skillName = options.skillName;
    this.exitCode = options.exitCode;
    this.timedOut = options.timedOut ?? false;
    this.commandIndex = options.commandIndex;
  }
}

/**
 * A path or working directory lies outside the workspace of a conversation
 * runtime, lexically or once its symlinks are resolved.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { WorkspaceEscapeError } from "./errors.ts";
 * const error = new WorkspaceEscapeError(
 *   'Cannot use "../x": path is outside the workspace "/srv/conv/abc"',
 *   { path: "../x", workspace: "/srv/conv/abc" },
 * );
 * assert(error.workspace === "/srv/conv/abc");
 * ```
 */
export class WorkspaceEscapeError extends Error {
  /** The error's name. */
  override readonly name = "WorkspaceEscapeError";
  /** The path as given. */
  readonly path: string;
  /** The workspace it had to stay in. */
  readonly workspace: string;

  /**
   * Makes the error.
   *
   * @param message The message, naming the path and the workspace.
   * @param options The path and the workspace.
   */
  constructor(
    message: string,
    options: { path: string; workspace: string; cause?: unknown },
  ) {
    super(
      message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.path = options.path;
    this.workspace = options.workspace;
  }
}

/**
 * Deno's permission flags (`NotCapable`) or the operating system (`EACCES`)
 * refused an operation. The message says which permission and which path.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { RuntimePermissionError } from "./errors.ts";
 * const error = new RuntimePermissionError(
 *   'Cannot write "/etc/x": Deno denies write access; run with --allow-write=/etc/x',
 *   { permission: "write", path: "/etc/x", source: "deno" },
 * );
 * assert(error.permission === "write");
 * ```
 */
export class RuntimePermissionError extends Error {
  /** The error's name. */
  override readonly name = "RuntimePermissionError";
  /** The kind of access that was denied. */
  readonly permission:
    | "read"
    | "write"
    | "run"
    | "net"
    | "env"
    | "sys"
    | "unknown";
  /** The path (or command, or host) it was denied for, when known. */
  readonly path: string | undefined;
  /** Who denied it: Deno's permission flags, or the operating system. */
  readonly source: "deno" | "os";

  /**
   * Makes the error.
   *
   * @param message The message, naming the permission and the path.
   * @param options The details.
   */
  constructor(
    message: string,
    options: {
      permission: RuntimePermissionError["permission"];
      path?: string;
      source: "deno" | "os";
      cause?: unknown;
    },
  ) {
    super(
      message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.permission = options.permission;
    this.path = options.path;
    this.source = options.source;
  }
}
