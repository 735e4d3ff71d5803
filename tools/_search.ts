/**
 * How the `ls`, `glob` and `grep` tools reach a runtime's search engine.
 *
 * @module
 */
import { LocalSkillRuntime } from "../runtimes/local/runtime.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import type { ToolContext } from "./context.ts";
import { createSearch } from "../search/search.ts";
import type { SearchEngine } from "../search/types.ts";

const engines = new WeakMap<ToolContext, SearchEngine>();

/**
 * The search engine of the context's runtime, made once per context: the
 * runtime's own `search` when it offers one, else ripgrep (when installed) or
 * the TypeScript fallback over the runtime's file system for a local runtime,
 * and the fallback alone for any other runtime.
 *
 * @param context The shared context.
 * @returns The engine.
 */
export function engineOf(context: ToolContext): SearchEngine {
  let engine = engines.get(context);
  if (!engine) {
    engine = ownSearch(context.runtime) ??
      createSearch({
        fs: context.runtime.fs,
        local: context.runtime instanceof LocalSkillRuntime,
      });
    engines.set(context, engine);
  }
  return engine;
}

function ownSearch(runtime: SkillRuntime): SearchEngine | undefined {
  const search = (runtime as { search?: Partial<SearchEngine> }).search;
  return search && typeof search.grep === "function" &&
      typeof search.glob === "function" && typeof search.ls === "function"
    ? search as SearchEngine
    : undefined;
}
