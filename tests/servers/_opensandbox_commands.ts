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
          ? `json: cannot unmarshal ${
            goJsonType(body.value)
          } into Go value of type model.RunCommandRequest`
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
  if (value.envs !== undefined && value.envs !== null) {
    if (!isObject(value.envs)) return typeError("envs", "map[string]string");
    // Go names the element that does not fit, and the element's type.
    const wrong = Object.values(value.envs).find((v) => typeof v !== "string");
    if (wrong !== undefined) {
      return invalidBody(
        `error parsing request, MAYBE invalid body format. json: cannot unmarshal ${
          goJsonType(wrong)
        } into Go struct field RunCommandRequest.envs of type string`,
      );
    }
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
  const script = ignoreSigterm ? ignoreSigtermCommand(command) : command;
  // A foreground command writes into two regular files, as on the real
  // server (`/tmp/<id>.stdout`, `.stderr`), which are then tailed: a command
  // sees files, not pipes. A first bash opens them and execs the command's
  // own `bash -c` (same pid, so the group is the same; its line numbers too).
  const outputs = background ? undefined : {
    stdout: `${await state.outputDir()}/${id}.stdout`,
    stderr: `${await state.outputDir()}/${id}.stderr`,
  };
  // A background command writes both streams into one file,
  // `/tmp/<id>.output`, in the order written; its logs are read from there.
  const combined = background
    ? `${await state.outputDir()}/${id}.output`
    : undefined;
  if (combined !== undefined) {
    state.output.files.add(combined);
    // The file exists (empty) once `init` is sent: a logs read straight
    // after it finds no output yet, instead of racing bash's redirect below.
    await Deno.writeFile(combined, new Uint8Array());
  }
  try {
    child = new Deno.Command("bash", {
      args: outputs === undefined
        ? ["-c", 'exec >"$0" 2>&1 && exec bash -c "$1"', combined!, script]
        : [
          "-c",
          'exec >"$0" 2>"$1" && exec bash -c "$2"',
          outputs.stdout,
          outputs.stderr,
          script,
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
      stdout: "null",
      stderr: "null",
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
    if (background) {
      // Output still held by a process that left the group: stop waiting soon.
      let waitTimer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        pipes,
        new Promise<void>((resolve) => waitTimer = setTimeout(resolve, 250)),
      ]);
      clearTimeout(waitTimer);
    }
    return { exitCode, error };
  };

  if (background) {
    if (combined !== undefined) running.outputFile = combined;
    const pipes = Promise.resolve();
    stream.send({ type: "init", text: id, timestamp: now() });
    ping();
    stream.send({
      type: "execution_complete",
      // Go's omitempty: no execution_time when it is 0 ms.
      ...executionTime(startedAt),
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
  // Tailed every 100 ms as execd does, and once more at the exit.
  const tails = [
    new FileTail(outputs!.stdout, (chunk) => stdout.push(chunk)),
    new FileTail(outputs!.stderr, (chunk) => stderr.push(chunk)),
  ];
  let tailTimer: ReturnType<typeof setTimeout> | undefined;
  let tailing = true;
  const poll = async () => {
    for (const tail of tails) await tail.read();
    if (tailing) tailTimer = state.later(state.tailMs, poll);
  };
  tailTimer = state.later(state.tailMs, poll);
  (async () => {
    const { exitCode, error } = await finish(Promise.resolve());
    tailing = false;
    state.cancelLater(tailTimer);
    for (const tail of tails) await tail.close();
    stdout.end();
    stderr.end();
    if (error === "") {
      stream.send({
        type: "execution_complete",
        // Go's omitempty: no execution_time when it is 0 ms.
        ...executionTime(startedAt),
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

/**
 * Reads what was appended to an output file since the last read, as execd's
 * tail of `/tmp/<id>.stdout` does; the file is removed at the end.
 */
class FileTail {
  readonly #path: string;
  readonly #onChunk: (chunk: Uint8Array) => void;
  #position = 0;
  #reading: Promise<void> = Promise.resolve();

  constructor(path: string, onChunk: (chunk: Uint8Array) => void) {
    this.#path = path;
    this.#onChunk = onChunk;
  }

  read(): Promise<void> {
    this.#reading = this.#reading.then(() => this.#readNow());
    return this.#reading;
  }

  async #readNow(): Promise<void> {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(this.#path, { read: true });
    } catch {
      return; // not created yet
    }
    try {
      await file.seek(this.#position, Deno.SeekMode.Start);
      const buffer = new Uint8Array(256 * 1024);
      for (;;) {
        const read = await file.read(buffer);
        if (read === null || read === 0) break;
        this.#position += read;
        this.#onChunk(buffer.slice(0, read));
      }
    } finally {
      file.close();
    }
  }

  async close(): Promise<void> {
    await this.read();
    await Deno.remove(this.#path).catch(() => {});
  }
}

/** `execution_time` in ms, left out when 0 (`omitempty`, as the real execd). */
function executionTime(startedAt: Date): { execution_time?: number } {
  const ms = Date.now() - startedAt.getTime();
  return ms > 0 ? { execution_time: ms } : {};
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
  const gone = () => !state.groupObservable(pgid);
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

/**
 * The command of an id, as status and logs see it: unknown for
 * `registerDelayMs` after its start (the real execd registers it after
 * sending `init`).
 */
function known(
  state: OpenSandboxState,
  id: string,
): RunningCommand | undefined {
  const command = state.commands.get(id);
  if (
    command !== undefined && state.registerDelayMs > 0 &&
    Date.now() - command.record.startedAt.getTime() < state.registerDelayMs
  ) {
    return undefined;
  }
  return command;
}

/** `GET /command/status/{id}`. */
export function commandStatus(state: OpenSandboxState, id: string): Response {
  const command = known(state, id);
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

/**
 * `GET /command/{id}/logs?cursor=`: a background command's combined output
 * from a byte offset (execd seeks its output file there and reads to the
 * end), the offset after it in `EXECD-COMMANDS-TAIL-CURSOR`. Streamed from
 * the file up to its size when asked, so that a command printing forever
 * costs the server no memory.
 */
export async function commandLogs(
  state: OpenSandboxState,
  id: string,
  url: URL,
): Promise<Response> {
  const command = known(state, id);
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
  // Gin's QueryInt64 with a default of 0: anything not an integer is 0.
  const cursor = /^-?\d+$/.test(raw) ? Number(raw) : 0;
  if (cursor < 0) {
    return execdError(
      400,
      "INVALID_REQUEST_BODY",
      `error seek file: seek /tmp/${id}.output: invalid argument`,
    );
  }
  const headers = (end: number) => ({
    "content-type": "text/plain; charset=utf-8",
    // Seeking past the end is allowed: the position stays there.
    "execd-commands-tail-cursor": String(Math.max(cursor, end)),
  });
  if (command.outputFile === undefined) {
    // A start failure: no output file.
    return new Response(new Uint8Array(), { status: 200, headers: headers(0) });
  }
  let file: Deno.FsFile;
  try {
    file = await Deno.open(command.outputFile, { read: true });
  } catch (error) {
    return execdError(
      400,
      "INVALID_REQUEST_BODY",
      `error open combined output file for command ${id}: ${errorText(error)}`,
    );
  }
  const end = (await file.stat()).size;
  if (cursor >= end) {
    file.close();
    return new Response(new Uint8Array(), {
      status: 200,
      headers: headers(end),
    });
  }
  await file.seek(cursor, Deno.SeekMode.Start);
  let left = end - cursor;
  const buffer = new Uint8Array(256 * 1024);
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const read = left > 0
        ? await file.read(buffer.subarray(0, Math.min(left, buffer.length)))
        : null;
      if (read === null || read === 0) {
        file.close();
        controller.close();
        return;
      }
      left -= read;
      controller.enqueue(buffer.slice(0, read));
    },
    cancel() {
      file.close();
    },
  });
  return new Response(body, {
    status: 200,
    headers: { ...headers(end), "content-length": String(end - cursor) },
  });
}
