/**
 * The local runtime: skills prepared and commands run on this machine, in
 * place or in a conversation workspace, through a replaceable process
 * launcher.
 *
 * @example Running a command locally
 * ```ts
 * import { assert } from "@std/assert";
 * import { LocalSkillRuntime } from "@skillrun/skillrun/runtime";
 *
 * await using runtime = new LocalSkillRuntime();
 * const result = await runtime.execute({ command: "echo hi" });
 * assert(result.stdout === "hi\n");
 * ```
 *
 * @module
 */
export { LocalSkillRuntime, type LocalSkillRuntimeOptions } from "./runtime.ts";
export {
  DEFAULT_GRACE_MS,
  defaultShell,
  DenoCommandLauncher,
  type DenoCommandLauncherOptions,
  type GroupSignalMethod,
  type LaunchRequest,
  type ProcessGroupRequest,
  type ProcessLauncher,
  runProcessGroup,
  signalProcessGroup,
  type SignalProcessGroupOptions,
} from "./launcher.ts";
export { LocalFileSystem } from "./fs.ts";
export {
  BubblewrapLauncher,
  type BubblewrapLauncherOptions,
  DEFAULT_MAX_FILE_SIZE_BYTES,
  DEFAULT_MAX_MEMORY_BYTES,
  DEFAULT_MAX_PROCESSES,
  DEFAULT_TMP_SIZE_BYTES,
  type IsolationLimits,
  type IsolationProblem,
  type IsolationReport,
  IsolationUnavailableError,
  type LimitReport,
  MASKED_PATHS,
  SANDBOX_HOME,
  SANDBOX_LANG,
  SANDBOX_PATH,
  SYSTEM_PATHS,
} from "./isolated.ts";
export type {
  NetworkPolicy,
  ResolveOption,
  SecretsOption,
  SecretSpec,
} from "../../network/policy.ts";
export type { NetworkEvent } from "../../network/proxy.ts";
export type { EgressOptions, EgressReport } from "../../network/sandbox.ts";
export {
  type CommandReach,
  type FenceReport,
  fenceReport,
  type FenceReportOptions,
  type FileToolReach,
  formatFenceReport,
  type PermissionCheck,
  type ReportedPermission,
  type ToolCheck,
} from "./doctor.ts";
