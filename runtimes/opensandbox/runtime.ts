/**
 * The OpenSandbox runtime: skills uploaded into an OpenSandbox sandbox and
 * commands run there through its execd, spoken to with `fetch` only.
 *
 * @module
 */
import type { NetworkPolicy, SecretsOption } from "../../network/policy.ts";
import {
  type SandboxKindOptions,
  SandboxServiceRuntime,
} from "../remote/sandbox_service.ts";
import {
  LifecycleClient,
  type SandboxInfo,
  type SandboxSpec,
} from "./lifecycle.ts";

/**
 * Options of {@linkcode OpenSandboxSkillRuntime}.
 * Defaults: `cwd` `/workspace`, `skillsRoot` `/workspace/skills`,
 * `conversationsRoot` `/workspace/conversations`.
 */
export interface OpenSandboxSkillRuntimeOptions extends SandboxKindOptions {
  /**
   * The lifecycle server, e.g. `http://localhost:8080` (`/v1` is added when
   * missing). With the conversation id, it keys a conversation's record.
   */
  readonly baseUrl: string;
  /** The API key (`OPEN-SANDBOX-API-KEY`); never shown in errors. */
  readonly apiKey?: string;
  /** What a sandbox the runtime creates is made of. */
  readonly sandbox?: SandboxSpec;
  /**
   * The egress policy of a sandbox the runtime creates, sent as OpenSandbox's
   * `networkPolicy` (deny rules, then allow rules, default deny), which its
   * egress sidecar enforces by host name: ports and IP addresses are refused.
   * Not with `sandbox.networkPolicy`, nor with `sandboxId`.
   */
  readonly network?: NetworkPolicy;
  /**
   * Refused: secrets at the egress are the isolated local mode's;
   * OpenSandbox's credential vault is configured on the server.
   */
  readonly secrets?: SecretsOption;
}

/**
 * The OpenSandbox runtime (`name: "opensandbox"`).
 *
 * **Plain**: on first real use it creates a sandbox through the lifecycle API
 * (image, timeout, resource limits, environment, metadata, entrypoint) or
 * attaches to `sandboxId`, waits until execd answers, then runs commands and
 * moves files through execd; skills go into `skillsRoot`. `close()` deletes
 * only a sandbox it created.
 *
 * **Conversation** (`conversationId`): the store maps the conversation (and
 * the server's base URL, not the API key) to its sandbox (insert-if-absent:
 * the loser of a creation race deletes its own sandbox and attaches to the
 * winner's); later runtimes attach to it and renew its expiry, and a skill
 * prepared with the same digest is not uploaded again. Paths are fenced
 * (lexically) inside `<conversationsRoot>/<conversationId>`. `close()` never
 * deletes it; {@linkcode destroy} removes the record, then it.
 *
 * No request is made before real use. Needs `--allow-net` for the server and
 * the sandbox's endpoints, `--allow-read` of the skills it uploads.
 *
 * @example A runtime is made without any request
 * ```ts
 * import { assert } from "@std/assert";
 * import { OpenSandboxSkillRuntime } from "@skillrun/skillrun/opensandbox";
 * const runtime = new OpenSandboxSkillRuntime({
 *   baseUrl: "http://127.0.0.1:9", // nothing listens here
 *   conversationId: "thread-1",
 * });
 * assert(runtime.cwd === "/workspace/conversations/thread-1");
 * await runtime.close(); // never used: no request
 * ```
 */
export class OpenSandboxSkillRuntime
  extends SandboxServiceRuntime<SandboxInfo> {
  /**
   * Makes the runtime; makes no request.
   *
   * @param options The server, the sandbox, the mode.
   * @throws {TypeError} A bad URL, conversation id, path or variable, or
   * `sandboxId` together with a conversation.
   */
  constructor(options: OpenSandboxSkillRuntimeOptions) {
    const service = new LifecycleClient(options);
    super({
      ...options,
      name: "opensandbox",
      service,
      conversationsRoot: options.conversationsRoot ??
        "/workspace/conversations",
      timeoutSeconds: service.spec.timeoutSeconds,
      readinessName: "execd",
    });
  }
}
