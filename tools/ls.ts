/**
 * The `ls` tool: lists a folder, folders first.
 *
 * @module
 */
import type { ToolContext } from "./context.ts";
import type { Tool } from "./types.ts";
import { formatLsResult } from "./search_format.ts";
import { defineTool, okResult, pathError } from "./_shared.ts";
import { engineOf } from "./_search.ts";

/** The deepest listing a model may ask for. */
const MAX_DEPTH = 10;

/**
 * Makes the `ls` tool: a folder's entries as paths relative to it, folders
 * first (with a `/`), then files; heavy folders
 * (`node_modules`, `.git`...) below the listed folder are shown but not
 * descended into; a notice when the limit cuts the listing.
 *
 * @example Listing a folder
 * ```ts
 * import { assert } from "@std/assert";
 * import { createLsTool } from "./ls.ts";
 * import { createToolContext } from "./context.ts";
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * const dir = await Deno.realPath(await Deno.makeTempDir());
 * await Deno.mkdir(`${dir}/docs`);
 * await Deno.writeTextFile(`${dir}/README.md`, "# Hi\n");
 * await using runtime = new LocalSkillRuntime({ cwd: dir });
 * const ls = createLsTool(createToolContext(runtime));
 * assert((await ls.execute({})).text === `${dir}:\ndocs/\nREADME.md`);
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @param context The shared context (runtime, limits).
 * @returns The tool.
 */
export function createLsTool(context: ToolContext): Tool {
  const { limits, runtime } = context;
  return defineTool(context, {
    name: "ls",
    timeoutMs: context.limits.fileTimeoutMs,
    description:
      `Lists a folder in the "${runtime.name}" runtime: folders first (ending with /), then files, as paths relative to the folder. ` +
      `path defaults to ${
        JSON.stringify(runtime.cwd)
      }; depth 1 lists the folder's own entries, more descends (heavy folders such as node_modules and .git are not descended into). ` +
      `At most ${limits.lsDefaultLimit} entries unless limit says otherwise.`,
    inputSchema: {
      type: "object",
      properties: {
        path: {
          type: "string",
          minLength: 1,
          description:
            "The folder to list (absolute, or relative to the default working directory).",
        },
        depth: {
          type: "integer",
          minimum: 1,
          maximum: MAX_DEPTH,
          description: "How many levels to list (default 1).",
        },
        limit: {
          type: "integer",
          minimum: 1,
          description:
            `The most entries to show (default ${limits.lsDefaultLimit}).`,
        },
      },
      required: [],
      additionalProperties: false,
    },
    async run({ input, signal }) {
      const given = (input.path as string | undefined) ?? ".";
      const path = await runtime.fs.resolve(given);
      const options = signal ? { signal } : {};
      const info = await runtime.fs.stat(path, options);
      if (!info) return pathError("list", given, "no such folder");
      if (info.type === "file") {
        return pathError("list", given, "it is a file; read it with read");
      }
      const limit = (input.limit as number | undefined) ??
        limits.lsDefaultLimit;
      const result = await engineOf(context).ls({
        path,
        depth: (input.depth as number | undefined) ?? 1,
        limit,
        ...options,
      });
      return okResult(formatLsResult(result));
    },
  });
}
