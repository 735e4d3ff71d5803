/**
 * Remote paths: always POSIX (`@std/path/posix`), whatever the host, and a
 * lexical fence for a remote workspace ({@linkcode RemotePathFence}).
 *
 * @module
 */
import { hostPath, posix } from "../../_internal/std.ts";
import { WorkspaceEscapeError } from "../errors.ts";
import { checkPathText } from "../request.ts";

/**
 * Turns a path relative to a host folder (e.g. a file of a skill as the host
 * names it, `scripts\run.py` on Windows) into a POSIX relative path
 * (`scripts/run.py`), so that no host separator leaks into a remote path.
 *
 * Needs no permission.
 *
 * @param relative The host-relative path.
 * @param separator The host's separator; default: this host's.
 * @returns The POSIX relative path, normalised.
 * @throws {TypeError} The path is absolute, leaves its folder (`..`), or
 * holds a NUL character.
 *
 * @example A Windows relative path on any host
 * ```ts
 * import { assert } from "@std/assert";
 * import { toRemoteRelative } from "@skillrun/skillrun/runtime";
 * assert(toRemoteRelative("scripts\\run.py", "\\") === "scripts/run.py");
 * assert(toRemoteRelative("a/./b", "/") === "a/b");
 * ```
 */
export function toRemoteRelative(
  relative: string,
  separator: string = hostPath.SEPARATOR,
): string {
  // The empty path is the folder itself.
  if (relative !== "") checkPathText(relative);
  const parts = separator === "/"
    ? relative.split("/")
    : relative.split(separator).flatMap((part) => part.split("/"));
  if (relative.startsWith("/") || relative.startsWith(separator)) {
    throw new TypeError(
      `Cannot use "${relative}" as a relative path: it is absolute`,
    );
  }
  if (separator !== "/" && /^[A-Za-z]:/.test(relative)) {
    throw new TypeError(
      `Cannot use "${relative}" as a relative path: it names a drive`,
    );
  }
  const joined = posix.normalize(parts.filter((p) => p !== "").join("/"));
  if (joined === ".." || joined.startsWith("../")) {
    throw new TypeError(
      `Cannot use "${relative}" as a relative path: it leaves its folder`,
    );
  }
  return joined === "" ? "." : joined;
}

/**
 * Joins remote path segments with `/` and normalises the result
 * (`posix.join`). Segments are taken as POSIX: a backslash is an ordinary
 * character of a remote name; convert host paths with
 * {@linkcode toRemoteRelative} first.
 *
 * Needs no permission.
 *
 * @param segments The segments.
 * @returns The joined path.
 *
 * @example Joining
 * ```ts
 * import { assert } from "@std/assert";
 * import { remoteJoin } from "@skillrun/skillrun/runtime";
 * assert(remoteJoin("/workspace/", "skills", "./pdf") === "/workspace/skills/pdf");
 * ```
 */
export function remoteJoin(...segments: string[]): string {
  return posix.join(...segments);
}

/**
 * Resolves a remote path against a remote folder: an absolute path is
 * normalised, a relative one joined to the folder. The result is absolute,
 * without a trailing `/` (except the root itself).
 *
 * Needs no permission.
 *
 * @param base The folder relative paths start from (absolute).
 * @param path The path.
 * @returns The absolute, normalised path.
 * @throws {TypeError} The path is empty or holds a NUL character, or the
 * base is not absolute.
 *
 * @example Resolving relative and absolute paths
 * ```ts
 * import { assert } from "@std/assert";
 * import { resolveRemotePath } from "@skillrun/skillrun/runtime";
 * assert(resolveRemotePath("/workspace", "a/../b.txt") === "/workspace/b.txt");
 * assert(resolveRemotePath("/workspace", "/tmp//x/") === "/tmp/x");
 * ```
 */
export function resolveRemotePath(base: string, path: string): string {
  checkPathText(path);
  if (typeof base !== "string" || !base.startsWith("/")) {
    throw new TypeError(
      `Cannot resolve "${path}" against ${
        JSON.stringify(base)
      }: the folder must be an absolute POSIX path`,
    );
  }
  const absolute = path.startsWith("/")
    ? posix.normalize(path)
    : posix.join(base, path);
  return trimSlash(absolute);
}

/**
 * A lexical fence for a remote workspace: paths resolve against the
 * workspace root (relative) or must lie inside it (absolute); `..` escapes
 * are refused with a {@linkcode WorkspaceEscapeError} naming the workspace,
 * as the local `PathFence` does. Being lexical, it cannot see a symlink
 * inside the remote workspace that points out: the sandbox itself is the
 * boundary there.
 *
 * Needs no permission and makes no request.
 *
 * @example Fencing remote paths
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   RemotePathFence,
 *   WorkspaceEscapeError,
 * } from "@skillrun/skillrun/runtime";
 * const fence = new RemotePathFence("/workspace/conv-1");
 * assert(fence.resolve("out/a.txt") === "/workspace/conv-1/out/a.txt");
 * let refused = false;
 * try { fence.resolve("../conv-2/secret"); } catch (e) {
 *   refused = e instanceof WorkspaceEscapeError;
 * }
 * assert(refused);
 * ```
 */
export class RemotePathFence {
  /** The workspace root: absolute, normalised, without a trailing `/`. */
  readonly root: string;

  /**
   * Makes the fence.
   *
   * @param root The remote workspace root (absolute POSIX path, not `/`).
   * @throws {TypeError} The root is not absolute, is `/`, or holds a NUL.
   */
  constructor(root: string) {
    if (
      typeof root !== "string" || !root.startsWith("/") || root.includes("\0")
    ) {
      throw new TypeError(
        `Cannot use workspace ${
          JSON.stringify(root)
        }: it must be an absolute POSIX path`,
      );
    }
    const normalised = trimSlash(posix.normalize(root));
    if (normalised === "/") {
      throw new TypeError(
        `Cannot use workspace "${root}": the root folder cannot be a workspace`,
      );
    }
    this.root = normalised;
  }

  /**
   * Whether an absolute, normalised path is the root or lies below it.
   *
   * @param absolute The path.
   * @returns Whether it is inside.
   */
  contains(absolute: string): boolean {
    return absolute === this.root || absolute.startsWith(`${this.root}/`);
  }

  /**
   * Resolves a path inside the workspace.
   *
   * @param path Relative to the workspace, or absolute inside it.
   * @returns The absolute, normalised path.
   * @throws {TypeError} The path is empty or holds a NUL character.
   * @throws {WorkspaceEscapeError} The path lies outside the workspace.
   */
  resolve(path: string): string {
    const absolute = resolveRemotePath(this.root, path);
    if (!this.contains(absolute)) {
      throw new WorkspaceEscapeError(
        `Cannot use "${path}": path is outside the workspace "${this.root}"`,
        { path, workspace: this.root },
      );
    }
    return absolute;
  }
}

function trimSlash(path: string): string {
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
}
