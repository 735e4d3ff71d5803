/**
 * The E2B runtime: skills run in an E2B sandbox (created from a template,
 * attached by id, or a conversation's, paused on close and resumed on
 * attach), spoken to with `fetch` only: the control plane and envd over the
 * Connect protocol. No SDK, no local disk. Importing this module needs no
 * permission; using the runtime needs `--allow-net` (and `--allow-read` for
 * the skills it uploads).
 *
 * @example Plain mode: a sandbox for this runtime alone
 * ```ts ignore
 * import { E2BSkillRuntime } from "@skillrun/skillrun/e2b";
 * await using runtime = new E2BSkillRuntime({ apiKey: Deno.env.get("E2B_API_KEY") });
 * const result = await runtime.execute({ command: "uname -a" });
 * console.log(result.stdout);
 * ```
 *
 * This entry holds what is this kind's own: its runtime, its options and its
 * errors. What every kind shares (the conversation stores,
 * `RemoteHttpError`, the runtime contract) comes from
 * `@skillrun/skillrun` and, for writing a runtime, `@skillrun/skillrun/runtime`.
 *
 * @module
 */
export { E2BSkillRuntime, type E2BSkillRuntimeOptions } from "./runtime.ts";
export type { E2BSandbox, E2BSandboxSpec } from "./api.ts";
export { EnvdError } from "./envd.ts";
export type { E2BNetworkConfig } from "./network.ts";
