/**
 * A runtime of your own, written against the public contract of
 * `@skillrun/skillrun/runtime` and checked by the conformance kit
 * (`custom_runtime_test.ts` runs `testRuntimeConformance` on it; see
 * "Writing a runtime" in `runtimes/README.md`).
 *
 * `FolderSkillRuntime` keeps everything in one folder: each skill is copied
 * into `<root>/skills/<stable name>` (secrets left out, symlinks not
 * followed: the shared copy policy), bootstrapped there by the shared
 * preparation engine, and commands run with `bash` in their own process
 * group (the public launcher, `DenoCommandLauncher`: killed at the
 * timeout). It has no conversation (workspace) mode.
 *
 * Needs `--allow-read` and `--allow-write` of the skills and of the root, and
 * `--allow-run=bash`.
 *
 * @module
 */
import {
  checkExecuteRequest,
  copySkillFolder,
  DenoCommandLauncher,
  type ExecuteRequest,
  type ExecuteResult,
  LocalFileSystem,
  PreparationEngine,
  type PreparedSkill,
  type PrepareRequest,
  type SkillRuntime,
  type SkillRuntimeFileSystem,
  stableSkillFolderName,
} from "@skillrun/skillrun/runtime";

/** Options of {@linkcode FolderSkillRuntime}. */
export interface FolderSkillRuntimeOptions {
  /** The folder commands run in and skills are copied into (absolute). */
  readonly root: string;
}

/**
 * A runtime in one local folder: skills copied in, commands run there.
 *
 * @example Running a command
 * ```ts
 * import { assert } from "@std/assert";
 * import { FolderSkillRuntime } from "./custom_runtime.ts";
 * const root = await Deno.makeTempDir();
 * try {
 *   await using runtime = new FolderSkillRuntime({ root });
 *   const result = await runtime.execute({ command: "echo hi" });
 *   assert(result.stdout === "hi\n" && result.exitCode === 0);
 * } finally {
 *   await Deno.remove(root, { recursive: true });
 * }
 * ```
 */
export class FolderSkillRuntime implements SkillRuntime {
  /** The runtime's name. */
  readonly name = "folder";
  /** Where commands run by default: the root. */
  readonly cwd: string;
  /** The root's file system (relative paths resolve against the root). */
  readonly fs: SkillRuntimeFileSystem;
  readonly #engine: PreparationEngine;
  readonly #launcher = new DenoCommandLauncher({ shell: "bash" });
  #closed = false;

  /**
   * Makes the runtime (touches no file).
   *
   * @param options The root folder.
   * @throws {TypeError} The root is not absolute.
   */
  constructor(options: FolderSkillRuntimeOptions) {
    const root = options.root;
    this.fs = new LocalFileSystem({ cwd: root });
    this.cwd = root;
    this.#engine = new PreparationEngine({
      // A fresh copy for each runtime object: the bootstrap runs after it.
      materialize: async (skill, { signal }) => {
        const basePath = `${root}/skills/${stableSkillFolderName(skill)}`;
        await copySkillFolder(
          skill.basePath,
          basePath,
          signal ? { signal } : {},
        );
        return { basePath, bootstrap: true };
      },
      run: (request) => this.execute(request),
    });
  }

  /**
   * Copies and bootstraps skills, once per skill (see `PreparationEngine`).
   *
   * @param request The skills and their configurations.
   * @returns The prepared skills, in order.
   */
  prepare(request: PrepareRequest): Promise<PreparedSkill[]> {
    this.#checkOpen("prepare skills");
    return this.#engine.prepare(request);
  }

  /**
   * Runs a command with `bash -c`: the configured environment, then the
   * request's; stopped with its process group at the timeout or the signal.
   *
   * @param request The command and its options.
   * @returns The result (a failing command is not an error).
   */
  async execute(request: ExecuteRequest): Promise<ExecuteResult> {
    this.#checkOpen("run a command");
    const checked = checkExecuteRequest(request);
    const cwd = request.cwd === undefined
      ? this.cwd
      : await this.fs.resolve(request.cwd);
    return await this.#launcher.launch({
      command: checked.command,
      cwd,
      env: { ...this.#engine.environment(), ...checked.env },
      timeoutMs: checked.timeoutMs,
      maxOutputBytes: checked.maxOutputBytes,
      ...(request.signal ? { signal: request.signal } : {}),
      ...(request.onStdout ? { onStdout: request.onStdout } : {}),
      ...(request.onStderr ? { onStderr: request.onStderr } : {}),
    });
  }

  /**
   * The configured variables of the skills prepared so far.
   *
   * @returns A frozen map (keep it out of logs).
   */
  environment(): Readonly<Record<string, string>> {
    return this.#engine.environment();
  }

  /**
   * Forgets the prepared skills and their variables; deletes nothing.
   * Idempotent.
   *
   * @returns When done.
   */
  close(): Promise<void> {
    this.#closed = true;
    this.#engine.clear();
    return Promise.resolve();
  }

  /**
   * Closes the runtime (for `await using`).
   *
   * @returns When done.
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #checkOpen(action: string): void {
    if (this.#closed) {
      throw new Error(`Cannot ${action}: the folder runtime is closed`);
    }
  }
}
