/**
 * Who may start a skill: `disable-model-invocation: true` in the front matter
 * keeps a skill from the model (the Agent Skills client guide): it is left out
 * of the catalog and of the `skill` tool, while the application or the user
 * can still invoke it (an MCP prompt, a library call).
 *
 * @module
 */
import type { Skill } from "./types.ts";

/** The front-matter field that keeps a skill from the model. */
export const DISABLE_MODEL_INVOCATION = "disable-model-invocation";

/**
 * Whether the model may start a skill: `false` when its front matter says
 * `disable-model-invocation: true` (the YAML boolean, or the string `"true"`
 * in any case, as the lenient loader keeps scalars).
 *
 * Needs no permission.
 *
 * @param skill The skill.
 * @returns Whether the model may invoke it.
 *
 * @example A skill only the user starts
 * ```ts
 * import { assert } from "@std/assert";
 * import { isModelInvocable } from "./invocation.ts";
 * import type { Skill } from "./types.ts";
 * const skill = (extra: Record<string, unknown>): Skill => ({
 *   name: "deploy", description: "d", basePath: "/s/deploy",
 *   location: "/s/deploy/SKILL.md", instructions: "",
 *   frontMatter: { name: "deploy", description: "d", ...extra }, warnings: [],
 * });
 * assert(isModelInvocable(skill({})));
 * assert(!isModelInvocable(skill({ "disable-model-invocation": "true" })));
 * assert(isModelInvocable(skill({ "disable-model-invocation": false })));
 * ```
 */
export function isModelInvocable(skill: Skill): boolean {
  const value = skill.frontMatter?.[DISABLE_MODEL_INVOCATION];
  return !(value === true ||
    (typeof value === "string" && value.trim().toLowerCase() === "true"));
}

/**
 * The skills a model may be offered, in their order: the step every
 * model-facing list (the catalog, the `skill` tool's enum) takes first.
 *
 * Needs no permission.
 *
 * @param skills The skills.
 * @returns Those without `disable-model-invocation: true`.
 *
 * @example Filtering the hidden skills
 * ```ts
 * import { assert } from "@std/assert";
 * import { modelInvocable } from "./invocation.ts";
 * import type { Skill } from "./types.ts";
 * const hidden: Skill = {
 *   name: "h", description: "d", basePath: "/s/h", location: "/s/h/SKILL.md",
 *   instructions: "", warnings: [],
 *   frontMatter: { name: "h", description: "d", "disable-model-invocation": "true" },
 * };
 * assert(modelInvocable([hidden]).length === 0);
 * ```
 */
export function modelInvocable(skills: readonly Skill[]): readonly Skill[] {
  // The same list when none is hidden: indexes are kept per list.
  return skills.every(isModelInvocable)
    ? skills
    : skills.filter(isModelInvocable);
}
