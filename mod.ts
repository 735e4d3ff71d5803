/**
 * skillrun: let AI agents use Agent Skills (folders with a `SKILL.md`, scripts
 * and resources) through model-facing tools backed by pluggable runtimes.
 *
 * Importing this module needs no permission.
 *
 * @example Configuring a skill's runtime environment
 * ```ts
 * import { SkillRuntimeConfig } from "./mod.ts";
 * const config = new SkillRuntimeConfig({ env: { REGION: "eu" } });
 * console.assert(config.envNames[0] === "REGION");
 * ```
 *
 * @module
 */
export * from "./runtimes/config.ts";
export * from "./runtimes/errors.ts";
export type * from "./runtimes/types.ts";
export {
  DEFAULT_EXECUTE_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
} from "./runtimes/types.ts";
export type * from "./skill/types.ts";
