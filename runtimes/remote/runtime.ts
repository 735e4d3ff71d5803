/**
 * {@linkcode RemoteSkillRuntime}: what every remote runtime shares. A server
 * kind lends a {@linkcode RemoteBackend} (how to reach a sandbox, run a
 * command, move files); this base adds the lazy connection, the preparation
 * engine with upload, the conversation records, the fenced file system and
 * the search engine.
 *
 * @module
 */
import { abortable } from "../../_internal/async.ts";
import { closeBackgroundCommands } from "../background.ts";
import {
  type EventSink,
  eventSink,
  observeExecute,
  observePrepare,
  type SkillEventListener,
} from "../../observe/events.ts";
import { skillKey } from "../_skill_key.ts";
import type { Skill } from "../../skill/types.ts";
import { checkEnv, type SkillRuntimeConfig } from "../config.ts";
import { checkExecuteRequest, checkMaxOutputBytes } from "../request.ts";
import {
  type MaterializeOptions,
  type MaterializeResult,
  PreparationEngine,
} from "../prepare.ts";
import {
  type BackgroundProcess,
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecuteRequest,
  type ExecuteResult,
  type PreparedSkill,
  type PrepareRequest,
  type SearchEngine,
  type SkillRuntime,
  type SkillRuntimeFileSystem,
} from "../types.ts";
import {
  type CopyPolicy,
  stableSkillFolderName,
} from "../../workspace/copy.ts";
import type {
  ConversationKey,
  ConversationStore,
} from "../stores/conversation_store.ts";
import { skillDigest } from "../../workspace/skill_digest.ts";
import { ShellSearch } from "../../search/shell.ts";
import { posix } from "../../_internal/std.ts";
import { redactError, Redactor } from "../../_internal/redact.ts";
import { type RemoteFileOps, RemoteFileSystem } from "./fs.ts";
import { RemoteHttpError } from "./errors.ts";
import { resolveRemotePath } from "./paths.ts";
import { collectUploadEntries } from "./upload.ts";
import {
  checkedRemoteCommand,
  type RemoteCommandKind,
  runRemoteCommand,
} from "./command.ts";
import {
  type AttachedBackground,
  attachSandboxBackground,
  startSandboxBackground,
} from "./background.ts";
import {
  ACCEPTS_REMOTE_ORIGINS,
  remoteOriginOf,
  type RemoteSkillOrigin,
} from "./origin.ts";

/** A command as a backend runs it: everything resolved. */
export interface RemoteCommand {
  /** The command, for `bash -c`. */
  readonly command: string;
  /** The absolute POSIX folder it runs in. */
  readonly cwd: string;
  /** The runtime's whole environment for it (option, skills, request). */
  readonly env: Readonly<Record<string, string>>;
  /** The deadline, in ms; at it the backend stops the remote command. */
  readonly timeoutMs: number;
  /** The most bytes of each stream kept. */
  readonly maxOutputBytes: number;
  /** Stops the command; the backend stops the remote command. */
  readonly signal?: AbortSignal;
  /** Receives standard output as it arrives (see `ExecuteStreams`). */
  readonly onStdout?: (chunk: Uint8Array) => void;
  /** Receives standard error as it arrives. */
  readonly onStderr?: (chunk: Uint8Array) => void;
}

/**
 * A connected sandbox: the one session hook of every remote kind, as a
 * {@linkcode SandboxService}'s `open` returns it (and as a deprecated
 * {@linkcode RemoteBackend}'s `connect`): its commands (the kit's protocol,
 * {@linkcode RemoteCommandKind}: the kit keeps the deadline, abort, grace,
 * line ends and result) or a whole `execute` of its own, its file calls,
 * and optionally its own background commands, readiness and folder making.
 */
export interface RemoteSession {
  /** How the sandbox starts and kills commands (see `runRemoteCommand`). */
  readonly commands?: RemoteCommandKind;
  /**
   * Runs one command (never retried); stops it remotely on deadline or
   * abort. Only when the session gives no `commands`.
   */
  execute?(command: RemoteCommand): Promise<ExecuteResult>;
  /**
   * Starts a command with the server's own background facility and returns
   * once the server has it (its id): the output goes to the command's
   * `onStdout`/`onStderr` as each poll fetches it, bounded by the caller;
   * `timeoutMs` is the command's whole life (the longest timeout: none).
   * Without it, background commands run on {@linkcode RemoteSession.execute}.
   */
  startBackground?(command: RemoteCommand): Promise<BackgroundProcess>;
  /**
   * Finds a command of the server's own background facility by its id, when
   * another runtime on the same sandbox started it; `undefined` when the
   * server does not know it. Without it, such commands are found only by the
   * runtime that started them.
   */
  attachBackground?(
    id: string,
    sinks: Pick<RemoteCommand, "onStdout" | "onStderr">,
  ): Promise<AttachedBackground | undefined>;
  /** The server's file calls: stat and list, open (read), upload (write). */
  readonly files: RemoteFileOps;
  /** Called on each use of the runtime (e.g. to renew the sandbox's expiry). */
  touch?(): void;
  /**
   * Whether the sandbox answers yet; polled (with a growing delay) until it
   * does or the ready timeout passes. Throws only when `signal` aborted.
   * Without it the sandbox is ready once opened.
   */
  isReady?(signal?: AbortSignal): Promise<boolean>;
  /**
   * Makes folders and their parents. Default: `mkdir -p` through the
   * session's commands.
   */
  makeDirectories?(
    paths: readonly string[],
    signal?: AbortSignal,
  ): Promise<void>;
}

/**
 * How a runtime reaches its sandbox: what {@linkcode RemoteSkillRuntime}
 * takes. A kind does not write one: it writes a {@linkcode SandboxService}
 * (with the {@linkcode RemoteSession} its `open` returns), the one pair of
 * hooks, and `SandboxServiceBackend` (or `SandboxServiceRuntime`) makes the
 * backend from it.
 *
 * @deprecated As a kind's hook: implement a `SandboxService` instead (every
 * kind of this module does). It stays the type of
 * {@linkcode RemoteSkillRuntimeOptions.backend}.
 */
export interface RemoteBackend {
  /**
   * The server's base URL (no credentials): with the conversation id, the
   * key of a conversation's record.
   */
  readonly serverUrl: string;
  /**
   * Creates or attaches to the sandbox and waits until it is ready. Called
   * on the first call that needs the sandbox, never before; called again
   * after a failure. In conversation mode it must leave the conversation's
   * record in the store (`store.create`, insert-if-absent) and the workspace
   * folder in the sandbox: the runtime records prepared skills into that
   * record. (OpenSandbox creates or attaches a sandbox per conversation; a
   * server with one existing container records that container.)
   */
  connect(): Promise<RemoteSession>;
  /**
   * Releases what the backend owns (e.g. deletes a sandbox it created, never
   * a conversation's). Called once, by `close()`, connected or not: a backend
   * that never connected makes no request.
   */
  close(): Promise<void>;
  /** Removes the conversation's record and then its sandbox (explicit). */
  destroy?(): Promise<void>;
}

/** A conversation of a remote runtime. */
export interface RemoteConversation {
  /** Where the records live. */
  readonly store: ConversationStore;
  /** The conversation id. */
  readonly conversationId: string;
  /** The workspace inside the sandbox (absolute POSIX). */
  readonly workspace: string;
}

/** Options of {@linkcode RemoteSkillRuntime}. */
export interface RemoteSkillRuntimeOptions {
  /** The runtime's name, e.g. `opensandbox`. */
  readonly name: string;
  /** How to reach the sandbox. */
  readonly backend: RemoteBackend;
  /**
   * Plain mode: where commands run and relative paths resolve (absolute
   * POSIX). Ignored in conversation mode (the workspace is used).
   */
  readonly cwd?: string;
  /**
   * Plain mode: the folder skills are uploaded into (absolute POSIX), each
   * under a stable name. Conversation mode uses `<workspace>/skills`.
   */
  readonly skillsRoot?: string;
  /** Conversation mode: the store, the id and the workspace. */
  readonly conversation?: RemoteConversation;
  /** Variables for every command, below the skills' and a request's own. */
  readonly env?: Readonly<Record<string, string>>;
  /** The most bytes of each stream kept per command. Default 1 MiB. */
  readonly maxOutputBytes?: number;
  /** What is uploaded from a skill's folder. */
  readonly copyPolicy?: CopyPolicy;
  /**
   * The search engine behind `grep`, `glob` and `ls`, made from the runtime's
   * command runner and file system. Default: a `ShellSearch` that runs the
   * search inside the sandbox (ripgrep when there, else `find` and `grep`),
   * so nothing is downloaded to search.
   */
  readonly search?: (parts: RemoteSearchParts) => SearchEngine;
  /** Receives preparation progress and command output events. */
  readonly onEvent?: SkillEventListener;
}

/**
 * The options every remote runtime kind shares (OpenSandbox, AIO); each kind
 * adds its server's own (address, credentials, defaults of its folders).
 */
export interface RemoteRuntimeCommonOptions {
  /**
   * Conversation mode: the conversation (`[A-Za-z0-9][A-Za-z0-9._-]{0,127}`);
   * its workspace is `<conversationsRoot>/<conversationId>` and its record
   * lives in {@linkcode RemoteRuntimeCommonOptions.store}.
   */
  readonly conversationId?: string;
  /**
   * Conversation mode: where conversations are recorded. Default: an
   * in-memory store shared by this process (a `KvConversationStore` shares
   * them between processes).
   */
  readonly store?: ConversationStore;
  /** Variables for every command, below the skills' and a request's own. */
  readonly env?: Readonly<Record<string, string>>;
  /** The most bytes of each stream kept per command. Default 1 MiB. */
  readonly maxOutputBytes?: number;
  /** What is uploaded from a skill's folder. */
  readonly copyPolicy?: CopyPolicy;
  /**
   * The deadline of one HTTP call in ms, body included. Default 30 000.
   * Commands have their own timeout instead.
   */
  readonly requestTimeoutMs?: number;
  /** The `fetch` to use (tests, proxies). */
  readonly fetch?: typeof fetch;
  /** The search engine factory (see {@linkcode RemoteSkillRuntimeOptions.search}). */
  readonly search?: RemoteSkillRuntimeOptions["search"];
  /**
   * Receives the runtime's events: preparation progress, command output,
   * each HTTP request and the sandbox's lifecycle (see `observe/events.ts`);
   * the runtime's environment values and credentials are redacted.
   */
  readonly onEvent?: SkillEventListener;
}

/**
 * The options of a kind that {@linkcode RemoteSkillRuntime} takes as they
 * are (folders of plain mode, variables, output cap, copy policy, search),
 * only those given: what a kind's constructor spreads into `super()`.
 *
 * Needs no permission.
 *
 * @example A kind passes its common options on
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { runtimeOptionsOf } from "./runtime.ts";
 * assertEquals(
 *   runtimeOptionsOf({ cwd: "/w", env: { A: "1" }, fetch }),
 *   { cwd: "/w", env: { A: "1" } },
 * );
 * ```
 *
 * @param options A kind's options.
 * @returns The options for {@linkcode RemoteSkillRuntime}, only those given.
 */
export function runtimeOptionsOf(
  options: RemoteRuntimeCommonOptions & {
    readonly cwd?: string | undefined;
    readonly skillsRoot?: string | undefined;
  },
): Pick<
  RemoteSkillRuntimeOptions,
  | "cwd"
  | "skillsRoot"
  | "env"
  | "maxOutputBytes"
  | "copyPolicy"
  | "search"
  | "onEvent"
> {
  return {
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
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
  };
}

/** How long one of the file system's own commands may run, in ms. */
const HELPER_TIMEOUT_MS = 60_000;
/** The most output of one of the file system's own commands. */
const HELPER_OUTPUT_BYTES = 1024 * 1024;

/**
 * A conversation's search engine: the path of `grep`, `glob` and `ls` is
 * resolved in the sandbox first ({@linkcode RemoteFileSystem.realPath}), so
 * a symbolic link given as the path (or on its way) is followed only to a
 * place inside the workspace, as on the local runtime; links inside the
 * searched folder are never followed by the engines themselves.
 */
function fencedSearch(
  engine: SearchEngine,
  fs: RemoteFileSystem,
  clean: (error: unknown) => unknown,
): SearchEngine {
  const real = async <R extends { path?: string; signal?: AbortSignal }>(
    request: R,
  ): Promise<R> => {
    let resolved: string | null;
    try {
      resolved = await fs.realPath(
        request.path ?? ".",
        request.signal ? { signal: request.signal } : {},
      );
    } catch (error) {
      throw clean(error);
    }
    return resolved === null ? request : { ...request, path: resolved };
  };
  return {
    grep: async (request) => engine.grep(await real(request)),
    glob: async (request) => engine.glob(await real(request)),
    ls: async (request) => engine.ls(await real(request)),
  };
}

/** What a search engine of a remote runtime may use. */
export interface RemoteSearchParts {
  /** Runs a command in the sandbox through the runtime. */
  readonly execute: (request: ExecuteRequest) => Promise<ExecuteResult>;
  /** The runtime's (fenced) file system. */
  readonly fs: SkillRuntimeFileSystem;
}

/**
 * A remote runtime: skills uploaded into a sandbox and commands run there
 * through a server kind's {@linkcode RemoteBackend}.
 *
 * **No network until real use**: constructing the runtime, `close()` of a
 * runtime never used and every path refused by the workspace fence make no
 * request; the sandbox is created or attached by the first call that needs
 * it (an execution, a preparation, a file call).
 *
 * **Preparation** uploads a skill's files (the copy policy applies: no
 * secrets, no symlinks, executable bits kept) into `<skillsRoot>/<stable
 * name>` and then runs its bootstrap commands there; bootstrap runs only
 * after an actual upload.
 *
 * **Conversation mode** keeps a record per conversation in a
 * {@linkcode ConversationStore}: the sandbox, the workspace and each skill
 * prepared with the digest of its files and configuration. Before each
 * preparation the record is read again, so a skill another runtime object
 * or another process prepared with the same digest is neither uploaded nor
 * bootstrapped again; a changed skill is uploaded and bootstrapped again.
 * The file system and working directories are fenced inside the workspace
 * (lexically, and by what is there: see {@linkcode RemoteFileSystem}).
 *
 * @example A runtime over a backend of your own
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { RemoteSkillRuntime } from "@skillrun/skillrun/runtime";
 * let connects = 0;
 * const runtime = new RemoteSkillRuntime({
 *   name: "echo",
 *   backend: {
 *     serverUrl: "http://sandbox.invalid",
 *     connect: () => {
 *       connects++;
 *       return Promise.resolve({
 *         files: {} as never,
 *         execute: (command) => Promise.resolve({
 *           stdout: `${command.cwd}\n`, stderr: "", exitCode: 0, timedOut: false,
 *           aborted: false, stdoutBytes: 0, stderrBytes: 0, stdoutTruncated: false,
 *           stderrTruncated: false, durationMs: 0,
 *         }),
 *       });
 *     },
 *     close: () => Promise.resolve(),
 *   },
 *   cwd: "/workspace",
 * });
 * assertEquals(connects, 0); // nothing happens before real use
 * const result = await runtime.execute({ command: "pwd" });
 * assertEquals([result.stdout, connects], ["/workspace\n", 1]);
 * await runtime.close();
 * ```
 */
export class RemoteSkillRuntime implements SkillRuntime {
  /** The runtime's name. */
  readonly name: string;
  /** Skills carrying a `remoteOrigin` are prepared through it. */
  readonly [ACCEPTS_REMOTE_ORIGINS]: true = true;
  readonly #backend: RemoteBackend;
  readonly #cwd: string;
  readonly #skillsRoot: string;
  readonly #conversation: RemoteConversation | undefined;
  readonly #key: ConversationKey | undefined;
  readonly #env: Readonly<Record<string, string>>;
  readonly #maxOutputBytes: number;
  readonly #copyPolicy: CopyPolicy | undefined;
  readonly #fs: RemoteFileSystem;
  /** {@linkcode fs} as the application and the search see it: errors redacted. */
  readonly #cleanFs: SkillRuntimeFileSystem;
  readonly #search: SearchEngine;
  readonly #engine: PreparationEngine;
  /** The configuration each skill is being prepared with (for its digest). */
  readonly #configs = new Map<string, SkillRuntimeConfig | undefined>();
  /** Skills uploaded by this object and not yet recorded as prepared. */
  readonly #uploaded = new Map<string, { digest: string; basePath: string }>();
  #session: Promise<RemoteSession> | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  readonly #events: EventSink | undefined;

  /**
   * Makes the runtime; makes no request.
   *
   * @param options The backend, the mode, the environment.
   * @throws {TypeError} A path is not absolute POSIX, or a variable is invalid.
   * @throws {RangeError} `maxOutputBytes` is not a non-negative integer.
   */
  constructor(options: RemoteSkillRuntimeOptions) {
    this.name = options.name;
    this.#events = eventSink(options.onEvent, () => {
      try {
        return Object.values(this.environment());
      } catch {
        return Object.values(this.#env);
      }
    });
    this.#backend = options.backend;
    this.#conversation = options.conversation;
    if (options.conversation) {
      const workspace = absolutePosix(
        options.conversation.workspace,
        "workspace",
      );
      this.#cwd = workspace;
      this.#skillsRoot = posix.join(workspace, "skills");
      this.#key = {
        serverUrl: options.backend.serverUrl,
        conversationId: options.conversation.conversationId,
      };
    } else {
      this.#cwd = absolutePosix(
        options.cwd ?? "/workspace",
        "cwd",
      );
      this.#skillsRoot = absolutePosix(
        options.skillsRoot ?? "/workspace/skills",
        "skillsRoot",
      );
      // Skills are replaced in place below it: never the sandbox's root.
      if (this.#skillsRoot === "/") {
        throw new TypeError(
          `Cannot use skillsRoot ${
            JSON.stringify(options.skillsRoot)
          }: it must be an absolute POSIX path other than /`,
        );
      }
    }
    this.#env = checkEnv(options.env ?? {}, "env option");
    this.#maxOutputBytes = checkMaxOutputBytes(
      options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    );
    this.#copyPolicy = options.copyPolicy;
    this.#fs = new RemoteFileSystem(() => this.#files(), {
      cwd: this.#cwd,
      ...(options.conversation ? { fenceRoot: this.#cwd } : {}),
      shell: (command, signal) => this.#helper(command, signal),
    });
    this.#cleanFs = redactingProxy(this.#fs, (error) => this.#clean(error));
    const parts: RemoteSearchParts = {
      execute: (request) => this.execute(request),
      fs: this.#cleanFs,
    };
    const search = options.search?.(parts) ?? new ShellSearch({
      fs: this.#cleanFs,
      shell: {
        exec: (command, execOptions) =>
          this.execute({
            command,
            timeoutMs: execOptions.timeoutMs,
            ...(execOptions.signal ? { signal: execOptions.signal } : {}),
            ...(execOptions.maxOutputBytes !== undefined
              ? { maxOutputBytes: execOptions.maxOutputBytes }
              : {}),
          }),
      },
    });
    this.#search = options.conversation
      ? fencedSearch(search, this.#fs, (error) => this.#clean(error))
      : search;
    this.#engine = new PreparationEngine({
      materialize: (skill, materializeOptions) =>
        this.#materialize(skill, materializeOptions),
      run: (request) => this.execute(request),
    });
  }

  /** Where commands run when a request names none (absolute POSIX). */
  get cwd(): string {
    return this.#cwd;
  }

  /** The conversation's workspace, or `undefined` in plain mode. */
  get workspace(): string | undefined {
    return this.#conversation ? this.#cwd : undefined;
  }

  /** The folder skills are uploaded into. */
  get skillsRoot(): string {
    return this.#skillsRoot;
  }

  /**
   * The remote file system (POSIX paths; fenced inside the workspace in
   * conversation mode, lexically, refusing with no request).
   */
  get fs(): SkillRuntimeFileSystem {
    return this.#cleanFs;
  }

  /** The search engine behind `grep`, `glob` and `ls`. */
  get search(): SearchEngine {
    return this.#search;
  }

  /** Whether {@linkcode close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Connects now instead of on first use: creates or attaches to the sandbox,
   * waits until it is ready and (in conversation mode) makes the workspace.
   * For an application that wants the cold start behind it; never needed.
   *
   * @param signal Stops the wait (a connection under way goes on for later calls).
   * @returns When connected.
   * @throws {Error} The sandbox cannot be reached or made ready; the runtime is closed.
   */
  async connect(signal?: AbortSignal): Promise<void> {
    this.#checkOpen("connect");
    try {
      await this.#connect(signal);
    } catch (error) {
      throw this.#clean(error);
    }
  }

  /**
   * Where a skill's `SKILL.md` is in the sandbox once uploaded (under
   * {@linkcode RemoteSkillRuntime.skillsRoot}).
   *
   * @param skill The skill.
   * @returns The absolute POSIX path in the sandbox.
   */
  skillLocation(skill: Skill): string {
    return posix.join(
      this.#skillFolder(skill),
      posix.basename(skill.location.replaceAll("\\", "/")),
    );
  }

  #skillFolder(skill: Skill): string {
    return posix.join(
      this.#skillsRoot,
      stableSkillFolderName({ name: skill.name, basePath: skill.basePath }),
    );
  }

  /**
   * Prepares skills in order (upload, then bootstrap after an actual upload)
   * and returns them in the same number and order. Idempotent per skill; in
   * conversation mode also across runtime objects and processes sharing the
   * store.
   *
   * @param request The skills, their configurations, a signal, a progress callback.
   * @returns The prepared skills.
   * @throws {SkillPreparationError} An upload or a bootstrap command failed;
   * nothing was recorded for that skill.
   * @throws {Error} The runtime is closed.
   */
  async prepare(request: PrepareRequest): Promise<PreparedSkill[]> {
    try {
      return await this.#prepare(request);
    } catch (error) {
      throw this.#clean(error);
    }
  }

  async #prepare(request: PrepareRequest): Promise<PreparedSkill[]> {
    this.#checkOpen("prepare skills");
    const prepared: PreparedSkill[] = [];
    for (const entry of request.skills) {
      request.signal?.throwIfAborted();
      const key = skillKey(entry.skill);
      if (!this.#engine.isPrepared(entry.skill)) {
        this.#configs.set(key, entry.config);
      }
      const [one] = await this.#engine.prepare(
        observePrepare({ ...request, skills: [entry] }, this.#events),
      );
      prepared.push(one!);
      const uploaded = this.#uploaded.get(key);
      if (uploaded && this.#conversation && this.#key) {
        this.#uploaded.delete(key);
        await this.#conversation.store.markPrepared(this.#key, {
          name: entry.skill.name,
          basePath: uploaded.basePath,
          digest: uploaded.digest,
        });
      }
    }
    return prepared;
  }

  /**
   * Runs one command in the sandbox with `bash -c`. At the timeout or the
   * signal the remote command is stopped (and everything it started) and the
   * result says `timedOut` or `aborted` with `exitCode: -1`.
   *
   * @param request The command, working directory, timeout, variables, signal, cap.
   * @returns The result; a failing command is not an error.
   * @throws {TypeError} A blank command or one holding NUL, a bad variable,
   * or an empty working directory or one holding NUL (see
   * `checkExecuteRequest`, the same on every runtime).
   * @throws {RangeError} A bad timeout or cap (a timeout beyond
   * `MAX_EXECUTE_TIMEOUT_MS`, about 24.8 days, is clamped to it).
   * @throws {WorkspaceEscapeError} The working directory is outside the workspace.
   * @throws {Error} The sandbox cannot be reached or refused the command.
   */
  async execute(request: ExecuteRequest): Promise<ExecuteResult> {
    try {
      return await this.#execute(request);
    } catch (error) {
      throw this.#clean(
        error,
        request?.env && typeof request.env === "object"
          ? Object.values(request.env)
          : [],
      );
    }
  }

  async #execute(request: ExecuteRequest): Promise<ExecuteResult> {
    this.#checkOpen("run a command");
    const { command, timeoutMs, maxOutputBytes, env: requestEnv } =
      checkExecuteRequest(request, {
        maxOutputBytes: this.#maxOutputBytes,
        stdin: false,
        runtimeName: this.name,
      });
    const cwd = request.cwd === undefined
      ? this.#cwd
      : await this.#fs.resolve(request.cwd);
    const env = {
      ...this.#env,
      ...this.#engine.environment(),
      ...requestEnv,
    };
    const started = performance.now();
    let session: RemoteSession;
    try {
      session = await this.#connect(request.signal);
    } catch (error) {
      // The caller's signal ended the call while the sandbox was still being
      // reached: an aborted result, as once the command has begun (nothing
      // ran). Seen under load: a 300 ms abort during a sandbox's creation.
      if (!request.signal?.aborted) throw error;
      return {
        stdout: "",
        stderr: "",
        exitCode: -1,
        timedOut: false,
        aborted: true,
        stdoutBytes: 0,
        stderrBytes: 0,
        stdoutTruncated: false,
        stderrTruncated: false,
        durationMs: performance.now() - started,
      };
    }
    const observed = observeExecute({
      command,
      cwd,
      env,
      timeoutMs,
      maxOutputBytes,
      ...(request.signal ? { signal: request.signal } : {}),
      ...(request.onStdout ? { onStdout: request.onStdout } : {}),
      ...(request.onStderr ? { onStderr: request.onStderr } : {}),
    }, this.#events);
    try {
      // Checked above: the command core takes the timeout as it is.
      return await runOn(session, checkedRemoteCommand(observed.request));
    } finally {
      observed.flush();
    }
  }

  /**
   * Starts a command with the server's own background facility (OpenSandbox's
   * background commands, AIO's asynchronous exec), or else with the kit's
   * (`background.ts`: detached in the sandbox, its state in a folder named by
   * its id), and returns once the sandbox has it. Checked as `execute` checks.
   *
   * @param request The command, working directory, timeout, variables and
   * the streams its fetched output goes to.
   * @returns The command.
   * @throws {TypeError} A bad request (see {@linkcode execute}).
   * @throws {Error} The sandbox cannot be reached or refused the command.
   */
  async startBackground(
    request: ExecuteRequest,
  ): Promise<BackgroundProcess | undefined> {
    try {
      this.#checkOpen("run a command");
      const { command, timeoutMs, maxOutputBytes, env: requestEnv } =
        checkExecuteRequest(request, {
          maxOutputBytes: this.#maxOutputBytes,
          stdin: false,
          runtimeName: this.name,
        });
      const cwd = request.cwd === undefined
        ? this.#cwd
        : await this.#fs.resolve(request.cwd);
      const session = await this.#connect(request.signal);
      // Its output, as each poll fetches it, is a command's output event too.
      const observed = observeExecute({
        command,
        cwd,
        env: { ...this.#env, ...this.#engine.environment(), ...requestEnv },
        timeoutMs,
        maxOutputBytes,
        ...(request.signal ? { signal: request.signal } : {}),
        ...(request.onStdout ? { onStdout: request.onStdout } : {}),
        ...(request.onStderr ? { onStderr: request.onStderr } : {}),
      }, this.#events);
      const process = session.startBackground
        ? await session.startBackground(observed.request)
        : await startSandboxBackground(
          (command) => runOn(session, command),
          observed.request,
        );
      const clean = (error: unknown) => {
        throw this.#clean(error, Object.values(requestEnv ?? {}));
      };
      return {
        id: process.id,
        poll: () =>
          process.poll().then((state) => {
            // Held back only a tail that could start a secret: out at the end.
            if (!state.running) observed.flush();
            return state;
          }, clean),
        kill: () => process.kill().catch(clean),
      };
    } catch (error) {
      throw this.#clean(
        error,
        request?.env && typeof request.env === "object"
          ? Object.values(request.env)
          : [],
      );
    }
  }

  /**
   * Finds a background command another runtime on the same sandbox started
   * (the kit's background commands live in the sandbox, named by their id).
   *
   * @param id The command's id.
   * @param streams Where its fetched output goes.
   * @returns The command, or `undefined` when the sandbox has no such one
   * (or the kind runs background commands with its own facility).
   * @throws {Error} The sandbox cannot be reached.
   */
  async attachBackground(
    id: string,
    streams: Pick<ExecuteRequest, "onStdout" | "onStderr"> = {},
  ): Promise<AttachedBackground | undefined> {
    this.#checkOpen("run a command");
    const session = await this.#connect();
    const sinks = {
      ...(streams.onStdout ? { onStdout: streams.onStdout } : {}),
      ...(streams.onStderr ? { onStderr: streams.onStderr } : {}),
    };
    if (session.startBackground) {
      return await session.attachBackground?.(id, sinks).catch((error) => {
        throw this.#clean(error, []);
      });
    }
    const run = (command: RemoteCommand) =>
      runOn(session, command).catch((error) => {
        throw this.#clean(error, []);
      });
    return await attachSandboxBackground(run, id, this.#cwd, sinks);
  }

  /**
   * The merged runtime environment every command gets: the `env` option,
   * then every prepared skill's configuration (later wins). Keep it out of logs.
   *
   * @returns A frozen map.
   * @throws {Error} The runtime is closed.
   */
  environment(): Readonly<Record<string, string>> {
    this.#checkOpen("read the environment");
    return Object.freeze({ ...this.#env, ...this.#engine.environment() });
  }

  /**
   * Forgets the environment and the prepared skills and lets the backend
   * release what it owns (see the server kind's docs: a sandbox the runtime
   * created in plain mode is deleted, a conversation's never is).
   * Idempotent; a runtime never used makes no request.
   *
   * @returns When done.
   */
  close(): Promise<void> {
    if (!this.#closing) {
      this.#closed = true;
      this.#engine.clear();
      this.#closing = (async () => {
        // Background commands end first, while the sandbox is still there.
        await closeBackgroundCommands(this);
        // Let a connection under way finish, so the backend knows what it owns.
        await this.#session?.catch(() => {});
        await this.#backend.close().catch((error) => {
          throw this.#clean(error);
        });
      })();
    }
    return this.#closing;
  }

  /**
   * Closes the runtime (for `await using`).
   *
   * @returns When done.
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /**
   * Conversation mode: removes the conversation's record and then its
   * sandbox, and closes the runtime. Explicit: `close()` never does it.
   *
   * @returns When done.
   * @throws {Error} The backend cannot destroy (plain mode of some kinds).
   */
  async destroy(): Promise<void> {
    if (!this.#backend.destroy) {
      throw new Error(
        `Cannot destroy: the ${this.name} runtime has nothing to destroy`,
      );
    }
    await this.close();
    await this.#backend.destroy().catch((error) => {
      throw this.#clean(error);
    });
  }

  /**
   * Removes every configured value (the `env` option, every configuration a
   * skill was given, `extra`) from an error leaving for the application: a
   * server may echo what it was sent in its error answers.
   */
  #clean(error: unknown, extra: readonly unknown[] = []): unknown {
    if (this.#conversation && this.#session && sandboxGone(error)) {
      // The conversation's sandbox vanished at the provider (expired,
      // deleted): this call says so once, and the next one connects anew,
      // which replaces the gone sandbox's record with a new sandbox.
      this.#session = undefined;
      error = new Error(
        `The sandbox of this conversation is gone (expired or deleted at the provider); the next call starts a new one, without the files written before, and skills are prepared again (${
          (error as Error).message
        })`,
      );
    }
    const values: unknown[] = [...Object.values(this.#env), ...extra];
    values.push(...Object.values(this.#engine.environment()));
    for (const config of this.#configs.values()) {
      if (config) values.push(...Object.values(config.env));
    }
    return redactError(error, new Redactor(values as string[]));
  }

  /** Connects once (again after a failure); the caller's signal only stops its wait. */
  #connect(signal?: AbortSignal): Promise<RemoteSession> {
    if (!this.#session) {
      const session = this.#backend.connect();
      this.#session = session;
      session.catch(() => {
        if (this.#session === session) this.#session = undefined;
      });
    }
    const session = this.#session;
    const touched = session.then((s) => {
      s.touch?.();
      return s;
    });
    if (!signal) return touched;
    signal.throwIfAborted();
    return abortable(touched, signal);
  }

  /** Runs one of our own commands (no skill environment), never retried. */
  async #helper(
    command: string,
    signal?: AbortSignal,
  ): Promise<ExecuteResult> {
    this.#checkOpen("use the file system");
    const session = await this.#connect(signal);
    return await runOn(session, {
      command,
      cwd: "/",
      env: {},
      timeoutMs: HELPER_TIMEOUT_MS,
      maxOutputBytes: HELPER_OUTPUT_BYTES,
      ...(signal ? { signal } : {}),
    });
  }

  async #files(): Promise<RemoteFileOps> {
    this.#checkOpen("use the file system");
    return (await this.#connect()).files;
  }

  async #materialize(
    skill: Skill,
    options: MaterializeOptions,
  ): Promise<MaterializeResult> {
    this.#checkOpen("prepare skills");
    const key = skillKey(skill);
    const basePath = this.#skillFolder(skill);
    const { signal, onProgress } = options;
    const origin = remoteOriginOf(skill);
    let digest: string | undefined;
    if (this.#conversation && this.#key) {
      const config = this.#configs.get(key);
      digest = origin
        ? await originDigest(origin, config)
        : await skillDigest(skill.basePath, {
          config: config
            ? { env: config.env, bootstrap: config.bootstrap }
            : undefined,
          policy: this.#copyPolicy,
          signal,
        });
      await this.#connect(signal);
      // Read the record again: another runtime may have prepared it meanwhile.
      const record = await this.#conversation.store.get(this.#key);
      const known = record?.skills[skill.name];
      if (known && known.digest === digest && known.basePath === basePath) {
        return { basePath, bootstrap: false };
      }
      // Forget it first: a failed upload is never taken for a prepared skill.
      await this.#conversation.store.forgetPrepared(this.#key, skill.name);
    }
    if (origin) {
      // Its files come from its origin (a package streamed into the sandbox).
      const session = await this.#connect(signal);
      await origin.materialize({
        skillName: skill.name,
        basePath,
        files: session.files,
        run: (command, runOptions = {}) =>
          runOn(session, {
            command,
            cwd: "/",
            env: {},
            timeoutMs: runOptions.timeoutMs ?? 600_000,
            maxOutputBytes: runOptions.maxOutputBytes ?? 64 * 1024,
            ...(runOptions.signal ? { signal: runOptions.signal } : {}),
          }),
        ...(signal ? { signal } : {}),
        ...(onProgress ? { onProgress } : {}),
      });
      if (digest !== undefined) this.#uploaded.set(key, { digest, basePath });
      return { basePath, bootstrap: true };
    }
    const files = await collectUploadEntries(skill.basePath, {
      ...(this.#copyPolicy ? { policy: this.#copyPolicy } : {}),
      ...(signal ? { signal } : {}),
    });
    onProgress?.({
      skillName: skill.name,
      stage: "upload",
      detail: `uploading ${files.length} files into ${basePath}`,
      files: files.length,
      bytes: files.reduce((sum, file) => sum + file.size, 0),
    });
    const session = await this.#connect(signal);
    await session.files.upload(
      files.map((file) => ({
        remotePath: posix.join(basePath, file.relativePath),
        content: { path: file.localPath, size: file.size },
        mode: file.mode,
      })),
      signal,
    );
    if (digest !== undefined) this.#uploaded.set(key, { digest, basePath });
    return { basePath, bootstrap: true };
  }

  #checkOpen(action: string): void {
    if (this.#closed) {
      throw new Error(`Cannot ${action}: the ${this.name} runtime is closed`);
    }
  }
}

/**
 * Runs a command on a session: through its command protocol, or its own
 * `execute`.
 *
 * @param session The session.
 * @param command The command.
 * @returns The result.
 */
export function runOn(
  session: Pick<RemoteSession, "commands" | "execute">,
  command: RemoteCommand,
): Promise<ExecuteResult> {
  if (session.commands) return runRemoteCommand(session.commands, command);
  if (session.execute) return session.execute(command);
  return Promise.reject(
    new TypeError(
      "Cannot run a command: the session gives neither commands nor execute",
    ),
  );
}

/**
 * `target` whose methods' errors (thrown, or rejected promises) pass through
 * `clean` first.
 */
function redactingProxy<T extends object>(
  target: T,
  clean: (error: unknown) => unknown,
): T {
  return new Proxy(target, {
    get(object, key) {
      const value = Reflect.get(object, key, object);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        let result: unknown;
        try {
          result = value.apply(object, args);
        } catch (error) {
          throw clean(error);
        }
        return result instanceof Promise
          ? result.catch((error) => {
            throw clean(error);
          })
          : result;
      };
    },
  });
}

/** The conversation digest of a skill from an origin: its content and configuration. */
async function originDigest(
  origin: RemoteSkillOrigin,
  config: SkillRuntimeConfig | undefined,
): Promise<string> {
  const text = JSON.stringify([
    "skillrun remote origin v1",
    origin.digest,
    config ? Object.entries(config.env).sort() : null,
    config ? config.bootstrap.map((s) => [s.timeoutMs, s.command]) : null,
  ]);
  const hash = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(text),
  );
  return `sha256:${
    Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, "0"))
      .join("")
  }`;
}

function absolutePosix(path: string, what: string): string {
  if (typeof path !== "string" || !path.startsWith("/")) {
    throw new TypeError(
      `Cannot use ${what} ${
        JSON.stringify(path)
      }: it must be an absolute POSIX path`,
    );
  }
  return resolveRemotePath("/", path);
}

/** Whether a failure says the sandbox itself is unknown to its server. */
function sandboxGone(error: unknown): boolean {
  return error instanceof RemoteHttpError && error.status === 404 &&
    /SANDBOX_NOT_FOUND/i.test(error.code ?? "");
}
