/**
 * The `write` tool: creates or overwrites a text file.
 *
 * @module
 */
import type { ToolContext } from "./context.ts";
import { withPathLock } from "./_path_lock.ts";
import type { Tool } from "./types.ts";
import { defineTool, formatBytes, okResult, pathError } from "./_shared.ts";

/**
 * Makes the `write` tool: writes UTF-8 text, creating missing parent folders,
 * and says whether it created or overwrote the file and how many bytes it
 * wrote.
 *
 * @example Writing a file
 * ```ts
 * import { assert } from "@std/assert";
 * import { createWriteTool } from "./write.ts";
 * import { createToolContext } from "./context.ts";
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * await using runtime = new LocalSkillRuntime();
 * const write = createWriteTool(createToolContext(runtime));
 * const dir = await Deno.makeTempDir();
 * const result = await write.execute({ file_path: `${dir}/a/b.txt`, content: "hi" });
 * assert(result.text.startsWith("Created") && result.text.endsWith("(2 bytes)"));
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @param context The shared context (runtime).
 * @returns The tool.
 */
export function createWriteTool(context: ToolContext): Tool {
  const { runtime } = context;
  return defineTool(context, {
    name: "write",
    timeoutMs: context.limits.fileTimeoutMs,
    description:
      `Writes a UTF-8 text file in the "${runtime.name}" runtime, creating missing parent folders and replacing the file if it exists. ` +
      `Prefer edit to change part of an existing file. Relative paths are resolved against ${
        JSON.stringify(runtime.cwd)
      }.`,
    inputSchema: {
      type: "object",
      properties: {
        file_path: {
          type: "string",
          minLength: 1,
          description:
            "The file to write (absolute, or relative to the default working directory).",
        },
        content: {
          type: "string",
          description: "The whole new content of the file.",
        },
      },
      required: ["file_path", "content"],
      additionalProperties: false,
    },
    async run({ input, signal }) {
      const given = input.file_path as string;
      const content = input.content as string;
      const path = await runtime.fs.resolve(given);
      const options = signal ? { signal } : {};
      // After every edit of the path already under way, never in its middle.
      const before = await withPathLock(runtime, path, async () => {
        const before = await runtime.fs.stat(path, options);
        if (before?.type === "directory") return "folder";
        await runtime.fs.writeText(path, content, options);
        return before;
      });
      if (before === "folder") {
        return pathError("write", given, "it is a folder");
      }
      const bytes = new TextEncoder().encode(content).length;
      const size = `${bytes} byte${bytes === 1 ? "" : "s"}`;
      return okResult(
        before
          ? `Overwrote ${path} (${size}; it had ${formatBytes(before.size)})`
          : `Created ${path} (${size})`,
      );
    },
  });
}
