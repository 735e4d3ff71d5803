/**
 * The search engine behind the `grep`, `glob` and `ls` tools: ripgrep where
 * it is installed (on the host or in the sandbox), else the shell engine
 * (`find` and `grep`, `ShellSearch`), and for a runtime with only a file
 * system the TypeScript engine (`FallbackSearch`, matching with `re2js`).
 * Same result format; where answers can differ is in `search/README.md`.
 *
 * @example Searching a temporary folder
 * ```ts
 * import { assert } from "@std/assert";
 * import { createSearch } from "@skillrun/skillrun/search";
 * import { LocalFileSystem } from "@skillrun/skillrun/runtime";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.writeTextFile(`${dir}/a.py`, "def main():\n    pass\n");
 *   const search = createSearch({ fs: new LocalFileSystem({ cwd: dir }), local: true });
 *   const result = await search.grep({ pattern: "def \\w+", type: "py" });
 *   assert(result.mode === "files_with_matches" && result.files[0]?.endsWith("/a.py"));
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 *
 * @module
 */
export * from "./types.ts";
export { createSearch, type CreateSearchOptions } from "./search.ts";
export {
  detectRipgrep,
  type RipgrepInfo,
  RipgrepSearch,
  type RipgrepSearchOptions,
} from "./ripgrep.ts";
export { FallbackSearch, type FallbackSearchOptions } from "./fallback.ts";
export {
  type SearchShell,
  type SearchShellExecOptions,
  type SearchShellResult,
  ShellSearch,
  type ShellSearchOptions,
} from "./shell.ts";
export { type CompiledGlob, compileGlob } from "./glob.ts";
export {
  BINARY_SNIFF_BYTES,
  comparePaths,
  extensionsOfType,
  FILE_TYPES,
  HEAVY_FOLDERS,
  isBinary,
} from "./rules.ts";
export {
  SearchTimeoutError,
  type SearchTimeoutErrorOptions,
} from "./errors.ts";
