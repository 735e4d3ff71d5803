/**
 * skillrun: let AI agents use Agent Skills (folders with a `SKILL.md`, scripts
 * and resources) through model-facing tools (`skill`, `bash`, `read`, `write`,
 * `edit`, `ls`, `glob`, `grep`, `publish_file`) backed by pluggable runtimes.
 *
 * - Skills: {@linkcode loadSkills}, {@linkcode selectSkills},
 *   {@linkcode validateSkill}, {@linkcode formatCatalog}.
 * - Configuration of a skill's runtime: {@linkcode SkillRuntimeConfig}.
 * - The embedded default runtime: {@linkcode LocalSkillRuntime} (plain, or in a
 *   conversation workspace fenced by path checks; isolated in a bubblewrap
 *   sandbox with `isolate`), and its fence report {@linkcode fenceReport}.
 * - Tools for models: {@linkcode buildSkillTools}, adapters for OpenAI,
 *   Anthropic and the AI SDK, and {@linkcode dispatchToolCall}.
 *
 * Other entry points: `./runtime` (for writing a runtime: the contract, the
 * preparation engine, the process-launcher seam, the path fence and copy
 * policy), `./search` (the search engine behind `grep`, `glob` and `ls`),
 * `./mcp` (the MCP server) and `./cli` (the command line).
 *
 * Importing this module needs no permission; each function says what it needs.
 *
 * @example Tools over the example skills, called as a model would
 * ```ts
 * import { assertStringIncludes } from "@std/assert";
 * import { buildSkillTools, dispatchToolCall } from "@skillrun/skillrun";
 *
 * await using kit = await buildSkillTools({ skills: "examples/skills" });
 * const result = await dispatchToolCall(kit.tools, {
 *   name: "bash",
 *   arguments: JSON.stringify({ command: "echo hello" }),
 * });
 * assertStringIncludes(result.text, "hello");
 * ```
 *
 * @module
 */
export type { Skill } from "./skill/types.ts";
export {
  DEFAULT_CATALOG_BUDGET,
  formatCatalog,
  type FormatCatalogOptions,
} from "./skill/catalog.ts";
export {
  DEFAULT_MAX_DEPTH,
  DEFAULT_MAX_FOLDERS,
  type FindResult,
  findSkillFolders,
  type LoadResult,
  loadSkills,
  type LoadSkillsOptions,
  selectSkills,
} from "./skill/load.ts";
export {
  parseSkillMd,
  type ParseSkillMdOptions,
  type SkillDocument,
} from "./skill/parse.ts";
export {
  validateSkill,
  type ValidateSkillOptions,
  type ValidationProblem,
} from "./skill/validate.ts";
export { HEAVY_FOLDERS } from "./search/rules.ts";
export * from "./runtimes/config.ts";
export * from "./runtimes/errors.ts";
export type * from "./runtimes/types.ts";
export {
  DEFAULT_EXECUTE_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
} from "./runtimes/types.ts";
export {
  LocalSkillRuntime,
  type LocalSkillRuntimeOptions,
} from "./runtimes/local/runtime.ts";
export {
  BubblewrapLauncher,
  type BubblewrapLauncherOptions,
  type IsolationLimits,
  type IsolationProblem,
  type IsolationReport,
  IsolationUnavailableError,
  type LimitReport,
} from "./runtimes/local/isolated.ts";
export type {
  NetworkPolicy,
  ResolveOption,
  SecretsOption,
  SecretSpec,
} from "./network/policy.ts";
export type { NetworkEvent } from "./network/proxy.ts";
export type { EgressOptions, EgressReport } from "./network/sandbox.ts";
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
} from "./runtimes/local/doctor.ts";
export type { CopyPolicy } from "./workspace/copy.ts";
export { DEFAULT_COPY_EXCLUDES } from "./workspace/copy.ts";
export type * from "./tools/types.ts";
export * from "./tools/builder.ts";
export {
  DEFAULT_TOOL_LIMITS,
  type FilePublisher,
  type PrepareSkillOptions,
  type PublishedFile,
  type PublishRequest,
  type ToolContext,
  type ToolLimits,
} from "./tools/context.ts";
export {
  DEFAULT_SKILL_DESCRIPTION,
  type SkillDescription,
  type SkillDescriptionContext,
} from "./tools/skill_tool.ts";
export { PUBLISH_GUIDANCE } from "./tools/publish_file.ts";
export * from "./tools/adapters/mod.ts";
export type {
  CommandOutputEvent,
  HttpRequestEvent,
  PrepareProgressEvent,
  RuntimeLifecycleEvent,
  SkillEvent,
  SkillEventListener,
  ToolCallEndEvent,
  ToolCallStartEvent,
} from "./observe/events.ts";
export { EventSink } from "./observe/events.ts";
export { formatEvent } from "./observe/log.ts";
export {
  type BackgroundCommandInfo,
  backgroundCommands,
  type BackgroundOutput,
} from "./runtimes/background.ts";
