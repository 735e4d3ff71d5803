/**
 * The preparation engine every runtime reuses: environment merge in the
 * documented order, copy or upload through the runtime, bootstrap commands in
 * order in the prepared folder, nothing cached on failure, once per skill even
 * under concurrent calls.
 *
 * @module
 */
import type { Skill } from "../skill/types.ts";
import type { SkillRuntimeConfig } from "./config.ts";
import { SkillPreparationError } from "./errors.ts";
import type {
  ExecuteRequest,
  ExecuteResult,
  PreparedSkill,
  PrepareProgress,
  PrepareRequest,
} from "./types.ts";
import { redactSecrets } from "../_internal/redact.ts";
import {
  type Flight as SharedFlight,
  startFlight,
  waitFor,
} from "../_internal/flight.ts";
import { skillKey } from "./_skill_key.ts";

/** What {@linkcode PreparationHooks.materialize} returns. */
export interface MaterializeResult {
  /** Where the skill's folder is inside the runtime. */
  readonly basePath: string;
  /**
   * Whether the bootstrap commands must run now: `true` after a copy or upload,
   * or on a first local preparation; `false` when the runtime knows the skill is
   * already bootstrapped there (e.g. a remote store says so).
   */
  readonly bootstrap: boolean;
}

/** Options passed to {@linkcode PreparationHooks.materialize}. */
export interface MaterializeOptions {
  /** Stops the copy or upload. */
  readonly signal?: AbortSignal;
  /** Reports progress. */
  readonly onProgress?: (progress: PrepareProgress) => void;
}

/** What a runtime lends the engine. */
export interface PreparationHooks {
  /** Makes the skill's files available in the runtime (copy, upload, or nothing). */
  materialize(
    skill: Skill,
    options: MaterializeOptions,
  ): Promise<MaterializeResult>;
  /**
   * Runs one bootstrap command. The runtime's `execute` is the right choice: it
   * already merges the environment the engine holds.
   */
  run(request: ExecuteRequest): Promise<ExecuteResult>;
}

/** How much of a failing bootstrap command's output an error message keeps. */
const OUTPUT_TAIL_CHARS = 2000;

/**
 * Prepares skills for a runtime. A runtime owns one engine, hands it a way to
 * materialise a skill and to run a command, and delegates `prepare` and
 * `environment` to it.
 *
 * Preparation of one skill: merge its configuration's environment (a skill
 * prepared later overrides an earlier one), materialise it, run its bootstrap
 * commands in order in its base path (each with its own timeout; the first that
 * fails or times out stops the rest), and only then record it as prepared. On
 * failure nothing is recorded and its environment is withdrawn, so a later call
 * retries from the start. Concurrent preparations of one skill share one run.
 *
 * @example Preparing with a runtime's hooks
 * ```ts
 * import { assert } from "@std/assert";
 * import {
 *   PreparationEngine,
 *   SkillRuntimeConfig,
 * } from "@skillrun/skillrun/runtime";
 * import type { Skill } from "@skillrun/skillrun";
 *
 * const ran: string[] = [];
 * const engine = new PreparationEngine({
 *   materialize: (skill) => Promise.resolve({ basePath: skill.basePath, bootstrap: true }),
 *   run: (request) => {
 *     ran.push(request.command);
 *     return Promise.resolve({
 *       stdout: "", stderr: "", exitCode: 0, timedOut: false, aborted: false,
 *       stdoutBytes: 0, stderrBytes: 0, stdoutTruncated: false, stderrTruncated: false,
 *       durationMs: 1,
 *     });
 *   },
 * });
 * const skill: Skill = {
 *   name: "demo", description: "A demo", basePath: "/skills/demo",
 *   location: "/skills/demo/SKILL.md", instructions: "", frontMatter: {}, warnings: [],
 * };
 * const config = new SkillRuntimeConfig({ env: { MODE: "fast" }, bootstrap: ["make"] });
 * const [prepared] = await engine.prepare({ skills: [{ skill, config }] });
 * await engine.prepare({ skills: [{ skill, config }] }); // idempotent
 * assert(prepared?.basePath === "/skills/demo");
 * assert(ran.length === 1 && engine.environment().MODE === "fast");
 * ```
 */
export class PreparationEngine {
  readonly #hooks: PreparationHooks;
  /** Environment per skill key, in merge order (later entries win). */
  readonly #envs = new Map<string, Readonly<Record<string, string>>>();
  /** Prepared skills, with the configuration they were prepared with. */
  readonly #prepared = new Map<
    string,
    { prepared: PreparedSkill; fingerprint: string }
  >();
  /** Preparations under way, shared by their callers. */
  readonly #inFlight = new Map<string, Flight>();
  #merged: Readonly<Record<string, string>> | undefined;

  /**
   * Makes an engine.
   *
   * @param hooks How the runtime materialises a skill and runs a command.
   */
  constructor(hooks: PreparationHooks) {
    this.#hooks = hooks;
  }

  /**
   * The runtime-wide environment: the configurations of every skill prepared
   * (or being prepared) so far, later ones winning. Excludes the base
   * environment and a request's own.
   *
   * @returns A frozen map; keep it out of logs.
   */
  environment(): Readonly<Record<string, string>> {
    if (!this.#merged) {
      const merged: Record<string, string> = {};
      for (const env of this.#envs.values()) Object.assign(merged, env);
      this.#merged = Object.freeze(merged);
    }
    return this.#merged;
  }

  /**
   * Whether a skill has been prepared by this engine.
   *
   * @param skill The skill.
   * @returns `true` once its preparation succeeded.
   */
  isPrepared(skill: Skill): boolean {
    return this.#prepared.has(skillKey(skill));
  }

  /**
   * Prepares skills in the order of the request and returns them in the same
   * number and order.
   *
   * @param request The skills, their configurations, a signal and a progress callback.
   * @returns The prepared skills.
   * @throws {SkillPreparationError} A skill could not be materialised or a
   * bootstrap command failed or timed out; skills before it stay prepared.
   */
  async prepare(request: PrepareRequest): Promise<PreparedSkill[]> {
    const results: PreparedSkill[] = [];
    for (const { skill, config } of request.skills) {
      request.signal?.throwIfAborted();
      results.push(await this.#prepareOne(skill, config, request));
    }
    return results;
  }

  /** Forgets every prepared skill and the merged environment (for `close()`). */
  clear(): void {
    this.#envs.clear();
    this.#prepared.clear();
    this.#inFlight.clear();
    this.#merged = undefined;
  }

  #prepareOne(
    skill: Skill,
    config: SkillRuntimeConfig | undefined,
    request: PrepareRequest,
  ): Promise<PreparedSkill> {
    const key = skillKey(skill);
    const fingerprint = fingerprintOf(config);
    const done = this.#prepared.get(key);
    if (done) {
      return accepts(config, done.fingerprint, fingerprint)
        ? Promise.resolve(done.prepared)
        : Promise.reject(differentConfigError(skill));
    }
    let flight = this.#inFlight.get(key);
    if (flight && !accepts(config, flight.fingerprint, fingerprint)) {
      return Promise.reject(differentConfigError(skill));
    }
    if (!flight || flight.controller.signal.aborted) {
      // None under way, or every caller left the one under way and it is
      // still stopping: start again once it has settled.
      flight = this.#start(key, skill, config, request, flight?.promise);
    }
    return waitFor(flight, request.signal);
  }

  /**
   * Starts a preparation shared by every caller of the same skill. It has its
   * own signal: a caller whose signal aborts only stops waiting, and the
   * preparation stops when no caller waits any more.
   */
  #start(
    key: string,
    skill: Skill,
    config: SkillRuntimeConfig | undefined,
    request: PrepareRequest,
    after: Promise<unknown> | undefined,
  ): Flight {
    const flight: Flight = {
      ...startFlight(
        (signal) =>
          Promise.resolve(
            this.#prepared.get(key)?.prepared ??
              this.#run(key, skill, config, { ...request, signal }),
          ),
        after,
      ),
      fingerprint: fingerprintOf(config),
    };
    flight.promise.finally(() => {
      if (this.#inFlight.get(key) === flight) this.#inFlight.delete(key);
    }).catch(() => {});
    this.#inFlight.set(key, flight);
    return flight;
  }

  async #run(
    key: string,
    skill: Skill,
    config: SkillRuntimeConfig | undefined,
    request: PrepareRequest,
  ): Promise<PreparedSkill> {
    const { signal, onProgress, onOutput } = request;
    this.#setEnv(key, config?.env ?? {});
    try {
      let materialized: MaterializeResult;
      try {
        materialized = await this.#hooks.materialize(skill, {
          ...(signal ? { signal } : {}),
          ...(onProgress ? { onProgress } : {}),
        });
      } catch (error) {
        if (error instanceof SkillPreparationError) throw error;
        throw new SkillPreparationError(
          `Cannot prepare skill "${skill.name}": ${
            this.#clean(messageOf(error))
          }`,
          { skillName: skill.name, cause: error },
        );
      }
      const commands = config?.bootstrap ?? [];
      if (materialized.bootstrap) {
        for (const [index, bootstrap] of commands.entries()) {
          signal?.throwIfAborted();
          onProgress?.({
            skillName: skill.name,
            stage: "bootstrap",
            detail: `command ${index + 1} of ${commands.length}`,
            step: index + 1,
            steps: commands.length,
          });
          const result = await this.#hooks.run({
            command: bootstrap.command,
            cwd: materialized.basePath,
            timeoutMs: bootstrap.timeoutMs,
            ...(signal ? { signal } : {}),
            ...(onOutput
              ? {
                onStdout: (chunk: Uint8Array) => onOutput("stdout", chunk),
                onStderr: (chunk: Uint8Array) => onOutput("stderr", chunk),
              }
              : {}),
          });
          if (result.exitCode !== 0 || result.timedOut || result.aborted) {
            const output = `${result.stdout}${result.stderr}`;
            onProgress?.({
              skillName: skill.name,
              stage: "bootstrap",
              detail: `command ${index + 1} of ${commands.length} failed`,
              step: index + 1,
              steps: commands.length,
              outputTail: this.#clean(output.slice(-OUTPUT_TAIL_CHARS)),
            });
            throw this.#bootstrapError(
              skill,
              index,
              commands.length,
              bootstrap.timeoutMs,
              result,
            );
          }
        }
      }
      const prepared: PreparedSkill = Object.freeze({
        name: skill.name,
        basePath: materialized.basePath,
        skill,
      });
      this.#prepared.set(key, { prepared, fingerprint: fingerprintOf(config) });
      onProgress?.({ skillName: skill.name, stage: "done" });
      return prepared;
    } catch (error) {
      this.#envs.delete(key);
      this.#merged = undefined;
      throw error;
    }
  }

  #setEnv(key: string, env: Readonly<Record<string, string>>): void {
    // Re-inserting moves the skill to the end: the one prepared last wins.
    this.#envs.delete(key);
    this.#envs.set(key, env);
    this.#merged = undefined;
  }

  #clean(text: string): string {
    return redactSecrets(text, Object.values(this.environment()));
  }

  #bootstrapError(
    skill: Skill,
    index: number,
    count: number,
    timeoutMs: number,
    result: ExecuteResult,
  ): SkillPreparationError {
    const which = `bootstrap command ${index + 1} of ${count}`;
    const reason = result.timedOut
      ? `timed out after ${timeoutMs} ms`
      : result.aborted
      ? "was aborted"
      : `exited with code ${result.exitCode}`;
    // Redacted before it is cut to its tail, so no part of a secret survives.
    const output = this.#clean(result.stderr.trim() || result.stdout.trim())
      .slice(-OUTPUT_TAIL_CHARS);
    const details = output ? `\n${output}` : "";
    return new SkillPreparationError(
      `Cannot prepare skill "${skill.name}": ${which} ${reason}${details}`,
      {
        skillName: skill.name,
        exitCode: result.exitCode,
        timedOut: result.timedOut,
        commandIndex: index,
      },
    );
  }
}

/** What identifies a configuration's content (kept in memory only: it holds secrets). */
function fingerprintOf(config: SkillRuntimeConfig | undefined): string {
  const env = Object.entries(config?.env ?? {}).sort(([a], [b]) =>
    a < b ? -1 : 1
  );
  return JSON.stringify([env, config?.bootstrap ?? []]);
}

/**
 * Whether a call may share a preparation made with `recorded`: a call without
 * a configuration adds nothing; one with a different configuration would be
 * ignored, so it is refused instead.
 */
function accepts(
  config: SkillRuntimeConfig | undefined,
  recorded: string,
  given: string,
): boolean {
  return config === undefined || recorded === given;
}

function differentConfigError(skill: Skill): SkillPreparationError {
  return new SkillPreparationError(
    `Cannot prepare skill "${skill.name}": it is already prepared in this runtime with a different configuration; use a new runtime to apply another`,
    { skillName: skill.name },
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A preparation under way, with the configuration it was started with. */
interface Flight extends SharedFlight<PreparedSkill> {
  readonly fingerprint: string;
}
