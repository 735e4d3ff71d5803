/**
 * For people writing a runtime (`@skillrun/skillrun/runtime`): the
 * {@linkcode SkillRuntime} contract and its request and result types, the
 * errors, the request checks every runtime makes
 * ({@linkcode checkExecuteRequest}), the preparation engine every runtime
 * shares ({@linkcode PreparationEngine}), the events a runtime emits
 * ({@linkcode EventSink}), background commands, the local runtime with its
 * process-launcher seam ({@linkcode ProcessLauncher},
 * {@linkcode DenoCommandLauncher}, {@linkcode BubblewrapLauncher}), its file
 * system and fence report, the workspace parts (conversation ids, the path
 * fence, the copy policy, the conversation stores), and the kit every remote
 * runtime shares ({@linkcode RemoteSkillRuntime}, {@linkcode HttpClient},
 * {@linkcode RemoteFileSystem}, resumable download, POSIX remote paths, and
 * the services that create sandboxes on demand: {@linkcode SandboxService},
 * {@linkcode SandboxServiceRuntime}, with the helpers a kind's own code calls:
 * {@linkcode sendCall}, {@linkcode helperShell}, {@linkcode shellFileCalls},
 * {@linkcode tarOfFiles}, {@linkcode PolledBackground}, ...). The conformance
 * checklist is `@skillrun/skillrun/testing`.
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
export type * from "../search/types.ts";
export type { Skill } from "../skill/types.ts";
export {
  type BootstrapCommand,
  type BootstrapCommandInput,
  DEFAULT_BOOTSTRAP_TIMEOUT_MS,
  SkillRuntimeConfig,
  SkillRuntimeConfigBuilder,
  type SkillRuntimeConfigOptions,
} from "./config.ts";
export {
  type CheckedCommandRunOptions,
  type CheckedTimeoutMs,
  CommandRun,
  type CommandRunOptions,
  MAX_EXECUTE_TIMEOUT_MS,
  type OutputTally,
  type StopReason,
} from "./command_core.ts";
export {
  type BackgroundCommandInfo,
  BackgroundCommands,
  backgroundCommands,
  type BackgroundCommandsOptions,
  type BackgroundOutput,
  closeBackgroundCommands,
  DEFAULT_BACKGROUND_OUTPUT_BYTES,
  DEFAULT_MAX_BACKGROUND_COMMANDS,
  listBackgroundCommands,
} from "./background.ts";
export {
  type CheckedExecuteRequest,
  checkExecuteRequest,
  type CheckExecuteRequestOptions,
} from "./request.ts";
export {
  RuntimePermissionError,
  SkillPreparationError,
  type SkillPreparationErrorOptions,
  WorkspaceEscapeError,
} from "./errors.ts";
export {
  type CommandOutputEvent,
  EventSink,
  type HttpRequestEvent,
  type PrepareProgressEvent,
  type RuntimeLifecycleEvent,
  type SkillEvent,
  type SkillEventListener,
  type ToolCallEndEvent,
  type ToolCallStartEvent,
} from "../observe/events.ts";
export {
  type MaterializeOptions,
  type MaterializeResult,
  PreparationEngine,
  type PreparationHooks,
} from "./prepare.ts";
export {
  LocalSkillRuntime,
  type LocalSkillRuntimeOptions,
} from "./local/runtime.ts";
export { LocalFileSystem, type LocalFileSystemOptions } from "./local/fs.ts";
export {
  DenoCommandLauncher,
  type DenoCommandLauncherOptions,
  type GroupSignalMethod,
  type LaunchRequest,
  type ProcessLauncher,
} from "./local/launcher.ts";
export {
  BubblewrapLauncher,
  type BubblewrapLauncherOptions,
  type EgressOptions,
  type EgressReport,
  type IsolationLimits,
  type IsolationProblem,
  type IsolationReport,
  IsolationUnavailableError,
  type LimitReport,
  type NetworkEvent,
  type NetworkPolicy,
  type ResolveOption,
  type SecretsOption,
  type SecretSpec,
} from "./local/isolated.ts";
export type {
  RemoteMaterializeTarget,
  RemoteSkillOrigin,
  SkillWithOrigin,
} from "./remote/origin.ts";
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
} from "./local/doctor.ts";
export {
  ensureWorkspace,
  validateConversationId,
  workspacePath,
} from "../workspace/conversation.ts";
export { type FencedPath, PathFence } from "../workspace/fence.ts";
export {
  type CopyPolicy,
  copySkillFolder,
  type CopySkillFolderOptions,
  type CopyStats,
  DEFAULT_COPY_EXCLUDES,
  type SkillFileEntry,
  type SkippedEntry,
  stableSkillFolderName,
  walkSkillFiles,
  type WalkSkillFilesOptions,
} from "../workspace/copy.ts";
export {
  type ConversationKey,
  type ConversationRecord,
  type ConversationStore,
  ConversationStoreUnavailableError,
  type CreateConversationResult,
  type DeleteConversationOptions,
  KvConversationStore,
  type KvConversationStoreOptions,
  MemoryConversationStore,
  type NewConversation,
  type NewSession,
  type PreparedSkillRecord,
  type SessionCount,
  type SessionRecord,
  type StoredEvent,
  type StoredEvents,
} from "./stores/conversation_store.ts";
export {
  RemoteHttpError,
  type RemoteHttpErrorOptions,
} from "./remote/errors.ts";
export {
  DEFAULT_HTTP_RETRIES,
  DEFAULT_HTTP_TIMEOUT_MS,
  HttpClient,
  type HttpClientOptions,
  type HttpQuery,
  type HttpRequest,
} from "./remote/http.ts";
export type { FileContent, MultipartPart } from "./remote/upload.ts";
export {
  downloadToFile,
  type DownloadToFileOptions,
  type OpenAtOffset,
} from "./remote/download.ts";
export {
  remoteJoin,
  RemotePathFence,
  resolveRemotePath,
  toRemoteRelative,
} from "./remote/paths.ts";
export {
  type RemoteFileOps,
  RemoteFileSystem,
  type RemoteFileSystemOptions,
  type RemoteListOptions,
  type RemoteOpenOptions,
  type RemoteUploadFile,
} from "./remote/fs.ts";
export {
  namedCommand,
  type RemoteCommandEvent,
  type RemoteCommandKind,
  type RemoteCommandStart,
  type RemoteStreamEvent,
  runRemoteCommand,
  type StartedRemoteCommand,
} from "./remote/command.ts";
export { type AttachedBackground } from "./remote/background.ts";
export {
  type RemoteBackend,
  type RemoteCommand,
  type RemoteConversation,
  type RemoteRuntimeCommonOptions,
  type RemoteSearchParts,
  type RemoteSession,
  RemoteSkillRuntime,
  type RemoteSkillRuntimeOptions,
} from "./remote/runtime.ts";
export {
  type RemoteConversationOptions,
  type ResolvedRemoteConversation,
  type SandboxKindOptions,
  type SandboxService,
  SandboxServiceBackend,
  type SandboxServiceBackendOptions,
  SandboxServiceRuntime,
  type SandboxServiceRuntimeOptions,
  type ServiceCreateOptions,
  type ServiceSandbox,
  type ServiceSession,
} from "./remote/sandbox_service.ts";
export {
  answers,
  CREATE_TAG,
  createTagged,
  httpOptionsOf,
  jsonOrNull,
  type RetryOnce,
  retryOnceAfter,
  sendCall,
  sendMultipart,
} from "./remote/service_calls.ts";
export {
  dateOrNull,
  fileInfo,
  goneStates,
  sandboxCalls,
  serviceBaseUrl,
  serviceClient,
} from "./remote/service_answers.ts";
export {
  eachConcurrently,
  helperShell,
  shellFileCalls,
  shellMakeDirectories,
  type ShellResult,
  type ShellRunner,
  shellSetModes,
} from "./remote/shell_files.ts";
export {
  exactly,
  readJsonEvents,
  type StreamedTar,
  tarOfFiles,
} from "./remote/streams.ts";
export {
  PolledBackground,
  type PolledBackgroundCalls,
} from "./remote/polled_background.ts";
