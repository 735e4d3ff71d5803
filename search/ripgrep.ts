/**
 * The ripgrep engine of local runtimes; how it bounds file sizes, memory and
 * output is in `search/README.md`.
 *
 * @module
 */
import { ShellSearch } from "./shell.ts";
import type { SearchFileSystem } from "./types.ts";

export { detectRipgrep, type RipgrepInfo } from "./_ripgrep_protocol.ts";

/** Options of {@linkcode RipgrepSearch}. */
export interface RipgrepSearchOptions {
  /** The local runtime's file system (its paths are host paths). */
  readonly fs: SearchFileSystem;
  /** The ripgrep command. Default `rg`. */
  readonly ripgrepPath?: string;
}

/**
 * The ripgrep engine: the shell engine with `rg` on this host. Same answers
 * as {@linkcode FallbackSearch}; local only. Needs `--allow-run` for `rg`
 * and read access to the searched files.
 *
 * @example Searching with ripgrep
 * ```ts ignore
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * import { RipgrepSearch } from "@skillrun/skillrun/search";
 * await using runtime = new LocalSkillRuntime();
 * const search = new RipgrepSearch({ fs: runtime.fs });
 * const result = await search.grep({ pattern: "TODO", outputMode: "count" });
 * ```
 */
export class RipgrepSearch extends ShellSearch {
  /** Which engine this is. */
  readonly engine = "ripgrep" as const;

  /** Makes the engine; `rg` is detected by its first search ({@linkcode detectRipgrep}). */
  constructor(options: RipgrepSearchOptions) {
    super({
      fs: options.fs,
      useRipgrep: true,
      readFilesDirectly: true,
      ...(options.ripgrepPath ? { ripgrepPath: options.ripgrepPath } : {}),
    });
  }
}
