/**
 * The one re-export every remote kind's entry point shares
 * (`@skillrun/skillrun/opensandbox`, `@skillrun/skillrun/aio`, and the next
 * kinds): the runtime contract and its types, the shared remote runtime and
 * its backend seam, the sandbox-service kit, the conversation stores, the
 * HTTP client and its error, the file-call types, and the skill
 * configuration. A kind's `mod.ts` is `export * from
 * "../remote/kind_exports.ts"` plus its own runtime, options and clients.
 *
 * @example What every kind's entry point offers
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   MemoryConversationStore,
 *   SandboxServiceBackend,
 *   SkillRuntimeConfig,
 * } from "./kind_exports.ts";
 * assert(typeof SandboxServiceBackend === "function");
 * assert(new SkillRuntimeConfig({ env: { A: "1" } }).env.A === "1");
 * assert(new MemoryConversationStore());
 * ```
 *
 * @module
 */
export {
  type RemoteBackend,
  type RemoteCommand,
  type RemoteConversation,
  type RemoteRuntimeCommonOptions,
  type RemoteSearchParts,
  type RemoteSession,
  RemoteSkillRuntime,
  type RemoteSkillRuntimeOptions,
  runtimeOptionsOf,
} from "./runtime.ts";
export {
  defaultConversationStore,
  remoteConversation,
  type RemoteConversationOptions,
  type ResolvedRemoteConversation,
  type SandboxService,
  SandboxServiceBackend,
  type SandboxServiceBackendOptions,
  SandboxServiceRuntime,
  type SandboxServiceRuntimeOptions,
  type ServiceCreateOptions,
  type ServiceSandbox,
  type ServiceSession,
} from "./sandbox_service.ts";
export {
  type ConversationKey,
  type ConversationRecord,
  type ConversationStore,
  type CreateConversationResult,
  type DeleteConversationOptions,
  KvConversationStore,
  MemoryConversationStore,
  type NewConversation,
  type PreparedSkillRecord,
} from "../../workspace/conversation_store.ts";
export { RemoteHttpError } from "./errors.ts";
export {
  HttpClient,
  type HttpClientOptions,
  type HttpQuery,
  type HttpRequest,
} from "./http.ts";
export type * from "./fs.ts";
export type { FileContent, MultipartPart } from "./upload.ts";
export type * from "../types.ts";
export type * from "../../search/types.ts";
export type * from "../../skill/types.ts";
export type { CopyPolicy } from "../../workspace/copy.ts";
export {
  type BootstrapCommand,
  type BootstrapCommandInput,
  SkillRuntimeConfig,
  type SkillRuntimeConfigOptions,
} from "../config.ts";
