/**
 * One shell command on an AIO container: `POST /v1/bash/exec` with a soft
 * timeout, then `POST /v1/bash/output` long polls from the byte offsets the
 * server returns until the command ends; at our own deadline or on abort the
 * session's process is killed (`POST /v1/bash/kill`, SIGKILL) and the result
 * says `timedOut` or `aborted`. The command itself is never sent twice.
 *
 * @module
 */
import { OutputCollector } from "../../_internal/collector.ts";
import { CommandRun, MAX_EXECUTE_TIMEOUT_MS } from "../command_core.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import type { ExecuteResult } from "../types.ts";
import type {
  AioClient,
  AioCommandStatus,
  AioOutputRequest,
  AioOutputResult,
} from "./client.ts";

/** The longest soft timeout or long poll of one request, in seconds: 20. */
export const DEFAULT_POLL_SECONDS = 20;

/**
 * Bash sessions of one container, reused one command at a time so that
 * concurrent commands never share a session (a kill acts on a session's
 * current process) and few sessions are made. Makes no request.
 *
 * @example Taking and giving back a session
 * ```ts
 * import { assert } from "@std/assert";
 * import { AioSessionPool } from "./execute.ts";
 *
 * const pool = new AioSessionPool();
 * const a = pool.take();
 * const b = pool.take();
 * assert(a !== b && !pool.isCreated(a));
 * pool.created(a);
 * pool.give(a);
 * assert(pool.take() === a && pool.size === 1 && pool.ids[0] === a);
 * ```
 */
export class AioSessionPool {
  #idle: string[] = [];
  readonly #all = new Set<string>();
  readonly #created = new Set<string>();

  /** A free session id (a new one when none is idle). */
  take(): string {
    const id = this.#idle.pop() ?? `skillrun-${crypto.randomUUID()}`;
    this.#all.add(id);
    return id;
  }

  /** Whether the server was told about the session (`sessions/create`). */
  isCreated(id: string): boolean {
    return this.#created.has(id);
  }

  /** Notes that the server has the session. */
  created(id: string): void {
    this.#created.add(id);
  }

  /** Gives a session back once its command has ended. */
  give(id: string): void {
    if (this.#all.has(id) && !this.#idle.includes(id)) this.#idle.push(id);
  }

  /** Forgets a session whose state is unknown (it is not reused). */
  drop(id: string): void {
    this.#idle = this.#idle.filter((idle) => idle !== id);
  }

  /** Every session the server was told about, for closing. */
  get ids(): readonly string[] {
    return [...this.#all].filter((id) => this.#created.has(id));
  }

  /** How many sessions the server was told about. */
  get size(): number {
    return this.#created.size;
  }

  /** Forgets every session. */
  clear(): void {
    this.#idle = [];
    this.#all.clear();
    this.#created.clear();
  }
}

/** What {@linkcode runAioCommand} runs; every field already resolved. */
export interface AioCommandRequest {
  /** The shell command. */
  readonly command: string;
  /** The working directory (absolute POSIX path). */
  readonly cwd: string;
  /** Variables for this command. */
  readonly env: Readonly<Record<string, string>>;
  /** Our deadline in ms (> 0). */
  readonly timeoutMs: number;
  /** Stops the command. */
  readonly signal?: AbortSignal;
  /** The most bytes of each stream kept. */
  readonly maxOutputBytes: number;
  /** The longest soft timeout or long poll per request, in s. Default 20. */
  readonly pollSeconds?: number;
  /** Receives standard output as each poll brings it. */
  readonly onStdout?: (chunk: Uint8Array) => void;
  /** Receives standard error as each poll brings it. */
  readonly onStderr?: (chunk: Uint8Array) => void;
}

const encoder = new TextEncoder();

/** One stream's output: bytes kept by the collector, plus what the server cut. */
class StreamOutput {
  readonly collector: OutputCollector;
  /** Bytes the server cut from its answer (its own middle truncation). */
  cut = 0;
  /** The server's byte offset after what we have. */
  offset = 0;

  readonly #onChunk: ((chunk: Uint8Array) => void) | undefined;

  constructor(maxBytes: number, onChunk?: (chunk: Uint8Array) => void) {
    this.collector = new OutputCollector({ maxBytes });
    this.#onChunk = onChunk;
  }

  /** Adds text that covers the server's bytes up to `offset`. */
  add(text: string | null | undefined, offset: number | undefined): void {
    const bytes = encoder.encode(text ?? "");
    this.collector.push(bytes);
    if (bytes.length > 0) this.#onChunk?.(bytes);
    const end = offset ?? this.offset + bytes.length;
    if (end - this.offset > bytes.length) {
      this.cut += end - this.offset - bytes.length;
    }
    this.offset = Math.max(end, this.offset);
  }

  /** Every byte the command wrote: kept, dropped by us, cut by the server. */
  get totalBytes(): number {
    return this.collector.totalBytes + this.cut;
  }

  text(): string {
    return this.collector.text();
  }

  get truncated(): boolean {
    return this.collector.truncated || this.cut > 0;
  }
}

/**
 * The command as the server's `bash -c` gets it. The server puts it right
 * after `-c`, where bash would read a leading `-` or `+` as an option of its
 * own (`--help`, `-x`): such a command gets a leading space, which changes
 * nothing else.
 */
function commandArgument(command: string): string {
  return /^[-+]/.test(command) ? ` ${command}` : command;
}

/**
 * Runs one command on an AIO container and waits for its end, our deadline or
 * the signal. Never throws for a failing command; throws a `RemoteHttpError`
 * when the server cannot be asked (the command is then killed when it may have
 * started).
 *
 * @param client The container's client.
 * @param sessions The container's session pool.
 * @param request The command.
 * @returns The result.
 */
export async function runAioCommand(
  client: AioClient,
  sessions: AioSessionPool,
  request: AioCommandRequest,
): Promise<ExecuteResult> {
  const out = new StreamOutput(request.maxOutputBytes, request.onStdout);
  const err = new StreamOutput(request.maxOutputBytes, request.onStderr);
  // At our deadline or the caller's abort every request of the command is
  // cut short and the session's process killed.
  using run = new CommandRun({
    timeoutMs: request.timeoutMs,
    signal: request.signal,
  });
  const result = (exitCode: number): ExecuteResult =>
    run.result(exitCode, out, err);
  if (run.reason) return result(-1);

  const poll = request.pollSeconds ?? DEFAULT_POLL_SECONDS;
  const stop = run.stopSignal;
  const sessionId = sessions.take();
  const leftSeconds = (): number =>
    Math.max(0.001, Math.min(poll, run.remainingMs() / 1000));
  let sent = false;
  let commandId: string | undefined;
  const command = commandArgument(request.command);
  try {
    let status: AioCommandStatus;
    let exitCode: number | null | undefined;
    if (!sessions.isCreated(sessionId)) {
      // A session of our own id, made once: the spec lets /exec make one
      // only without an id, and a kill needs the id before /exec answers.
      await client.createSession(sessionId, {
        signal: stop,
        timeoutMs: 30_000,
      });
      sessions.created(sessionId);
    }
    {
      const soft = leftSeconds();
      sent = true;
      const answer = await client.exec({
        command,
        session_id: sessionId,
        exec_dir: request.cwd,
        env: request.env,
        timeout: soft,
        // A backstop on the server in case we vanish; our deadline acts first.
        // (never past the longest timer, in case the server keeps it in one).
        hard_timeout: Math.min(
          Math.ceil(run.timeoutMs / 1000) + 5,
          Math.floor(MAX_EXECUTE_TIMEOUT_MS / 1000),
        ),
        max_output_length: Math.max(1, request.maxOutputBytes),
      }, { signal: stop, timeoutMs: soft * 1000 + 15_000 });
      out.add(answer.stdout, answer.offset);
      err.add(answer.stderr, answer.stderr_offset);
      status = answer.status;
      exitCode = answer.exit_code;
      commandId = answer.command_id;
    }
    while (status === "running" || status === "pending") {
      const answer = await readOutput(
        client,
        {
          session_id: sessionId,
          command_id: commandId,
          offset: out.offset,
          stderr_offset: err.offset,
          wait: true,
        },
        leftSeconds,
        stop,
      );
      out.add(answer.stdout, answer.offset);
      err.add(answer.stderr, answer.stderr_offset);
      if (!answer.command) {
        throw new RemoteHttpError(
          `POST ${client.baseUrl}/v1/bash/output: the answer names no command`,
          {
            method: "POST",
            url: `${client.baseUrl}/v1/bash/output`,
            status: 200,
          },
        );
      }
      status = answer.command.status;
      exitCode = answer.command.exit_code;
    }
    sessions.give(sessionId);
    if (status === "timed_out") {
      run.stop("timeout");
      return result(-1);
    }
    return result(status === "completed" ? exitCode ?? -1 : -1);
  } catch (error) {
    if (run.reason !== undefined) {
      if (!sent) {
        // Nothing ran; the session may or may not exist: use a new one.
        sessions.drop(sessionId);
        return result(-1);
      }
      const killed = await killSession(client, sessions, sessionId);
      // What the command wrote before it was stopped is part of the result.
      if (commandId !== undefined || killed) {
        await client.output({
          session_id: sessionId,
          ...(commandId !== undefined ? { command_id: commandId } : {}),
          offset: out.offset,
          stderr_offset: err.offset,
        }, { timeoutMs: 5_000 }).then((answer) => {
          if (answer.command?.command !== command) return;
          out.add(answer.stdout, answer.offset);
          err.add(answer.stderr, answer.stderr_offset);
        }, () => {});
      }
      return result(-1);
    }
    // The command may have started: stop it before reporting the failure.
    if (sent) await killSession(client, sessions, sessionId);
    throw error;
  }
}

/** Attempts of one output read whose answer broke off (a read is safe to repeat). */
const OUTPUT_ATTEMPTS = 3;

/** Reads output, again from the same offsets when the answer broke off. */
async function readOutput(
  client: AioClient,
  body: AioOutputRequest,
  waitSeconds: () => number,
  signal: AbortSignal,
): Promise<AioOutputResult> {
  for (let attempt = 1;; attempt++) {
    const wait = waitSeconds();
    try {
      return await client.output({ ...body, wait_timeout: wait }, {
        signal,
        timeoutMs: wait * 1000 + 15_000,
      });
    } catch (error) {
      const brokeOff = error instanceof RemoteHttpError &&
        error.status === 0 && !error.timedOut;
      if (!brokeOff || signal.aborted || attempt >= OUTPUT_ATTEMPTS) {
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

/**
 * Kills a session's process, trying again for a moment when the exec may not
 * have reached the server yet; a session whose end is unsure is not reused.
 * Answers whether something was killed.
 */
async function killSession(
  client: AioClient,
  sessions: AioSessionPool,
  sessionId: string,
): Promise<boolean> {
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      if (await client.kill(sessionId, "SIGKILL", { timeoutMs: 10_000 })) {
        sessions.give(sessionId);
        return true;
      }
    } catch {
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100 * (attempt + 1)));
  }
  sessions.drop(sessionId);
  return false;
}
