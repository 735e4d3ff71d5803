/**
 * execd's commands in the OpenSandbox test server (`opensandbox.ts`): run a
 * real `bash -c` in its own process group and stream its events (SSE),
 * interrupt it (SIGTERM, then SIGKILL), its status, and a background
 * command's logs read from a cursor.
 *
 * @module
 */
import type { CommandRecord } from "./opensandbox.ts";
import { ignoreSigtermCommand } from "./_faults.ts";
import { errorText, isObject, signalGroup } from "./_common.ts";
import {
  execdError,
  goJsonType,
  invalidBody,
  isNotFound,
  json,
  readJson,
} from "./_opensandbox_answers.ts";
import {
  EventStream,
  LineSplitter,
  type OpenSandboxState,
  type RunningCommand,
} from "./_opensandbox_state.ts";
import { hostPath } from "../../_internal/std.ts";

const SIGNAL_TEXT: Readonly<Record<string, string>> = {
  SIGKILL: "killed",
  SIGTERM: "terminated",
  SIGINT: "interrupt",
  SIGHUP: "hangup",
  SIGQUIT: "quit",
  SIGABRT: "aborted",
  SIGSEGV: "segmentation fault",
  SIGPIPE: "broken pipe",
  SIGUSR1: "user defined signal 1",
  SIGUSR2: "user defined signal 2",
  SIGALRM: "alarm clock",
};

/** `POST /command`: runs `bash -c` in its own process group and streams its events. */
export async function runCommand(
  state: OpenSandboxState,
  request: Request,
  sandboxId: string | undefined,
): Promise<Response> {
  const body = await readJson(request);
  if (!body.ok || !isObject(body.value)) {
    return invalidBody(
      `error parsing request, MAYBE invalid body format. ${
        body.ok
          ? "json: cannot unmarshal into Go value of type model.RunCommandRequest"
          : body.error
      }`,
    );
  }
  const value = body.value;
  const typeError = (field: string, type: string) =>
    invalidBody(
      `error parsing request, MAYBE invalid body format. json: cannot unmarshal ${
        goJsonType(value[field])
      } into Go struct field RunCommandRequest.${field} of type ${type}`,
    );
  if (value.command !== undefined && typeof value.command !== "string") {
    return typeError("command", "string");
  }
  if (value.cwd !== undefined && typeof value.cwd !== "string") {
    return typeError("cwd", "string");
  }
  if (value.background !== undefined && typeof value.background !== "boolean") {
    return typeError("background", "bool");
  }
  if (
    value.timeout !== undefined &&
    (typeof value.timeout !== "number" || !Number.isInteger(value.timeout))
  ) {
    return typeError("timeout", "int64");
  }
  for (const field of ["uid", "gid"]) {
    const id = value[field];
    if (
      id !== undefined &&
      (typeof id !== "number" || !Number.isInteger(id) || id < 0)
    ) {
      return typeError(field, "uint32");
    }
  }
  if (
    value.envs !== undefined && value.envs !== null &&
    (!isObject(value.envs) ||
      Object.values(value.envs).some((v) => typeof v !== "string"))
  ) {
    return typeError("envs", "map[string]string");
  }
  const command = (value.command as string | undefined) ?? "";
  if (command === "") {
    return invalidBody(
      "invalid request, validation error Key: 'RunCommandRequest.Command' Error:Field validation for 'Command' failed on the 'required' tag",
    );
  }
  const timeout = (value.timeout as number | undefined) ?? 0;
  if (timeout < 0) {
    return invalidBody(
      "invalid request, validation error Key: 'RunCommandRequest.TimeoutMs' Error:Field validation for 'TimeoutMs' failed on the 'gte' tag",
    );
  }
  if (value.gid !== undefined && value.uid === undefined) {
    return invalidBody(
      "invalid request, validation error uid is required when gid is provided",
    );
  }
  const requestedCwd = (value.cwd as string | undefined) ?? "";
  const envs = (value.envs ?? {}) as Record<string, string>;
  // ValidateWorkingDir: the server's environment only.
  if (requestedCwd !== "") {
    let resolved: string;
    try {
      resolved = state.expand(requestedCwd);
    } catch (error) {
      return invalidBody(
        `invalid request, validation error cannot resolve working directory "${requestedCwd}": ${
          errorText(error)
        }`,
      );
    }
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(hostPath.resolve(state.cwd, resolved));
    } catch (error) {
      return invalidBody(
        isNotFound(error)
          ? `invalid request, validation error working directory does not exist: ${requestedCwd}: stat ${resolved}: no such file or directory`
          : `invalid request, validation error cannot access working directory "${requestedCwd}": ${
            errorText(error)
          }`,
      );
    }
    if (!info.isDirectory) {
      return invalidBody(
        `invalid request, validation error working directory path is not a directory: ${requestedCwd}`,
      );
    }
  }
  let cwd: string;
  try {
    cwd = requestedCwd === ""
      ? state.cwd
      : hostPath.resolve(state.cwd, state.expand(requestedCwd, envs));
  } catch (error) {
    return execdError(
      500,
      "RUNTIME_ERROR",
      `error running commands resolve request cwd ${requestedCwd}: ${
        errorText(error)
      }`,
    );
  }
  const background = value.background === true;
  const ignoreSigterm =
    state.faults.serverFault(request, "ignore-sigterm") !== undefined;
  const id = crypto.randomUUID().replaceAll("-", "");
  const stream = new EventStream();
  state.streams.add(stream);
  stream.onClose(() => state.streams.delete(stream));
  let child: Deno.ChildProcess | undefined;
  let startError: string | undefined;
  try {
    child = new Deno.Command("bash", {
      // A background command writes both streams into one file on the real
      // server, in the order written: one pipe here.
      args: [
        "-c",
        (background ? "exec 2>&1\n" : "") +
        (ignoreSigterm ? ignoreSigtermCommand(command) : command),
      ],
      cwd,
      // A sandbox with a networkPolicy: its commands go out through its
      // egress proxy (set before the request's own variables, as the
      // sidecar's are part of the sandbox).
      env: {
        ...state.env,
        ...(sandboxId === undefined ? {} : state.egress.get(sandboxId)?.env),
        ...envs,
      },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: background ? "null" : "piped",
      detached: true,
      ...(typeof value.uid === "number" ? { uid: value.uid } : {}),
      ...(typeof value.gid === "number" ? { gid: value.gid } : {}),
    }).spawn();
  } catch (error) {
    // Deno: "Failed to spawn 'bash': Argument list too long (os error 7)".
    const reason = errorText(error)
      .replace(/^Failed to spawn '[^']*': /, "")
      .replace(/ \(os error \d+\).*$/, "")
      .replace(/^./, (c) => c.toLowerCase());
    startError = `fork/exec /usr/bin/bash: ${reason}`;
  }
  const startedAt = new Date();
  const record: CommandRecord = {
    id,
    content: command,
    background,
    cwd,
    pgid: child?.pid ?? 0,
    startedAt,
    running: child !== undefined,
    ...(sandboxId === undefined ? {} : { sandboxId }),
    request: value,
  };
  let resolveFinished!: () => void;
  const running: RunningCommand = {
    record,
    output: [],
    outputLength: 0,
    finished: new Promise((resolve) => resolveFinished = resolve),
    ...(child === undefined ? {} : { child, status: child.status }),
  };
  const now = () => Date.now();
  const lingerThenClose = () => {
    state.later(state.lingerMs, () => stream.close());
  };
  let pingTimer: ReturnType<typeof setTimeout> | undefined;
  const ping = () => {
    stream.send({ type: "ping", text: "pong", timestamp: now() });
    pingTimer = state.later(state.pingMs, ping);
  };
  stream.onClose(() => state.cancelLater(pingTimer));

  if (child === undefined) {
    if (background) {
      // The real server writes init, then its JSON error into the same body.
      record.running = false;
      record.exitCode = 255;
      record.error = startError!;
      record.finishedAt = new Date();
      state.commands.set(id, running);
      state.records.set(id, record);
      resolveFinished();
      stream.send({ type: "init", text: id, timestamp: now() });
      stream.sendRaw(
        JSON.stringify({
          code: "RUNTIME_ERROR",
          message:
            `error running commands failed to start commands: ${startError}`,
        }),
      );
      stream.close();
    } else {
      resolveFinished();
      stream.send({ type: "init", text: id, timestamp: now() });
      ping();
      stream.send({
        type: "error",
        timestamp: now(),
        error: {
          ename: "CommandExecError",
          evalue: startError!,
          traceback: [startError!],
        },
      });
      lingerThenClose();
    }
    return sseResponse(stream);
  }
  state.commands.set(id, running);
  state.records.set(id, record);
  const pgid = child.pid;
  let timeoutTimer: ReturnType<typeof setTimeout> | undefined;
  if (timeout > 0) {
    timeoutTimer = state.later(timeout, () => {
      if (record.running) signalGroup(pgid, "SIGKILL");
    });
  }

  const collect = async (
    readable: ReadableStream<Uint8Array>,
    onChunk: (chunk: Uint8Array) => void,
  ): Promise<void> => {
    try {
      for await (const chunk of readable) onChunk(chunk);
    } catch {
      // the pipe closed under us
    }
  };

  const finish = async (
    pipes: Promise<unknown>,
  ): Promise<{ exitCode: number; error: string }> => {
    const status = await child.status;
    state.cancelLater(timeoutTimer);
    let exitCode = status.code;
    let error = "";
    if (status.signal !== null) {
      exitCode = -1;
      error = `signal: ${
        SIGNAL_TEXT[status.signal] ?? status.signal.toLowerCase()
      }`;
    } else if (status.code !== 0) {
      error = `exit status ${status.code}`;
    }
    record.running = false;
    record.exitCode = exitCode;
    if (error !== "") record.error = error;
    record.finishedAt = new Date();
    // Output still held by a process that left the group: stop waiting soon.
    let waitTimer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      pipes,
      new Promise<void>((resolve) => waitTimer = setTimeout(resolve, 250)),
    ]);
    clearTimeout(waitTimer);
    return { exitCode, error };
  };

  if (background) {
    const append = (chunk: Uint8Array) => {
      running.output.push(chunk.slice());
      running.outputLength += chunk.length;
    };
    const pipes = collect(child.stdout, append);
    stream.send({ type: "init", text: id, timestamp: now() });
    ping();
    stream.send({
      type: "execution_complete",
      execution_time: Date.now() - startedAt.getTime(),
      timestamp: now(),
    });
    lingerThenClose();
    finish(pipes).finally(resolveFinished);
    return sseResponse(stream);
  }

  const stdout = new LineSplitter((text) =>
    stream.send({ type: "stdout", text, timestamp: now() })
  );
  const stderr = new LineSplitter((text) =>
    stream.send({ type: "stderr", text, timestamp: now() })
  );
  stream.send({ type: "init", text: id, timestamp: now() });
  ping();
  const pipes = Promise.all([
    collect(child.stdout, (chunk) => stdout.push(chunk)),
    collect(child.stderr, (chunk) => stderr.push(chunk)),
  ]);
  (async () => {
    const { exitCode, error } = await finish(pipes);
    stdout.end();
    stderr.end();
    if (error === "") {
      stream.send({
        type: "execution_complete",
        execution_time: Date.now() - startedAt.getTime(),
        timestamp: now(),
      });
    } else {
      stream.send({
        type: "error",
        timestamp: now(),
        error: {
          ename: "CommandExecError",
          evalue: String(exitCode),
          traceback: [error],
        },
      });
    }
    lingerThenClose();
  })().finally(resolveFinished);
  return sseResponse(stream);
}

function sseResponse(stream: EventStream): Response {
  return new Response(stream.stream, {
    status: 200,
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "connection": "keep-alive",
      "x-accel-buffering": "no",
    },
  });
}

/** `DELETE /command?id=`: SIGTERM to the process group, SIGKILL after the grace time. */
export async function interruptCommand(
  state: OpenSandboxState,
  url: URL,
): Promise<Response> {
  const id = url.searchParams.get("id") ?? "";
  if (id === "") {
    return execdError(400, "MISSING_QUERY", "missing query parameter 'id'");
  }
  const command = state.commands.get(id);
  const fail = (reason: string) =>
    execdError(
      500,
      "RUNTIME_ERROR",
      `error interruptting code context. ${reason}`,
    );
  if (command === undefined) return fail("no such session");
  const pgid = command.record.pgid;
  if (!command.record.running || pgid <= 1) {
    return fail(`command session ${id} is not running`);
  }
  const gone = () => !state.groupAlive(pgid);
  const waitGone = async (ms: number): Promise<boolean> => {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      if (gone()) return true;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return gone();
  };
  // The group is gone once no live member is left and its leader is reaped.
  const reaped = async (): Promise<void> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      command.status ?? Promise.resolve(),
      new Promise((resolve) => timer = setTimeout(resolve, 1000)),
    ]);
    clearTimeout(timer);
  };
  if (signalGroup(pgid, "SIGTERM") && await waitGone(state.graceMs)) {
    await reaped();
    return new Response(null, { status: 200 });
  }
  signalGroup(pgid, "SIGKILL");
  await waitGone(1000);
  await reaped();
  return new Response(null, { status: 200 });
}

/** `GET /command/status/{id}`. */
export function commandStatus(state: OpenSandboxState, id: string): Response {
  const command = state.commands.get(id);
  if (command === undefined) {
    return execdError(404, "INVALID_REQUEST_BODY", `command not found: ${id}`);
  }
  const record = command.record;
  return json(200, {
    id,
    content: record.content,
    running: record.running,
    ...(record.exitCode === undefined ? {} : { exit_code: record.exitCode }),
    ...(record.error === undefined ? {} : { error: record.error }),
    started_at: record.startedAt.toISOString(),
    ...(record.finishedAt === undefined
      ? {}
      : { finished_at: record.finishedAt.toISOString() }),
  });
}

/** `GET /command/{id}/logs?cursor=`: a background command's output from a byte cursor. */
export function commandLogs(
  state: OpenSandboxState,
  id: string,
  url: URL,
): Response {
  const command = state.commands.get(id);
  if (command === undefined) {
    return execdError(400, "INVALID_REQUEST_BODY", `command not found: ${id}`);
  }
  if (!command.record.background) {
    return execdError(
      400,
      "INVALID_REQUEST_BODY",
      `command ${id} is not running in background`,
    );
  }
  const raw = url.searchParams.get("cursor") ?? "";
  const cursor = /^-?\d+$/.test(raw) ? Number(raw) : 0;
  if (cursor < 0) {
    return execdError(
      400,
      "INVALID_REQUEST_BODY",
      `error seek file: seek /tmp/${id}.output: invalid argument`,
    );
  }
  const all = new Uint8Array(command.outputLength);
  let offset = 0;
  for (const chunk of command.output) {
    all.set(chunk, offset);
    offset += chunk.length;
  }
  const part = cursor >= all.length ? new Uint8Array() : all.subarray(cursor);
  return new Response(part, {
    status: 200,
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "execd-commands-tail-cursor": String(Math.max(cursor, all.length)),
    },
  });
}
