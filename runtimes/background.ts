/**
 * Background commands on any runtime: started at once, read piecewise (the
 * output since the last read, bounded with its start and end kept), stopped
 * with their whole process group, at most a configured number at once, and
 * all stopped by the runtime's `close()`.
 *
 * Built on {@linkcode SkillRuntime.execute} with its live streams and its
 * signal, so every runtime kind has them with the same rules: the command
 * core (`command_core.ts`) of each executor already stops everything a
 * command started when its signal aborts.
 *
 * @module
 */
import { OutputCollector } from "../_internal/collector.ts";
import { MAX_EXECUTE_TIMEOUT_MS } from "./command_core.ts";
import type { ExecuteRequest, ExecuteResult, SkillRuntime } from "./types.ts";

/** The default most background commands running at once per runtime: 4. */
export const DEFAULT_MAX_BACKGROUND_COMMANDS = 4;

/** The default most bytes of each stream kept between two reads: 256 KiB. */
export const DEFAULT_BACKGROUND_OUTPUT_BYTES = 256 * 1024;

/** Options of {@linkcode BackgroundCommands}. */
export interface BackgroundCommandsOptions {
  /** The most commands running at once. Default 4. */
  readonly maxCommands?: number;
  /**
   * The most bytes of each stream kept between two reads (its start and its
   * end; the middle is counted, not kept). Default 256 KiB.
   */
  readonly maxOutputBytes?: number;
}

/** One background command as listed. */
export interface BackgroundCommandInfo {
  /** Its id, e.g. `bg1`. */
  readonly id: string;
  /** The command line. */
  readonly command: string;
  /** When it started. */
  readonly startedAt: Date;
  /** Whether it is still running. */
  readonly running: boolean;
  /** Its exit code once finished (`-1` when stopped, timed out or failed). */
  readonly exitCode?: number;
}

/** What {@linkcode BackgroundCommands.read} returns. */
export interface BackgroundOutput extends BackgroundCommandInfo {
  /** Standard output written since the last read (its middle cut when over the cap). */
  readonly stdout: string;
  /** Standard error written since the last read. */
  readonly stderr: string;
  /** Bytes of standard output since the last read. */
  readonly stdoutBytes: number;
  /** Bytes of standard error since the last read. */
  readonly stderrBytes: number;
  /** Whether part of this read's output was dropped (its middle). */
  readonly truncated: boolean;
  /** Why it failed to run at all, when it did (e.g. the runtime refused it). */
  readonly error?: string;
  /** Whether it was stopped (killed, or the runtime closed). */
  readonly killed: boolean;
  /** Whether its timeout stopped it. */
  readonly timedOut: boolean;
}

class Entry {
  readonly controller = new AbortController();
  stdout: OutputCollector;
  stderr: OutputCollector;
  result: ExecuteResult | undefined;
  error: string | undefined;
  killed = false;
  done: Promise<void> = Promise.resolve();

  constructor(
    readonly id: string,
    readonly command: string,
    readonly startedAt: Date,
    readonly maxBytes: number,
  ) {
    this.stdout = new OutputCollector({ maxBytes });
    this.stderr = new OutputCollector({ maxBytes });
  }

  get running(): boolean {
    return this.result === undefined && this.error === undefined;
  }

  info(): BackgroundCommandInfo {
    return {
      id: this.id,
      command: this.command,
      startedAt: this.startedAt,
      running: this.running,
      ...(this.running ? {} : { exitCode: this.result?.exitCode ?? -1 }),
    };
  }
}

/**
 * The background commands of one runtime (get them with
 * {@linkcode backgroundCommands}, which keeps one set per runtime so that
 * the runtime's `close()` stops them).
 *
 * @example Start, read, read again, wait for the exit code
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * import { backgroundCommands } from "@skillrun/skillrun/runtime";
 * await using runtime = new LocalSkillRuntime();
 * const commands = backgroundCommands(runtime);
 * const { id } = commands.start({ command: "echo one; sleep 0.2; echo two; exit 3" });
 * await new Promise((resolve) => setTimeout(resolve, 100));
 * assertEquals(commands.read(id).stdout, "one\n");
 * await commands.wait(id);
 * const last = commands.read(id);
 * assertEquals([last.stdout, last.running, last.exitCode], ["two\n", false, 3]);
 * ```
 */
export class BackgroundCommands {
  readonly #runtime: SkillRuntime;
  readonly #max: number;
  readonly #maxBytes: number;
  readonly #entries = new Map<string, Entry>();
  #next = 1;
  #closed = false;

  /**
   * Makes an empty set for a runtime.
   *
   * @param runtime Where the commands run.
   * @param options The limits.
   * @throws {RangeError} A limit is not a positive integer.
   */
  constructor(runtime: SkillRuntime, options: BackgroundCommandsOptions = {}) {
    this.#runtime = runtime;
    this.#max = positive(
      options.maxCommands ?? DEFAULT_MAX_BACKGROUND_COMMANDS,
      "maxCommands",
    );
    this.#maxBytes = positive(
      options.maxOutputBytes ?? DEFAULT_BACKGROUND_OUTPUT_BYTES,
      "maxOutputBytes",
    );
  }

  /** The most commands running at once. */
  get maxCommands(): number {
    return this.#max;
  }

  /**
   * Starts a command and returns at once. Its timeout defaults to the
   * longest one (it runs until it ends, is killed or the runtime closes).
   *
   * @param request The command, as for `execute` (its own streams and
   * signal are kept: the signal stops it too).
   * @returns Its id and state.
   * @throws {RangeError} As many commands as allowed are running.
   * @throws {Error} The set was closed.
   */
  start(request: ExecuteRequest): BackgroundCommandInfo {
    if (this.#closed) {
      throw new Error(
        "Cannot start a background command: the runtime is closed",
      );
    }
    const running = [...this.#entries.values()].filter((e) => e.running);
    if (running.length >= this.#max) {
      throw new RangeError(
        `Cannot start another background command: ${running.length} are running, the most allowed at once (kill one first: ${
          running.map((e) => e.id).join(", ")
        })`,
      );
    }
    const id = `bg${this.#next++}`;
    const entry = new Entry(id, request.command, new Date(), this.#maxBytes);
    const { onStdout, onStderr } = request;
    const signal = request.signal
      ? AbortSignal.any([request.signal, entry.controller.signal])
      : entry.controller.signal;
    entry.done = this.#runtime.execute({
      ...request,
      timeoutMs: request.timeoutMs ?? MAX_EXECUTE_TIMEOUT_MS,
      maxOutputBytes: Math.min(
        request.maxOutputBytes ?? this.#maxBytes,
        this.#maxBytes,
      ),
      signal,
      onStdout: (chunk) => {
        entry.stdout.push(chunk);
        onStdout?.(chunk);
      },
      onStderr: (chunk) => {
        entry.stderr.push(chunk);
        onStderr?.(chunk);
      },
    }).then(
      (result) => {
        entry.result = result;
      },
      (error) => {
        entry.error = error instanceof Error ? error.message : String(error);
      },
    );
    this.#entries.set(id, entry);
    return entry.info();
  }

  /**
   * The output written since the last read (bounded: its start and end),
   * with the exit code once finished.
   *
   * @param id The command's id.
   * @returns The new output and the state.
   * @throws {RangeError} No such command.
   */
  read(id: string): BackgroundOutput {
    const entry = this.#get(id);
    const { stdout, stderr } = entry;
    entry.stdout = new OutputCollector({ maxBytes: this.#maxBytes });
    entry.stderr = new OutputCollector({ maxBytes: this.#maxBytes });
    return {
      ...entry.info(),
      stdout: stdout.text(),
      stderr: stderr.text(),
      stdoutBytes: stdout.totalBytes,
      stderrBytes: stderr.totalBytes,
      truncated: stdout.truncated || stderr.truncated,
      killed: entry.killed || (entry.result?.aborted ?? false),
      timedOut: entry.result?.timedOut ?? false,
      ...(entry.error !== undefined ? { error: entry.error } : {}),
    };
  }

  /**
   * Waits until the command has ended.
   *
   * @param id The command's id.
   * @returns Its state.
   * @throws {RangeError} No such command.
   */
  async wait(id: string): Promise<BackgroundCommandInfo> {
    const entry = this.#get(id);
    await entry.done;
    return entry.info();
  }

  /**
   * Stops a command and everything it started (its process group), and
   * waits until it has ended.
   *
   * @param id The command's id.
   * @returns Its state (still listed: a last read gives its final output).
   * @throws {RangeError} No such command.
   */
  async kill(id: string): Promise<BackgroundCommandInfo> {
    const entry = this.#get(id);
    if (entry.running) {
      entry.killed = true;
      entry.controller.abort(new DOMException("Killed", "AbortError"));
    }
    await entry.done;
    return entry.info();
  }

  /**
   * Every command started and not forgotten, in start order.
   *
   * @returns Their states.
   */
  list(): BackgroundCommandInfo[] {
    return [...this.#entries.values()].map((entry) => entry.info());
  }

  /**
   * Stops every running command and waits for them; later starts are
   * refused. Idempotent.
   *
   * @returns When every command has ended.
   */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#entries.keys()].map((id) => this.kill(id)));
  }

  #get(id: string): Entry {
    const entry = typeof id === "string" ? this.#entries.get(id) : undefined;
    if (!entry) {
      const known = [...this.#entries.keys()];
      throw new RangeError(
        `No background command "${String(id)}" (${
          known.length ? `known: ${known.join(", ")}` : "none was started"
        })`,
      );
    }
    return entry;
  }
}

const sets = new WeakMap<SkillRuntime, BackgroundCommands>();

/**
 * The background commands of a runtime: one set per runtime, made on first
 * use (later options are ignored). The runtime's `close()` stops them.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * import { backgroundCommands } from "@skillrun/skillrun/runtime";
 * await using runtime = new LocalSkillRuntime();
 * assert(backgroundCommands(runtime) === backgroundCommands(runtime));
 * ```
 *
 * @param runtime The runtime.
 * @param options The limits, used when the set is made.
 * @returns The runtime's set.
 */
export function backgroundCommands(
  runtime: SkillRuntime,
  options?: BackgroundCommandsOptions,
): BackgroundCommands {
  let set = sets.get(runtime);
  if (!set) {
    set = new BackgroundCommands(runtime, options);
    sets.set(runtime, set);
  }
  return set;
}

/**
 * The background commands of a runtime, without making its set (so later
 * options still count): none when it never had any.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * import { listBackgroundCommands } from "@skillrun/skillrun/runtime";
 * await using runtime = new LocalSkillRuntime();
 * assertEquals(listBackgroundCommands(runtime), []);
 * ```
 *
 * @param runtime The runtime.
 * @returns Their states, in start order.
 */
export function listBackgroundCommands(
  runtime: SkillRuntime,
): BackgroundCommandInfo[] {
  return sets.get(runtime)?.list() ?? [];
}

/**
 * Stops the background commands of a runtime, if it has any (what a
 * runtime's `close()` calls first).
 *
 * @example
 * ```ts
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * import { closeBackgroundCommands } from "@skillrun/skillrun/runtime";
 * const runtime = new LocalSkillRuntime();
 * await closeBackgroundCommands(runtime);
 * await runtime.close();
 * ```
 *
 * @param runtime The runtime.
 * @returns When they have ended.
 */
export async function closeBackgroundCommands(
  runtime: SkillRuntime,
): Promise<void> {
  await sets.get(runtime)?.close();
}

function positive(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(
      `Cannot use background commands with ${name} "${value}": it must be a positive integer`,
    );
  }
  return value;
}
