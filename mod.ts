/**
 * skillrun: let AI agents use Agent Skills (folders with a `SKILL.md`, scripts
 * and resources) through model-facing tools (`skill`, `bash`, `read`, `write`,
 * `edit`, `ls`, `glob`, `grep`, `publish_file`) backed by pluggable runtimes.
 *
 * - Skills: {@linkcode loadSkills}, {@linkcode selectSkills},
 *   {@linkcode validateSkill}, {@linkcode formatCatalog}.
 * - Configuration of a skill's runtime: {@linkcode SkillRuntimeConfig}.
 * - The embedded default runtime: {@linkcode LocalSkillRuntime} (plain, or in a
 *   conversation workspace fenced by {@linkcode PathFence}).
 * - Tools for models: {@linkcode buildSkillTools}, adapters for OpenAI,
 *   Anthropic and the AI SDK, and {@linkcode dispatchToolCall}.
 *
 * Importing this module needs no permission; each function says what it needs.
 *
 * @example Tools over the example skills, called as a model would
 * ```ts
 * import { assertStringIncludes } from "@std/assert";
 * import { buildSkillTools, dispatchToolCall } from "./mod.ts";
 *
 * await using kit = await buildSkillTools({ skills: "examples/skills" });
 * const result = await dispatchToolCall(kit.tools, {
 *   name: "bash",
 *   arguments: JSON.stringify({ command: "echo hello" }),
 * });
 * assertStringIncludes(result.text, "hello");
 * ```
 *
 * @module
 */
export * from "./skill/mod.ts";
export * from "./runtimes/config.ts";
export * from "./runtimes/errors.ts";
export type * from "./runtimes/types.ts";
export {
  DEFAULT_EXECUTE_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
} from "./runtimes/types.ts";
export * from "./runtimes/prepare.ts";
export * from "./runtimes/local/mod.ts";
export * from "./workspace/mod.ts";
export * from "./tools/mod.ts";
export * from "./search/mod.ts";
