/**
 * The `/v1/bash/*` routes of the AIO test server (`aio.ts`): exec (soft and
 * hard timeouts, `max_output_length`), output from byte offsets with a long
 * poll, kill, and the shell sessions.
 *
 * @module
 */
import {
  type AioState,
  type ByteLog,
  Command,
  type Session,
  truncateMiddle,
  utf8Boundary,
} from "./_aio_state.ts";
import { envelope, readJson } from "./_aio_answers.ts";
import { isAbsolutePosix } from "./_aio_files.ts";
import { ignoreSigtermCommand } from "./_faults.ts";

function sessionFor(
  state: AioState,
  id: string | null | undefined,
): Session {
  const key = id && id.length > 0 ? id : crypto.randomUUID();
  let session = state.sessions.get(key);
  if (!session) {
    session = {
      id: key,
      createdAt: new Date(),
      lastUsedAt: new Date(),
      execDir: state.home,
      current: null,
      commands: new Map(),
    };
    state.sessions.set(key, session);
  }
  return session;
}

function execResult(
  command: Command,
  maxChars: number,
  withOutput: boolean,
): Record<string, unknown> {
  const decoder = new TextDecoder();
  return {
    session_id: command.sessionId,
    command_id: command.id,
    command: command.command,
    status: command.status,
    stdout: withOutput
      ? truncateMiddle(decoder.decode(command.stdout.slice(0)), maxChars)
      : null,
    stderr: withOutput
      ? truncateMiddle(decoder.decode(command.stderr.slice(0)), maxChars)
      : null,
    exit_code: command.exitCode,
    offset: withOutput ? command.stdout.length : 0,
    stderr_offset: withOutput ? command.stderr.length : 0,
  };
}

/** `POST /v1/bash/exec`: runs a command in a session, waits up to the soft timeout (or not at all in async mode). */
export async function exec(
  state: AioState,
  request: Request,
): Promise<Response> {
  const body = await readJson(request, {
    session_id: { kind: "string", nullable: true },
    command: { kind: "string", required: true },
    exec_dir: { kind: "string", nullable: true },
    env: { kind: "string-map", nullable: true },
    async_mode: { kind: "boolean" },
    timeout: { kind: "number", nullable: true },
    hard_timeout: { kind: "number", nullable: true },
    max_output_length: { kind: "integer" },
  });
  if (body instanceof Response) return body;
  const session = sessionFor(
    state,
    body.session_id as string | null | undefined,
  );
  const execDir = body.exec_dir as string | null | undefined;
  if (execDir) {
    if (!isAbsolutePosix(execDir)) {
      return envelope(null, {
        success: false,
        message: `exec_dir must be an absolute path: ${execDir}`,
      });
    }
    try {
      const info = await Deno.stat(execDir);
      if (!info.isDirectory) throw new Deno.errors.NotADirectory(execDir);
    } catch {
      return envelope(null, {
        success: false,
        message: `Working directory does not exist: ${execDir}`,
      });
    }
    session.execDir = execDir;
  }
  if (session.current && !session.current.done) {
    return envelope(null, {
      success: false,
      message:
        `Session ${session.id} is busy running command ${session.current.id}`,
    });
  }
  const text = state.faults.serverFault(request, "ignore-sigterm")
    ? ignoreSigtermCommand(body.command as string)
    : body.command as string;
  session.lastUsedAt = new Date();
  const command = new Command(text, session.id);
  session.current = command;
  session.commands.set(command.id, command);
  state.commands.add(command);
  command.start(
    session.execDir,
    (body.env as Record<string, string> | null | undefined) ?? {},
    (body.hard_timeout as number | null | undefined) ?? null,
  );
  command.finished.then(() => state.commands.delete(command));
  if (body.async_mode === true) {
    return envelope(execResult(command, 0, false));
  }
  const soft = body.timeout as number | null | undefined;
  await command.waitForEnd(
    soft === null || soft === undefined ? 2 ** 31 - 1 : soft * 1000,
  );
  return envelope(
    execResult(
      command,
      (body.max_output_length as number | undefined) ?? 50_000,
      true,
    ),
  );
}

/** `POST /v1/bash/output`: output from byte offsets, long-polling with `wait`. */
export async function output(
  state: AioState,
  request: Request,
): Promise<Response> {
  const body = await readJson(request, {
    session_id: { kind: "string", required: true },
    command_id: { kind: "string", nullable: true },
    offset: { kind: "integer" },
    stderr_offset: { kind: "integer" },
    wait: { kind: "boolean" },
    wait_timeout: { kind: "number" },
  });
  if (body instanceof Response) return body;
  const session = state.sessions.get(body.session_id as string);
  if (!session) {
    return envelope(null, {
      success: false,
      message: `Session not found: ${body.session_id}`,
    });
  }
  const commandId = body.command_id as string | null | undefined;
  const command = commandId ? session.commands.get(commandId) : session.current;
  if (!command) {
    if (commandId) {
      return envelope(null, {
        success: false,
        message: `Command not found: ${commandId}`,
      });
    }
    return envelope({
      session_id: session.id,
      stdout: "",
      stderr: "",
      offset: 0,
      stderr_offset: 0,
      command: null,
    });
  }
  const offset = Math.max(0, (body.offset as number | undefined) ?? 0);
  const stderrOffset = Math.max(
    0,
    (body.stderr_offset as number | undefined) ?? 0,
  );
  if (body.wait === true) {
    const waitMs = ((body.wait_timeout as number | undefined) ?? 30) * 1000;
    const deadline = Date.now() + waitMs;
    while (
      !command.done && command.stdout.length <= offset &&
      command.stderr.length <= stderrOffset
    ) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      await command.waitForChange(left);
    }
  }
  const take = (log: ByteLog, from: number): [string, number] => {
    const bytes = log.slice(Math.min(from, log.length));
    const end = command.done ? bytes.length : utf8Boundary(bytes);
    return [
      new TextDecoder().decode(bytes.subarray(0, end)),
      Math.min(from, log.length) + end,
    ];
  };
  const [stdout, nextOffset] = take(command.stdout, offset);
  const [stderr, nextStderrOffset] = take(command.stderr, stderrOffset);
  return envelope({
    session_id: session.id,
    stdout,
    stderr,
    offset: nextOffset,
    stderr_offset: nextStderrOffset,
    command: command.info(),
  });
}

/** `POST /v1/bash/kill`: signals the session's current command. */
export async function kill(
  state: AioState,
  request: Request,
): Promise<Response> {
  const body = await readJson(request, {
    session_id: { kind: "string", required: true },
    signal: { kind: "string", values: ["SIGTERM", "SIGKILL", "SIGINT"] },
  });
  if (body instanceof Response) return body;
  const session = state.sessions.get(body.session_id as string);
  if (!session) {
    return envelope(null, {
      success: false,
      message: `Session not found: ${body.session_id}`,
    });
  }
  const command = session.current;
  const signal =
    ((body.signal as string | undefined) ?? "SIGTERM") as Deno.Signal;
  if (!command || !command.kill(signal, "killed")) {
    return envelope(null, {
      success: false,
      message: `No running command in session ${session.id}`,
    });
  }
  await command.waitForEnd(5000);
  return envelope({
    session_id: session.id,
    command_id: command.id,
    signal,
    status: command.status,
  }, { message: `Sent ${signal} to command ${command.id}` });
}

function sessionInfo(session: Session): Record<string, unknown> {
  const current = session.current && !session.current.done
    ? session.current.command
    : null;
  return {
    session_id: session.id,
    status: "ready",
    working_dir: session.execDir,
    created_at: session.createdAt.toISOString(),
    last_used_at: session.lastUsedAt.toISOString(),
    current_command: current,
    command_count: session.commands.size,
  };
}

/** `POST /v1/bash/sessions/create`. */
export async function createSession(
  state: AioState,
  request: Request,
): Promise<Response> {
  const body = await readJson(request, {
    session_id: { kind: "string", nullable: true },
    exec_dir: { kind: "string", nullable: true },
    snapshot_path: { kind: "string", nullable: true },
  });
  if (body instanceof Response) return body;
  const id = body.session_id as string | null | undefined;
  if (id && state.sessions.has(id)) {
    return envelope(null, {
      success: false,
      message: `Session already exists: ${id}`,
    });
  }
  const execDir = body.exec_dir as string | null | undefined;
  if (execDir) {
    const info = await Deno.stat(execDir).catch(() => null);
    if (!execDir.startsWith("/") || !info?.isDirectory) {
      return envelope(null, {
        success: false,
        message: `Working directory does not exist: ${execDir}`,
      });
    }
  }
  const session = sessionFor(state, id);
  if (execDir) session.execDir = execDir;
  return envelope(sessionInfo(session), { message: "Session created" });
}

/** `GET /v1/bash/sessions`. */
export function listSessions(state: AioState): Promise<Response> {
  return Promise.resolve(
    envelope([...state.sessions.values()].map(sessionInfo)),
  );
}

/** `POST /v1/bash/sessions/{id}/close`: kills the session's command and forgets it. */
export async function closeSession(
  state: AioState,
  id: string,
): Promise<Response> {
  const session = state.sessions.get(id);
  if (!session) {
    return envelope(null, {
      success: false,
      message: `Session not found: ${id}`,
    });
  }
  if (session.current && !session.current.done) {
    session.current.kill("SIGKILL", "killed");
    await session.current.waitForEnd(5000);
  }
  state.sessions.delete(id);
  return envelope({ session_id: id }, { message: "Session closed" });
}
