/**
 * The `/v1/shell/*` routes of the AIO test server (`aio.ts`), beside
 * `/v1/bash/*`, as the spec (`aio-sandbox/openapi.json`) describes them: a
 * session is a shell whose working directory persists from one command to
 * the next (`cd` stays); a command's output is one stream (a terminal mixes
 * stdout and stderr) with its console record; its status is one of
 * `running, completed, no_change_timeout, hard_timeout, terminated`
 * (not `/v1/bash`'s names). Exec (sync, async, soft `timeout`,
 * `no_change_timeout`, `hard_timeout`, `truncate` at 30,000 characters),
 * view, wait, write (to the command's standard input), kill, and the
 * sessions (create, update, list, stats, delete one or all), plus the
 * terminal URL.
 *
 * @module
 */
import { ByteLog } from "./_aio_state.ts";
import type { AioState } from "./_aio_state.ts";
import { envelope, readJson } from "./_aio_answers.ts";
import { encoder, serverTimer, signalGroup } from "./_common.ts";
import { shellQuote } from "../../_internal/shell_quote.ts";

/** The status names of `/v1/shell/*` (`BashCommandStatus` in the spec). */
export type ShellStatus =
  | "running"
  | "completed"
  | "no_change_timeout"
  | "hard_timeout"
  | "terminated";

/** Characters kept of an output when `truncate` is on. */
const TRUNCATE_CHARS = 30_000;
/** The default `no_change_timeout` of a session, in seconds. */
const DEFAULT_NO_CHANGE_S = 120;

class ShellCommand {
  status: ShellStatus = "running";
  exitCode: number | null = null;
  readonly output = new ByteLog();
  readonly child: Deno.ChildProcess;
  readonly finished: Promise<void>;
  #stopReason: ShellStatus | null = null;
  #waiters = new Set<() => void>();
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #hardTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly command: string,
    readonly ps1: string,
    cwd: string,
    pwdFile: string,
    hardTimeoutS: number | null,
    onEnd: () => Promise<void>,
  ) {
    // One stream, as a terminal shows it; the folder it ends in is kept.
    const script = `exec 2>&1\ntrap ${
      shellQuote(`pwd > ${shellQuote(pwdFile)}`)
    } EXIT\n${command}`;
    const child = new Deno.Command("bash", {
      args: ["-c", script],
      cwd,
      stdin: "piped",
      stdout: "piped",
      stderr: "null",
      detached: true,
    }).spawn();
    this.child = child;
    const writer = child.stdin.getWriter();
    this.#writer = writer;
    const pump = (async () => {
      try {
        for await (const chunk of child.stdout) {
          this.output.push(chunk.slice());
          this.#notify();
        }
      } catch {
        // killed: what arrived stays
      }
    })();
    this.#hardTimer = serverTimer(
      hardTimeoutS,
      () => this.stop("SIGKILL", "hard_timeout"),
    );
    this.finished = (async () => {
      const status = await child.status;
      await Promise.race([pump, new Promise((r) => setTimeout(r, 200))]);
      clearTimeout(this.#hardTimer);
      writer.close().catch(() => {});
      this.status = this.#stopReason ?? "completed";
      this.exitCode = status.signal ? null : status.code;
      await onEnd();
      this.#notify();
    })();
  }

  get done(): boolean {
    return this.status !== "running";
  }

  text(truncate: boolean): string {
    const text = new TextDecoder().decode(this.output.slice(0));
    if (!truncate) return text;
    const chars = Array.from(text);
    return chars.length <= TRUNCATE_CHARS
      ? text
      : chars.slice(chars.length - TRUNCATE_CHARS).join("");
  }

  async write(input: string): Promise<void> {
    await this.#writer.write(encoder.encode(input));
  }

  stop(signal: Deno.Signal, reason: ShellStatus): boolean {
    if (this.done) return false;
    this.#stopReason ??= reason;
    return signalGroup(this.child.pid, signal);
  }

  /** Resolves on new output or the end, or after `ms`. */
  waitForChange(ms: number): Promise<void> {
    if (this.done) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#waiters.add(done);
    });
  }

  #notify(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }
}

interface ShellSession {
  readonly id: string;
  workingDir: string;
  noChangeTimeoutS: number;
  readonly createdAt: Date;
  lastUsedAt: Date;
  current: ShellCommand | null;
  readonly history: ShellCommand[];
  readonly pwdFile: string;
}

const sessionsOf = new WeakMap<AioState, Map<string, ShellSession>>();

function sessions(state: AioState): Map<string, ShellSession> {
  let map = sessionsOf.get(state);
  if (!map) {
    map = new Map();
    sessionsOf.set(state, map);
  }
  return map;
}

async function newSession(
  state: AioState,
  id: string | null | undefined,
  workingDir: string,
  noChangeTimeoutS: number | null | undefined,
): Promise<ShellSession> {
  const key = id && id.length > 0 ? id : crypto.randomUUID();
  const session: ShellSession = {
    id: key,
    workingDir,
    noChangeTimeoutS: noChangeTimeoutS ?? DEFAULT_NO_CHANGE_S,
    createdAt: new Date(),
    lastUsedAt: new Date(),
    current: null,
    history: [],
    pwdFile: await Deno.makeTempFile({ prefix: "skillrun-aio-shell-pwd-" }),
  };
  sessions(state).set(key, session);
  return session;
}

async function isFolder(path: string): Promise<boolean> {
  if (!path.startsWith("/")) return false;
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch {
    return false;
  }
}

function ps1(session: ShellSession): string {
  return `root@sandbox:${session.workingDir} $`;
}

function console_(session: ShellSession, truncate: boolean): unknown[] {
  return session.history.map((command) => ({
    ps1: command.ps1,
    command: command.command,
    output: command.text(truncate),
  }));
}

function commandResult(
  session: ShellSession,
  command: ShellCommand,
  truncate: boolean,
): Record<string, unknown> {
  return {
    session_id: session.id,
    command: command.command,
    status: command.status,
    output: command.done ? command.text(truncate) : null,
    console: console_(session, truncate),
    exit_code: command.status === "completed" ? command.exitCode : null,
  };
}

function notFound(id: string): Response {
  return envelope(null, {
    success: false,
    message: `Shell session not found: ${id}`,
  });
}

/**
 * `POST /v1/shell/exec`: runs a command in a session (made when `id` names
 * none), waiting for its end, the soft `timeout` or `no_change_timeout`
 * (then `running` or `no_change_timeout`; the command goes on), or not at
 * all in `async_mode`.
 */
export async function shellExec(
  state: AioState,
  request: Request,
): Promise<Response> {
  const body = await readJson(request, {
    id: { kind: "string", nullable: true },
    exec_dir: { kind: "string", nullable: true },
    command: { kind: "string", required: true },
    async_mode: { kind: "boolean" },
    timeout: { kind: "number", nullable: true },
    strict: { kind: "boolean", nullable: true },
    no_change_timeout: { kind: "integer", nullable: true },
    hard_timeout: { kind: "number", nullable: true },
    preserve_symlinks: { kind: "boolean", nullable: true },
    truncate: { kind: "boolean" },
  });
  if (body instanceof Response) return body;
  const id = body.id as string | null | undefined;
  const execDir = body.exec_dir as string | null | undefined;
  if (execDir && !(await isFolder(execDir))) {
    if (body.strict === true || !execDir.startsWith("/")) {
      return envelope(null, {
        success: false,
        message: `Working directory does not exist: ${execDir}`,
      });
    }
  }
  let session = id ? sessions(state).get(id) : undefined;
  session ??= await newSession(state, id, state.home, null);
  if (execDir && await isFolder(execDir)) session.workingDir = execDir;
  if (session.current && !session.current.done) {
    return envelope(null, {
      success: false,
      message:
        `Shell session ${session.id} is busy running: ${session.current.command}`,
    });
  }
  const current = session;
  const command = new ShellCommand(
    body.command as string,
    ps1(current),
    current.workingDir,
    current.pwdFile,
    (body.hard_timeout as number | null | undefined) ?? null,
    async () => {
      const pwd = (await Deno.readTextFile(current.pwdFile).catch(() => ""))
        .trim();
      if (pwd !== "" && await isFolder(pwd)) current.workingDir = pwd;
    },
  );
  current.current = command;
  current.history.push(command);
  current.lastUsedAt = new Date();
  const truncate = body.truncate !== false;
  if (body.async_mode === true) {
    return envelope(commandResult(current, command, truncate));
  }
  const soft = body.timeout as number | null | undefined;
  const deadline = soft === null || soft === undefined
    ? Infinity
    : Date.now() + soft * 1000;
  const quietS = (body.no_change_timeout as number | null | undefined) ??
    current.noChangeTimeoutS;
  let lastLength = command.output.length;
  let lastChange = Date.now();
  let noChange = false;
  while (!command.done) {
    const now = Date.now();
    if (now >= deadline) break;
    if (now - lastChange >= quietS * 1000) {
      noChange = true;
      break;
    }
    await command.waitForChange(
      Math.min(deadline - now, quietS * 1000 - (now - lastChange), 2 ** 31 - 1),
    );
    if (command.output.length !== lastLength) {
      lastLength = command.output.length;
      lastChange = Date.now();
    }
  }
  const result = commandResult(current, command, truncate);
  if (noChange && !command.done) result.status = "no_change_timeout";
  return envelope(result);
}

async function sessionOf(
  state: AioState,
  request: Request,
  fields: Parameters<typeof readJson>[1] = {},
): Promise<
  | Response
  | { session: ShellSession; body: Record<string, unknown> }
> {
  const body = await readJson(request, {
    id: { kind: "string", required: true },
    ...fields,
  });
  if (body instanceof Response) return body;
  const session = sessions(state).get(body.id as string);
  if (!session) return notFound(body.id as string);
  return { session, body };
}

/** `POST /v1/shell/view`: the session's output and console so far. */
export async function shellView(
  state: AioState,
  request: Request,
): Promise<Response> {
  const found = await sessionOf(state, request);
  if (found instanceof Response) return found;
  const { session } = found;
  const command = session.current;
  return envelope({
    output: command ? command.text(true) : "",
    session_id: session.id,
    console: console_(session, true),
    status: command ? command.status : "completed",
    command: command ? command.command : null,
    exit_code: command?.status === "completed" ? command.exitCode : null,
  });
}

/** `POST /v1/shell/wait`: waits for the current command (`seconds`, at most `max_wait_seconds`). */
export async function shellWait(
  state: AioState,
  request: Request,
): Promise<Response> {
  const found = await sessionOf(state, request, {
    seconds: { kind: "integer", nullable: true },
    max_wait_seconds: { kind: "integer", nullable: true },
  });
  if (found instanceof Response) return found;
  const { session, body } = found;
  const command = session.current;
  if (!command) return envelope({ status: "completed" });
  const seconds = (body.seconds as number | null | undefined) ??
    (body.max_wait_seconds as number | null | undefined) ?? 30;
  const deadline = Date.now() + seconds * 1000;
  while (!command.done && Date.now() < deadline) {
    await command.waitForChange(deadline - Date.now());
  }
  return envelope({ status: command.status });
}

/** `POST /v1/shell/write`: writes to the current command's standard input. */
export async function shellWrite(
  state: AioState,
  request: Request,
): Promise<Response> {
  const found = await sessionOf(state, request, {
    input: { kind: "string", required: true },
    press_enter: { kind: "boolean", required: true },
  });
  if (found instanceof Response) return found;
  const { session, body } = found;
  const command = session.current;
  if (!command || command.done) {
    return envelope(null, {
      success: false,
      message: `No running process in shell session ${session.id}`,
    });
  }
  await command.write(
    `${body.input as string}${body.press_enter === true ? "\n" : ""}`,
  );
  // Let the process react before answering.
  await command.waitForChange(100);
  return envelope({ status: command.status });
}

/** `POST /v1/shell/kill`: terminates the current command's process group. */
export async function shellKill(
  state: AioState,
  request: Request,
): Promise<Response> {
  const found = await sessionOf(state, request);
  if (found instanceof Response) return found;
  const { session } = found;
  const command = session.current;
  if (!command || command.done) {
    return envelope({
      status: command?.status ?? "completed",
      exit_code: command?.exitCode ?? null,
      returncode: command?.exitCode ?? null,
    });
  }
  command.stop("SIGTERM", "terminated");
  const deadline = Date.now() + 2000;
  while (!command.done && Date.now() < deadline) {
    await command.waitForChange(deadline - Date.now());
  }
  if (!command.done) {
    command.stop("SIGKILL", "terminated");
    await command.finished;
  }
  return envelope({ status: "terminated", exit_code: null, returncode: null });
}

/** `POST /v1/shell/sessions/create`. */
export async function shellCreateSession(
  state: AioState,
  request: Request,
): Promise<Response> {
  const body = await readJson(request, {
    id: { kind: "string" },
    exec_dir: { kind: "string", nullable: true },
    no_change_timeout: { kind: "integer", nullable: true },
    preserve_symlinks: { kind: "boolean", nullable: true },
  });
  if (body instanceof Response) return body;
  const id = body.id as string | undefined;
  if (id && sessions(state).has(id)) {
    return envelope(null, {
      success: false,
      message: `Shell session already exists: ${id}`,
    });
  }
  const execDir = body.exec_dir as string | null | undefined;
  if (execDir && !(await isFolder(execDir))) {
    return envelope(null, {
      success: false,
      message: `Working directory does not exist: ${execDir}`,
    });
  }
  const session = await newSession(
    state,
    id,
    execDir || state.home,
    body.no_change_timeout as number | null | undefined,
  );
  return envelope(
    { session_id: session.id, working_dir: session.workingDir },
    { message: "Shell session created" },
  );
}

/** `POST /v1/shell/sessions/update`: a session's `no_change_timeout`. */
export async function shellUpdateSession(
  state: AioState,
  request: Request,
): Promise<Response> {
  const found = await sessionOf(state, request, {
    no_change_timeout: { kind: "integer", nullable: true },
  });
  if (found instanceof Response) return found;
  const { session, body } = found;
  const seconds = body.no_change_timeout as number | null | undefined;
  if (seconds !== null && seconds !== undefined) {
    session.noChangeTimeoutS = seconds;
  }
  return envelope(null, { message: "Shell session updated" });
}

function sessionInfo(session: ShellSession): Record<string, unknown> {
  const running = session.current && !session.current.done
    ? session.current
    : null;
  return {
    working_dir: session.workingDir,
    created_at: session.createdAt.toISOString(),
    last_used_at: session.lastUsedAt.toISOString(),
    age_seconds: Math.floor((Date.now() - session.createdAt.getTime()) / 1000),
    status: running ? "active" : "idle",
    current_command: running ? running.command : null,
  };
}

/** `GET /v1/shell/sessions`: a map of session id to its info. */
export function shellListSessions(state: AioState): Promise<Response> {
  return Promise.resolve(envelope({
    sessions: Object.fromEntries(
      [...sessions(state).values()].map((s) => [s.id, sessionInfo(s)]),
    ),
  }));
}

/** `GET /v1/shell/sessions/stats`. */
export function shellSessionStats(state: AioState): Promise<Response> {
  const all = [...sessions(state).values()];
  const fiveMinutes = Date.now() - 5 * 60_000;
  const active = all.filter((s) => s.lastUsedAt.getTime() >= fiveMinutes);
  const max = 100;
  return Promise.resolve(envelope({
    total_sessions: all.length,
    active_sessions: active.length,
    idle_sessions: all.length - active.length,
    max_sessions: max,
    session_timeout: 3600,
    usage_ratio: all.length / max,
  }));
}

async function closeSession(
  state: AioState,
  session: ShellSession,
): Promise<void> {
  if (session.current && !session.current.done) {
    session.current.stop("SIGKILL", "terminated");
    await session.current.finished;
  }
  sessions(state).delete(session.id);
  await Deno.remove(session.pwdFile).catch(() => {});
}

/** `DELETE /v1/shell/sessions/{id}`. */
export async function shellDeleteSession(
  state: AioState,
  id: string,
): Promise<Response> {
  const session = sessions(state).get(id);
  if (!session) return notFound(id);
  await closeSession(state, session);
  return envelope(null, { message: `Shell session ${id} cleaned up` });
}

/** `DELETE /v1/shell/sessions`: every session. */
export async function shellDeleteSessions(state: AioState): Promise<Response> {
  const all = [...sessions(state).values()];
  for (const session of all) await closeSession(state, session);
  return envelope(null, { message: `${all.length} shell sessions cleaned up` });
}

/** `GET /v1/shell/terminal-url`: the web terminal of this server. */
export function shellTerminalUrl(url: URL): Promise<Response> {
  return Promise.resolve(envelope(`${url.origin}/terminal`));
}

/** Stops every shell command (the server closes). */
export async function closeShells(state: AioState): Promise<void> {
  for (const session of [...sessions(state).values()]) {
    await closeSession(state, session);
  }
}
