/**
 * Conversation workspaces: the rules of conversation ids and roots, the path
 * fence that keeps file access inside a workspace (lexically and by real
 * path), the copy and upload policy of skill folders, and skill digests.
 *
 * Importing this module needs no permission; each function says what it needs.
 *
 * @example A workspace, its fence and a skill copied into it
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   copySkillFolder,
 *   PathFence,
 *   stableSkillFolderName,
 *   workspacePath,
 * } from "@skillrun/skillrun/runtime";
 * const root = await Deno.makeTempDir();
 * try {
 *   const workspace = workspacePath(root, "thread.2026-07");
 *   await Deno.mkdir(`${workspace}/skills`, { recursive: true });
 *   const skill = `${root}/source-skill`;
 *   await Deno.mkdir(skill);
 *   await Deno.writeTextFile(`${skill}/SKILL.md`, "---\nname: demo\n---\n");
 *   const folder = stableSkillFolderName({ name: "demo", basePath: skill });
 *   await copySkillFolder(skill, `${workspace}/skills/${folder}`);
 *   const fence = await PathFence.create(workspace);
 *   const path = await fence.resolve(`skills/${folder}/SKILL.md`);
 *   assert((await Deno.readTextFile(path)).includes("demo"));
 * } finally {
 *   await Deno.remove(root, { recursive: true });
 * }
 * ```
 *
 * @module
 */
export * from "./conversation.ts";
export * from "./errors.ts";
export * from "./fence.ts";
export * from "./copy.ts";
export * from "./skill_digest.ts";
