/**
 * The Vercel Sandbox runtime: skills run in a Vercel sandbox (created,
 * attached by name, or a conversation's persistent sandbox, stopped on close
 * and resumed from its snapshot on attach), spoken to with `fetch` only, as
 * the open-source SDK speaks the API. No SDK, no local disk. Importing this
 * module needs no permission; using the runtime needs `--allow-net` (and
 * `--allow-read` for the skills it uploads).
 *
 * @example Plain mode: a sandbox for this runtime alone
 * ```ts ignore
 * import { VercelSandboxSkillRuntime } from "@skillrun/skillrun/vercel";
 * await using runtime = new VercelSandboxSkillRuntime({
 *   apiKey: Deno.env.get("VERCEL_TOKEN"),
 *   teamId: Deno.env.get("VERCEL_TEAM_ID"),
 *   projectId: Deno.env.get("VERCEL_PROJECT_ID"),
 * });
 * console.log((await runtime.execute({ command: "uname -a" })).stdout);
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
  VercelSandboxSkillRuntime,
  type VercelSandboxSkillRuntimeOptions,
} from "./runtime.ts";
export type { VercelSandbox, VercelSandboxSpec } from "./api.ts";
export type { VercelNetworkPolicy } from "./network.ts";
