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
 * @param spec The glob and type filters.
 * @returns The filters.
 * @throws {TypeError} When the glob is invalid.
 */
export function makeFilters(spec: FilterSpec): WalkFilters {
  const glob = spec.glob === null ? null : compileGlob(spec.glob);
  const suffixes = spec.extensions?.map((e) => `.${e}`) ?? null;
  return {
    descend(relativePath: string, name: string): boolean {
      if (HEAVY_FOLDERS.has(name)) return false;
      if (glob && glob.negated && glob.matches(relativePath, true)) {
        return false;
      }
      return true;
    },
    include(relativePath: string, name: string): boolean {
      if (glob) {
        const matched = glob.matches(relativePath, false);
        if (glob.negated ? matched : !matched) return false;
      }
      if (suffixes && !suffixes.some((s) => name.endsWith(s))) return false;
      return true;
    },
  };
}
