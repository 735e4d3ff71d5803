/**
 * The model-facing tools in detail (`@skillrun/skillrun/tools`): the builder
 * that turns skill folders, per-skill configurations and a runtime into
 * `skill`, `bash`, `read`, `write`, `edit`, `ls`, `glob`, `grep` and
 * `publish_file`, with every option type; the tool context, limits and
 * descriptions; the factories of each tool for a custom set; and adapters to
 * the OpenAI, Anthropic and AI SDK tool shapes with all their types. The main
 * entry (`@skillrun/skillrun`) holds the part of it an agent author uses.
 *
 * @example Building the tools and running a call
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   buildSkillTools,
 *   dispatchToolCall,
 *   toOpenAIChatTools,
 * } from "@skillrun/skillrun";
 * const root = await Deno.makeTempDir();
 * await Deno.mkdir(`${root}/hello`);
 * await Deno.writeTextFile(
 *   `${root}/hello/SKILL.md`,
 *   "---\nname: hello\ndescription: Says hello.\n---\nRun `echo hello`.\n",
 * );
 * await using set = await buildSkillTools({ skills: root });
 * const definitions = toOpenAIChatTools(set.tools);
 * assert(definitions[0]?.function.name === "skill");
 * const result = await dispatchToolCall(set.tools, {
 *   name: "bash",
 *   arguments: '{"command":"echo hi"}',
 * });
 * assert(result.text === "hi\n" && !result.isError);
 * await Deno.remove(root, { recursive: true });
 * ```
 *
 * @module
 */
export type * from "./types.ts";
export * from "./builder.ts";
export * from "./context.ts";
export * from "./approval.ts";
export * from "./skill_tool.ts";
export * from "./skill_search.ts";
export { createBashTool } from "./bash.ts";
export { createReadTool } from "./read.ts";
export { createWriteTool } from "./write.ts";
export { createEditTool } from "./edit.ts";
export { createLsTool } from "./ls.ts";
export { createGlobTool } from "./glob.ts";
export { createGrepTool } from "./grep.ts";
export * from "./search_format.ts";
export { createPublishFileTool, PUBLISH_GUIDANCE } from "./publish_file.ts";
export * from "./adapters/mod.ts";
