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
 * import { SkillPreparationError } from "@skillrun/skillrun/runtime";
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

export { WorkspaceEscapeError } from "../workspace/errors.ts";
export { RuntimePermissionError } from "../_internal/permissions.ts";
