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
 *   sandbox with `isolate`), and its fence report {@linkcode fenceReport}
 *   (its types are in `./runtime`).
 * - Conversation stores for the runtimes that keep conversations
 *   ({@linkcode KvConversationStore}, {@linkcode MemoryConversationStore}).
 * - Tools for models: {@linkcode buildSkillTools}, adapters for OpenAI,
 *   Anthropic and the AI SDK, and {@linkcode dispatchToolCall}.
 * - The errors an application catches: {@linkcode SkillPreparationError},
 *   {@linkcode RuntimePermissionError}, {@linkcode WorkspaceEscapeError},
 *   {@linkcode IsolationUnavailableError}, {@linkcode RemoteHttpError}.
 *
 * Other entry points: `./tools` (the tool layer in detail: every adapter type,
 * the tool factories and context, limits and descriptions), `./runtime` (for
 * writing a runtime: the contract, the preparation engine, the process-launcher
 * seam, the path fence and copy policy, the remote kit), `./opensandbox`,
 * `./aio`, `./e2b`, `./vercel` (each remote kind: its runtime, options and
 * errors), `./search` (the search engine behind `grep`, `glob` and `ls`),
 * `./mcp` (the MCP server), `./testing` (the conformance kit), `./package`
 * (skill packages) and `./cli` (the command line).
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
  type LoadResult,
  loadSkills,
  type LoadSkillsOptions,
  selectSkills,
} from "./skill/load.ts";
export type { ScopeOptions, SkillScope } from "./skill/sources.ts";
export {
  validateSkill,
  type ValidateSkillOptions,
  type ValidationProblem,
} from "./skill/validate.ts";
export { formatCatalog, type FormatCatalogOptions } from "./skill/catalog.ts";
export { HEAVY_FOLDERS } from "./search/rules.ts";
export {
  type BootstrapCommand,
  type BootstrapCommandInput,
  SkillRuntimeConfig,
  SkillRuntimeConfigBuilder,
  type SkillRuntimeConfigOptions,
} from "./runtimes/config.ts";
export type { SkillRuntime } from "./runtimes/types.ts";
export {
  LocalSkillRuntime,
  type LocalSkillRuntimeOptions,
} from "./runtimes/local/runtime.ts";
export {
  type ConversationStore,
  KvConversationStore,
  MemoryConversationStore,
} from "./runtimes/stores/conversation_store.ts";
export {
  RuntimePermissionError,
  SkillPreparationError,
  WorkspaceEscapeError,
} from "./runtimes/errors.ts";
export { IsolationUnavailableError } from "./runtimes/local/isolated.ts";
export { fenceReport, formatFenceReport } from "./runtimes/local/doctor.ts";
export { RemoteHttpError } from "./runtimes/remote/errors.ts";
export {
  buildSkillTools,
  type BuildSkillToolsOptions,
  type SkillTools,
  SkillToolsBuilder,
  TOOL_NAMES,
  type ToolName,
} from "./tools/builder.ts";
export type { JsonSchema, Tool, ToolResult } from "./tools/types.ts";
export type {
  ToolApprovalCall,
  ToolApprovalDecision,
  ToolApprovalPolicy,
} from "./tools/approval.ts";
export type {
  FilePublisher,
  PublishedFile,
  PublishRequest,
} from "./tools/context.ts";
export {
  dispatchToolCall,
  type ToolCallRequest,
} from "./tools/adapters/dispatch.ts";
export {
  toOpenAIChatToolMessage,
  toOpenAIChatTools,
  toOpenAIFunctionCallOutput,
  toOpenAIResponsesTools,
} from "./tools/adapters/openai.ts";
export {
  toAnthropicToolResult,
  toAnthropicTools,
} from "./tools/adapters/anthropic.ts";
export {
  toAISDKStreamingTools,
  toAISDKTools,
} from "./tools/adapters/ai_sdk.ts";
export type { SkillEvent, SkillEventListener } from "./observe/events.ts";
export { formatEvent } from "./observe/log.ts";
