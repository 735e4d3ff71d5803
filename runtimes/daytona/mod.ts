/**
 * The Daytona runtime: skills run in a Daytona sandbox (created, attached by
 * id or name, or a conversation's sandbox found by its labels), spoken to
 * with `fetch` only, as the official SDK speaks the API and the toolbox. No
 * SDK, no local disk. Importing this module needs no permission; using the
 * runtime needs `--allow-net` (and `--allow-read` for the skills it uploads).
 *
 * @example Plain mode: a sandbox for this runtime alone
 * ```ts ignore
 * import { DaytonaSkillRuntime } from "@skillrun/skillrun/daytona";
 * await using runtime = new DaytonaSkillRuntime({
 *   apiKey: Deno.env.get("DAYTONA_API_KEY"),
 * });
 * console.log((await runtime.execute({ command: "uname -a" })).stdout);
 * ```
 *
 * @module
 */
export {
  type DaytonaSandbox,
  DaytonaSkillRuntime,
  type DaytonaSkillRuntimeOptions,
} from "./runtime.ts";
