/**
 * For people writing a runtime (`@skillrun/skillrun/runtime`): the
 * {@linkcode SkillRuntime} contract and its request and result types, the
 * errors, the preparation engine every runtime shares
 * ({@linkcode PreparationEngine}), the local runtime with its process-launcher
 * seam ({@linkcode ProcessLauncher}, {@linkcode runProcessGroup}) and file
 * system, the workspace parts (conversation ids, the path fence, the copy
 * policy), and the machinery every remote runtime shares
 * ({@linkcode RemoteSkillRuntime}, {@linkcode HttpClient},
 * {@linkcode RemoteFileSystem}, streamed upload and resumable download, shell
 * quoting, POSIX remote paths, and the kit of services that create sandboxes
 * on demand: {@linkcode SandboxService}, {@linkcode SandboxServiceRuntime}),
 * the command core every executor shares ({@linkcode CommandRun},
 * {@linkcode checkTimeoutMs}) and the request checks every runtime shares
 * ({@linkcode checkExecuteRequest}).
 *
 * Importing this module needs no permission.
 *
 * @example A runtime's preparation through the shared engine
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   PreparationEngine,
 *   SkillRuntimeConfig,
 * } from "@skillrun/skillrun/runtime";
 *
 * const engine = new PreparationEngine({
 *   materialize: (skill) => Promise.resolve({ basePath: skill.basePath, bootstrap: false }),
 *   run: () => Promise.reject(new Error("no bootstrap here")),
 * });
 * const [prepared] = await engine.prepare({
 *   skills: [{
 *     skill: {
 *       name: "demo", description: "A demo", basePath: "/skills/demo",
 *       location: "/skills/demo/SKILL.md", instructions: "", frontMatter: {}, warnings: [],
 *     },
 *     config: new SkillRuntimeConfig({ env: { MODE: "fast" } }),
 *   }],
 * });
 * assert(prepared?.basePath === "/skills/demo" && engine.environment().MODE === "fast");
 * ```
 *
 * @module
 */
export type * from "./types.ts";
export {
  DEFAULT_EXECUTE_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
} from "./types.ts";
export * from "./config.ts";
export * from "./command_core.ts";
export * from "./background.ts";
export * from "./request.ts";
export * from "./errors.ts";
export * from "./prepare.ts";
export * from "./local/mod.ts";
export * from "../workspace/mod.ts";
export * from "./remote/mod.ts";
