/**
 * The error of the path fence, beside it so that both `workspace/` and
 * `runtimes/` import it without an upward arrow.
 *
 * @module
 */

/**
 * A path or working directory lies outside the workspace of a conversation
 * runtime, lexically or once its symlinks are resolved.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { WorkspaceEscapeError } from "@skillrun/skillrun";
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
