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
 * @module
 */
export {
  type OpenSandboxRuntimeOptions,
  OpenSandboxSkillRuntime,
} from "./runtime.ts";
export {
  API_KEY_HEADER,
  EXECD_PORT,
  LifecycleClient,
  type LifecycleClientOptions,
  type SandboxEndpoint,
  type SandboxInfo,
  type SandboxSpec,
} from "./lifecycle.ts";
export type {
  OpenSandboxNetworkPolicy,
  OpenSandboxNetworkRule,
} from "../../network/remote.ts";
export type { NetworkPolicy } from "../../network/policy.ts";
export {
  ExecdClient,
  type ExecdCommand,
  SandboxCommandError,
} from "./execd.ts";
export {
  type ExecdEvent,
  type ExecdEventError,
  ExecdProtocolError,
} from "./_events.ts";
export * from "../remote/kind_exports.ts";
