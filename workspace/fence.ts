/**
 * {@linkcode PathFence}: keeps paths inside a conversation workspace, both
 * lexically and by their real location (symlinks resolved).
 *
 * @module
 */
import { checkPathText } from "../_internal/path_text.ts";
import { hostPath } from "../_internal/std.ts";
import { toPermissionError } from "../_internal/permissions.ts";
import { WorkspaceEscapeError } from "./errors.ts";
import { isInside, realLocation, trimSeparator } from "./_paths.ts";

/**
 * A path {@linkcode PathFence.resolve} has resolved: absolute, inside the
 * workspace lexically and by its real location when it was resolved. A
 * string at run time; the brand lets a file system's own steps take a path
 * once resolved without walking the fence again (the fence cannot stop a
 * swap after its walk either way: see {@linkcode PathFence}).
 *
 * @example
 * ```ts
 * import type { FencedPath } from "./fence.ts";
 * function open(path: FencedPath): string {
 *   return path; // a string, trusted as fenced
 * }
 * ```
 */
export type FencedPath = string & { readonly __fencedPath: true };

/**
 * The path fence of a workspace. Every file-system implementation in
 * workspace mode sends each path through {@linkcode PathFence.resolve}:
 *
 * - relative paths resolve against the workspace;
 * - `..` escapes and absolute paths outside are refused;
 * - a path whose real location (every symlink resolved; for a path that does
 *   not exist yet, through its nearest existing parent, dangling links
 *   followed) lies outside the workspace is refused. A symlink whose target is
 *   inside the workspace is fine.
 *
 * Refusals throw {@linkcode WorkspaceEscapeError}, naming the path and the
 * workspace. The check cannot stop a process that changes the folder between
 * the check and the use (no locking; see the runtime's documentation).
 *
 * Needs `--allow-read` for the workspace.
 *
 * @example Fencing paths in a workspace
 * ```ts
 * import { assert } from "@std/assert";
 * import { PathFence } from "@skillrun/skillrun/runtime";
 * import { WorkspaceEscapeError } from "@skillrun/skillrun";
 * const workspace = await Deno.makeTempDir();
 * try {
 *   const fence = await PathFence.create(workspace);
 *   const inside = await fence.resolve("out/report.txt");
 *   assert(inside.startsWith(fence.root));
 *   let refused = false;
 *   try { await fence.resolve("../elsewhere"); } catch (e) {
 *     refused = e instanceof WorkspaceEscapeError;
 *   }
 *   assert(refused);
 * } finally {
 *   await Deno.remove(workspace, { recursive: true });
 * }
 * ```
 */
export class PathFence {
  /** The workspace's real path (symlinks resolved). */
  readonly root: string;
  /** The workspace as given (absolute, normalised), also accepted as prefix. */
  readonly #given: string;

  private constructor(root: string, given: string) {
    this.root = root;
    this.#given = given;
  }

  /**
   * Makes the fence of an existing workspace folder.
   *
   * Needs `--allow-read` for the workspace.
   *
   * @param workspace The workspace folder (absolute).
   * @returns The fence, whose {@linkcode PathFence.root} is the real path.
   * @throws {TypeError} The path is not absolute.
   * @throws {Deno.errors.NotFound} The folder does not exist.
   * @throws {Deno.errors.NotADirectory} The path is not a folder.
   * @throws {RuntimePermissionError} Reading the path is not allowed.
   *
   * @example Making a fence
   * ```ts
   * import { assert } from "@std/assert";
   * import { PathFence } from "./fence.ts";
   * const workspace = await Deno.makeTempDir();
   * try {
   *   const fence = await PathFence.create(workspace);
   *   assert(fence.root === await Deno.realPath(workspace));
   * } finally {
   *   await Deno.remove(workspace, { recursive: true });
   * }
   * ```
   */
  static async create(workspace: string): Promise<PathFence> {
    if (typeof workspace !== "string" || !hostPath.isAbsolute(workspace)) {
      throw new TypeError(
        `Cannot use workspace ${
          JSON.stringify(workspace)
        }: it must be an absolute path`,
      );
    }
    const given = trimSeparator(hostPath.normalize(workspace));
    let root: string;
    try {
      root = await Deno.realPath(given);
      const info = await Deno.stat(root);
      if (!info.isDirectory) {
        throw new Deno.errors.NotADirectory(
          `Cannot use workspace "${workspace}": it is not a folder`,
        );
      }
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        throw new Deno.errors.NotFound(
          `Cannot use workspace "${workspace}": no such folder`,
        );
      }
      throw toPermissionError(error, { operation: "read", path: workspace });
    }
    return new PathFence(root, given);
  }

  /**
   * Resolves a path inside the workspace.
   *
   * Needs `--allow-read` for the workspace.
   *
   * @param path A path relative to the workspace, or absolute inside it.
   * @returns The absolute path under {@linkcode PathFence.root}, normalised but
   * with its own symlinks kept (so `lstat` still sees a symlink as one).
   * @throws {TypeError} The path is empty or holds a NUL character.
   * @throws {WorkspaceEscapeError} The path, or its real location, is outside.
   * @throws {Deno.errors.FilesystemLoop} Its symlinks make a loop.
   * @throws {RuntimePermissionError} Deno or the system refused a look-up.
   *
   * @example Relative and absolute paths
   * ```ts
   * import { assert } from "@std/assert";
   * import { PathFence } from "./fence.ts";
   * const workspace = await Deno.makeTempDir();
   * try {
   *   const fence = await PathFence.create(workspace);
   *   const a = await fence.resolve("a/./b/../c.txt");
   *   const b = await fence.resolve(`${fence.root}/a/c.txt`);
   *   assert(a === b);
   * } finally {
   *   await Deno.remove(workspace, { recursive: true });
   * }
   * ```
   */
  async resolve(path: string): Promise<FencedPath> {
    const lexical = this.#lexical(path);
    let real: string | null;
    try {
      real = await realLocation(lexical, this.root);
    } catch (error) {
      if (error instanceof Deno.errors.FilesystemLoop) {
        throw new Deno.errors.FilesystemLoop(
          `Cannot use "${path}": too many levels of symbolic links`,
        );
      }
      throw toPermissionError(error, { operation: "resolve", path });
    }
    if (real === null || !isInside(real, this.root)) {
      throw new WorkspaceEscapeError(
        `Cannot use "${path}": path leads outside the workspace "${this.root}" through a symbolic link`,
        { path, workspace: this.root },
      );
    }
    return lexical as FencedPath;
  }

  /**
   * Resolves a working directory: inside the workspace, existing, a folder.
   *
   * Needs `--allow-read` for the workspace.
   *
   * @param path A folder relative to the workspace, or absolute inside it.
   * @returns The absolute folder path under {@linkcode PathFence.root}.
   * @throws {WorkspaceEscapeError} The folder is outside the workspace.
   * @throws {Deno.errors.NotFound} The folder does not exist.
   * @throws {Deno.errors.NotADirectory} The path is not a folder.
   * @throws {RuntimePermissionError} Deno or the system refused a look-up.
   *
   * @example Checking a working directory
   * ```ts
   * import { assert } from "@std/assert";
   * import { PathFence } from "./fence.ts";
   * const workspace = await Deno.makeTempDir();
   * try {
   *   await Deno.mkdir(`${workspace}/skills`);
   *   const fence = await PathFence.create(workspace);
   *   assert((await fence.resolveDirectory("skills")).endsWith("skills"));
   * } finally {
   *   await Deno.remove(workspace, { recursive: true });
   * }
   * ```
   */
  async resolveDirectory(path: string): Promise<FencedPath> {
    const resolved = await this.resolve(path);
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(resolved);
    } catch (error) {
      if (
        error instanceof Deno.errors.NotFound ||
        error instanceof Deno.errors.NotADirectory
      ) {
        throw new Deno.errors.NotFound(
          `Cannot use "${path}" as working directory: no such folder in the workspace "${this.root}"`,
        );
      }
      throw toPermissionError(error, { operation: "read", path });
    }
    if (!info.isDirectory) {
      throw new Deno.errors.NotADirectory(
        `Cannot use "${path}" as working directory: it is not a folder`,
      );
    }
    return resolved;
  }

  /** The absolute lexical path, or a refusal when it lies outside. */
  #lexical(path: string): string {
    checkPathText(path);
    if (hostPath.isAbsolute(path)) {
      const absolute = trimSeparator(hostPath.normalize(path));
      if (isInside(absolute, this.root)) return absolute;
      if (isInside(absolute, this.#given)) {
        const rest = hostPath.relative(this.#given, absolute);
        return rest === "" ? this.root : hostPath.join(this.root, rest);
      }
    } else {
      const absolute = trimSeparator(hostPath.join(this.root, path));
      if (isInside(absolute, this.root)) return absolute;
    }
    throw new WorkspaceEscapeError(
      `Cannot use "${path}": path is outside the workspace "${this.root}"`,
      { path, workspace: this.root },
    );
  }
}
