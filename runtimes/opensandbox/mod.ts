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
export {
  type RemoteBackend,
  type RemoteCommand,
  type RemoteConversation,
  type RemoteRuntimeCommonOptions,
  type RemoteSearchParts,
  type RemoteSession,
  RemoteSkillRuntime,
  type RemoteSkillRuntimeOptions,
} from "../remote/runtime.ts";
export {
  type ConversationKey,
  type ConversationRecord,
  type ConversationStore,
  KvConversationStore,
  MemoryConversationStore,
} from "../../workspace/conversation_store.ts";
export type {
  CreateConversationResult,
  DeleteConversationOptions,
  NewConversation,
  PreparedSkillRecord,
} from "../../workspace/conversation_store.ts";
export type * from "../types.ts";
export type * from "../../search/types.ts";
export type * from "../../skill/types.ts";
export type { CopyPolicy } from "../../workspace/copy.ts";
export {
  HttpClient,
  type HttpQuery,
  type HttpRequest,
} from "../remote/http.ts";
export type {
  RemoteFileOps,
  RemoteListOptions,
  RemoteOpenOptions,
  RemoteUploadFile,
} from "../remote/fs.ts";
export type { FileContent, MultipartPart } from "../remote/upload.ts";
export {
  type BootstrapCommand,
  type BootstrapCommandInput,
  SkillRuntimeConfig,
  type SkillRuntimeConfigOptions,
} from "../config.ts";
