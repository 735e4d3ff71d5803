/**
 * The OpenSandbox runtime: skills run in an OpenSandbox sandbox (created
 * through the lifecycle API or attached by id), spoken to with `fetch` only.
 * Importing this module needs no permission; using the runtime needs
 * `--allow-net` for the server and `--allow-read` for the skills it uploads.
 *
 * @example Plain mode: a sandbox for this runtime alone
 * ```ts ignore
 * import { OpenSandboxSkillRuntime } from "@skillrun/skillrun/opensandbox";
 * await using runtime = new OpenSandboxSkillRuntime({
 *   baseUrl: "http://localhost:8080",
 *   apiKey: Deno.env.get("OPEN_SANDBOX_API_KEY"),
 * });
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
export {
  OpenSandboxSkillRuntime,
  type OpenSandboxSkillRuntimeOptions,
} from "./runtime.ts";
export type { SandboxInfo, SandboxSpec } from "./lifecycle.ts";
export { SandboxCommandError } from "./execd.ts";
export { ExecdProtocolError } from "./_events.ts";
export type {
  OpenSandboxNetworkPolicy,
  OpenSandboxNetworkRule,
} from "./network.ts";
