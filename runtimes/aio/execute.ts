/**
 * How an AIO container runs commands for the kit: `POST /v1/bash/exec` with
 * a soft timeout, then `POST /v1/bash/output` long polls from the byte
 * offsets the server returns until the command ends; at our own deadline or
 * on abort the session's process is killed (`POST /v1/bash/kill`, SIGKILL).
 * The command itself is never sent twice.
 *
 * @module
 */
import type {
  RemoteCommandEvent,
  RemoteCommandKind,
  RemoteCommandStart,
} from "../remote/command.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import type {
  AioClient,
  AioCommandStatus,
  AioOutput,
  AioOutputRequest,
  AioOutputResult,
} from "./client.ts";

/** The longest soft timeout or long poll of one request, in seconds: 20. */
export const DEFAULT_POLL_SECONDS = 20;

/**
 * Bash sessions of one container, reused one command at a time so that
 * concurrent commands never share a session (a kill acts on a session's
 * current process) and few sessions are made. Makes no request until
 * {@linkcode AioSessionPool.open}.
 *
 * @example Opening and giving back a session
 * ```ts
 * import { assert } from "@std/assert";
 * import { AioSessionPool } from "./execute.ts";
 *
 * const made: string[] = [];
 * const client = {
 *   createSession: (id: string) => Promise.resolve(void made.push(id)),
 * };
 * const pool = new AioSessionPool();
 * const a = await pool.open(client);
 * pool.give(a);
 * assert((await pool.open(client)) === a && made.length === 1);
 * assert(pool.size === 1 && pool.ids[0] === a);
 * ```
 */
export class AioSessionPool {
  #idle: string[] = [];
  readonly #created = new Set<string>();

  /**
   * An idle session, or a new one of our own id made on the server (the
   * spec lets /exec make one only without an id, and a kill needs the id
   * before /exec answers). When it throws, nothing ran and the id is not
   * reused (the session may or may not exist).
   */
  async open(
    client: Pick<AioClient, "createSession">,
    signal?: AbortSignal,
  ): Promise<string> {
    const idle = this.#idle.pop();
    if (idle !== undefined) return idle;
    const id = `skillrun-${crypto.randomUUID()}`;
    await client.createSession(id, {
      timeoutMs: 30_000,
      ...(signal ? { signal } : {}),
    });
    this.#created.add(id);
    return id;
  }

  /** Gives a session back once its command has ended. */
  give(id: string): void {
    if (this.#created.has(id) && !this.#idle.includes(id)) this.#idle.push(id);
  }

  /** Forgets a session whose state is unknown (it is not reused). */
  drop(id: string): void {
    this.#idle = this.#idle.filter((idle) => idle !== id);
  }

  /** Every session the server was told about, for closing. */
  get ids(): readonly string[] {
    return [...this.#created];
  }

  /** How many sessions the server was told about. */
  get size(): number {
    return this.#created.size;
  }

  /** Forgets every session. */
  clear(): void {
    this.#idle = [];
    this.#created.clear();
  }
}

/**
 * The command as the server's `bash -c` gets it. The server puts it right
 * after `-c`, where bash would read a leading `-` or `+` as an option of its
 * own (`--help`, `-x`): such a command gets a leading space, which changes
 * nothing else.
 */
export function commandArgument(command: string): string {
  return /^[-+]/.test(command) ? ` ${command}` : command;
}

/**
 * How an AIO container runs commands for the kit's
 * {@linkcode runRemoteCommand} (see the module's description): each command
 * in a bash session of its own (the session's id is the command's:
 * `/v1/bash/kill` acts on a session); the server's `hard_timeout` 5 s after
 * ours; the server's own truncation of the output counted as left out.
 *
 * @example Making the kind (no request is made)
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { aioCommands, AioSessionPool } from "./execute.ts";
 * import { AioClient } from "./client.ts";
 * const kind = aioCommands(new AioClient({ baseUrl: "http://127.0.0.1:9" }), new AioSessionPool());
 * assertEquals(kind.backstopMs, 5_000);
 * ```
 *
 * @param client The container's client.
 * @param sessions The container's session pool.
 * @param pollSeconds The longest soft timeout or long poll per request, in s.
 * @returns The kind's commands.
 */
export function aioCommands(
  client: AioClient,
  sessions: AioSessionPool,
  pollSeconds = DEFAULT_POLL_SECONDS,
): RemoteCommandKind {
  const running = new Map<string, Running>();
  return {
    backstopMs: 5_000,
    graceMs: 20_000,
    kill: async (id) => {
      const command = running.get(id);
      if (!command?.sent) return;
      await (command.killing ??= killSession(client, sessions, id));
    },
    broken: (cause) =>
      cause instanceof Error ? cause : new Error(String(cause)),
    start: async (request) => {
      const sessionId = await sessions.open(client, request.stop);
      const state: Running = { sent: false };
      running.set(sessionId, state);
      return {
        id: sessionId,
        events: aioEvents(client, sessions, request, sessionId, pollSeconds, {
          state,
          done: () => running.delete(sessionId),
        }),
      };
    },
  };
}

/** A running command: whether its exec was sent, its kill once asked for. */
interface Running {
  sent: boolean;
  killing?: Promise<boolean>;
}

/** A command's events: the exec's answer, then each long poll's. */
async function* aioEvents(
  client: AioClient,
  sessions: AioSessionPool,
  request: RemoteCommandStart,
  sessionId: string,
  poll: number,
  command: {
    readonly state: Running;
    done(): void;
  },
): AsyncGenerator<RemoteCommandEvent> {
  const started = performance.now();
  const leftSeconds = (): number =>
    Math.max(
      0.001,
      Math.min(
        poll,
        (request.timeoutMs - (performance.now() - started)) / 1000,
      ),
    );
  const line = commandArgument(request.command);
  const offsets = new AioOffsets();
  let commandId: string | undefined;
  try {
    request.stop.throwIfAborted();
    const soft = leftSeconds();
    command.state.sent = true;
    const answer = await client.exec({
      command: line,
      session_id: sessionId,
      exec_dir: request.cwd,
      env: request.env,
      timeout: soft,
      // A backstop on the server in case we vanish; our deadline acts first.
      hard_timeout: Math.ceil(request.serverTimeoutMs / 1000),
      max_output_length: Math.max(1, request.maxOutputBytes),
    }, { signal: request.stop, timeoutMs: soft * 1000 + 15_000 });
    yield* offsets.take(answer);
    let status: AioCommandStatus = answer.status;
    let exitCode = answer.exit_code;
    commandId = answer.command_id;
    while (status === "running" || status === "pending") {
      const answer = await readOutput(
        client,
        {
          session_id: sessionId,
          command_id: commandId,
          offset: offsets.offset,
          stderr_offset: offsets.stderrOffset,
          wait: true,
        },
        leftSeconds,
        request.stop,
      );
      yield* offsets.take(answer);
      if (!answer.command) {
        const url = `${client.baseUrl}/v1/bash/output`;
        throw new RemoteHttpError(`POST ${url}: the answer names no command`, {
          method: "POST",
          url,
          status: 200,
        });
      }
      status = answer.command.status;
      exitCode = answer.command.exit_code;
    }
    sessions.give(sessionId);
    yield {
      type: "exit",
      exitCode: status === "completed" ? exitCode ?? -1 : -1,
      ...(status === "timed_out" ? { timedOut: true } : {}),
    };
  } catch (error) {
    if (!request.stop.aborted) throw error;
    // Stopped: once the kit's kill is done, what the command wrote before
    // it was stopped is part of the result.
    const killing = command.state.killing;
    if (killing === undefined) {
      // Nothing ran; the session may or may not exist: use a new one.
      sessions.drop(sessionId);
      return;
    }
    const killed = await killing;
    if (commandId === undefined && !killed) return;
    const answer = await client.output({
      session_id: sessionId,
      ...(commandId !== undefined ? { command_id: commandId } : {}),
      offset: offsets.offset,
      stderr_offset: offsets.stderrOffset,
    }, { timeoutMs: 5_000, signal: request.signal }).catch(() => undefined);
    if (answer && answer.command?.command === line) yield* offsets.take(answer);
  } finally {
    command.done();
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

const ENCODER = new TextEncoder();

/** The byte offsets of a command's two streams, moved on by each answer. */
export class AioOffsets {
  /** In stdout. */
  offset = 0;
  /** In stderr. */
  stderrOffset = 0;

  /** An answer's output, with what the server cut from it counted. */
  *take(answer: AioOutput): Generator<
    { type: "stdout" | "stderr"; data: Uint8Array; cut: number }
  > {
    for (
      const [type, text, end, from] of [
        ["stdout", answer.stdout, answer.offset, this.offset],
        ["stderr", answer.stderr, answer.stderr_offset, this.stderrOffset],
      ] as const
    ) {
      const data = ENCODER.encode(text ?? "");
      const next = end ?? from + data.length;
      const cut = Math.max(0, next - from - data.length);
      if (type === "stdout") this.offset = Math.max(next, from);
      else this.stderrOffset = Math.max(next, from);
      if (data.length > 0 || cut > 0) yield { type, data, cut };
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
