/**
 * The search engine a runtime uses: ripgrep when it is installed and the file
 * system is local, else the shell engine (`find` and `grep`) through the
 * given shell, else the engine over the file-system interface (`re2js`).
 *
 * @module
 */
import { FallbackSearch } from "./fallback.ts";
import { type SearchShell, ShellSearch } from "./shell.ts";
import { detectRipgrep, RipgrepSearch } from "./ripgrep.ts";
import type { SearchEngine, SearchFileSystem } from "./types.ts";

/** Options of {@linkcode createSearch}. */
export interface CreateSearchOptions {
  /** The runtime's file system. */
  readonly fs: SearchFileSystem;
  /**
   * Whether the file system's paths are host paths (a local runtime): then
   * ripgrep may be used and the fallback reads files directly. Default `false`.
   */
  readonly local?: boolean;
  /**
   * `"auto"` (default): ripgrep when local and installed, else the shell engine
   * (with `shell`) or the fallback; `true`: ripgrep, failing when it is
   * missing or the file system is not local; `false`: never ripgrep.
   */
  readonly useRipgrep?: "auto" | boolean;
  /** The ripgrep command. Default `rg`. */
  readonly ripgrepPath?: string;
  /** Files the engine over the file-system interface reads at once. Default 8. */
  readonly workers?: number;
  /**
   * Runs `find` and `grep` on the host (the local runtime's launcher): the
   * engine when ripgrep is missing. Without it, or when it cannot run
   * `true`, the engine over the file-system interface answers.
   */
  readonly shell?: SearchShell;
}

/**
 * Makes the search engine of a runtime. Ripgrep is detected once, on first use
 * (the answer is cached per command); its absence falls back silently unless
 * `useRipgrep` is `true`.
 *
 * @param options The file system, whether it is local, the engine choice.
 * @returns The engine.
 * @throws {TypeError} When `useRipgrep` is `true` for a file system that is
 *   not local.
 *
 * Needs read access to the searched paths (local) and `--allow-run` for `rg`.
 *
 * @example Searching a temporary folder
 * ```ts
 * import { assert } from "@std/assert";
 * import { createSearch } from "@skillrun/skillrun/search";
 * import { LocalFileSystem } from "@skillrun/skillrun/runtime";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/notes.md`, "# Title\nTODO: write\n");
 *   const search = createSearch({ fs: new LocalFileSystem({ cwd: dir }), local: true });
 *   const result = await search.grep({ pattern: "TODO", outputMode: "content" });
 *   assert(result.mode === "content" && result.lines[0]?.lineNumber === 2);
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 */
export function createSearch(options: CreateSearchOptions): SearchEngine {
  const local = options.local ?? false;
  const useRipgrep = options.useRipgrep ?? "auto";
  if (useRipgrep === true && !local) {
    throw new TypeError(
      "Invalid search options: ripgrep needs a local file system (local: true)",
    );
  }
  const { fs, ripgrepPath = "rg" } = options;
  const fallback = new FallbackSearch({
    fs,
    local,
    ...(options.workers !== undefined ? { workers: options.workers } : {}),
  });
  if (!local) return fallback;
  let chosen: Promise<SearchEngine> | null = null;
  const pick = (): Promise<SearchEngine> => {
    chosen ??= (async (): Promise<SearchEngine> => {
      // `true`: its searches say why rg cannot run.
      if (
        useRipgrep === true ||
        (useRipgrep === "auto" && await detectRipgrep(ripgrepPath))
      ) return new RipgrepSearch({ fs, ripgrepPath });
      const shell = options.shell;
      if (
        shell && await shell.exec("true", { timeoutMs: 10_000 }).then(
          (r) => r.exitCode === 0,
          () => false,
        )
      ) {
        return new ShellSearch({
          shell,
          fs,
          useRipgrep: false,
          readFilesDirectly: true,
        });
      }
      return fallback;
    })();
    // A failed detection is not cached.
    chosen.catch(() => {
      chosen = null;
    });
    return chosen;
  };
  return {
    grep: (request) => pick().then((engine) => engine.grep(request)),
    glob: (request) => pick().then((engine) => engine.glob(request)),
    ls: (request) => pick().then((engine) => engine.ls(request)),
  };
}
