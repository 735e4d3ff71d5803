/**
 * The search engine behind the `grep`, `glob` and `ls` tools: ripgrep where
 * it is installed (on the host or in the sandbox), else the shell engine
 * (`find` and `grep`, `ShellSearch`), and for a runtime with only a file
 * system the TypeScript engine (`FallbackSearch`, matching with `re2js`).
 * Same result format; where answers can differ is in `search/README.md`.
 * Start with {@linkcode createSearch}, which picks the engine.
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
