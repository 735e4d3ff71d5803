/**
 * The path functions of `std.ts`, in a module of their own: a module that
 * needs only paths (the MCP entry point's default conversations root) does not
 * load std's YAML parser at import time. `std.ts` re-exports them.
 *
 * @module
 */
import * as posixPath from "@std/path/posix";

/** Path functions of the host platform. */
export interface PathFunctions {
  /** Joins path segments and normalises the result. */
  join(...paths: string[]): string;
  /** Resolves segments into an absolute path. */
  resolve(...paths: string[]): string;
  /** The relative path from `from` to `to`. */
  relative(from: string, to: string): string;
  /** The folder part of a path. */
  dirname(path: string): string;
  /** The last part of a path, less `suffix` when given. */
  basename(path: string, suffix?: string): string;
  /** The extension of a path, with its dot. */
  extname(path: string): string;
  /** Normalises `.` and `..` segments and repeated separators. */
  normalize(path: string): string;
  /** Whether a path is absolute. */
  isAbsolute(path: string): boolean;
  /** Converts a `file:` URL into a path. */
  fromFileUrl(url: string | URL): string;
  /** Converts a path into a `file:` URL. */
  toFileUrl(path: string): URL;
  /** Converts a glob into a regular expression. */
  globToRegExp(
    glob: string,
    options?: {
      extended?: boolean;
      globstar?: boolean;
      caseInsensitive?: boolean;
    },
  ): RegExp;
  /** The separator of path segments. */
  readonly SEPARATOR: string;
}

/**
 * Path functions of the host platform: `@std/path`'s POSIX functions, or on
 * Windows its Windows ones, loaded only there (what `@std/path`'s index
 * chooses between, without loading both: half the modules at every start).
 */
export const hostPath: PathFunctions = Deno.build.os === "windows"
  ? await import("@std/path/windows")
  : posixPath;

/** POSIX path functions (`@std/path/posix`), for remote sandboxes. */
export const posix: PathFunctions = posixPath;
