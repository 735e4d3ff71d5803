/**
 * The OpenSandbox runtime: skills uploaded into an OpenSandbox sandbox and
 * commands run there through its execd, spoken to with `fetch` only.
 *
 * @module
 */
import { HttpClient } from "../remote/http.ts";
import {
  type RemoteBackend,
  type RemoteCommand,
  type RemoteRuntimeCommonOptions,
  type RemoteSession,
  RemoteSkillRuntime,
  type RemoteSkillRuntimeOptions,
} from "../remote/runtime.ts";
import type { ExecuteResult } from "../types.ts";
import { validateConversationId } from "../../workspace/conversation.ts";
import {
  type ConversationKey,
  type ConversationStore,
  MemoryConversationStore,
  normalizeConversationKey,
} from "../../workspace/conversation_store.ts";
import { posix } from "../../_internal/std.ts";
import { ExecdClient } from "./execd.ts";
import {
  EXECD_PORT,
  LifecycleClient,
  type SandboxInfo,
  type SandboxSpec,
} from "./lifecycle.ts";

/** States after which a sandbox never runs again. */
const GONE_STATES = new Set(["Stopping", "Terminated", "Failed"]);

/** The store conversations use when none is given: one per process. */
let defaultStore: ConversationStore | undefined;

/** Options of {@linkcode OpenSandboxSkillRuntime}. */
export interface OpenSandboxRuntimeOptions extends RemoteRuntimeCommonOptions {
  /**
   * The lifecycle server, e.g. `http://localhost:8080` (`/v1` is added when
   * missing). With the conversation id, it keys a conversation's record.
   */
  readonly baseUrl: string;
  /** The API key (`OPEN-SANDBOX-API-KEY`); never shown in errors. */
  readonly apiKey?: string;
  /**
   * Attach to this existing sandbox instead of creating one; the runtime then
   * never deletes it. Not with a conversation (the store names its sandbox).
   */
  readonly sandboxId?: string;
  /** What a sandbox the runtime creates is made of. */
  readonly sandbox?: SandboxSpec;
  /**
   * Conversation mode: the folder inside the sandbox that holds the
   * workspace of each conversation (absolute POSIX). Default
   * `/workspace/conversations`; the workspace is `<root>/<conversationId>`.
   */
  readonly conversationsRoot?: string;
  /** Plain mode: where commands run and relative paths resolve. Default `/workspace`. */
  readonly cwd?: string;
  /** Plain mode: where skills are uploaded. Default `/workspace/skills`. */
  readonly skillsRoot?: string;
  /**
   * While the runtime is used, the sandbox's expiry is moved to now + its
   * timeout once this long has passed since the last renewal, in ms.
   * Default: half of `sandbox.timeoutSeconds`.
   */
  readonly renewIntervalMs?: number;
  /** How long to wait for a sandbox to be ready, in ms. Default 120 000. */
  readonly readyTimeoutMs?: number;
}

/**
 * The OpenSandbox runtime (`name: "opensandbox"`).
 *
 * **Plain**: on first real use it creates a sandbox through the lifecycle API
 * (image, timeout, resource limits, environment, metadata, entrypoint), or
 * attaches to `sandboxId`, waits until execd answers, then runs commands and
 * moves files through execd. Skills are uploaded into `skillsRoot`. `close()`
 * deletes the sandbox only when this runtime created it.
 *
 * **Conversation** (`conversationId`): the store maps the conversation (and
 * the server's base URL, not the API key) to its sandbox. The first runtime
 * creates the sandbox and records it (insert-if-absent: of two processes
 * racing, the loser deletes its own sandbox and attaches to the winner's);
 * later runtime objects attach to it and renew its expiry. A skill recorded
 * as prepared with the same digest is neither uploaded nor bootstrapped
 * again. The workspace is `<conversationsRoot>/<conversationId>`; file paths
 * and working directories are fenced inside it (lexically: the sandbox is
 * the boundary beyond). `close()` never deletes a conversation's sandbox;
 * {@linkcode destroy} removes its record and then the sandbox.
 *
 * No request is made before real use: constructing the runtime, `close()`
 * of a runtime never used, and a path refused by the fence make none. While
 * in use, the sandbox's expiry is renewed (when it has one) once half of its
 * timeout has passed since the last renewal.
 *
 * Needs `--allow-net` for the server and the sandbox's endpoints, and
 * `--allow-read` of the skills it uploads.
 *
 * @example A runtime is made without any request
 * ```ts
 * import { assert } from "@std/assert";
 * import { OpenSandboxSkillRuntime } from "@skillrun/skillrun/opensandbox";
 * const runtime = new OpenSandboxSkillRuntime({
 *   baseUrl: "http://127.0.0.1:9", // nothing listens here
 *   conversationId: "thread-1",
 * });
 * assert(runtime.defaultWorkingDirectory === "/workspace/conversations/thread-1");
 * await runtime.close(); // never used: no request
 * ```
 */
export class OpenSandboxSkillRuntime extends RemoteSkillRuntime {
  readonly #backend: OpenSandboxBackend;

  /**
   * Makes the runtime; makes no request.
   *
   * @param options The server, the sandbox, the mode.
   * @throws {TypeError} A bad URL, conversation id, path or variable, or
   * `sandboxId` together with a conversation.
   */
  constructor(options: OpenSandboxRuntimeOptions) {
    const lifecycle = new LifecycleClient({
      baseUrl: options.baseUrl,
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.requestTimeoutMs !== undefined
        ? { timeoutMs: options.requestTimeoutMs }
        : {}),
    });
    let conversation: RemoteSkillRuntimeOptions["conversation"];
    let key: ConversationKey | undefined;
    if (options.conversationId !== undefined) {
      if (options.sandboxId !== undefined) {
        throw new TypeError(
          "Cannot attach a conversation to a given sandboxId: the store names the conversation's sandbox",
        );
      }
      validateConversationId(options.conversationId);
      const root = options.conversationsRoot ?? "/workspace/conversations";
      if (!root.startsWith("/") || posix.normalize(root) === "/") {
        throw new TypeError(
          `Cannot use conversationsRoot "${root}": it must be an absolute POSIX path other than /`,
        );
      }
      const store = options.store ??
        (defaultStore ??= new MemoryConversationStore());
      key = normalizeConversationKey({
        serverUrl: lifecycle.baseUrl,
        conversationId: options.conversationId,
      });
      conversation = {
        store,
        conversationId: options.conversationId,
        workspace: posix.join(posix.normalize(root), options.conversationId),
      };
    }
    const backend = new OpenSandboxBackend({
      lifecycle,
      spec: options.sandbox ?? {},
      readyTimeoutMs: options.readyTimeoutMs ?? 120_000,
      ...(options.renewIntervalMs !== undefined
        ? { renewIntervalMs: options.renewIntervalMs }
        : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.requestTimeoutMs !== undefined
        ? { requestTimeoutMs: options.requestTimeoutMs }
        : {}),
      ...(options.sandboxId !== undefined
        ? { sandboxId: options.sandboxId }
        : {}),
      ...(conversation && key
        ? {
          conversation: {
            store: conversation.store,
            key,
            workspace: conversation.workspace,
          },
        }
        : {}),
    });
    super({
      name: "opensandbox",
      backend,
      ...(conversation ? { conversation } : {}),
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      ...(options.skillsRoot !== undefined
        ? { skillsRoot: options.skillsRoot }
        : {}),
      ...(options.env ? { env: options.env } : {}),
      ...(options.maxOutputBytes !== undefined
        ? { maxOutputBytes: options.maxOutputBytes }
        : {}),
      ...(options.copyPolicy ? { copyPolicy: options.copyPolicy } : {}),
      ...(options.search ? { search: options.search } : {}),
    });
    this.#backend = backend;
  }

  /**
   * The sandbox's id once the runtime is connected (or was given one), else
   * `undefined`.
   */
  get sandboxId(): string | undefined {
    return this.#backend.sandboxId;
  }

  /**
   * Whether `close()` deletes the sandbox: only a sandbox this runtime
   * created in plain mode (never an attached one, never a conversation's).
   */
  get ownsSandbox(): boolean {
    return this.#backend.owned;
  }
}

interface BackendOptions {
  readonly lifecycle: LifecycleClient;
  readonly spec: SandboxSpec;
  readonly readyTimeoutMs: number;
  readonly renewIntervalMs?: number;
  readonly fetch?: typeof fetch;
  readonly requestTimeoutMs?: number;
  readonly sandboxId?: string;
  readonly conversation?: {
    readonly store: ConversationStore;
    readonly key: ConversationKey;
    readonly workspace: string;
  };
}

/** Creates or attaches to a sandbox, and keeps its expiry renewed. */
class OpenSandboxBackend implements RemoteBackend {
  readonly serverUrl: string;
  readonly #options: BackendOptions;
  #sandboxId: string | undefined;
  #owned = false;
  #timeoutSeconds: number | null;
  #expiresAt: Date | null = null;
  #lastRenewal = 0;
  #renewing: Promise<void> | undefined;
  #closed = false;

  constructor(options: BackendOptions) {
    this.#options = options;
    this.serverUrl = options.lifecycle.baseUrl;
    this.#sandboxId = options.sandboxId;
    const timeout = options.spec.timeoutSeconds;
    this.#timeoutSeconds = timeout === undefined ? 600 : timeout;
  }

  get sandboxId(): string | undefined {
    return this.#sandboxId;
  }

  get owned(): boolean {
    return this.#owned;
  }

  async connect(): Promise<RemoteSession> {
    const { lifecycle, conversation } = this.#options;
    let sandbox: SandboxInfo;
    if (conversation) {
      sandbox = await this.#conversationSandbox();
    } else if (this.#options.sandboxId !== undefined) {
      sandbox = await this.#attach(this.#options.sandboxId);
    } else {
      sandbox = await lifecycle.create(this.#options.spec);
      this.#sandboxId = sandbox.id;
      this.#owned = true;
      this.#expiresAt = sandbox.expiresAt;
      this.#lastRenewal = Date.now();
    }
    try {
      const execd = await this.#execd(sandbox);
      if (conversation) {
        await execd.makeDirectories([
          posix.join(conversation.workspace, "skills"),
        ]);
      }
      return {
        files: execd,
        execute: (command: RemoteCommand): Promise<ExecuteResult> =>
          execd.run(command),
        touch: () => this.#touch(),
      };
    } catch (error) {
      // A sandbox made for a plain runtime that never became usable is ours
      // to remove; a conversation's stays for the next attempt.
      if (this.#owned && !conversation) {
        await lifecycle.delete(sandbox.id).catch(() => {});
        this.#owned = false;
        this.#sandboxId = undefined;
      }
      throw error;
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#renewing?.catch(() => {});
    if (this.#owned && !this.#options.conversation && this.#sandboxId) {
      await this.#options.lifecycle.delete(this.#sandboxId);
    }
  }

  async destroy(): Promise<void> {
    const { lifecycle, conversation } = this.#options;
    if (!conversation) {
      const id = this.#sandboxId;
      if (id !== undefined) await lifecycle.delete(id);
      return;
    }
    const record = await conversation.store.get(conversation.key);
    if (!record) return;
    await conversation.store.delete(conversation.key, {
      sandboxId: record.sandboxId,
    });
    await lifecycle.delete(record.sandboxId);
  }

  /** The conversation's sandbox: the recorded one, or a new one recorded. */
  async #conversationSandbox(): Promise<SandboxInfo> {
    const { lifecycle } = this.#options;
    const { store, key, workspace } = this.#options.conversation!;
    const record = await store.get(key);
    if (record) {
      const found = await lifecycle.get(record.sandboxId);
      if (found && !GONE_STATES.has(found.state)) {
        return await this.#attached(found, true);
      }
      // Its sandbox is gone (expired, deleted): start the conversation anew.
      await store.delete(key, { sandboxId: record.sandboxId });
    }
    const created = await lifecycle.create({
      ...this.#options.spec,
      metadata: {
        ...this.#options.spec.metadata,
        "skillrun.conversation": key.conversationId,
      },
    });
    const { record: winner, created: inserted } = await store.create(key, {
      sandboxId: created.id,
      workspaceRoot: workspace,
      expiresAt: created.expiresAt?.getTime() ?? null,
    });
    if (inserted) {
      this.#sandboxId = created.id;
      this.#expiresAt = created.expiresAt;
      this.#lastRenewal = Date.now();
      return created;
    }
    // Another runtime recorded its sandbox first: use that one, drop ours.
    await lifecycle.delete(created.id).catch(() => {});
    return await this.#attach(winner.sandboxId);
  }

  async #attach(id: string): Promise<SandboxInfo> {
    const found = await this.#options.lifecycle.get(id);
    if (!found) {
      throw new Error(
        `Cannot attach to sandbox "${id}": the server does not know it`,
      );
    }
    if (GONE_STATES.has(found.state)) {
      throw new Error(
        `Cannot attach to sandbox "${id}": it is ${found.state}${
          found.detail ? ` (${found.detail})` : ""
        }`,
      );
    }
    return await this.#attached(
      found,
      this.#options.conversation !== undefined,
    );
  }

  async #attached(found: SandboxInfo, renew: boolean): Promise<SandboxInfo> {
    this.#sandboxId = found.id;
    this.#expiresAt = found.expiresAt;
    if (renew) await this.#renew();
    return found;
  }

  /** Resolves execd's endpoint and waits until `/ping` answers. */
  async #execd(sandbox: SandboxInfo): Promise<ExecdClient> {
    const { lifecycle, readyTimeoutMs } = this.#options;
    const deadline = Date.now() + readyTimeoutMs;
    const endpoint = await lifecycle.endpoint(sandbox.id, EXECD_PORT);
    const execd = new ExecdClient(
      new HttpClient({
        baseUrl: endpoint.url,
        headers: endpoint.headers,
        secretHeaders: Object.keys(endpoint.headers),
        ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
        ...(this.#options.requestTimeoutMs !== undefined
          ? { timeoutMs: this.#options.requestTimeoutMs }
          : {}),
      }),
    );
    let delay = 50;
    let polls = 0;
    while (!(await execd.ping())) {
      polls++;
      if (polls % 10 === 0) {
        const now = await lifecycle.get(sandbox.id);
        if (!now || GONE_STATES.has(now.state)) {
          throw new Error(
            `Cannot use sandbox "${sandbox.id}": it is ${
              now ? now.state : "gone"
            }${now?.detail ? ` (${now.detail})` : ""}`,
          );
        }
      }
      if (Date.now() + delay > deadline) {
        throw new Error(
          `Cannot use sandbox "${sandbox.id}": execd did not answer within ${readyTimeoutMs} ms`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 1_000);
    }
    return execd;
  }

  /** On each use: renew once half of the timeout has passed. */
  #touch(): void {
    if (this.#timeoutSeconds === null || this.#closed || this.#renewing) {
      return;
    }
    const interval = this.#options.renewIntervalMs ??
      this.#timeoutSeconds * 500;
    if (Date.now() - this.#lastRenewal < interval) return;
    this.#renewing = this.#renew().catch(() => {}).finally(() => {
      this.#renewing = undefined;
    });
  }

  async #renew(): Promise<void> {
    const id = this.#sandboxId;
    if (id === undefined || this.#timeoutSeconds === null) return;
    const wanted = new Date(Date.now() + this.#timeoutSeconds * 1000);
    // A sandbox without expiry, or already expiring later, needs nothing.
    if (!this.#expiresAt || this.#expiresAt.getTime() >= wanted.getTime()) {
      this.#lastRenewal = Date.now();
      return;
    }
    this.#expiresAt = await this.#options.lifecycle.renew(id, wanted);
    this.#lastRenewal = Date.now();
    const conversation = this.#options.conversation;
    if (conversation) {
      await conversation.store.renew(
        conversation.key,
        this.#expiresAt.getTime(),
      );
    }
  }
}
