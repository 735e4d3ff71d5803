/**
 * The ripgrep engine of local runtimes: the shell engine (`shell.ts`) with
 * `rg` spawned on this host (no shell), the files it keeps checked directly.
 * How it bounds file sizes, memory and output is in `search/README.md`.
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
  /**
   * Ignored since rg runs as the shell engine runs it: a content search is
   * one parallel pass, the sorted search only past its output budget (see
   * `search/README.md`). Still checked: a number of ms, at least 0.
   *
   * @deprecated No effect.
   */
  readonly sortedAttemptMs?: number;
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

  /**
   * Makes the engine (it does not check that ripgrep runs: see
   * {@linkcode detectRipgrep}).
   *
   * @param options The local file system, the ripgrep command.
   * @throws {RangeError} `sortedAttemptMs` is negative or not a number.
   */
  constructor(options: RipgrepSearchOptions) {
    const attempt = options.sortedAttemptMs ?? 0;
    if (!Number.isFinite(attempt) || attempt < 0) {
      throw new RangeError(
        `Invalid sorted attempt "${attempt}": expected a number of ms, at least 0`,
      );
    }
    super({
      fs: options.fs,
      useRipgrep: true,
      readFilesDirectly: true,
      ...(options.ripgrepPath ? { ripgrepPath: options.ripgrepPath } : {}),
    });
  }
}
