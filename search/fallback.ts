/**
 * The engine over the file-system interface alone, for a runtime that cannot
 * run commands.
 *
 * @module
 */
import { ShellSearch } from "./shell.ts";
import type { SearchFileSystem } from "./types.ts";

/** Options of {@linkcode FallbackSearch}. */
export interface FallbackSearchOptions {
  /** The runtime's file system. */
  readonly fs: SearchFileSystem;
  /**
   * Whether the file system's paths are host paths (a symlinked root is then
   * followed with `Deno.stat`). Default `false`.
   */
  readonly local?: boolean;
  /** Folders listed at once; files read at once are 8 times as many. Default 8. */
  readonly workers?: number;
}

/**
 * The engine over the file-system interface: {@linkcode ShellSearch} without
 * a shell. Same result format as the other engines; see `README.md` for
 * where its regex dialect (RE2) differs from ripgrep's.
 *
 * @example Searching a folder
 * ```ts
 * import { assert } from "@std/assert";
 * import { FallbackSearch } from "@skillrun/skillrun/search";
 * import { LocalFileSystem } from "@skillrun/skillrun/runtime";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/a.txt`, "one\ntwo\n");
 *   const search = new FallbackSearch({ fs: new LocalFileSystem({ cwd: dir }) });
 *   const result = await search.grep({ pattern: "tw.", outputMode: "count" });
 *   assert(result.mode === "count" && result.counts[0]?.count === 1);
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export class FallbackSearch extends ShellSearch {
  /** Which engine this is. */
  readonly engine = "fallback" as const;

  /** Makes the engine. */
  constructor(options: FallbackSearchOptions) {
    super({
      fs: options.fs,
      useRipgrep: false,
      readFilesDirectly: options.local ?? false,
      workers: options.workers ?? 8,
    });
  }
}
