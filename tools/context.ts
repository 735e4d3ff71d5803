/**
 * What every model-facing tool shares: the runtime, the skills, their lazy
 * preparation, the output limits, the secrets to keep out of outputs and the
 * optional file publisher.
 *
 * @module
 */
import { checkNumber } from "../_internal/check_number.ts";
import type { SkillRuntimeConfig } from "../runtimes/config.ts";
import {
  DEFAULT_EXECUTE_TIMEOUT_MS,
  type PreparedSkill,
  type PrepareProgress,
  type SkillRuntime,
} from "../runtimes/types.ts";
import type { Skill } from "../skill/types.ts";
import { DEFAULT_SEARCH_TIMEOUT_MS } from "../search/types.ts";
import { type Flight, startFlight, waitFor } from "../_internal/flight.ts";
import { inSpan } from "../observe/otel.ts";
import {
  EventSink,
  outputEmitter,
  type SkillEvent,
  type SkillEventListener,
} from "../observe/events.ts";
import {
  createToolApprover,
  type ToolApprovalPolicy,
  type ToolApprover,
} from "./approval.ts";

/** The limits of the tools. Every field has a default in {@linkcode DEFAULT_TOOL_LIMITS}. */
export interface ToolLimits {
  /** `bash`: the most characters returned (start and end kept). Default 30 000. */
  readonly bashOutputChars: number;
  /**
   * `bash`: the default timeout in ms. Default: the runtimes' own,
   * `DEFAULT_EXECUTE_TIMEOUT_MS` (120 000).
   */
  readonly bashDefaultTimeoutMs: number;
  /** `bash`: the largest timeout a model may ask for, in ms. Default 600 000. */
  readonly bashMaxTimeoutMs: number;
  /** `read`: the most bytes of text returned by one call. Default 4 MiB. */
  readonly readMaxBytes: number;
  /** `read`: the default number of lines. Default 2000. */
  readonly readDefaultLines: number;
  /** `read`: lines longer than this many characters are cut. Default 2000. */
  readonly readLineChars: number;
  /** `edit`: the largest file it edits, in bytes. Default 8 MiB. */
  readonly editMaxBytes: number;
  /** `grep`: the most characters returned. Default 100 000. */
  readonly grepOutputChars: number;
  /** `glob`: the most paths returned. Default 1000. */
  readonly globResults: number;
  /** `ls`: the default most entries. Default 1000. */
  readonly lsDefaultLimit: number;
  /** `skill`: the most file names listed. Default 200. */
  readonly skillFilesListed: number;
  /**
   * `read`, `write`, `edit`, `ls`: the time limit of one call, in ms (a
   * read scanning a huge file stops there). Default 30 000.
   */
  readonly fileTimeoutMs: number;
  /**
   * `grep`, `glob`: the time limit of one search, in ms. Default: the search
   * engines' own, `DEFAULT_SEARCH_TIMEOUT_MS` (30 000).
   */
  readonly searchTimeoutMs: number;
  /** `publish_file`: the time limit of one publication, in ms. Default 600 000. */
  readonly publishTimeoutMs: number;
  /** `bash` with `run_in_background`: the most running at once. Default 4. */
  readonly backgroundCommands: number;
}

/** The default limits. */
export const DEFAULT_TOOL_LIMITS: ToolLimits = Object.freeze({
  bashOutputChars: 30_000,
  bashDefaultTimeoutMs: DEFAULT_EXECUTE_TIMEOUT_MS,
  bashMaxTimeoutMs: 600_000,
  readMaxBytes: 4 * 1024 * 1024,
  readDefaultLines: 2000,
  readLineChars: 2000,
  editMaxBytes: 8 * 1024 * 1024,
  grepOutputChars: 100_000,
  globResults: 1000,
  lsDefaultLimit: 1000,
  skillFilesListed: 200,
  fileTimeoutMs: 30_000,
  searchTimeoutMs: DEFAULT_SEARCH_TIMEOUT_MS,
  publishTimeoutMs: 600_000,
  backgroundCommands: 4,
});

/** What {@linkcode FilePublisher.publish} takes. */
export interface PublishRequest {
  /** The file's bytes (consume or cancel it). */
  readonly stream: ReadableStream<Uint8Array>;
  /** The name the published file should carry, e.g. `report.pdf`. */
  readonly fileName: string;
  /** Its media type, e.g. `application/pdf`. */
  readonly contentType: string;
  /** Its size in bytes, when known. */
  readonly size?: number;
  /** Stops the upload. */
  readonly signal?: AbortSignal;
}

/** Where a published file can be fetched. */
export interface PublishedFile {
  /** The URL to hand to the user. */
  readonly url: string;
  /** When the URL stops working, if it does. */
  readonly expiresAt?: Date | string;
}

/**
 * Makes a file produced in a runtime reachable by the user (object storage, a
 * CDN, a local folder served over HTTP...). The application decides where
 * files go; the `publish_file` tool streams the file to it.
 */
export interface FilePublisher {
  /**
   * Stores a file and returns where it can be fetched.
   *
   * @param request The stream, its name, media type, size and a signal.
   * @returns Its URL and, optionally, when it expires.
   */
  publish(request: PublishRequest): Promise<PublishedFile>;
}

/** Options of {@linkcode ToolContext.prepare}. */
export interface PrepareSkillOptions {
  /**
   * Stops waiting; the preparation itself stops only when no caller waits
   * for it any more.
   */
  readonly signal?: AbortSignal;
  /** Also receives this preparation's progress events while waiting. */
  readonly events?: EventSink;
}

/** What every tool of one tool set shares. */
export interface ToolContext {
  /** Where everything runs. */
  readonly runtime: SkillRuntime;
  /** The skills offered to the model, in catalog order. */
  readonly skills: readonly Skill[];
  /**
   * Prepares a skill through the runtime with its configuration, once per
   * context (so once per tool set) even with a runtime that caches nothing:
   * a successful preparation is kept, concurrent callers share one
   * `runtime.prepare` call, and a failure is kept by neither (the next call
   * retries).
   */
  prepare(skill: Skill, options?: PrepareSkillOptions): Promise<PreparedSkill>;
  /** The limits. */
  readonly limits: ToolLimits;
  /** Where `publish_file` sends files, when the application gave one. */
  readonly publisher?: FilePublisher;
  /**
   * The values to keep out of every output: the runtime's environment and
   * every configuration's environment.
   */
  secrets(): string[];
  /** Where the tools' events go, when the application listens. */
  readonly events?: EventSink;
  /** Whether `bash` offers `run_in_background`. */
  readonly background?: boolean;
  /**
   * The policy step every call takes, when the application gave an
   * approval policy (and the active skill it records).
   */
  readonly approval?: ToolApprover;
}

/** Options of {@linkcode createToolContext}. */
export interface ToolContextOptions {
  /** The skills offered to the model. Default none. */
  readonly skills?: readonly Skill[];
  /** Configurations by skill name (already validated). */
  readonly configs?: ReadonlyMap<string, SkillRuntimeConfig>;
  /** Limits to change. */
  readonly limits?: Partial<ToolLimits>;
  /** The file publisher. */
  readonly publisher?: FilePublisher;
  /** Receives the tools' events (see `observe/events.ts`). */
  readonly onEvent?: SkillEventListener;
  /**
   * Whether `bash` offers `run_in_background` (with the `bash_output` and
   * `kill_bash` tools). Default false.
   */
  readonly background?: boolean;
  /** The approval policy over every call (see `buildSkillTools`). */
  readonly approve?: ToolApprovalPolicy;
  /** Whether packages' skills may pre-approve through `allowed-tools`. */
  readonly trustAllowedTools?: boolean;
}

/**
 * Makes the context the tool factories take. {@linkcode buildSkillTools} does
 * this for you; use it to build a custom tool set.
 *
 * @example A context for the file tools alone
 * ```ts
 * import { assert } from "@std/assert";
 * import { createToolContext } from "./context.ts";
 * import { SkillRuntimeConfig, LocalSkillRuntime } from "@skillrun/skillrun";
 * await using runtime = new LocalSkillRuntime();
 * const context = createToolContext(runtime, {
 *   limits: { bashOutputChars: 1000 },
 *   configs: new Map([["api", new SkillRuntimeConfig({ env: { TOKEN: "s3cret-value" } })]]),
 * });
 * assert(context.limits.bashOutputChars === 1000);
 * assert(context.secrets().includes("s3cret-value"));
 * ```
 *
 * @param runtime Where the tools run.
 * @param options Skills, configurations, limits and publisher.
 * @returns The shared context.
 * @throws {RangeError} A limit is not a positive integer.
 */
export function createToolContext(
  runtime: SkillRuntime,
  options: ToolContextOptions = {},
): ToolContext {
  const limits = checkToolLimits(options.limits);
  const configs = options.configs ?? new Map<string, SkillRuntimeConfig>();
  const configured = [...configs.values()].flatMap((c) => Object.values(c.env));
  // Successful preparations of this tool set, and the ones under way.
  const prepared = new Map<string, PreparedSkill>();
  const flights = new Map<string, Flight<PreparedSkill>>();
  const secrets = () => [...configured, ...runtimeSecrets(runtime)];
  const events = options.onEvent
    ? new EventSink(options.onEvent, secrets)
    : undefined;
  const listeners = new Map<string, Set<EventSink>>();
  const prepare: ToolContext["prepare"] = (
    skill,
    { signal, events: waiting } = {},
  ) => {
    const key = `${skill.name}\u0000${skill.basePath}`;
    const done = prepared.get(key);
    if (done) return Promise.resolve(done);
    if (waiting) {
      let set = listeners.get(key);
      if (!set) listeners.set(key, set = new Set());
      set.add(waiting);
      const leave = () => {
        set!.delete(waiting);
        if (set!.size === 0 && listeners.get(key) === set) {
          listeners.delete(key);
        }
      };
      const result = prepareKey(skill, key, signal);
      result.then(leave, leave);
      return result;
    }
    return prepareKey(skill, key, signal);
  };
  function prepareKey(
    skill: Skill,
    key: string,
    signal: AbortSignal | undefined,
  ): Promise<PreparedSkill> {
    let flight = flights.get(key);
    if (!flight || flight.controller.signal.aborted) {
      // None under way, or every caller left the one under way and it is
      // still stopping: start again once it has settled.
      // Every event of the preparation (progress and the bootstrap's
      // output) goes to the tools' listener and to each waiting call's.
      const fanOut = (event: SkillEvent) => {
        events?.emit(event);
        for (const sink of listeners.get(key) ?? []) sink.emit(event);
      };
      const started = startFlight(
        (signal) =>
          prepareOnce(
            runtime,
            skill,
            configs,
            signal,
            (progress) => fanOut({ type: "prepare_progress", ...progress }),
            fanOut,
          ),
        flight?.promise,
      );
      flight = started;
      flights.set(key, started);
      // First to hear of the outcome, before any caller: a caller that
      // retries at once after a failure starts a new preparation.
      const settle = () => {
        if (flights.get(key) === started) flights.delete(key);
      };
      started.promise.then((skill) => {
        prepared.set(key, skill);
        settle();
      }, settle);
    }
    return waitFor(flight, signal);
  }
  return {
    runtime,
    skills: options.skills ?? [],
    prepare,
    limits: Object.freeze(limits),
    ...(options.publisher ? { publisher: options.publisher } : {}),
    secrets,
    ...(events ? { events } : {}),
    ...(options.background ? { background: true } : {}),
    ...(options.approve
      ? {
        approval: createToolApprover({
          approve: options.approve,
          runtime,
          ...(options.trustAllowedTools ? { trustAllowedTools: true } : {}),
        }),
      }
      : {}),
  };
}

/** One call of the runtime's `prepare` for one skill with its configuration. */
async function prepareOnce(
  runtime: SkillRuntime,
  skill: Skill,
  configs: ReadonlyMap<string, SkillRuntimeConfig>,
  signal: AbortSignal,
  onProgress: (progress: PrepareProgress) => void,
  onEvent: (event: SkillEvent) => void,
): Promise<PreparedSkill> {
  const config = configs.get(skill.name);
  // The bootstrap's output as command_output events (the sinks downstream
  // redact; this one only decodes and keeps UTF-8 sequences whole).
  const sink = new EventSink(onEvent);
  const stdout = outputEmitter(sink, "stdout");
  const stderr = outputEmitter(sink, "stderr");
  const [prepared] = await inSpan(
    `prepare_skill ${skill.name}`,
    { "skillrun.skill.name": skill.name, "skillrun.runtime": runtime.name },
    () =>
      runtime.prepare({
        skills: [config ? { skill, config } : { skill }],
        signal,
        onProgress,
        onOutput: (stream, chunk) =>
          (stream === "stdout" ? stdout : stderr).write(chunk),
      }),
  ).finally(() => {
    stdout.flush();
    stderr.flush();
  });
  if (!prepared) {
    throw new Error(
      `Cannot prepare skill "${skill.name}": the runtime returned no prepared skill`,
    );
  }
  return prepared;
}

// The runtime's merged environment; none when it cannot say (e.g. closed),
// so the configured values are still redacted.
/**
 * The tools' limits: the defaults with the given ones, each checked.
 *
 * @param limits The limits to change.
 * @returns Every limit.
 * @throws {RangeError} A limit is not a positive integer.
 */
export function checkToolLimits(limits?: Partial<ToolLimits>): ToolLimits {
  const all = { ...DEFAULT_TOOL_LIMITS, ...limits };
  for (const [key, value] of Object.entries(all)) {
    checkNumber(value, `limit ${key}`, "positive integer");
  }
  return all;
}

function runtimeSecrets(runtime: SkillRuntime): string[] {
  try {
    return Object.values(runtime.environment());
  } catch {
    return [];
  }
}
