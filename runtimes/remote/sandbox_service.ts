/**
 * The kit every remote kind is built on (OpenSandbox, E2B, Vercel Sandbox,
 * and AIO, whose one container is attached and whose conversation folders
 * are its "sandboxes"): a kind implements the one pair of hooks, a small
 * {@linkcode SandboxService} (create, get, delete, open a session that runs
 * a command and moves files, say whether it is ready, renew the expiry) and
 * the `RemoteSession` its `open` returns, and
 * {@linkcode SandboxServiceBackend} does the rest: create or attach, the
 * conversation store's insert-if-absent race (the loser deletes its sandbox
 * and attaches to the winner's), readiness polling, renewal of the expiry
 * while the runtime is used, and what `close()` and `destroy()` remove.
 * {@linkcode remoteConversation} turns the conversation options every kind
 * shares into the runtime's conversation, with one default store per
 * process; {@linkcode SandboxServiceRuntime} puts the three together.
 *
 * A new kind (a folder beside `opensandbox/`) writes:
 *
 * - its options (`interface XSkillRuntimeOptions extends RemoteRuntimeCommonOptions`:
 *   address, credentials, what a sandbox is made of);
 * - a {@linkcode SandboxService}: `create`, `get`, `gone`, `delete`, `renew`
 *   (optional) and `open`, which returns the sandbox's session: `commands`
 *   (the kit's command protocol, `runtimes/remote/command.ts`: `start` a
 *   command and name it, `kill` it by its id, the server's backstop; the
 *   deadline, abort, grace, line ends and result are the kit's), `files`
 *   (four calls: `stat`, `list`, `open` for reading, `upload` for writing)
 *   and `isReady`;
 * - `class XSkillRuntime extends SandboxServiceRuntime<XSandbox>` whose
 *   constructor calls `super({ ...options, name, service, conversationsRoot })`;
 * - a `mod.ts` exporting its own runtime, options and errors only (what the
 *   kinds share comes from `@skillrun/skillrun` and
 *   `@skillrun/skillrun/runtime`, once);
 * - its test server in `tests/servers/`.
 *
 * Upload batching, resumable downloads, the workspace fence, in-sandbox
 * search, preparation and conversation records come from the kit.
 *
 * @module
 */
import { checkNumber } from "../../_internal/check_number.ts";
import { EventSink, type SkillEventListener } from "../../observe/events.ts";
import { posix } from "../../_internal/std.ts";
import { validateConversationId } from "../../workspace/conversation.ts";
import {
  type ConversationKey,
  type ConversationStore,
  MemoryConversationStore,
  normalizeConversationKey,
} from "../stores/conversation_store.ts";
import {
  type RemoteBackend,
  type RemoteCommand,
  type RemoteConversation,
  type RemoteRuntimeCommonOptions,
  type RemoteSession,
  RemoteSkillRuntime,
  runOn,
  runtimeOptionsOf,
} from "./runtime.ts";
import { shellQuote } from "./shell.ts";

/** The store conversations use when none is given: one per process. */
let defaultStore: ConversationStore | undefined;

/**
 * The conversation store of this process that remote runtimes use when given
 * none (in memory; a `KvConversationStore` shares conversations between
 * processes).
 *
 * @example One store for every kind
 * ```ts
 * import { assert } from "@std/assert";
 * import { defaultConversationStore } from "./sandbox_service.ts";
 * assert(defaultConversationStore() === defaultConversationStore());
 * ```
 *
 * @returns The store.
 */
export function defaultConversationStore(): ConversationStore {
  return defaultStore ??= new MemoryConversationStore();
}

/** What {@linkcode remoteConversation} takes. */
export interface RemoteConversationOptions {
  /** The server's base URL (no credentials): with the id, the record's key. */
  readonly serverUrl: string;
  /** The conversation id (`[A-Za-z0-9][A-Za-z0-9._-]{0,127}`). */
  readonly conversationId: string;
  /** The folder holding each conversation's workspace (absolute POSIX, not `/`). */
  readonly conversationsRoot: string;
  /** Where records live. Default {@linkcode defaultConversationStore}. */
  readonly store?: ConversationStore | undefined;
}

/** A remote runtime's conversation with its key and root. */
export interface ResolvedRemoteConversation extends RemoteConversation {
  /** The record's key in the store. */
  readonly key: ConversationKey;
  /** The conversations root, normalised. */
  readonly conversationsRoot: string;
}

/**
 * Checks a kind's conversation options and makes the runtime's conversation:
 * the workspace is `<conversationsRoot>/<conversationId>`, the store the
 * given one or the process's default.
 *
 * Needs no permission.
 *
 * @example A conversation's workspace and key
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { remoteConversation } from "./sandbox_service.ts";
 * const conversation = remoteConversation({
 *   serverUrl: "http://sandbox.invalid/v1",
 *   conversationId: "thread-1",
 *   conversationsRoot: "/workspace/conversations/",
 * });
 * assertEquals(conversation.workspace, "/workspace/conversations/thread-1");
 * assertEquals(conversation.key.conversationId, "thread-1");
 * ```
 *
 * @param options The server, the id, the root, the store.
 * @returns The conversation.
 * @throws {TypeError} A bad conversation id or root.
 */
export function remoteConversation(
  options: RemoteConversationOptions,
): ResolvedRemoteConversation {
  validateConversationId(options.conversationId);
  const given = options.conversationsRoot;
  if (
    typeof given !== "string" || !given.startsWith("/") ||
    posix.normalize(given) === "/"
  ) {
    throw new TypeError(
      `Cannot use conversationsRoot "${given}": it must be an absolute POSIX path other than /`,
    );
  }
  const root = posix.normalize(given).replace(/\/$/, "");
  return {
    store: options.store ?? defaultConversationStore(),
    conversationId: options.conversationId,
    workspace: posix.join(root, options.conversationId),
    key: normalizeConversationKey({
      serverUrl: options.serverUrl,
      conversationId: options.conversationId,
    }),
    conversationsRoot: root,
  };
}

/**
 * The options every kind built on {@linkcode SandboxServiceRuntime} takes
 * beside the common ones; each kind's options say its defaults of the
 * folders.
 */
export interface SandboxKindOptions extends RemoteRuntimeCommonOptions {
  /**
   * Attach to this existing sandbox instead of creating one; the runtime then
   * never deletes it. Not with a conversation (the store names its sandbox).
   */
  readonly sandboxId?: string;
  /**
   * Conversation mode: the folder inside the sandbox that holds the
   * workspace of each conversation (absolute POSIX); the workspace is
   * `<root>/<conversationId>`.
   */
  readonly conversationsRoot?: string;
  /** Plain mode: where commands run and relative paths resolve. */
  readonly cwd?: string;
  /** Plain mode: where skills are uploaded. */
  readonly skillsRoot?: string;
  /**
   * While the runtime is used, the sandbox's expiry is moved to now + its
   * timeout once this long has passed since the last renewal, in ms.
   * Default: half of the sandbox's timeout.
   */
  readonly renewIntervalMs?: number;
  /** How long to wait for a sandbox to be ready, in ms. Default 120 000. */
  readonly readyTimeoutMs?: number;
}

/** A sandbox as its service describes it. */
export interface ServiceSandbox {
  /** Its id. */
  readonly id: string;
  /** When it expires, or `null` when it does not. */
  readonly expiresAt: Date | null;
}

/**
 * A sandbox's calls, as a {@linkcode SandboxService} opens them.
 *
 * @deprecated Use {@linkcode RemoteSession}: the one session hook
 * (`isReady` and `makeDirectories` are optional members of it).
 */
export type ServiceSession = RemoteSession;

/** Options of {@linkcode SandboxService.create}. */
export interface ServiceCreateOptions {
  /** Entries to tag the sandbox with (e.g. its conversation). */
  readonly metadata: Readonly<Record<string, string>>;
  /** Stops the call. */
  readonly signal?: AbortSignal;
}

/**
 * What a sandbox service (a kind) implements for
 * {@linkcode SandboxServiceBackend}. Every call may throw the service's own
 * errors (for example a `RemoteHttpError`); none may show a credential.
 */
export interface SandboxService<S extends ServiceSandbox = ServiceSandbox> {
  /** The service's base URL without credentials (keys conversations). */
  readonly serverUrl: string;
  /**
   * Creates a sandbox (often not ready yet). Never retried: a creation whose
   * answer is lost should clean up after itself.
   */
  create(options: ServiceCreateOptions): Promise<S>;
  /** Describes a sandbox, or `null` when the service does not know it. */
  get(id: string, signal?: AbortSignal): Promise<S | null>;
  /**
   * Why a sandbox can never run again (`Terminated`, `Failed (out of
   * memory)`), or `undefined` while it can.
   */
  gone(sandbox: S): string | undefined;
  /** Deletes a sandbox; one already gone is not an error. */
  delete(id: string, signal?: AbortSignal): Promise<unknown>;
  /** Opens a sandbox's command and file calls (without waiting for it). */
  open(sandbox: S, signal?: AbortSignal): Promise<RemoteSession>;
  /**
   * Moves a sandbox's expiry and answers the expiry the service set. Without
   * it the expiry is never renewed.
   */
  renew?(id: string, expiresAt: Date, signal?: AbortSignal): Promise<Date>;
  /**
   * Called by `close()` for a sandbox the backend keeps (a conversation's)
   * once it was used, e.g. to pause it until the next attach (E2B). Without
   * it the sandbox is left running until its expiry.
   */
  release?(id: string, signal?: AbortSignal): Promise<void>;
  /**
   * Called once by `close()`, last (after a delete or a release), connected
   * or not: releases what the service holds besides the sandbox (e.g. AIO's
   * bash sessions). Makes no request when nothing was opened.
   */
  close?(): Promise<void>;
}

/** Options of {@linkcode SandboxServiceBackend}. */
export interface SandboxServiceBackendOptions<S extends ServiceSandbox> {
  /** The kind's calls. */
  readonly service: SandboxService<S>;
  /**
   * Attach to this sandbox instead of creating one; it is never deleted by
   * `close()`. Not with a conversation (the store names its sandbox).
   */
  readonly sandboxId?: string;
  /** Conversation mode: the store, the key and the workspace. */
  readonly conversation?: Pick<
    ResolvedRemoteConversation,
    "store" | "key" | "workspace"
  >;
  /** Metadata of every sandbox created. */
  readonly metadata?: Readonly<Record<string, string>>;
  /**
   * The sandbox's lifetime in seconds, renewed while the runtime is used:
   * the expiry is moved to now + this. `null`: never renewed. Default 600.
   */
  readonly timeoutSeconds?: number | null;
  /** Time between renewals while used, in ms. Default half the lifetime. */
  readonly renewIntervalMs?: number;
  /** How long to wait for a sandbox to be ready, in ms. Default 120 000. */
  readonly readyTimeoutMs?: number;
  /** What answers when the sandbox is ready, for messages. Default `the sandbox`. */
  readonly readinessName?: string;
  /** Receives `runtime_lifecycle` events (created, attached, renewed, deleted). */
  readonly onEvent?: SkillEventListener;
  /** The runtime's kind, named in lifecycle events. Default `sandbox`. */
  readonly runtimeName?: string;
}

/** The metadata entry naming a conversation's sandbox. */
const CONVERSATION_TAG = "skillrun.conversation";

/**
 * A {@linkcode RemoteBackend} over a {@linkcode SandboxService}: the
 * sandbox is created (or attached) on the first call that needs it, never
 * before.
 *
 * **Plain**: it creates a sandbox, or attaches to `sandboxId`; `close()`
 * deletes only a sandbox it created (one that never became ready is deleted
 * at once).
 *
 * **Conversation**: the store's record names the sandbox. Without a record
 * (or when its sandbox is gone) a new sandbox is created and recorded with
 * the store's insert-if-absent: of two runtimes racing, the loser deletes its
 * own sandbox and attaches to the winner's. Attaching renews the expiry; the
 * workspace folder (and its `skills`) is made. `close()` never deletes a
 * conversation's sandbox; `destroy()` removes the record and then the
 * sandbox.
 *
 * While the runtime is used, the expiry is moved to now + `timeoutSeconds`
 * once `renewIntervalMs` has passed since the last renewal (never when the
 * sandbox already expires later, or has no expiry).
 *
 * @example A service of your own (here, sandboxes in memory)
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import {
 *   RemoteSkillRuntime,
 *   SandboxServiceBackend,
 *   type ServiceSandbox,
 * } from "@skillrun/skillrun/runtime";
 *
 * const sandboxes = new Map<string, ServiceSandbox>();
 * const backend = new SandboxServiceBackend({
 *   timeoutSeconds: null,
 *   service: {
 *     serverUrl: "http://sandboxes.invalid",
 *     create: () => {
 *       const sandbox = { id: crypto.randomUUID(), expiresAt: null };
 *       sandboxes.set(sandbox.id, sandbox);
 *       return Promise.resolve(sandbox);
 *     },
 *     get: (id) => Promise.resolve(sandboxes.get(id) ?? null),
 *     gone: () => undefined,
 *     delete: (id) => Promise.resolve(sandboxes.delete(id)),
 *     open: () =>
 *       Promise.resolve({
 *         files: {} as never,
 *         isReady: () => Promise.resolve(true),
 *         execute: (command) =>
 *           Promise.resolve({
 *             stdout: `ran in ${command.cwd}\n`, stderr: "", exitCode: 0,
 *             timedOut: false, aborted: false, stdoutBytes: 0, stderrBytes: 0,
 *             stdoutTruncated: false, stderrTruncated: false, durationMs: 0,
 *           }),
 *       }),
 *   },
 * });
 * const runtime = new RemoteSkillRuntime({ name: "memory", backend, cwd: "/w" });
 * assertEquals(sandboxes.size, 0); // nothing before real use
 * assertEquals((await runtime.execute({ command: "pwd" })).stdout, "ran in /w\n");
 * assertEquals([sandboxes.size, backend.owned], [1, true]);
 * await runtime.close(); // deletes the sandbox it created
 * assertEquals(sandboxes.size, 0);
 * ```
 */
export class SandboxServiceBackend<S extends ServiceSandbox = ServiceSandbox>
  implements RemoteBackend {
  /** The service's base URL. */
  readonly serverUrl: string;
  readonly #options: SandboxServiceBackendOptions<S>;
  readonly #service: SandboxService<S>;
  readonly #timeoutSeconds: number | null;
  readonly #readyTimeoutMs: number;
  #sandboxId: string | undefined;
  #owned = false;
  #expiresAt: Date | null = null;
  #lastRenewal = 0;
  #renewing: Promise<void> | undefined;
  #closed = false;
  #connected = false;

  /**
   * Makes the backend; makes no request.
   *
   * @param options The service, the mode, the lifetime.
   * @throws {TypeError} `sandboxId` together with a conversation.
   * @throws {RangeError} A bad lifetime, interval or ready timeout.
   */
  constructor(options: SandboxServiceBackendOptions<S>) {
    if (options.conversation && options.sandboxId !== undefined) {
      throw new TypeError(
        "Cannot attach a conversation to a given sandboxId: the store names the conversation's sandbox",
      );
    }
    this.#options = options;
    this.#service = options.service;
    this.serverUrl = options.service.serverUrl;
    this.#sandboxId = options.sandboxId;
    const timeout = options.timeoutSeconds;
    this.#timeoutSeconds = timeout === undefined ? 600 : timeout;
    this.#readyTimeoutMs = options.readyTimeoutMs ?? 120_000;
    for (
      const [name, value] of [
        ["timeoutSeconds", this.#timeoutSeconds ?? 1],
        ["renewIntervalMs", options.renewIntervalMs ?? 1],
        ["readyTimeoutMs", this.#readyTimeoutMs],
      ] as const
    ) {
      checkNumber(value, name, "non-negative number");
    }
  }

  /** The sandbox's id once connected (or given), else `undefined`. */
  get sandboxId(): string | undefined {
    return this.#sandboxId;
  }

  /** Whether `close()` deletes the sandbox (one created in plain mode). */
  get owned(): boolean {
    return this.#owned;
  }

  /**
   * Creates or attaches to the sandbox, waits until it is ready and (in
   * conversation mode) makes the workspace.
   *
   * @returns The sandbox's session.
   * @throws {Error} The sandbox is unknown or gone, or never became ready.
   */
  async connect(): Promise<RemoteSession> {
    const { conversation } = this.#options;
    let sandbox: S;
    if (conversation) {
      sandbox = await this.#conversationSandbox();
    } else if (this.#options.sandboxId !== undefined) {
      sandbox = await this.#attach(this.#options.sandboxId);
    } else {
      sandbox = await this.#service.create({
        metadata: { ...this.#options.metadata },
      });
      this.#sandboxId = sandbox.id;
      this.#owned = true;
      this.#created(sandbox);
    }
    try {
      const session = await this.#ready(sandbox);
      if (conversation) {
        await makeDirectories(session, [
          posix.join(conversation.workspace, "skills"),
        ]);
      }
      this.#connected = true;
      return {
        files: session.files,
        ...(session.commands ? { commands: session.commands } : {}),
        ...(session.execute
          ? { execute: (command: RemoteCommand) => session.execute!(command) }
          : {}),
        ...(session.startBackground
          ? {
            startBackground: (command: RemoteCommand) =>
              session.startBackground!(command),
          }
          : {}),
        ...(session.attachBackground
          ? {
            attachBackground: (
              id: string,
              sinks: Pick<RemoteCommand, "onStdout" | "onStderr">,
            ) => session.attachBackground!(id, sinks),
          }
          : {}),
        touch: () => this.#touch(),
      };
    } catch (error) {
      // A sandbox made for a plain runtime that never became usable is ours
      // to remove; a conversation's stays for the next attempt.
      if (this.#owned && !conversation) {
        await this.#service.delete(sandbox.id).catch(() => {});
        this.#owned = false;
        this.#sandboxId = undefined;
      }
      throw error;
    }
  }

  /**
   * Deletes the sandbox when this backend created it in plain mode; never a
   * conversation's. Idempotent.
   *
   * @returns When done.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#renewing?.catch(() => {});
    try {
      if (this.#owned && !this.#options.conversation && this.#sandboxId) {
        await this.#delete(this.#sandboxId);
      } else if (
        this.#options.conversation && this.#connected && this.#sandboxId &&
        this.#service.release
      ) {
        await this.#service.release(this.#sandboxId);
      }
    } finally {
      await this.#service.close?.();
    }
  }

  /**
   * Conversation mode: removes the record and then its sandbox. Plain mode:
   * deletes the sandbox.
   *
   * @returns When done.
   */
  async destroy(): Promise<void> {
    const { conversation } = this.#options;
    if (!conversation) {
      const id = this.#sandboxId;
      if (id !== undefined) await this.#delete(id);
      return;
    }
    const record = await conversation.store.get(conversation.key);
    if (!record) return;
    await conversation.store.delete(conversation.key, {
      sandboxId: record.sandboxId,
    });
    await this.#delete(record.sandboxId);
  }

  /** The conversation's sandbox: the recorded one, or a new one recorded. */
  async #conversationSandbox(): Promise<S> {
    const { store, key, workspace } = this.#options.conversation!;
    const record = await store.get(key);
    if (record) {
      const found = await this.#service.get(record.sandboxId);
      if (found && this.#service.gone(found) === undefined) {
        return await this.#attached(found, true);
      }
      // Its sandbox is gone (expired, deleted): start the conversation anew.
      await store.delete(key, { sandboxId: record.sandboxId });
    }
    const created = await this.#service.create({
      metadata: {
        ...this.#options.metadata,
        [CONVERSATION_TAG]: key.conversationId,
      },
    });
    const { record: winner, created: inserted } = await store.create(key, {
      sandboxId: created.id,
      workspaceRoot: workspace,
      expiresAt: created.expiresAt?.getTime() ?? null,
    });
    if (inserted) {
      this.#sandboxId = created.id;
      this.#created(created);
      return created;
    }
    // Another runtime recorded its sandbox first: use that one, drop ours
    // (unless the service gave both the same one).
    if (winner.sandboxId !== created.id) {
      await this.#service.delete(created.id).catch(() => {});
    }
    return await this.#attach(winner.sandboxId);
  }

  #lifecycle(
    action: "created" | "attached" | "renewed" | "deleted",
    sandboxId: string,
  ): void {
    const listener = this.#options.onEvent;
    if (!listener) return;
    this.#events ??= new EventSink(listener);
    this.#events.emit({
      type: "runtime_lifecycle",
      action,
      runtime: this.#options.runtimeName ?? "sandbox",
      sandboxId,
    });
  }

  #events: EventSink | undefined;

  async #delete(id: string): Promise<void> {
    await this.#service.delete(id);
    this.#lifecycle("deleted", id);
  }

  #created(sandbox: S): void {
    this.#lifecycle("created", sandbox.id);
    this.#expiresAt = sandbox.expiresAt;
    this.#lastRenewal = Date.now();
  }

  async #attach(id: string): Promise<S> {
    const found = await this.#service.get(id);
    if (!found) {
      throw new Error(
        `Cannot attach to sandbox "${id}": the server does not know it`,
      );
    }
    const gone = this.#service.gone(found);
    if (gone !== undefined) {
      throw new Error(`Cannot attach to sandbox "${id}": it is ${gone}`);
    }
    return await this.#attached(
      found,
      this.#options.conversation !== undefined,
    );
  }

  async #attached(found: S, renew: boolean): Promise<S> {
    this.#sandboxId = found.id;
    this.#lifecycle("attached", found.id);
    this.#expiresAt = found.expiresAt;
    if (renew) await this.#renew();
    return found;
  }

  /** Opens the sandbox and polls until it answers (checking it is not gone). */
  async #ready(sandbox: S): Promise<RemoteSession> {
    const deadline = Date.now() + this.#readyTimeoutMs;
    const session = await this.#service.open(sandbox);
    let delay = 50;
    let polls = 0;
    while (session.isReady && !(await session.isReady())) {
      polls++;
      if (polls % 10 === 0) {
        const now = await this.#service.get(sandbox.id);
        const gone = now ? this.#service.gone(now) : "gone";
        if (gone !== undefined) {
          throw new Error(`Cannot use sandbox "${sandbox.id}": it is ${gone}`);
        }
      }
      if (Date.now() + delay > deadline) {
        throw new Error(
          `Cannot use sandbox "${sandbox.id}": ${
            this.#options.readinessName ?? "the sandbox"
          } did not answer within ${this.#readyTimeoutMs} ms`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 1_000);
    }
    return session;
  }

  /** On each use: renew once the interval has passed since the last renewal. */
  #touch(): void {
    if (
      this.#timeoutSeconds === null || !this.#service.renew || this.#closed ||
      this.#renewing
    ) {
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
    const renew = this.#service.renew?.bind(this.#service);
    if (id === undefined || this.#timeoutSeconds === null || !renew) return;
    const wanted = new Date(Date.now() + this.#timeoutSeconds * 1000);
    // A sandbox without expiry, or already expiring later, needs nothing.
    if (!this.#expiresAt || this.#expiresAt.getTime() >= wanted.getTime()) {
      this.#lastRenewal = Date.now();
      return;
    }
    this.#expiresAt = await renew(id, wanted);
    this.#lastRenewal = Date.now();
    this.#lifecycle("renewed", id);
    const conversation = this.#options.conversation;
    if (conversation) {
      await conversation.store.renew(
        conversation.key,
        this.#expiresAt.getTime(),
      );
    }
  }
}

/** Options of {@linkcode SandboxServiceRuntime}. */
export interface SandboxServiceRuntimeOptions<S extends ServiceSandbox>
  extends RemoteRuntimeCommonOptions {
  /** The runtime's name, e.g. `opensandbox`. */
  readonly name: string;
  /** The kind's calls. */
  readonly service: SandboxService<S>;
  /**
   * Conversation mode: the folder holding each conversation's workspace
   * (absolute POSIX); the kind gives its default.
   */
  readonly conversationsRoot: string;
  /** Plain mode: where commands run and relative paths resolve. */
  readonly cwd?: string | undefined;
  /** Plain mode: where skills are uploaded. */
  readonly skillsRoot?: string | undefined;
  /** See {@linkcode SandboxServiceBackendOptions.sandboxId}. */
  readonly sandboxId?: string | undefined;
  /** See {@linkcode SandboxServiceBackendOptions.metadata}. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** See {@linkcode SandboxServiceBackendOptions.timeoutSeconds}. */
  readonly timeoutSeconds?: number | null | undefined;
  /** See {@linkcode SandboxServiceBackendOptions.renewIntervalMs}. */
  readonly renewIntervalMs?: number | undefined;
  /** See {@linkcode SandboxServiceBackendOptions.readyTimeoutMs}. */
  readonly readyTimeoutMs?: number | undefined;
  /** See {@linkcode SandboxServiceBackendOptions.readinessName}. */
  readonly readinessName?: string | undefined;
}

/**
 * A remote runtime over a {@linkcode SandboxService}: the conversation
 * options, the {@linkcode SandboxServiceBackend} and the runtime in one. A
 * kind's runtime class is its options, its service and this
 * (`class E2BSkillRuntime extends SandboxServiceRuntime<E2BSandbox>`).
 *
 * @example A runtime over a service (no request before real use)
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { SandboxServiceRuntime } from "@skillrun/skillrun/runtime";
 * const runtime = new SandboxServiceRuntime({
 *   name: "nowhere",
 *   conversationsRoot: "/home/user/conversations",
 *   conversationId: "thread-1",
 *   service: {
 *     serverUrl: "http://sandboxes.invalid",
 *     create: () => Promise.reject(new Error("offline")),
 *     get: () => Promise.resolve(null),
 *     gone: () => undefined,
 *     delete: () => Promise.resolve(),
 *     open: () => Promise.reject(new Error("offline")),
 *   },
 * });
 * assertEquals(runtime.workspace, "/home/user/conversations/thread-1");
 * assertEquals(runtime.sandboxId, undefined);
 * await runtime.close(); // never used: nothing was called
 * ```
 */
export class SandboxServiceRuntime<S extends ServiceSandbox = ServiceSandbox>
  extends RemoteSkillRuntime {
  readonly #backend: SandboxServiceBackend<S>;

  /**
   * Makes the runtime; makes no request.
   *
   * @param options The service, the mode, the lifetime, the common options.
   * @throws {TypeError} A bad conversation id, root, path or variable, or
   * `sandboxId` together with a conversation.
   */
  constructor(options: SandboxServiceRuntimeOptions<S>) {
    const conversation = options.conversationId === undefined
      ? undefined
      : remoteConversation({
        serverUrl: options.service.serverUrl,
        conversationId: options.conversationId,
        conversationsRoot: options.conversationsRoot,
        store: options.store,
      });
    const backend = new SandboxServiceBackend<S>({
      service: options.service,
      ...(conversation ? { conversation } : {}),
      ...definedOnly({
        sandboxId: options.sandboxId,
        metadata: options.metadata,
        timeoutSeconds: options.timeoutSeconds,
        renewIntervalMs: options.renewIntervalMs,
        readyTimeoutMs: options.readyTimeoutMs,
        readinessName: options.readinessName,
        onEvent: options.onEvent,
      }),
      runtimeName: options.name,
    });
    super({
      name: options.name,
      backend,
      ...(conversation ? { conversation } : {}),
      ...runtimeOptionsOf(options),
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

/** The entries whose value is not `undefined` (for exact optional types). */
function definedOnly<T extends object>(
  entries: T,
): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(
    Object.entries(entries).filter(([, value]) => value !== undefined),
  ) as { [K in keyof T]?: Exclude<T[K], undefined> };
}

/** Makes folders through the session's own call, or `mkdir -p`. */
async function makeDirectories(
  session: RemoteSession,
  paths: readonly string[],
): Promise<void> {
  if (session.makeDirectories) {
    await session.makeDirectories(paths);
    return;
  }
  const result = await runOn(session, {
    command: `mkdir -p -- ${paths.map(shellQuote).join(" ")}`,
    cwd: "/",
    env: {},
    timeoutMs: 60_000,
    maxOutputBytes: 4096,
  });
  if (result.exitCode !== 0) {
    throw new Error(
      `Cannot make ${JSON.stringify(paths[0])}: ${
        result.stderr.trim().slice(0, 300) || `exit code ${result.exitCode}`
      }`,
    );
  }
}
