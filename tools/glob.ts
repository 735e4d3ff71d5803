/**
 * The `glob` tool: finds files by name pattern, newest first.
 *
 * @module
 */
import type { ToolContext } from "./context.ts";
import type { Tool } from "./types.ts";
import { formatGlobResult } from "./search_format.ts";
import { defineTool, okResult, pathError } from "./_shared.ts";
import { engineOf } from "./_search.ts";

/**
 * Makes the `glob` tool: files only (absolute paths), newest first, capped at
 * `limits.globResults` with a notice. Patterns follow ripgrep's globs: `*`,
 * `?`, `[abc]`, `{a,b}`, `**`; a pattern without `/` matches file names at any
 * depth. Hidden files are included; heavy folders below the searched folder
 * (`node_modules`, `.git`...) are skipped.
 *
 * @example Finding TypeScript files
 * ```ts
 * import { assert } from "@std/assert";
 * import { createGlobTool } from "./glob.ts";
 * import { createToolContext } from "./context.ts";
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * const dir = await Deno.makeTempDir();
 * await Deno.mkdir(`${dir}/src`);
 * await Deno.writeTextFile(`${dir}/src/main.ts`, "");
 * await using runtime = new LocalSkillRuntime({ cwd: dir });
 * const glob = createGlobTool(createToolContext(runtime));
 * const result = await glob.execute({ pattern: "**\/*.ts" });
 * assert(result.text.endsWith("/src/main.ts"));
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @param context The shared context (runtime, limits).
 * @returns The tool.
 */
export function createGlobTool(context: ToolContext): Tool {
  const { limits, runtime } = context;
  return defineTool(context, {
    name: "glob",
    timeoutMs: context.limits.searchTimeoutMs,
    description:
      `Finds files by name in the "${runtime.name}" runtime and lists them newest first. ` +
      `Glob syntax: * ? [abc] {a,b} and ** for any depth; a pattern without / matches file names at any depth (e.g. *.py), with / it matches paths relative to path (e.g. src/**/*.ts). ` +
      `path defaults to ${
        JSON.stringify(runtime.cwd)
      }. At most ${limits.globResults} files are shown.`,
    inputSchema: {
      type: "object",
      properties: {
        pattern: {
          type: "string",
          minLength: 1,
          description: "The glob, e.g. **/*.md or *.{js,ts}.",
        },
        path: {
          type: "string",
          minLength: 1,
          description:
            "The folder to search (absolute, or relative to the default working directory).",
        },
      },
      required: ["pattern"],
      additionalProperties: false,
    },
    async run({ input, signal }) {
      const pattern = input.pattern as string;
      const given = (input.path as string | undefined) ?? ".";
      const path = await runtime.fs.resolve(given);
      const options = signal ? { signal } : {};
      const info = await runtime.fs.stat(path, options);
      if (!info) return pathError("search", given, "no such folder");
      if (info.type === "file") {
        return pathError("search", given, "it is a file, not a folder");
      }
      const result = await engineOf(context).glob({
        pattern,
        path,
        limit: limits.globResults,
        timeoutMs: limits.searchTimeoutMs,
        ...options,
      });
      return okResult(formatGlobResult(result));
    },
  });
}
