/**
 * {@linkcode AioSkillRuntime}: skills and commands on one existing AIO
 * Sandbox container, built on the shared {@linkcode RemoteSkillRuntime}.
 *
 * @module
 */
import type { NetworkPolicy, SecretsOption } from "../../network/policy.ts";
import type {
  RemoteCommand,
  RemoteRuntimeCommonOptions,
  RemoteSession,
} from "../remote/runtime.ts";
import { shellQuote } from "../remote/shell.ts";
import { helperShell } from "../remote/_shell_files.ts";
import type { ExecuteResult } from "../types.ts";
import {
  type SandboxService,
  SandboxServiceRuntime,
  type ServiceSandbox,
} from "../remote/sandbox_service.ts";
import { posix } from "../../_internal/std.ts";
import { AioClient } from "./client.ts";
import { aioCommands, AioSessionPool } from "./execute.ts";
import { type RemoteCommandKind, runRemoteCommand } from "../remote/command.ts";
import { attachAioBackground, startAioBackground } from "./_background.ts";
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
  readonly #service: AioService;

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
    const conversationsRoot = options.conversationsRoot ??
      "/home/gem/conversations";
    const service = new AioService(
      client,
      options.pollSeconds,
      options.conversationId === undefined ? undefined : {
        workspace: posix.join(conversationsRoot, options.conversationId),
        marker: posix.join(
          conversationsRoot,
          `.skillrun-${options.conversationId}.id`,
        ),
      },
    );
    const cwd = options.cwd ?? "/home/gem";
    super({
      ...options,
      name: "aio-sandbox",
      service,
      conversationsRoot,
      cwd,
      skillsRoot: options.skillsRoot ?? posix.join(cwd, ".skills"),
      timeoutSeconds: null,
      ...(options.conversationId === undefined ? { sandboxId: CONTAINER } : {}),
    });
    this.#service = service;
  }

  /** The container's base URL. */
  get baseUrl(): string {
    return this.#service.serverUrl;
  }

  /** How many bash sessions the runtime opened on the container. */
  get sessionCount(): number {
    return this.#service.sessions.size;
  }
}

/** The plain mode's "sandbox": the container itself, never deleted. */
const CONTAINER = "aio-container";

/**
 * One AIO container as a sandbox service: plain mode attaches to the
 * container; in conversation mode a conversation's folder is the sandbox,
 * named by the id in its marker file (written once, beside the workspace),
 * so a folder wiped since its record was made is noticed.
 */
class AioService implements SandboxService {
  readonly serverUrl: string;
  readonly sessions = new AioSessionPool();
  readonly #commands: RemoteCommandKind;
  readonly #background = new Set<{ stop(): Promise<void> }>();
  readonly #files: ReturnType<typeof aioFileOps>;
  /** Folders the marker command made (not made again on connect). */
  readonly #made = new Set<string>();

  constructor(
    private readonly client: AioClient,
    private readonly pollSeconds: number | undefined,
    private readonly conversation:
      | { readonly workspace: string; readonly marker: string }
      | undefined,
  ) {
    this.serverUrl = client.baseUrl;
    this.#commands = aioCommands(client, this.sessions, pollSeconds);
    this.#files = aioFileOps(
      client,
      helperShell((command) => this.#run(command), {
        timeoutMs: HELPER_TIMEOUT_MS,
        maxOutputBytes: 64 * 1024,
      }),
    );
  }

  /** A conversation's folder, named by its marker (written when missing). */
  async create(): Promise<ServiceSandbox> {
    return { id: await this.#marker(), expiresAt: null };
  }

  async get(id: string): Promise<ServiceSandbox | null> {
    if (!this.conversation) {
      return id === CONTAINER ? { id, expiresAt: null } : null;
    }
    return (await this.#marker()) === id ? { id, expiresAt: null } : null;
  }

  gone(): undefined {
    return undefined;
  }

  /** Removes a conversation's folder and marker; never the container. */
  async delete(id: string): Promise<void> {
    const conversation = this.conversation;
    if (!conversation || id === CONTAINER) {
      throw new Error(
        "Cannot destroy: the aio-sandbox runtime never deletes its container",
      );
    }
    try {
      await this.#files.remove([conversation.workspace, conversation.marker]);
    } finally {
      await this.close();
    }
  }

  open(): Promise<RemoteSession> {
    const pollSeconds = this.pollSeconds !== undefined
      ? { pollSeconds: this.pollSeconds }
      : {};
    return Promise.resolve({
      files: this.#files,
      commands: this.#commands,
      makeDirectories: (paths, signal) =>
        this.#files.mkdir(paths.filter((p) => !this.#made.has(p)), signal),
      startBackground: async (command: RemoteCommand) => {
        const started = await startAioBackground(this.client, this.sessions, {
          ...command,
          ...pollSeconds,
        });
        this.#background.add(started);
        return started;
      },
      attachBackground: async (id, sinks) => {
        const found = await attachAioBackground(this.client, id, {
          ...sinks,
          ...pollSeconds,
        });
        if (found) this.#background.add(found.process);
        return found;
      },
    });
  }

  /** Stops the pollers nobody stopped and closes the bash sessions opened. */
  async close(): Promise<void> {
    const pollers = [...this.#background];
    this.#background.clear();
    await Promise.all(pollers.map((poller) => poller.stop()));
    const ids = this.sessions.ids;
    this.sessions.clear();
    await Promise.all(
      ids.map((id) =>
        this.client.closeSession(id, { timeoutMs: 5_000 }).catch(() => {})
      ),
    );
  }

  #run(command: RemoteCommand): Promise<ExecuteResult> {
    return runRemoteCommand(this.#commands, command);
  }

  /**
   * Makes the workspace and reads (or writes, once) the id of this
   * conversation's folder on the container.
   */
  async #marker(): Promise<string> {
    const { workspace, marker } = this.conversation!;
    const id = `aio-${crypto.randomUUID()}`;
    const m = shellQuote(marker);
    const skills = posix.join(workspace, "skills");
    const result = await this.#run({
      command: `mkdir -p -- ${shellQuote(skills)}` +
        ` && { (set -C; printf %s ${shellQuote(id)} > ${m}) 2>/dev/null;` +
        ` for i in 1 2 3 4 5 6 7 8 9 10; do s=$(cat -- ${m}); [ -n "$s" ] && break; sleep 0.05; done;` +
        ` printf %s "$s"; }`,
      cwd: "/",
      env: {},
      timeoutMs: HELPER_TIMEOUT_MS,
      maxOutputBytes: 4096,
    });
    const markerId = result.stdout.trim();
    if (result.exitCode !== 0 || !/^aio-[0-9a-f-]{36}$/.test(markerId)) {
      throw new Error(
        `Cannot open the conversation workspace "${workspace}": ${
          result.stderr.trim().slice(0, 300) ||
          `the container answered ${JSON.stringify(markerId.slice(0, 100))}`
        }`,
      );
    }
    this.#made.add(skills);
    return markerId;
  }
}
