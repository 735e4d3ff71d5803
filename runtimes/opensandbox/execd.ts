/**
 * The client of execd, the daemon inside an OpenSandbox sandbox: commands
 * through `POST /command` (an event stream), files through `/files/*` and
 * `/directories/*`.
 *
 * @module
 */
import { OutputCollector } from "../../_internal/collector.ts";
import { CommandRun, MAX_EXECUTE_TIMEOUT_MS } from "../command_core.ts";
import { posix } from "../../_internal/std.ts";
import type { HttpClient } from "../remote/http.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import type { RemoteFileOps, RemoteUploadFile } from "../remote/fs.ts";
import { multipartBody, type MultipartPart } from "../remote/upload.ts";
import { shellQuote } from "../remote/shell.ts";
import type { ExecuteResult, FileInfo, FileType } from "../types.ts";
import { ExecdProtocolError, readExecdEvents } from "./_events.ts";

/** How long we wait for the stream to end after an interrupt, in ms. */
const INTERRUPT_GRACE_MS = 6_000;

/** A FileInfo as execd sends it. */
interface ExecdFileInfo {
  path: string;
  type?: string;
  size?: number;
  modified_at?: string;
  mode?: number;
}

/** What {@linkcode ExecdClient.run} takes. */
export interface ExecdCommand {
  /** The command, run with `bash -c`. */
  readonly command: string;
  /** An absolute POSIX folder. */
  readonly cwd: string;
  /** The whole environment to add (the runtime's merge). */
  readonly env: Readonly<Record<string, string>>;
  /** Our own deadline, in ms. */
  readonly timeoutMs: number;
  /** The most bytes kept per stream. */
  readonly maxOutputBytes: number;
  /** Stops the command. */
  readonly signal?: AbortSignal;
  /** Receives standard output as it arrives. */
  readonly onStdout?: (chunk: Uint8Array) => void;
  /** Receives standard error as it arrives. */
  readonly onStderr?: (chunk: Uint8Array) => void;
}

/**
 * A command the sandbox refused or could not start (a missing folder, a
 * start failure), or whose event stream broke before it finished.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { SandboxCommandError } from "@skillrun/skillrun/opensandbox";
 * const error = new SandboxCommandError(
 *   "Cannot run the command: the sandbox could not start it: permission denied",
 *   { reason: "start" },
 * );
 * assert(error.reason === "start");
 * ```
 */
export class SandboxCommandError extends Error {
  /** The error's name. */
  override readonly name = "SandboxCommandError";
  /**
   * `refused`: the server refused the request before running anything;
   * `start`: it could not start the process; `stream`: the event stream broke
   * (the command was interrupted so that nothing is left running).
   */
  readonly reason: "refused" | "start" | "stream";

  /**
   * Makes the error.
   *
   * @param message What failed.
   * @param options The reason and the cause.
   */
  constructor(
    message: string,
    options: { reason: SandboxCommandError["reason"]; cause?: unknown },
  ) {
    super(
      message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.reason = options.reason;
  }
}

/**
 * Talks to one sandbox's execd. Every call goes through the given client,
 * whose base URL is execd's (it may carry a path) and whose headers include
 * the endpoint's own.
 *
 * @example Making a client (no request is made)
 * ```ts
 * import { assert } from "@std/assert";
 * import { ExecdClient, HttpClient } from "@skillrun/skillrun/opensandbox";
 * const execd = new ExecdClient(new HttpClient({ baseUrl: "http://127.0.0.1:1/proxy/44772" }));
 * assert(execd.http.baseUrl.endsWith("/proxy/44772"));
 * ```
 */
export class ExecdClient implements RemoteFileOps {
  /** The HTTP client of execd. */
  readonly http: HttpClient;

  /**
   * Makes the client.
   *
   * @param http The HTTP client on execd's base URL.
   */
  constructor(http: HttpClient) {
    this.http = http;
  }

  /**
   * Whether execd answers `GET /ping` with 200.
   *
   * @param signal Stops the call.
   * @returns `true` when ready.
   */
  async ping(signal?: AbortSignal): Promise<boolean> {
    try {
      const response = await this.http.request({
        method: "GET",
        path: "/ping",
        // Not retried: the caller polls.
        idempotent: false,
        timeoutMs: 5_000,
        ...(signal ? { signal } : {}),
      });
      await response.body?.cancel();
      return true;
    } catch (error) {
      if (signal?.aborted) throw error;
      return false;
    }
  }

  /**
   * Runs one command to its end, our deadline or the caller's signal; on the
   * last two it interrupts the command (`DELETE /command?id=`) and says so in
   * the result. Never retried.
   *
   * @param request The command.
   * @returns The result.
   * @throws {SandboxCommandError} The server refused the request or could not
   * start the process, or the stream broke.
   * @throws {RemoteHttpError} The server could not be reached.
   */
  async run(request: ExecdCommand): Promise<ExecuteResult> {
    const stdout = new LineJoiner(request.maxOutputBytes, request.onStdout);
    const stderr = new LineJoiner(request.maxOutputBytes, request.onStderr);
    // Our deadline and the caller's signal: whichever comes first. Then the
    // command is interrupted (its id arrives in the stream, so the stream is
    // read on) and, past a grace period, we stop waiting for the stream.
    using run = new CommandRun({
      timeoutMs: request.timeoutMs,
      signal: request.signal,
      graceMs: INTERRUPT_GRACE_MS,
    });
    const result = (exitCode: number) => run.result(exitCode, stdout, stderr);
    if (run.reason) return result(-1);
    const stop = run.stopSignal;
    const giveUp = run.graceSignal;

    let response: Response;
    try {
      response = await this.http.request({
        method: "POST",
        path: "/command",
        json: commandBody(request),
        headers: { accept: "text/event-stream" },
        idempotent: false,
        timeoutMs: null,
        signal: giveUp,
      });
    } catch (error) {
      // Stopped before the server even answered: the server's own timeout
      // (a little after ours) stops a command it may have started.
      if (run.reason && giveUp.aborted) return result(-1);
      if (error instanceof RemoteHttpError && error.status === 400) {
        throw new SandboxCommandError(
          `Cannot run the command in "${request.cwd}": the sandbox refused it: ${
            error.serverMessage ?? error.message
          }`,
          { reason: "refused", cause: error },
        );
      }
      throw error;
    }

    const body = response.body;
    let id: string | undefined;
    let interrupting: Promise<void> | undefined;
    const interrupt = () => {
      if (id === undefined || interrupting) return;
      interrupting = this.interrupt(id);
    };
    stop.addEventListener("abort", interrupt, { once: true });
    run.onGraceOver(() => void body?.cancel().catch(() => {}));
    let exitCode: number | undefined;
    let startFailure: string | undefined;
    try {
      if (!body) throw new ExecdProtocolError("the answer has no body");
      for await (const event of readExecdEvents(body)) {
        switch (event.type) {
          case "init":
            id = typeof event.text === "string" ? event.text : undefined;
            if (stop.aborted) interrupt();
            break;
          case "stdout":
            stdout.line(event.text);
            break;
          case "stderr":
            stderr.line(event.text);
            break;
          case "execution_complete":
            exitCode = 0;
            break;
          case "error": {
            const value = event.error?.evalue ?? "";
            if (/^-?\d+$/.test(value.trim())) {
              exitCode = Number(value.trim());
            } else {
              startFailure = value || event.error?.ename || "unknown error";
              exitCode = -1;
            }
            break;
          }
        }
        if (exitCode !== undefined) break;
      }
    } catch (error) {
      if (run.reason) {
        await interrupting?.catch(() => {});
        stdout.end(false);
        stderr.end(false);
        return result(-1);
      }
      await this.#interruptQuietly(id);
      throw new SandboxCommandError(
        `Cannot run the command: ${
          error instanceof ExecdProtocolError
            ? error.message
            : "the connection broke before the command finished"
        }; it was interrupted`,
        { reason: "stream", cause: error },
      );
    } finally {
      run[Symbol.dispose]();
      stop.removeEventListener("abort", interrupt);
      await body?.cancel().catch(() => {});
    }
    if (run.reason) {
      await interrupting?.catch(() => {});
      stdout.end(false);
      stderr.end(false);
      return result(-1);
    }
    // Our wrapper ended each stream with a newline of its own: dropping it
    // gives the output exactly, with or without a final newline. A process
    // killed by a signal never wrote it.
    stdout.end(exitCode !== -1);
    stderr.end(exitCode !== -1);
    if (startFailure !== undefined) {
      throw new SandboxCommandError(
        `Cannot run the command: the sandbox could not start it: ${startFailure}`,
        { reason: "start" },
      );
    }
    if (exitCode === undefined) {
      await this.#interruptQuietly(id);
      throw new SandboxCommandError(
        "Cannot run the command: the event stream ended before the command finished; it was interrupted",
        { reason: "stream" },
      );
    }
    return result(exitCode);
  }

  /**
   * Interrupts a running command (SIGTERM to its group, SIGKILL after 3 s);
   * answers once the group is gone. An id the server no longer knows (the
   * command already ended) is not an error.
   *
   * @param id The command id from the `init` event.
   * @returns When done.
   */
  async interrupt(id: string): Promise<void> {
    try {
      const response = await this.http.request({
        method: "DELETE",
        path: "/command",
        query: { id },
        timeoutMs: 15_000,
      });
      await response.body?.cancel();
    } catch (error) {
      // 500 RUNTIME_ERROR: unknown or finished id.
      if (error instanceof RemoteHttpError && error.status === 500) return;
      throw error;
    }
  }

  async #interruptQuietly(id: string | undefined): Promise<void> {
    if (id !== undefined) await this.interrupt(id).catch(() => {});
  }

  /**
   * Facts about a path, or `null` when missing (`GET /files/info`).
   *
   * @param path An absolute POSIX path.
   * @param signal Stops the call.
   * @returns The facts.
   */
  async stat(path: string, signal?: AbortSignal): Promise<FileInfo | null> {
    try {
      const map = await this.http.json<Record<string, ExecdFileInfo>>({
        method: "GET",
        path: "/files/info",
        query: { path },
        ...(signal ? { signal } : {}),
      });
      const info = map[path] ?? Object.values(map)[0];
      return info ? toFileInfo(info, path) : null;
    } catch (error) {
      if (error instanceof RemoteHttpError && error.status === 404) return null;
      throw error;
    }
  }

  /**
   * Lists a folder (`GET /directories/list`), symlinks not followed.
   *
   * @param path An absolute POSIX path.
   * @param options The depth and a signal.
   * @returns The entries, in the server's order.
   */
  async list(
    path: string,
    options: { depth: number; signal?: AbortSignal },
  ): Promise<FileInfo[]> {
    const entries = await this.http.json<ExecdFileInfo[]>({
      method: "GET",
      path: "/directories/list",
      query: { path, depth: String(options.depth) },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return entries.map((entry) => toFileInfo(entry));
  }

  /**
   * Opens a file's bytes from an offset (`GET /files/download` with `Range`).
   *
   * @param path An absolute POSIX path.
   * @param options The offset and a signal.
   * @returns The response (200, or 206 from an offset).
   */
  open(
    path: string,
    options: { offset: number; signal?: AbortSignal },
  ): Promise<Response> {
    return this.http.request({
      method: "GET",
      path: "/files/download",
      query: { path },
      ...(options.offset > 0
        ? { headers: { range: `bytes=${options.offset}-` } }
        : {}),
      timeoutMs: null,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /**
   * Creates folders and their parents (`POST /directories`, mode 0755).
   *
   * @param paths Absolute POSIX paths.
   * @param signal Stops the call.
   * @returns When done.
   */
  async makeDirectories(
    paths: readonly string[],
    signal?: AbortSignal,
  ): Promise<void> {
    const response = await this.http.request({
      method: "POST",
      path: "/directories",
      json: Object.fromEntries(paths.map((path) => [path, { mode: 755 }])),
      idempotent: true,
      ...(signal ? { signal } : {}),
    });
    await response.body?.cancel();
  }

  /**
   * Uploads files in one multipart request of `metadata`/`file` pairs;
   * parents are created by the server.
   *
   * @param files The files, their absolute POSIX targets and modes.
   * @param signal Stops the upload.
   * @returns When done.
   */
  async upload(
    files: readonly RemoteUploadFile[],
    signal?: AbortSignal,
  ): Promise<void> {
    if (files.length === 0) return;
    const parts: MultipartPart[] = [];
    for (const file of files) {
      parts.push({
        name: "metadata",
        filename: "metadata",
        contentType: "application/json",
        content: JSON.stringify({
          path: file.remotePath,
          ...(file.mode !== undefined
            ? { mode: Number((file.mode & 0o777).toString(8)) }
            : {}),
        }),
      });
      parts.push({
        name: "file",
        filename: posix.basename(file.remotePath),
        contentType: "application/octet-stream",
        content: file.content,
      });
    }
    const { body, contentType, length } = multipartBody(parts);
    const response = await this.http.request({
      method: "POST",
      path: "/files/upload",
      body,
      headers: {
        "content-type": contentType,
        "content-length": String(length),
      },
      // A failed upload may be sent again: it rewrites the same files.
      idempotent: false,
      timeoutMs: null,
      ...(signal ? { signal } : {}),
    });
    await response.body?.cancel();
  }
}

/**
 * The JSON body of `POST /command` for a command: the command wrapped (see
 * below), its folder, its environment, and the server's own timeout as a
 * backstop a little later than ours.
 *
 * @example The body of a command
 * ```ts
 * import { assert } from "@std/assert";
 * import { commandBody } from "./execd.ts";
 * const body = commandBody({ command: "true", cwd: "/w", env: {}, timeoutMs: 1000 });
 * assert(body.cwd === "/w" && body.timeout === 6000);
 * ```
 *
 * @param request The command, folder, environment and timeout.
 * @returns The body.
 */
export function commandBody(
  request: Pick<ExecdCommand, "command" | "cwd" | "env" | "timeoutMs">,
): {
  command: string;
  cwd: string;
  envs: Readonly<Record<string, string>>;
  timeout: number;
} {
  return {
    command: wrapCommand(request.command),
    cwd: request.cwd,
    envs: request.env,
    // Never past the longest timer (a server that keeps time in a 32-bit
    // timer would fire at once).
    timeout: Math.min(
      Math.ceil(request.timeoutMs) + 5_000,
      MAX_EXECUTE_TIMEOUT_MS,
    ),
  };
}

/**
 * The command sent to execd: the caller's, run by a bash of its own (so that
 * `exit` in it still reaches the end), then one newline on each stream and
 * its exit status. execd strips each line's newline, so without this marker a
 * last line printed without a newline could not be told from one with it.
 */
function wrapCommand(command: string): string {
  return `bash -c ${
    shellQuote(command)
  }; __skillrun_status=$?; printf '\\n'; printf '\\n' >&2; exit "$__skillrun_status"`;
}

/**
 * Rejoins execd's lines (one event per line, newline stripped; an empty line
 * arrives as `"\n"`) into the bounded collector: each line's newline is held
 * back until the next line or the end, where the wrapper's own is dropped.
 */
class LineJoiner {
  readonly #collector: OutputCollector;
  readonly #onChunk: ((chunk: Uint8Array) => void) | undefined;
  #pendingNewline = false;

  constructor(maxBytes: number, onChunk?: (chunk: Uint8Array) => void) {
    this.#collector = new OutputCollector({ maxBytes });
    this.#onChunk = onChunk;
  }

  line(text: string | undefined): void {
    if (text === undefined) return;
    if (this.#pendingNewline) this.#push(NEWLINE);
    if (text !== "\n" && text !== "") this.#push(ENCODER.encode(text));
    this.#pendingNewline = true;
  }

  /** Ends the stream: with the wrapper's newline dropped, or every newline kept. */
  end(dropLastNewline: boolean): void {
    if (this.#pendingNewline && !dropLastNewline) this.#push(NEWLINE);
    this.#pendingNewline = false;
  }

  #push(bytes: Uint8Array): void {
    this.#collector.push(bytes);
    this.#onChunk?.(bytes);
  }

  text(): string {
    return this.#collector.text();
  }

  get totalBytes(): number {
    return this.#collector.totalBytes;
  }

  get truncated(): boolean {
    return this.#collector.truncated;
  }
}

const ENCODER = new TextEncoder();
const NEWLINE = new Uint8Array([10]);

function toFileInfo(info: ExecdFileInfo, fallbackPath?: string): FileInfo {
  const path = info.path || fallbackPath || "";
  const type: FileType = info.type === "file" || info.type === "directory" ||
      info.type === "symlink"
    ? info.type
    : info.type === undefined
    ? "file"
    : "other";
  const modified = info.modified_at ? new Date(info.modified_at) : null;
  // Modes are octal digits written as a decimal number: 755 means 0o755.
  const mode = typeof info.mode === "number"
    ? parseInt(String(info.mode), 8)
    : NaN;
  return {
    path,
    name: posix.basename(path),
    type,
    size: typeof info.size === "number" ? info.size : 0,
    modifiedAt: modified && !Number.isNaN(modified.getTime()) ? modified : null,
    ...(Number.isNaN(mode) ? {} : { executable: (mode & 0o100) !== 0 }),
  };
}
