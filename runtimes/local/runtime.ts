/**
 * The local runtime: skills prepared and commands run on this machine through
 * `Deno.Command`, in place (plain mode) or inside a conversation workspace.
 *
 * Why one long file: the plain and conversation modes are one class whose
 * preparation, execution and closing share private state.
 *
 * @module
 */
import { closeBackgroundCommands } from "../background.ts";
import {
  type EventSink,
  eventSink,
  observeExecute,
  observePrepare,
  type SkillEventListener,
} from "../../observe/events.ts";
import { checkEnv } from "../config.ts";
import { checkTimeoutMs } from "../command_core.ts";
import { checkExecuteRequest, checkMaxOutputBytes } from "../request.ts";
import { hostPath } from "../../_internal/std.ts";
import { removeTree } from "../../_internal/remove_tree.ts";
import { toPermissionError } from "../../_internal/permissions.ts";
import {
  ensureWorkspace,
  validateConversationId,
  validateConversationsRoot,
  workspacePath,
} from "../../workspace/conversation.ts";
import { PathFence } from "../../workspace/fence.ts";
import {
  type CopyPolicy,
  copySkillFolder,
  type CopyStats,
  stableSkillFolderName,
} from "../../workspace/copy.ts";
import type { Skill } from "../../skill/types.ts";
import {
  type MaterializeOptions,
  type MaterializeResult,
  PreparationEngine,
} from "../prepare.ts";
import { skillKey } from "../_skill_key.ts";
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  type DownloadResult,
  type ExecuteRequest,
  type ExecuteResult,
  type FileInfo,
  type ListOptions,
  type ListResult,
  type OpenFileResult,
  type PreparedSkill,
  type PrepareRequest,
  type ReadTextOptions,
  type SearchEngine,
  type SignalOptions,
  type SkillRuntime,
  type SkillRuntimeFileSystem,
} from "../types.ts";
import { createSearch } from "../../search/search.ts";
import {
  DenoCommandLauncher,
  type ProcessLauncher,
  streamsOf,
} from "./launcher.ts";
import {
  BubblewrapLauncher,
  type BubblewrapLauncherOptions,
} from "./isolated.ts";
import { LocalFileSystem } from "./fs.ts";
import { PreparedRecord } from "./_prepared_record.ts";
import { skillDigest } from "../../workspace/skill_digest.ts";
import type { SkillRuntimeConfig } from "../config.ts";

/** Handed from `create()` to the constructor (synchronously, never shared). */
let pendingConversation: { fence: PathFence } | undefined;

/** Options of {@linkcode LocalSkillRuntime}. */
export interface LocalSkillRuntimeOptions {
  /**
   * The folder holding one workspace per conversation (absolute, not `/`).
   * With {@linkcode conversationId}, selects conversation mode.
   */
  readonly conversationsRoot?: string;
  /**
   * The conversation: `[A-Za-z0-9][A-Za-z0-9._-]{0,127}`, not `.` or `..`.
   * With {@linkcode conversationsRoot}, selects conversation mode.
   */
  readonly conversationId?: string;
  /**
   * Plain mode only: where commands run by default and what relative file
   * paths resolve against. Default: the process's current directory.
   */
  readonly cwd?: string;
  /**
   * Variables set for every command, above the inherited environment and
   * below the skills' configurations and a request's own.
   */
  readonly env?: Readonly<Record<string, string>>;
  /** The most bytes of each stream kept per command. Default 1 MiB. */
  readonly maxOutputBytes?: number;
  /** Conversation mode: what is copied from a skill's folder. */
  readonly copyPolicy?: CopyPolicy;
  /** How commands become processes. Default: a {@linkcode DenoCommandLauncher}. */
  readonly launcher?: ProcessLauncher;
  /**
   * Runs every command in a bubblewrap sandbox (Linux): `true`, or the
   * sandbox's options (network, limits). Only with
   * {@linkcode LocalSkillRuntime.create}, which fails with an
   * `IsolationUnavailableError` saying what to install or enable when
   * sandboxes cannot start here; it never falls back to the plain mode. See
   * {@linkcode BubblewrapLauncher}.
   */
  readonly isolate?: boolean | BubblewrapLauncherOptions;
  /**
   * The `grep`/`glob`/`ls` engine: `"auto"` (default) uses ripgrep when it is
   * installed and allowed to run (`--allow-run=rg`), else the pure TypeScript
   * fallback; `true` requires ripgrep; `false` always uses the fallback.
   */
  readonly useRipgrep?: "auto" | boolean;
  /**
   * Receives the runtime's events: preparation progress and command output
   * (see `observe/events.ts`); the runtime's environment values are
   * redacted, and a listener that throws breaks nothing.
   */
  readonly onEvent?: SkillEventListener;
}

/**
 * The local runtime (`name: "local"`), in one of two modes.
 *
 * **Plain** (`new LocalSkillRuntime()` or `LocalSkillRuntime.create()` without
 * a conversation): commands run in the process's current directory (or
 * `cwd`); skills are used in place, so bootstrap commands run and write in
 * the skill's own folder; the file system reaches whatever the process may.
 *
 * **Conversation** (`await LocalSkillRuntime.create({ conversationsRoot,
 * conversationId })`): the workspace `<conversationsRoot>/<conversationId>`
 * is created if missing; skills are copied into its `skills/` folder under a
 * stable name (the source is never modified), bootstrapped in the copy; the
 * default working directory is the workspace; the file system and any
 * explicit working directory are fenced inside it (lexically and after
 * resolving symlinks). A new runtime object on the same conversation copies
 * the skills again over the copy (source files overwrite theirs, files made
 * in the copy stay) and bootstraps again. Two runtimes must not change one
 * conversation at the same time (no locking). The fence covers the file
 * system API only: the shell itself reaches whatever the user running Deno
 * may, whatever Deno's permission flags say (use an isolated launcher for
 * more).
 *
 * Environment of every command, lowest to highest: the process's own
 * (inherited), the `env` option, every prepared skill's configuration (a
 * skill prepared later wins), the request's `env`. It is passed to each
 * process directly, never through `export` or a profile. So that skills
 * written for Deno can run `deno`, the folder of the running `deno` binary
 * (`Deno.execPath()`) is put first on `PATH` when it is not on it already
 * (this needs `--allow-env=PATH` to read the inherited `PATH`; without it,
 * `PATH` is left as inherited), and `DENO_EXEC_PATH` names the binary
 * (`Deno.execPath()` itself needs no permission).
 *
 * Permissions: conversation mode works fully under `deno run
 * --allow-read=<skills>,<conversationsRoot> --allow-write=<conversationsRoot>
 * --allow-run=bash` (add `--allow-env=PATH` for the `PATH` addition above);
 * a denial becomes a {@linkcode RuntimePermissionError} naming the
 * permission and the path. The process group of a timed-out command is
 * signalled with `Deno.kill` under unscoped `--allow-run`, else with bash's
 * `kill`.
 *
 * `close()` forgets the merged environment and the prepared skills; it
 * deletes nothing (skills, workspaces and outputs stay). After it, every call
 * fails with an error saying the runtime is closed.
 *
 * @example Plain mode
 * ```ts
 * import { assert } from "@std/assert";
 * import { LocalSkillRuntime } from "@skillrun/skillrun/runtime";
 *
 * await using runtime = new LocalSkillRuntime({ env: { GREETING: "hello" } });
 * const result = await runtime.execute({ command: 'echo "$GREETING"' });
 * assert(result.stdout === "hello\n" && result.exitCode === 0);
 * ```
 *
 * @example Conversation mode: a skill copied into a workspace
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   LocalSkillRuntime,
 *   SkillRuntimeConfig,
 * } from "@skillrun/skillrun/runtime";
 * import type { Skill } from "@skillrun/skillrun";
 *
 * const temp = await Deno.makeTempDir();
 * try {
 *   const source = `${temp}/source/demo`;
 *   await Deno.mkdir(source, { recursive: true });
 *   await Deno.writeTextFile(`${source}/SKILL.md`, "---\nname: demo\ndescription: Demo\n---\n");
 *   const skill: Skill = {
 *     name: "demo", description: "Demo", basePath: source,
 *     location: `${source}/SKILL.md`, instructions: "", frontMatter: {}, warnings: [],
 *   };
 *   await using runtime = await LocalSkillRuntime.create({
 *     conversationsRoot: `${temp}/conversations`,
 *     conversationId: "thread-1",
 *   });
 *   const [prepared] = await runtime.prepare({
 *     skills: [{ skill, config: new SkillRuntimeConfig({ bootstrap: ["touch built"] }) }],
 *   });
 *   assert(prepared!.basePath.startsWith(runtime.cwd));
 *   await runtime.fs.writeText("notes.txt", "kept");
 *   const result = await runtime.execute({ command: "cat notes.txt" });
 *   assert(result.stdout === "kept");
 * } finally {
 *   await Deno.remove(temp, { recursive: true });
 * }
 * ```
 */
export class LocalSkillRuntime implements SkillRuntime {
  /** The runtime's name. */
  readonly name = "local";
  readonly #cwd: string;
  readonly #workspace: string | undefined;
  readonly #fence: PathFence | undefined;
  readonly #fs: SkillRuntimeFileSystem;
  readonly #search: SearchEngine;
  readonly #env: Readonly<Record<string, string>>;
  readonly #maxOutputBytes: number;
  readonly #copyPolicy: CopyPolicy | undefined;
  readonly #launcher: ProcessLauncher;
  readonly #engine: PreparationEngine;
  readonly #denoDir: string | undefined;
  readonly #denoExecPath: string | undefined;
  #inheritedPath: string | undefined;
  readonly #events: EventSink | undefined;
  #closing: Promise<void> | undefined;
  /** Plain mode: the skill folders prepared in place (writable in a sandbox). */
  readonly #skillFolders = new Set<string>();
  /** Conversation mode: the record of prepared skills, by digest. */
  readonly #record: PreparedRecord | undefined;
  /** Conversation mode: each skill's configuration, for its digest. */
  readonly #configs = new Map<string, SkillRuntimeConfig | undefined>();
  /** Conversation mode: digests of skills copied, recorded once bootstrapped. */
  readonly #copied = new Map<string, { folder: string; digest: string }>();
  #closed = false;

  /**
   * Makes a plain-mode runtime. For conversation mode use
   * {@linkcode LocalSkillRuntime.create}.
   *
   * @param options The runtime's options (without a conversation).
   * @throws {TypeError} A conversation was given (use `create`), or a
   * variable name or value is invalid, or `cwd` is not a string.
   * @throws {RangeError} `maxOutputBytes` is not a non-negative integer.
   */
  constructor(options: LocalSkillRuntimeOptions = {}) {
    const conversation = pendingConversation;
    pendingConversation = undefined;
    if (
      !conversation && (options.conversationsRoot !== undefined ||
        options.conversationId !== undefined)
    ) {
      throw new TypeError(
        "Cannot make a conversation runtime with the constructor: use await LocalSkillRuntime.create(options)",
      );
    }
    if (options.isolate !== undefined && options.isolate !== false) {
      throw new TypeError(
        "Cannot make an isolated runtime with the constructor: use await LocalSkillRuntime.create(options)",
      );
    }
    if (options.cwd !== undefined && typeof options.cwd !== "string") {
      throw new TypeError(`Cannot use cwd "${options.cwd}": it must be a path`);
    }
    this.#workspace = conversation?.fence.root;
    this.#fence = conversation?.fence;
    this.#record = conversation === undefined
      ? undefined
      : new PreparedRecord(conversation.fence);
    this.#cwd = this.#workspace ??
      hostPath.resolve(options.cwd ?? Deno.cwd());
    const inner = conversation
      ? new LocalFileSystem({
        cwd: conversation.fence.root,
        fence: conversation.fence,
      })
      : new LocalFileSystem({ cwd: this.#cwd });
    this.#fs = new ClosableFileSystem(
      inner,
      () => this.#checkOpen("use the file system"),
    );
    const searchLauncher = new DenoCommandLauncher();
    this.#search = createSearch({
      fs: this.#fs,
      local: true,
      // find and grep when ripgrep is missing, on the host as in a sandbox.
      shell: {
        exec: (command, execOptions) =>
          searchLauncher.launch({
            command,
            cwd: this.#cwd,
            env: {},
            timeoutMs: checkTimeoutMs(execOptions.timeoutMs),
            maxOutputBytes: execOptions.maxOutputBytes ?? 64 * 1024 * 1024,
            ...(execOptions.signal ? { signal: execOptions.signal } : {}),
          }),
      },
      ...(options.useRipgrep !== undefined
        ? { useRipgrep: options.useRipgrep }
        : {}),
    });
    this.#env = checkEnv(options.env ?? {}, "env option");
    this.#events = eventSink(options.onEvent, () => {
      try {
        return Object.values(this.environment());
      } catch {
        return Object.values(this.#env);
      }
    });
    this.#maxOutputBytes = checkMaxOutputBytes(
      options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    );
    this.#copyPolicy = options.copyPolicy;
    this.#launcher = options.launcher ?? new DenoCommandLauncher();
    this.#engine = this.#makeEngine();
    [this.#denoExecPath, this.#denoDir, this.#inheritedPath] = denoLocation();
    if (this.#launcher.inheritsEnvironment === false) {
      this.#inheritedPath = undefined;
    }
  }

  /**
   * Makes a runtime in either mode. In conversation mode it validates the
   * conversation, creates its workspace (and parents) if missing and fences
   * the file system inside it.
   *
   * @param options The runtime's options.
   * @returns The runtime.
   * @throws {TypeError} A bad conversation id or root, only one of the two
   * given, `cwd` given with a conversation, or a bad variable.
   * @throws {RangeError} `maxOutputBytes` is not a non-negative integer.
   * @throws {RuntimePermissionError} Deno or the system refuses to create or
   * read the workspace.
   * Permissions: `--allow-read` and `--allow-write` on the conversations root.
   */
  static async create(
    options: LocalSkillRuntimeOptions = {},
  ): Promise<LocalSkillRuntime> {
    const { isolate } = options;
    if (isolate !== undefined && isolate !== false) {
      if (options.launcher !== undefined) {
        throw new TypeError(
          "Cannot make an isolated runtime with a launcher of its own: give isolate or launcher, not both",
        );
      }
      const { isolate: _, ...rest } = options;
      const launcher = await BubblewrapLauncher.create(
        isolate === true ? {} : isolate,
      );
      try {
        const runtime = await LocalSkillRuntime.create({ ...rest, launcher });
        // Made here, so closed with the runtime (its egress proxy).
        ownedLaunchers.add(launcher);
        return runtime;
      } catch (error) {
        await launcher.close();
        throw error;
      }
    }
    const { conversationsRoot, conversationId } = options;
    if (conversationsRoot === undefined && conversationId === undefined) {
      return new LocalSkillRuntime(options);
    }
    if (conversationsRoot === undefined || conversationId === undefined) {
      throw new TypeError(
        "Cannot make a conversation runtime: give both conversationsRoot and conversationId",
      );
    }
    if (options.cwd !== undefined) {
      throw new TypeError(
        `Cannot use cwd "${options.cwd}" with a conversation: commands run in the workspace`,
      );
    }
    validateConversationsRoot(conversationsRoot);
    validateConversationId(conversationId);
    let workspace = workspacePath(conversationsRoot, conversationId);
    try {
      // A real folder inside the real root: a planted symlink is refused.
      workspace = await ensureWorkspace(conversationsRoot, conversationId);
    } catch (error) {
      throw toPermissionError(error, {
        operation: "create the workspace",
        path: workspace,
      });
    }
    let fence: PathFence;
    try {
      fence = await PathFence.create(workspace);
    } catch (error) {
      throw toPermissionError(error, {
        operation: "open the workspace",
        path: workspace,
      });
    }
    pendingConversation = { fence };
    try {
      return new LocalSkillRuntime(options);
    } finally {
      pendingConversation = undefined;
    }
  }

  /** Where commands run when a request names none. */
  get cwd(): string {
    return this.#cwd;
  }

  /** The conversation's workspace, or `undefined` in plain mode. */
  get workspace(): string | undefined {
    return this.#workspace;
  }

  /** The file system: fenced inside the workspace in conversation mode. */
  get fs(): SkillRuntimeFileSystem {
    return this.#fs;
  }

  /**
   * The search engine behind the `grep`, `glob` and `ls` tools: ripgrep when
   * installed and allowed, else the pure TypeScript fallback, with the same
   * answers. It goes through {@linkcode fs}, so it is fenced in a
   * conversation's workspace and refused once the runtime is closed.
   */
  get search(): SearchEngine {
    return this.#search;
  }

  /** How commands become processes (e.g. a {@linkcode BubblewrapLauncher}). */
  get launcher(): ProcessLauncher {
    return this.#launcher;
  }

  /** Whether {@linkcode close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Where a skill's `SKILL.md` is once prepared: in plain mode its own
   * location, in conversation mode the copy's in the workspace.
   *
   * @param skill The skill.
   * @returns The absolute path.
   */
  skillLocation(skill: Skill): string {
    if (this.#fence === undefined) return skill.location;
    return hostPath.join(
      this.#fence.root,
      "skills",
      stableSkillFolderName({ name: skill.name, basePath: skill.basePath }),
      hostPath.basename(skill.location),
    );
  }

  /**
   * Prepares skills in order and returns them in the same number and order:
   * in plain mode in place, in conversation mode copied into the workspace;
   * then their bootstrap commands run in the prepared folder. Idempotent per
   * skill in this runtime object; concurrent calls prepare once.
   *
   * @param request The skills, their configurations, a signal, a progress callback.
   * @returns The prepared skills.
   * @throws {SkillPreparationError} A copy failed or a bootstrap command
   * failed or timed out; nothing was recorded for that skill.
   * @throws {Error} The runtime is closed.
   */
  prepare(request: PrepareRequest): Promise<PreparedSkill[]> {
    try {
      this.#checkOpen("prepare skills");
    } catch (error) {
      return Promise.reject(error);
    }
    const observed = observePrepare(request, this.#events);
    if (this.#record === undefined) return this.#engine.prepare(observed);
    return this.#prepareRecorded(observed, this.#record);
  }

  // Conversation mode: one skill at a time, each recorded with its digest
  // once its bootstrap succeeded.
  async #prepareRecorded(
    request: PrepareRequest,
    record: PreparedRecord,
  ): Promise<PreparedSkill[]> {
    const prepared: PreparedSkill[] = [];
    for (const entry of request.skills) {
      request.signal?.throwIfAborted();
      const key = skillKey(entry.skill);
      if (!this.#engine.isPrepared(entry.skill)) {
        this.#configs.set(key, entry.config);
      }
      const [one] = await this.#engine.prepare({ ...request, skills: [entry] });
      prepared.push(one!);
      const copied = this.#copied.get(key);
      if (copied) {
        this.#copied.delete(key);
        await record.mark(entry.skill.name, copied);
      }
    }
    return prepared;
  }

  /**
   * Runs one command with `bash -c` (Windows: `cmd.exe /c`) in its own
   * process group. At the timeout or the signal the whole group is stopped
   * (SIGTERM, a grace period, SIGKILL) and the result says `timedOut` or
   * `aborted` with `exitCode: -1`. A shell killed by a signal also reports
   * `-1` (a child killed under a surviving bash reports bash's `128 + n`).
   * Background jobs of a command that ended by itself are left running; one
   * that keeps stdout or stderr open makes the call wait, up to the timeout.
   *
   * @param request The command, working directory, timeout, variables, signal, cap.
   * @returns The result; a failing command is not an error.
   * @throws {TypeError} A blank command or one holding NUL, a bad variable,
   * or an empty working directory or one holding NUL (see
   * `checkExecuteRequest`, the same on every runtime).
   * @throws {RangeError} A bad timeout or cap (a timeout beyond
   * `MAX_EXECUTE_TIMEOUT_MS`, about 24.8 days, is clamped to it).
   * @throws {WorkspaceEscapeError} The working directory is outside the workspace.
   * @throws {RuntimePermissionError} Deno refuses to run the shell.
   * @throws {Deno.errors.NotFound} The working directory does not exist.
   * @throws {Error} The runtime is closed.
   */
  async execute(request: ExecuteRequest): Promise<ExecuteResult> {
    this.#checkOpen("run a command");
    const { command, timeoutMs, maxOutputBytes, env: requestEnv } =
      checkExecuteRequest(request, { maxOutputBytes: this.#maxOutputBytes });
    const cwd = await this.#workingDirectory(request.cwd);
    const env = this.#environmentFor(requestEnv);
    const observed = observeExecute({
      command,
      cwd,
      env,
      timeoutMs,
      maxOutputBytes,
      writablePaths: this.#workspace !== undefined
        ? [this.#workspace]
        : [this.#cwd, ...this.#skillFolders],
      ...(request.signal ? { signal: request.signal } : {}),
      ...streamsOf(request),
    }, this.#events);
    try {
      return await this.#launcher.launch(observed.request);
    } finally {
      observed.flush();
    }
  }

  /**
   * The merged runtime environment every command gets on top of the
   * inherited one: the `env` option, then every prepared skill's
   * configuration (later wins). Keep it out of logs.
   *
   * @returns A frozen map.
   * @throws {Error} The runtime is closed.
   */
  environment(): Readonly<Record<string, string>> {
    this.#checkOpen("read the environment");
    return Object.freeze({ ...this.#env, ...this.#engine.environment() });
  }

  /**
   * Forgets the merged environment and the prepared skills, and stops the
   * egress proxy of an isolated launcher this runtime made. Idempotent;
   * deletes nothing.
   *
   * @returns When done.
   */
  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      // Background commands end first (their process groups stopped), then
      // the egress proxy of a launcher this runtime made.
      this.#closing = closeBackgroundCommands(this).finally(async () => {
        this.#engine.clear();
        const launcher = this.#launcher;
        if (
          launcher instanceof BubblewrapLauncher &&
          ownedLaunchers.has(launcher)
        ) {
          ownedLaunchers.delete(launcher);
          await launcher.close();
        }
      });
    }
    return this.#closing ?? Promise.resolve();
  }

  /**
   * Conversation mode: closes the runtime and deletes the conversation's
   * workspace (everything in it). Explicit: `close()` never does it.
   * Idempotent.
   *
   * Permissions: `--allow-write` (and `--allow-read`) of the workspace.
   *
   * @example Ending a conversation for good
   * ```ts
   * import { assert } from "@std/assert";
   * import { LocalSkillRuntime } from "./runtime.ts";
   * const root = await Deno.makeTempDir();
   * const runtime = await LocalSkillRuntime.create({
   *   conversationsRoot: root,
   *   conversationId: "done",
   * });
   * await runtime.fs.writeText("notes.txt", "bye");
   * await runtime.destroy();
   * assert((await Deno.stat(`${root}/done`).catch(() => null)) === null);
   * await Deno.remove(root, { recursive: true });
   * ```
   *
   * @returns When done.
   * @throws {Error} The runtime is in plain mode (it has no workspace of its own).
   */
  async destroy(): Promise<void> {
    if (this.#workspace === undefined) {
      throw new Error(
        "Cannot destroy: the local runtime in plain mode has no workspace of its own",
      );
    }
    await this.close();
    await removeTree(this.#workspace);
  }

  /**
   * Closes the runtime (for `await using`).
   *
   * @returns When done.
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #makeEngine(): PreparationEngine {
    return new PreparationEngine({
      materialize: (skill, options) => this.#materialize(skill, options),
      run: (request) => this.execute(request),
    });
  }

  async #materialize(
    skill: Skill,
    options: MaterializeOptions,
  ): Promise<MaterializeResult> {
    this.#checkOpen("prepare skills");
    if (this.#fence === undefined) {
      this.#skillFolders.add(skill.basePath);
      return { basePath: skill.basePath, bootstrap: true };
    }
    // Through the fence: a command may have replaced the copy (or `skills/`)
    // with a symlink to a folder outside, which the copy would write into.
    const folder = stableSkillFolderName({
      name: skill.name,
      basePath: skill.basePath,
    });
    const target = await this.#fence.resolve(hostPath.join(
      this.#fence.root,
      "skills",
      folder,
    ));
    const { onProgress } = options;
    // A skill this conversation prepared before, unchanged (files and
    // configuration) and still there, is neither copied nor bootstrapped.
    const key = skillKey(skill);
    const config = this.#configs.get(key);
    const digest = await skillDigest(skill.basePath, {
      config: config
        ? { env: config.env, bootstrap: config.bootstrap }
        : undefined,
      policy: this.#copyPolicy,
      signal: options.signal,
    });
    const record = this.#record!;
    if (
      await record.digestOf(skill.name, folder) === digest &&
      await exists(hostPath.join(target, hostPath.basename(skill.location)))
    ) {
      return { basePath: target, bootstrap: false };
    }
    // Forget it first: a failed copy is never taken for a prepared skill.
    await record.forget(skill.name);
    onProgress?.({
      skillName: skill.name,
      stage: "copy",
      detail: `copying into ${target}`,
    });
    await copySkillFolder(skill.basePath, target, {
      ...(this.#copyPolicy ? { policy: this.#copyPolicy } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(onProgress
        ? {
          onProgress: (stats: CopyStats) =>
            onProgress({
              skillName: skill.name,
              stage: "copy",
              detail: `${stats.files} files (${stats.bytes ?? 0} bytes) copied`,
              files: stats.files,
              ...(stats.bytes !== undefined ? { bytes: stats.bytes } : {}),
            }),
        }
        : {}),
    });
    this.#copied.set(key, { folder, digest });
    return { basePath: target, bootstrap: true };
  }

  async #workingDirectory(path: string | undefined): Promise<string> {
    if (this.#fence) {
      return path === undefined
        ? this.#cwd
        : await this.#fence.resolveDirectory(path);
    }
    return path === undefined ? this.#cwd : hostPath.resolve(this.#cwd, path);
  }

  #environmentFor(
    requestEnv: Readonly<Record<string, string>>,
  ): Record<string, string> {
    const env: Record<string, string> = {
      ...this.#env,
      ...this.#engine.environment(),
      ...requestEnv,
    };
    if (this.#denoExecPath !== undefined && env.DENO_EXEC_PATH === undefined) {
      env.DENO_EXEC_PATH = this.#denoExecPath;
    }
    const path = env.PATH ?? this.#inheritedPath;
    if (this.#denoDir !== undefined && path !== undefined) {
      const separator = Deno.build.os === "windows" ? ";" : ":";
      if (!path.split(separator).includes(this.#denoDir)) {
        env.PATH = path ? `${this.#denoDir}${separator}${path}` : this.#denoDir;
      }
    }
    return env;
  }

  #checkOpen(action: string): void {
    if (this.#closed) {
      throw new Error(`Cannot ${action}: the local runtime is closed`);
    }
  }
}

/** Launchers made by {@linkcode LocalSkillRuntime.create} from `isolate`. */
const ownedLaunchers = new WeakSet<BubblewrapLauncher>();

/**
 * A file system that refuses every call once its runtime is closed.
 */
class ClosableFileSystem implements SkillRuntimeFileSystem {
  readonly #inner: SkillRuntimeFileSystem;
  readonly #check: () => void;

  constructor(inner: SkillRuntimeFileSystem, check: () => void) {
    this.#inner = inner;
    this.#check = check;
  }

  async resolve(path: string): Promise<string> {
    this.#check();
    return await this.#inner.resolve(path);
  }

  async readText(path: string, options: ReadTextOptions): Promise<string> {
    this.#check();
    return await this.#inner.readText(path, options);
  }

  async readBytes(
    path: string,
    options?: SignalOptions & { maxBytes?: number },
  ): Promise<Uint8Array> {
    this.#check();
    return await this.#inner.readBytes(path, options);
  }

  async writeText(
    path: string,
    content: string,
    options?: SignalOptions,
  ): Promise<void> {
    this.#check();
    return await this.#inner.writeText(path, content, options);
  }

  async writeTextIfUnchanged(
    path: string,
    expected: Uint8Array,
    content: string,
    options?: SignalOptions,
  ): Promise<boolean> {
    this.#check();
    // The inner file system is a LocalFileSystem, which has it.
    return await this.#inner.writeTextIfUnchanged!(
      path,
      expected,
      content,
      options,
    );
  }

  async stat(path: string, options?: SignalOptions): Promise<FileInfo | null> {
    this.#check();
    return await this.#inner.stat(path, options);
  }

  async list(path: string, options?: ListOptions): Promise<ListResult> {
    this.#check();
    return await this.#inner.list(path, options);
  }

  async readStream(
    path: string,
    options?: SignalOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    this.#check();
    return await this.#inner.readStream(path, options);
  }

  async openFile(
    path: string,
    options?: SignalOptions,
  ): Promise<OpenFileResult | null> {
    this.#check();
    // The inner file system is a LocalFileSystem, which has it.
    return await this.#inner.openFile!(path, options);
  }

  async download(
    path: string,
    localPath: string,
    options?: SignalOptions,
  ): Promise<DownloadResult> {
    this.#check();
    return await this.#inner.download(path, localPath, options);
  }
}

/**
 * The running `deno` binary, its folder, and the inherited `PATH` (when
 * `--allow-env=PATH` lets us read it), each `undefined` when unknown.
 */
function denoLocation(): [
  string | undefined,
  string | undefined,
  string | undefined,
] {
  let execPath: string | undefined;
  try {
    execPath = Deno.execPath();
  } catch {
    execPath = undefined;
  }
  let path: string | undefined;
  try {
    if (
      Deno.permissions.querySync({ name: "env", variable: "PATH" }).state ===
        "granted"
    ) {
      path = Deno.env.get("PATH");
    }
  } catch {
    path = undefined;
  }
  return [
    execPath,
    execPath === undefined ? undefined : hostPath.dirname(execPath),
    path,
  ];
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}
