/**
 * {@linkcode AioSkillRuntime}: skills and commands on one existing AIO
 * Sandbox container, built on the shared {@linkcode RemoteSkillRuntime}.
 *
 * @module
 */
import type { NetworkPolicy, SecretsOption } from "../../network/policy.ts";
import type { RemoteRuntimeCommonOptions } from "../remote/runtime.ts";
import { helperShell } from "../remote/shell_files.ts";
import { SandboxServiceRuntime } from "../remote/sandbox_service.ts";
import { FolderSandboxes } from "../remote/folder_sandboxes.ts";
import { runRemoteCommand } from "../remote/command.ts";
import type { SessionPool } from "../remote/session_pool.ts";
import { posix } from "../../_internal/std.ts";
import { AioClient } from "./client.ts";
import { aioKind } from "./execute.ts";
import { aioFileOps } from "./files.ts";

/** The deadline of the runtime's own helper commands (stat, mkdir, chmod): 60 s. */
const HELPER_TIMEOUT_MS = 60_000;

/** Options of {@linkcode AioSkillRuntime}. */
export interface AioSkillRuntimeOptions extends RemoteRuntimeCommonOptions {
  /** The container's base URL, e.g. `http://127.0.0.1:8080` (may carry a path). */
  readonly baseUrl: string;
  /** The API key, sent as `Authorization: Bearer <apiKey>`; never shown in errors or logs. */
  readonly apiKey?: string | undefined;
  /** Where conversation workspaces live. Default `/home/gem/conversations`. */
  readonly conversationsRoot?: string;
  /** Plain mode: where commands run. Default `/home/gem`. */
  readonly cwd?: string;
  /** Plain mode: where skills are uploaded. Default `<cwd>/.skills`. */
  readonly skillsRoot?: string;
  /** The longest soft timeout or long poll of one request, in s. Default 20. */
  readonly pollSeconds?: number;
  /** More headers on every call (e.g. a gateway's). */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Refused: an AIO container has no egress policy to set, so a `network`
   * policy (the shape every runtime shares) cannot be enforced; the
   * constructor throws rather than ignore it. Fence the container's network
   * outside (its own firewall), or use OpenSandbox or the isolated local
   * runtime.
   */
  readonly network?: NetworkPolicy;
  /** Refused, as `network`: secrets at the egress need a proxy AIO does not have. */
  readonly secrets?: SecretsOption;
}

/**
 * Skills and commands on one existing AIO Sandbox container (`/v1/bash/*`,
 * `/v1/file/*`). The runtime never creates or deletes the container; it makes
 * no request until real use; `close()` only closes the bash sessions it
 * opened.
 *
 * Commands go through `/v1/bash/exec` with a soft timeout, then long polls of
 * `/v1/bash/output` from the byte offsets the server returns; at our deadline
 * or on abort the session's process is killed (`/v1/bash/kill`) and the
 * result says `timedOut` or `aborted`. A command is never sent twice.
 * Files move through `/v1/file/upload`, `/v1/file/download` (streamed into a
 * temporary file renamed into place, resumed with `Range` when the server
 * honours it) and `/v1/file/list`; stat, mkdir, chmod and delete are quoted
 * shell commands.
 *
 * Conversation mode keeps the same records as OpenSandbox (the store's
 * `sandboxId` is a marker written beside the workspace on first use, so a
 * container that was reset is noticed and its skills uploaded again). The
 * container is a `SandboxService` of the kit like every kind's: plain mode
 * attaches to it (its `sandboxId` is `aio-container`), a conversation's
 * folder is its "sandbox".
 *
 * @example Nothing is sent before real use
 * ```ts
 * import { assert } from "@std/assert";
 * import { AioSkillRuntime } from "@skillrun/skillrun/aio";
 *
 * let calls = 0;
 * const runtime = new AioSkillRuntime({
 *   baseUrl: "http://aio.invalid:8080",
 *   apiKey: "secret-token",
 *   fetch: () => {
 *     calls++;
 *     return Promise.reject(new TypeError("offline"));
 *   },
 * });
 * assert(runtime.name === "aio-sandbox" && runtime.cwd === "/home/gem");
 * await runtime.close();
 * assert(calls === 0);
 * ```
 */
export class AioSkillRuntime extends SandboxServiceRuntime {
  readonly #baseUrl: string;
  readonly #sessions: SessionPool;

  /**
   * Makes the runtime; makes no request.
   *
   * @param options Base URL, token, mode, environment.
   * @throws {TypeError} A bad base URL, path, conversation id or variable.
   */
  constructor(options: AioSkillRuntimeOptions) {
    for (const option of ["network", "secrets"] as const) {
      if (options[option] !== undefined) {
        throw new TypeError(
          `Cannot use the ${option} option with AIO Sandbox: the service has no egress policy to enforce it (fence the container's network outside, or use OpenSandbox or the isolated local runtime)`,
        );
      }
    }
    const client = new AioClient(options);
    const kind = aioKind(client, options.pollSeconds);
    const shell = helperShell(
      (command) => runRemoteCommand(kind.session.commands, command),
      { timeoutMs: HELPER_TIMEOUT_MS, maxOutputBytes: 64 * 1024 },
    );
    const files = aioFileOps(client, shell);
    const conversationsRoot = options.conversationsRoot ??
      "/home/gem/conversations";
    const id = options.conversationId;
    // The container is a sandbox service; a conversation's folder its sandbox.
    const service = new FolderSandboxes({
      serverUrl: client.baseUrl,
      runtimeName: "aio-sandbox",
      machine: "container",
      machineId: CONTAINER,
      idPrefix: "aio-",
      conversation: id === undefined ? undefined : {
        workspace: posix.join(conversationsRoot, id),
        marker: posix.join(conversationsRoot, `.skillrun-${id}.id`),
      },
      session: { files, ...kind.session },
      shell,
      close: kind.close,
    });
    const cwd = options.cwd ?? "/home/gem";
    super({
      ...options,
      name: "aio-sandbox",
      service,
      conversationsRoot,
      cwd,
      skillsRoot: options.skillsRoot ?? posix.join(cwd, ".skills"),
      timeoutSeconds: null,
      ...(id === undefined ? { sandboxId: CONTAINER } : {}),
    });
    this.#baseUrl = client.baseUrl;
    this.#sessions = kind.sessions;
  }

  /** The container's base URL. */
  get baseUrl(): string {
    return this.#baseUrl;
  }

  /** How many bash sessions the runtime opened on the container. */
  get sessionCount(): number {
    return this.#sessions.size;
  }
}

/** The plain mode's "sandbox": the container itself, never deleted. */
const CONTAINER = "aio-container";
