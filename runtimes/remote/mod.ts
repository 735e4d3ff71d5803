/**
 * The machinery every remote runtime shares: an HTTP client with safe
 * retries and secret-free errors, streamed uploads of skill folders,
 * resumable streamed downloads, shell quoting, POSIX remote paths with a
 * lexical workspace fence, a file system over a few per-server calls, and the
 * kit of services that create sandboxes on demand (create or attach, the
 * conversation race, readiness, renewal), and the helpers a kind's own code
 * calls (service calls, helper commands in the sandbox, streams, polled
 * background commands).
 *
 * @example Quoting a remote path for a command line
 * ```ts
 * import { assert } from "@std/assert";
 * import { remoteJoin, shellQuote } from "./mod.ts";
 * const path = remoteJoin("/workspace", "it's here");
 * assert(`cat ${shellQuote(path)}` === "cat '/workspace/it'\\''s here'");
 * ```
 *
 * @module
 */
export * from "./errors.ts";
export * from "./http.ts";
export * from "./upload.ts";
export * from "./download.ts";
export * from "./shell.ts";
export * from "./paths.ts";
export * from "./fs.ts";
export * from "./runtime.ts";
export * from "./command.ts";
export * from "./sandbox_service.ts";
export * from "./origin.ts";
// The helpers a kind's own code calls (see "Adding a sandbox kind" in
// docs/remote.md); the rest of these files is the kit's own.
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
} from "./service_calls.ts";
export {
  dateOrNull,
  fileInfo,
  goneStates,
  sandboxCalls,
  serviceBaseUrl,
  serviceClient,
} from "./service_answers.ts";
export {
  eachConcurrently,
  helperShell,
  shellFileCalls,
  shellMakeDirectories,
  type ShellResult,
  type ShellRunner,
  shellSetModes,
} from "./shell_files.ts";
export {
  exactly,
  readJsonEvents,
  type StreamedTar,
  tarOfFiles,
} from "./streams.ts";
export {
  PolledBackground,
  type PolledBackgroundCalls,
} from "./polled_background.ts";
