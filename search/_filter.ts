/**
 * Which folders a walk descends into and which files it keeps: the same rules
 * as the ripgrep arguments of `ripgrep.ts` (heavy folders skipped below the
 * root, the `glob` filter, the `type` filter).
 *
 * @module
 */
import { compileGlob } from "./glob.ts";
import { HEAVY_FOLDERS } from "./rules.ts";

/** What the filters are made from. */
export interface FilterSpec {
  /** The `glob` filter, if any. */
  readonly glob: string | null;
  /** The extensions of the `type` filter, if any. */
  readonly extensions: readonly string[] | null;
}

/** The compiled filters of a walk. */
export interface WalkFilters {
  /** Whether to descend into a folder (path relative to the root). */
  descend(relativePath: string, name: string): boolean;
  /** Whether to keep a file (path relative to the root). */
  include(relativePath: string, name: string): boolean;
}

/**
 * Compiles the filters of a walk.
 *
 * @throws {TypeError} When the glob is invalid.
 */
export function makeFilters(spec: FilterSpec): WalkFilters {
  const glob = spec.glob === null ? null : compileGlob(spec.glob);
  const suffixes = spec.extensions?.map((e) => `.${e}`) ?? null;
  return {
    descend: (path, name) =>
      !HEAVY_FOLDERS.has(name) && !(glob?.negated && glob.matches(path, true)),
    include: (path, name) =>
      (!glob || glob.matches(path, false) !== glob.negated) &&
      (!suffixes || suffixes.some((s) => name.endsWith(s))),
  };
}

/** The most `-name` patterns a glob's `{a,b}` alternatives expand into. */
const MAX_NAMES = 16;

/**
 * File-name patterns for `find -name` (under `LC_ALL=C`) that keep at least
 * every file the filters keep, or `null` when no narrowing is safe. A
 * prefilter only: the walk still applies the filters exactly. Each pattern is
 * a literal prefix and suffix of the glob's last segment around one `*`, so
 * that `?`, classes and UTF-8 never depend on `find`'s reading of them.
 */
export function findNames(spec: FilterSpec): string[] | null {
  const fromGlob = spec.glob === null ? null : globNames(spec.glob);
  if (fromGlob !== null) return fromGlob;
  if (spec.extensions === null || spec.extensions.length === 0) return null;
  if (spec.extensions.some((e) => /[*?[\]\\]/.test(e))) return null;
  return spec.extensions.map((e) => `*.${e}`);
}

/** The `-name` patterns of a glob's last segment (see {@linkcode findNames}). */
function globNames(glob: string): string[] | null {
  // Negation, escapes, comments, folder-only globs and trailing spaces: none.
  if (/^[!#]|\\|[/ ]$/.test(glob)) return null;
  // Alternatives that hold a slash would make the last segment ambiguous.
  if (/\{[^}]*\//.test(glob)) return null;
  const segment = glob.slice(glob.lastIndexOf("/") + 1);
  if (segment.includes("[") && segment.includes("{")) return null;
  let alternatives = [segment];
  while (alternatives.some((a) => a.includes("{"))) {
    alternatives = alternatives.flatMap((a) => {
      const open = a.indexOf("{");
      if (open === -1) return [a];
      const close = a.indexOf("}", open);
      if (close === -1) return [a.replace("{", "*")];
      return a.slice(open + 1, close).split(",").map((choice) =>
        a.slice(0, open) + choice + a.slice(close + 1)
      );
    });
    if (alternatives.length > MAX_NAMES) return null;
  }
  const names = new Set<string>();
  for (const alternative of alternatives) {
    // Everything from the first wildcard to the last becomes one `*`.
    const name = alternative.replace(/[*?[\]{}](?:.*[*?[\]{}])?/s, "*");
    if (name === "*") return null;
    names.add(name);
  }
  return names.size === 0 ? null : [...names];
}
