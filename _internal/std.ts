/**
 * The standard-library functions skillrun uses, with explicit types.
 *
 * Development maps `@std/...` to `npm:deno-std@1.4.0/...` (the JSR registry is
 * not reachable from our build machines), which ships std's JavaScript without
 * declarations: the types declared here keep `any` from spreading. Under the
 * official `jsr:@std/*` packages (what JSR users get, and what CI checks with
 * `deno task test:official`), every declaration below is checked against std's
 * own types (plain assignments, no casts), so it cannot drift from them.
 *
 * @module
 */
import * as bytes from "@std/bytes";
import * as yaml from "@std/yaml";
import * as posixPath from "@std/path/posix";

/** Options of {@linkcode parseYaml}. */
export interface ParseYamlOptions {
  /** `"failsafe"` keeps every scalar a string. */
  schema?: "failsafe" | "json" | "core" | "default" | "extended";
}

/** Parses one YAML document. Throws a `SyntaxError` on unreadable YAML. */
export const parseYaml: (text: string, options?: ParseYamlOptions) => unknown =
  yaml.parse;

/** The bytes of several arrays, joined into a new one (`@std/bytes`). */
export const concatBytes: (buffers: readonly Uint8Array[]) => Uint8Array =
  bytes.concat;

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
