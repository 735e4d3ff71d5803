/**
 * The Deno Sandbox runtime: skills run in a Deno Sandbox (Deno Deploy),
 * created, attached by id, or a conversation's sandbox found by its labels,
 * spoken to over the service's own transport: its WebSocket JSON-RPC
 * (Deno's built-in `WebSocket`) and `fetch`. No SDK, no local disk.
 * Importing this module needs no permission; using the runtime needs
 * `--allow-net` (and `--allow-read` for the skills it uploads).
 *
 * @example Plain mode: a sandbox for this runtime alone
 * ```ts ignore
 * import { DenoSandboxSkillRuntime } from "@skillrun/skillrun/deno-sandbox";
 * await using runtime = new DenoSandboxSkillRuntime({
 *   token: Deno.env.get("DENO_DEPLOY_TOKEN"),
 * });
 * console.log((await runtime.execute({ command: "uname -a" })).stdout);
 * ```
 *
 * @module
 */
export {
  type DenoSandbox,
  DenoSandboxSkillRuntime,
  type DenoSandboxSkillRuntimeOptions,
} from "./runtime.ts";
export { DenoSandboxError } from "./rpc.ts";
