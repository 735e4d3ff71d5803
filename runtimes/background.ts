/**
 * Background commands on any runtime: started at once, read piecewise (the
 * output since the last read, bounded with its start and end kept), stopped
 * with their whole process group, at most a configured number at once, and
 * all stopped by the runtime's `close()`.
 *
 * A runtime with its own background facility
 * ({@linkcode SkillRuntime.startBackground}) runs them there; any other on
 * {@linkcode SkillRuntime.execute} with its live streams and its signal, so
 * every runtime kind has them with the same rules: the command core
 * (`command_core.ts`) of each executor already stops everything a command
 * started when its signal aborts.
 *
 * @module
 */
import { checkNumber } from "../_internal/check_number.ts";
import { OutputCollector } from "../_internal/collector.ts";
import { MAX_EXECUTE_TIMEOUT_MS } from "./command_core.ts";
import type {
  BackgroundProcess,
  BackgroundState,
  ExecuteRequest,
  ExecuteResult,
  SkillRuntime,
} from "./types.ts";

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

/** How often `wait` asks a runtime's own background facility, in ms. */
const WAIT_POLL_MS = 200;

class Entry {
  readonly controller = new AbortController();
  stdout: OutputCollector;
  stderr: OutputCollector;
  result: ExecuteResult | undefined;
  error: string | undefined;
  killed = false;
  done: Promise<void> = Promise.resolve();
  /** The runtime's own background command, when it has that facility. */
  process: BackgroundProcess | undefined;
  /** Its last known state (native only). */
  state: BackgroundState = { running: true };

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
    if (this.process) return this.state.running && this.error === undefined;
    return this.result === undefined && this.error === undefined;
  }

  get exitCode(): number {
    // Stopped by kill: -1, as on `execute` (not the shell's 143).
    if (this.process) return this.killed ? -1 : this.state.exitCode ?? -1;
    return this.result?.exitCode ?? -1;
  }

  /** Asks the runtime's own facility for new output and the state. */
  async poll(): Promise<void> {
    if (!this.process || !this.running) return;
    try {
      this.state = await this.process.poll();
      if (this.state.error !== undefined) this.error = this.state.error;
    } catch (error) {
      if (!this.running) return;
      throw error;
    }
  }

  info(): BackgroundCommandInfo {
    return {
      id: this.id,
      command: this.command,
      startedAt: this.startedAt,
      running: this.running,
      ...(this.running ? {} : { exitCode: this.exitCode }),
    };
  }
}

/**
 * The background commands of one runtime (get them with
 * {@linkcode backgroundCommands}, which keeps one set per runtime so that
 * the runtime's `close()` stops them).
 *
 * A runtime with its own background facility
 * ({@linkcode SkillRuntime.startBackground}: OpenSandbox's background
 * commands, AIO's asynchronous exec) runs them there, under the server's
 * id, and each read fetches the new output from the server; any other runs
 * them on `execute` with its live streams (ids `bg1`, `bg2`, ...).
 *
 * @example Start, read, read again, wait for the exit code
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { LocalSkillRuntime } from "@skillrun/skillrun";
 * import { backgroundCommands } from "@skillrun/skillrun/runtime";
 * await using runtime = new LocalSkillRuntime();
 * const commands = backgroundCommands(runtime);
 * const { id } = await commands.start({ command: "echo one; sleep 0.5; echo two; exit 3" });
 * let first = "";
 * while (first === "") {
 *   await new Promise((resolve) => setTimeout(resolve, 20));
 *   first = (await commands.read(id)).stdout;
 * }
 * assertEquals(first, "one\n");
 * await commands.wait(id);
 * const last = await commands.read(id);
 * assertEquals([last.stdout, last.running, last.exitCode], ["two\n", false, 3]);
 * ```
 */
export class BackgroundCommands {
  readonly #runtime: SkillRuntime;
  readonly #max: number;
  readonly #maxBytes: number;
  readonly #entries = new Map<string, Entry>();
  /** Starts under way (they count against the limit). */
  #starting = 0;
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
    this.#max = checkNumber(
      options.maxCommands ?? DEFAULT_MAX_BACKGROUND_COMMANDS,
      "maxCommands",
      "positive integer",
      "use background commands with",
    );
    this.#maxBytes = checkNumber(
      options.maxOutputBytes ?? DEFAULT_BACKGROUND_OUTPUT_BYTES,
      "maxOutputBytes",
      "positive integer",
      "use background commands with",
    );
  }

  /** The most commands running at once. */
  get maxCommands(): number {
    return this.#max;
  }

  /**
   * Starts a command and returns as soon as it runs (on a runtime with its
   * own facility, once the server gave its id). Its timeout defaults to the
   * longest one (it runs until it ends, is killed or the runtime closes).
   *
   * @param request The command, as for `execute` (its own streams and
   * signal are kept: the signal stops it too).
   * @returns Its id and state.
   * @throws {RangeError} As many commands as allowed are running.
   * @throws {Error} The set was closed, or the runtime refused the command.
   */
  async start(request: ExecuteRequest): Promise<BackgroundCommandInfo> {
    this.#checkOpen();
    let running = [...this.#entries.values()].filter((e) => e.running);
    if (running.length + this.#starting >= this.#max) {
      // A command of the server's own may have ended since we last asked.
      await Promise.all(running.map((e) => e.poll().catch(() => {})));
      running = running.filter((e) => e.running);
    }
    if (running.length + this.#starting >= this.#max) {
      throw new RangeError(
        `Cannot start another background command: ${
          running.length + this.#starting
        } are running, the most allowed at once (kill one first: ${
          running.map((e) => e.id).join(", ")
        })`,
      );
    }
    this.#checkOpen();
    this.#starting++;
    try {
      return await this.#start(request);
    } finally {
      this.#starting--;
    }
  }

  async #start(request: ExecuteRequest): Promise<BackgroundCommandInfo> {
    const { onStdout, onStderr } = request;
    // The collectors are swapped by each read: always push into the current.
    let entry: Entry | undefined;
    const pending = new Entry("", request.command, new Date(), this.#maxBytes);
    const sinkOut = (chunk: Uint8Array) => {
      (entry ?? pending).stdout.push(chunk);
      onStdout?.(chunk);
    };
    const sinkErr = (chunk: Uint8Array) => {
      (entry ?? pending).stderr.push(chunk);
      onStderr?.(chunk);
    };
    const timeoutMs = request.timeoutMs ?? MAX_EXECUTE_TIMEOUT_MS;
    const maxOutputBytes = Math.min(
      request.maxOutputBytes ?? this.#maxBytes,
      this.#maxBytes,
    );
    const process = this.#runtime.startBackground
      ? await this.#runtime.startBackground({
        ...request,
        timeoutMs,
        maxOutputBytes,
        onStdout: sinkOut,
        onStderr: sinkErr,
      })
      : undefined;
    if (process) {
      entry = new Entry(
        this.#entries.has(process.id)
          ? `${process.id}-${this.#next++}`
          : process.id,
        request.command,
        pending.startedAt,
        this.#maxBytes,
      );
      entry.stdout = pending.stdout;
      entry.stderr = pending.stderr;
      entry.process = process;
      const started = entry;
      this.#entries.set(entry.id, entry);
      request.signal?.addEventListener(
        "abort",
        () => void this.kill(started.id).catch(() => {}),
        { once: true },
      );
      if (this.#closed) await this.kill(entry.id);
      return entry.info();
    }
    const id = `bg${this.#next++}`;
    const generic = new Entry(
      id,
      request.command,
      pending.startedAt,
      this.#maxBytes,
    );
    generic.stdout = pending.stdout;
    generic.stderr = pending.stderr;
    entry = generic;
    const signal = request.signal
      ? AbortSignal.any([request.signal, generic.controller.signal])
      : generic.controller.signal;
    generic.done = this.#runtime.execute({
      ...request,
      timeoutMs,
      maxOutputBytes,
      signal,
      onStdout: sinkOut,
      onStderr: sinkErr,
    }).then(
      (result) => {
        generic.result = result;
      },
      (error) => {
        generic.error = error instanceof Error ? error.message : String(error);
      },
    );
    this.#entries.set(id, generic);
    return generic.info();
  }

  /**
   * The output written since the last read (bounded: its start and end),
   * with the exit code once finished.
   *
   * @param id The command's id.
   * @returns The new output and the state.
   * @throws {RangeError} No such command.
   * @throws {Error} The runtime's server could not be asked.
   */
  async read(id: string): Promise<BackgroundOutput> {
    const entry = await this.#find(id);
    await entry.poll();
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
      timedOut: entry.result?.timedOut ?? entry.state.timedOut ?? false,
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
    const entry = await this.#find(id);
    await entry.done;
    while (entry.process && entry.running) {
      await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
      await entry.poll();
    }
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
    const entry = await this.#find(id);
    if (entry.running) {
      entry.killed = true;
      if (entry.process) {
        await entry.process.kill();
        // The last output, and the state now that it has ended.
        await entry.poll().catch(() => {});
        if (entry.state.running) {
          entry.state = { ...entry.state, running: false };
        }
      } else {
        entry.controller.abort(new DOMException("Killed", "AbortError"));
      }
    }
    await entry.done;
    return entry.info();
  }

  /**
   * Every command started and not forgotten, in start order, as last known
   * (a runtime's own facility is asked on each read).
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
    await Promise.all(
      [...this.#entries.entries()].map(([id, entry]) =>
        this.kill(id).catch((error) => {
          // The server could not be told: it is no longer ours to watch.
          if (entry.running) {
            entry.error = `the runtime closed and could not stop it: ${
              error instanceof Error ? error.message : String(error)
            }`;
          }
        })
      ),
    );
  }

  #checkOpen(): void {
    if (this.#closed) {
      throw new Error(
        "Cannot start a background command: the runtime is closed",
      );
    }
  }

  /**
   * A command of this set, or one another runtime object started on the
   * same sandbox (another instance of the server): found by its id there.
   */
  async #find(id: string): Promise<Entry> {
    const known = typeof id === "string" ? this.#entries.get(id) : undefined;
    if (known || !this.#runtime.attachBackground || typeof id !== "string") {
      return this.#get(id);
    }
    // Pushes into the entry's current collectors (swapped by each read).
    let entry: Entry | undefined;
    const found = await this.#runtime.attachBackground(id, {
      onStdout: (chunk) => entry?.stdout.push(chunk),
      onStderr: (chunk) => entry?.stderr.push(chunk),
    });
    if (!found) return this.#get(id);
    entry = this.#entries.get(id);
    if (entry) return entry; // attached meanwhile by a concurrent call
    entry = new Entry(id, found.command, found.startedAt, this.#maxBytes);
    entry.process = found.process;
    this.#entries.set(id, entry);
    return entry;
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
