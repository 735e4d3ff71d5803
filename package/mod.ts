/**
 * Skill packages: pack a skill folder into a reproducible ZIP or tar.gz,
 * install packages safely (digest checked while streaming, every entry
 * checked, atomic), keep them in stores (a folder, or S3-compatible object
 * storage over `fetch`), fetch them from URLs and well-known indexes, and pin
 * them in `skills.lock.json`.
 *
 * @example Pack, install, verify
 * ```ts
 * import { assert } from "@std/assert";
 * import { installPackage, packSkill, verifyInstalled } from "@skillrun/skillrun/package";
 * const dir = await Deno.makeTempDir();
 * try {
 *   await Deno.mkdir(`${dir}/hello`);
 *   await Deno.writeTextFile(`${dir}/hello/SKILL.md`, "---\nname: hello\ndescription: Hi.\n---\n");
 *   const packed = await packSkill(`${dir}/hello`, { format: "tar.gz" });
 *   const pkg = await installPackage(packed.bytes!, { root: `${dir}/installed`, digest: packed.digest });
 *   assert((await verifyInstalled(pkg)).ok);
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 *
 * @module
 */
export * from "./errors.ts";
export * from "./pack.ts";
export * from "./install.ts";
export * from "./installed.ts";
export {
  DEFAULT_PACKAGE_LIMITS,
  type PackageLimits,
  type ResolvedLimits,
} from "./_entries.ts";
export type { CopyPolicy } from "../workspace/copy.ts";
export * from "./store.ts";
export * from "./s3.ts";
export * from "./sources.ts";
export * from "./lock.ts";
export * from "./index_file.ts";
