/**
 * Agent Skills: parse a `SKILL.md`, load skills leniently from folders, select
 * them by name, validate them strictly, and format the catalog shown to a model.
 *
 * Importing this module needs no permission; loading and validating from paths
 * need `--allow-read`.
 *
 * @example Loading skills and formatting their catalog
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   formatCatalog,
 *   loadSkills,
 *   validateSkill,
 * } from "@skillrun/skillrun";
 * const root = await Deno.makeTempDir();
 * await Deno.mkdir(`${root}/greet`);
 * await Deno.writeTextFile(
 *   `${root}/greet/SKILL.md`,
 *   "---\nname: greet\ndescription: Greets the user.\n---\nSay hello.\n",
 * );
 * const { skills } = await loadSkills(root);
 * assert(formatCatalog(skills).includes("<name>greet</name>"));
 * assert((await validateSkill(skills[0]!)).length === 0);
 * await Deno.remove(root, { recursive: true });
 * ```
 *
 * @module
 */
export type * from "./types.ts";
export * from "./parse.ts";
export * from "./load.ts";
export * from "./validate.ts";
export * from "./catalog.ts";
export {
  type ScopeOptions,
  SKILL_SCOPES,
  skillFolderHash,
  type SkillScope,
} from "./sources.ts";
export {
  DISABLE_MODEL_INVOCATION,
  isModelInvocable,
  modelInvocable,
} from "./invocation.ts";
