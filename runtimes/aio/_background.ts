/**
 * AIO's own background commands: `POST /v1/bash/exec` with `async_mode:
 * true` in a session of their own (it answers at once with the command's
 * id), the output long-polled from the byte offsets the server returns
 * (`POST /v1/bash/output` with `command_id`, `wait: true`) while the command
 * runs, so each answer holds only what came since the one before and
 * nothing piles up between two reads, and `POST /v1/bash/kill` on the
 * session's process group.
 *
 * @module
 */
import { MAX_EXECUTE_TIMEOUT_MS } from "../command_core.ts";
import type { BackgroundProcess, BackgroundState } from "../types.ts";
import type { RemoteCommand } from "../remote/runtime.ts";
import {
  type AioClient,
  type AioCommandStatus,
  AioOperationError,
} from "./client.ts";
import {
  AioOffsets,
  type AioSessionPool,
  commandArgument,
  DEFAULT_POLL_SECONDS,
} from "./execute.ts";

/**
 * What {@linkcode startAioBackground} runs (every field already resolved)
 * and the longest long poll in s (default 20).
 */
export type AioBackgroundRequest =
  & Pick<
    RemoteCommand,
    "command" | "cwd" | "env" | "timeoutMs" | "signal" | "onStdout" | "onStderr"
  >
  & { readonly pollSeconds?: number };

/** A background command whose poller the runtime stops when it closes. */
type AioBackgroundProcess = BackgroundProcess & { stop(): Promise<void> };

/** How long a kill waits for the poller to see the end, in ms. */
const KILL_WAIT_MS = 10_000;
/** The pause after a failed poll before the next, in ms. */
const RETRY_MS = 500;
/** Failed polls in a row after which the poller gives up (about a minute). */
const MAX_FAILURES = 120;

/**
 * Starts a command in the background on an AIO container and returns once
 * the server answered with its id. Never retried; a session is kept for it
 * until it ends.
 */
export async function startAioBackground(
  client: AioClient,
  sessions: AioSessionPool,
  request: AioBackgroundRequest,
): Promise<AioBackgroundProcess> {
  const sessionId = await sessions.open(client, request.signal);
  const options = {
    timeoutMs: 30_000,
    ...(request.signal ? { signal: request.signal } : {}),
  };
  let answer;
  try {
    answer = await client.exec({
      command: commandArgument(request.command),
      session_id: sessionId,
      exec_dir: request.cwd,
      env: request.env,
      async_mode: true,
      ...(request.timeoutMs < MAX_EXECUTE_TIMEOUT_MS
        ? { hard_timeout: Math.max(0.001, request.timeoutMs / 1000) }
        : {}),
    }, options);
  } catch (error) {
    // It may have started: stop it, and never reuse the session.
    await client.kill(sessionId, "SIGKILL", { timeoutMs: 10_000 }).catch(
      () => {},
    );
    sessions.drop(sessionId);
    throw error;
  }
  return new AioBackground(client, sessions, sessionId, answer, request);
}

/**
 * Finds a background command by its id when another runtime on the same
 * container started it: the session that has it is looked up among the
 * container's sessions, and its output read from the start. The session is
 * not this runtime's: it is neither reused nor closed here. `undefined` when
 * no session has it.
 */
export async function attachAioBackground(
  client: AioClient,
  id: string,
  request: Pick<AioBackgroundRequest, "onStdout" | "onStderr" | "pollSeconds">,
): Promise<
  | { process: AioBackgroundProcess; command: string; startedAt: Date }
  | undefined
> {
  if (!/^[\w.-]{1,128}$/.test(id)) return undefined;
  for (const { session_id } of await client.sessions({ timeoutMs: 15_000 })) {
    let answer;
    try {
      answer = await client.output(
        { session_id, command_id: id, wait: false },
        { timeoutMs: 15_000 },
      );
    } catch (error) {
      if (error instanceof AioOperationError) continue; // not this session's
      throw error;
    }
    if (!answer.command) continue;
    const process = new AioBackground(client, FOREIGN, session_id, {
      command_id: id,
      status: answer.command.status,
      exit_code: answer.command.exit_code ?? null,
    }, {
      command: answer.command.command,
      cwd: "/",
      env: {},
      timeoutMs: 0,
      ...request,
    });
    return { process, command: answer.command.command, startedAt: new Date() };
  }
  return undefined;
}

/** The pool of a session another runtime owns: nothing to give back. */
const FOREIGN: Pick<AioSessionPool, "give" | "drop"> = {
  give: () => {},
  drop: () => {},
};

class AioBackground implements BackgroundProcess {
  readonly id: string;
  readonly #stop = new AbortController();
  readonly #offsets = new AioOffsets();
  #status: AioCommandStatus;
  #exitCode: number | null | undefined;
  #error: unknown;
  /** Why the poller gave up, when it did. */
  #failed: string | undefined;
  readonly #ended: Promise<void>;

  constructor(
    private readonly client: AioClient,
    private readonly sessions: Pick<AioSessionPool, "give" | "drop">,
    private readonly sessionId: string,
    answer: {
      command_id: string;
      status: AioCommandStatus;
      exit_code?: number | null;
    },
    private readonly request: AioBackgroundRequest,
  ) {
    this.id = answer.command_id;
    this.#status = answer.status;
    this.#exitCode = answer.exit_code;
    this.#ended = this.#pollLoop();
  }

  get #running(): boolean {
    return this.#status === "running" || this.#status === "pending";
  }

  /** Long polls while it runs; gives the session back once it has ended. */
  async #pollLoop(): Promise<void> {
    const wait = this.request.pollSeconds ?? DEFAULT_POLL_SECONDS;
    let failures = 0;
    while (!this.#stop.signal.aborted) {
      const wasRunning = this.#running;
      try {
        const answer = await this.client.output({
          session_id: this.sessionId,
          command_id: this.id,
          offset: this.#offsets.offset,
          stderr_offset: this.#offsets.stderrOffset,
          // Once more without waiting after the end: the last output.
          wait: wasRunning,
          wait_timeout: wait,
        }, { signal: this.#stop.signal, timeoutMs: wait * 1000 + 15_000 });
        for (const { type, data } of this.#offsets.take(answer)) {
          if (data.length === 0) continue;
          if (type === "stdout") this.request.onStdout?.(data);
          else this.request.onStderr?.(data);
        }
        if (answer.command) {
          this.#status = answer.command.status;
          this.#exitCode = answer.command.exit_code;
        }
        this.#error = undefined;
        failures = 0;
        if (!wasRunning) break;
      } catch (error) {
        if (this.#stop.signal.aborted) break;
        this.#error = error;
        if (++failures >= MAX_FAILURES) {
          // The container stopped answering: its state is unknown.
          this.#status = "killed";
          this.#failed = error instanceof Error ? error.message : String(error);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
    if (!this.#running) this.sessions.give(this.sessionId);
    else this.sessions.drop(this.sessionId);
  }

  poll(): Promise<BackgroundState> {
    if (this.#running && this.#error !== undefined) {
      const error = this.#error;
      this.#error = undefined;
      return Promise.reject(error);
    }
    return Promise.resolve(this.#state());
  }

  #state(): BackgroundState {
    if (this.#running) return { running: true };
    return {
      running: false,
      exitCode: this.#status === "completed" ? this.#exitCode ?? -1 : -1,
      ...(this.#status === "timed_out" ? { timedOut: true } : {}),
      ...(this.#failed !== undefined
        ? { error: `the container stopped answering: ${this.#failed}` }
        : {}),
    };
  }

  /** Stops polling (the runtime closes); the command is not touched. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#ended;
  }

  async kill(): Promise<void> {
    if (!this.#running) {
      await this.#ended;
      return;
    }
    // The session runs this command alone: its process group is killed.
    try {
      await this.client.kill(this.sessionId, "SIGKILL", {
        timeoutMs: KILL_WAIT_MS,
      });
    } catch (error) {
      // Unreachable: stop asking too (the runtime is likely closing).
      this.#stop.abort();
      await this.#ended;
      throw error;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.#ended,
      new Promise((resolve) => timer = setTimeout(resolve, KILL_WAIT_MS)),
    ]);
    clearTimeout(timer);
    if (this.#running) {
      // The poller never saw the end: stop it; the session is not reused.
      this.#stop.abort();
      this.#status = "killed";
      await this.#ended;
    }
  }
}
