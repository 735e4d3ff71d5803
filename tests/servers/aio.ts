/**
 * An AIO Sandbox server for tests: a real `Deno.serve` HTTP server that runs
 * real `bash` processes and reads and writes real host paths, answering the
 * `/v1/bash/*` and `/v1/file/*` endpoints that the AIO runtime and the official
 * client (`@agent-infra/sandbox`) use, in the shapes of
 * `../shared/specs/aio-sandbox/openapi.json` and with the deviations listed in
 * `../shared/specs/README.md`:
 *
 * - every JSON answer is the envelope `{success, message, data, hint}`;
 * - a failed file operation is HTTP 200 with `success: false` and a
 *   `FileOperationError` (`error_type` not_found, invalid_target, ...) as data;
 * - a malformed request is 422 with FastAPI's `{detail: [{loc, msg, type}]}`;
 * - a failed download is an HTTP error status (404 / 400) with the envelope;
 * - `/v1/bash/exec` keeps stdout and stderr apart, applies `max_output_length`
 *   in characters (head and tail kept), lets a soft `timeout` return `running`
 *   while the command goes on, and kills the process group at `hard_timeout`
 *   (`timed_out`); `/v1/bash/output` reads from byte offsets and long-polls
 *   with `wait`; `/v1/bash/kill` signals the session's current process group.
 *
 * Range: the spec documents only 200 for `/v1/file/download` (no 206, no
 * `Accept-Ranges`), so by default the server ignores `Range` and streams the
 * whole file, as a plain streaming response does; `range: true` makes it
 * honour one `bytes=a-b` range (206 + `Content-Range`, 416 when unsatisfiable)
 * so that a client's resume path can be tested too.
 *
 * Run by hand: `deno run -A tests/servers/aio.ts [--port N] [--token T] [--home DIR]
 * [--fault SPEC]... [--fault-control]`
 * prints its base URL as the first line of stdout and serves until stopped.
 *
 * @module
 */

import {
  FaultInjector,
  ignoreSigtermCommand,
  parseFaultSpec,
  serveWithFaults,
} from "./_faults.ts";
import { OpenApiContract } from "./_contract.ts";

/** A command's state, as the spec names it. */
export type AioCommandStatus =
  | "pending"
  | "running"
  | "completed"
  | "timed_out"
  | "killed";

/** One request the server received (faults and auth failures included). */
export interface AioRequestRecord {
  /** The HTTP method. */
  readonly method: string;
  /** The path, without the query. */
  readonly path: string;
}

/** Options of {@linkcode startAioServer}. */
export interface AioServerOptions {
  /** The port; 0 (default) picks a free one. */
  readonly port?: number;
  /** The host name to listen on. Default `127.0.0.1`. */
  readonly hostname?: string;
  /** When set, every request must carry `Authorization: Bearer <token>`. */
  readonly token?: string;
  /**
   * The sessions' default working directory (the container's home).
   * Default: the process's current directory.
   */
  readonly home?: string;
  /** Honour `Range` on downloads (206). Default false: the spec has no 206. */
  readonly range?: boolean;
  /**
   * The fault injector in front of the handler (shared with the OpenSandbox
   * server); default a new one whose status faults answer with the AIO
   * envelope. The `ignore-sigterm` fault applies to `/v1/bash/exec`.
   */
  readonly faults?: FaultInjector;
  /** Serve `/__faults` to add and clear faults while running. Default off. */
  readonly control?: boolean;
  /**
   * The AIO OpenAPI contract (`loadAioContract()`): every real answer (before
   * any injected fault) is checked against it, and what does not match is
   * kept in {@linkcode AioServer.contractViolations}.
   */
  readonly contract?: OpenApiContract;
}

/** Where the AIO OpenAPI document is. */
export const AIO_OPENAPI: URL = new URL(
  "../../../shared/specs/aio-sandbox/openapi.json",
  import.meta.url,
);

/**
 * Loads the AIO OpenAPI contract for {@linkcode AioServerOptions.contract}.
 *
 * @returns The contract.
 */
export function loadAioContract(): Promise<OpenApiContract> {
  return OpenApiContract.load(AIO_OPENAPI);
}

/**
 * Answers the spec does not list but `../shared/specs/README.md` documents:
 * the optional bearer check (401) and a failed download (4xx); with
 * `range: true`, the opt-in partial download (206).
 */
function documentedDeviation(
  path: string,
  status: number,
  range: boolean,
): boolean {
  if (status === 401) return true;
  if (path !== "/v1/file/download") return false;
  return (status >= 400 && status < 500) || (range && status === 206);
}

/** A running {@linkcode startAioServer}. */
export interface AioServer extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  /** The sessions' default working directory. */
  readonly home: string;
  /** The fault injector. */
  readonly faults: FaultInjector;
  /** Every request that reached the handler, in order (faulted ones not). */
  readonly requests: readonly AioRequestRecord[];
  /**
   * Real answers that did not match the contract (`METHOD path status:
   * finding`), when one was given. Empty is good.
   */
  readonly contractViolations: readonly string[];
  /**
   * How many requests hit `path` (every path when omitted), those answered
   * by an injected fault included.
   */
  requestCount(path?: string): number;
  /** Closes the listener: connections are refused until {@linkcode acceptConnections}. */
  refuseConnections(): Promise<void>;
  /** Listens again on the same port. */
  acceptConnections(): Promise<void>;
  /** The process ids of the commands still running. */
  runningPids(): number[];
  /** Kills every command still running and stops serving. Idempotent. */
  close(): Promise<void>;
}

const encoder = new TextEncoder();

/** Bytes appended over time, read from any byte offset. */
class ByteLog {
  #chunks: Uint8Array[] = [];
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(chunk: Uint8Array): void {
    this.#chunks.push(chunk);
    this.#length += chunk.length;
  }

  slice(start: number, end = this.#length): Uint8Array {
    const out = new Uint8Array(Math.max(0, end - start));
    let position = 0;
    let written = 0;
    for (const chunk of this.#chunks) {
      const chunkEnd = position + chunk.length;
      if (chunkEnd > start && position < end) {
        const from = Math.max(0, start - position);
        const to = Math.min(chunk.length, end - position);
        out.set(chunk.subarray(from, to), written);
        written += to - from;
      }
      position = chunkEnd;
      if (position >= end) break;
    }
    return out;
  }
}

/** The end of the longest prefix of `bytes` that does not cut a UTF-8 character. */
function utf8Boundary(bytes: Uint8Array): number {
  let i = bytes.length;
  // Step back over at most 3 continuation bytes to the lead byte.
  let back = 0;
  while (back < 3 && i - back - 1 >= 0) {
    const b = bytes[i - back - 1]!;
    if ((b & 0xc0) !== 0x80) break;
    back++;
  }
  const leadIndex = i - back - 1;
  if (leadIndex < 0) return i;
  const lead = bytes[leadIndex]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (need > back + 1) i = leadIndex;
  return i;
}

/** Middle truncation in characters, as the server's `max_output_length` does. */
function truncateMiddle(text: string, max: number): string {
  if (max <= 0) return text;
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  const head = Math.ceil(max / 2);
  const tail = max - head;
  const omitted = chars.length - max;
  return chars.slice(0, head).join("") +
    `\n... [${omitted} characters truncated] ...\n` +
    (tail > 0 ? chars.slice(chars.length - tail).join("") : "");
}

class Command {
  readonly id = crypto.randomUUID();
  status: AioCommandStatus = "pending";
  exitCode: number | null = null;
  readonly stdout = new ByteLog();
  readonly stderr = new ByteLog();
  child: Deno.ChildProcess | null = null;
  #waiters = new Set<() => void>();
  #hardTimer: ReturnType<typeof setTimeout> | undefined;
  finished: Promise<void> = Promise.resolve();
  /** Set by kill or hard timeout before the process ends. */
  stopReason: "killed" | "timed_out" | null = null;

  constructor(readonly command: string, readonly sessionId: string) {}

  get done(): boolean {
    return this.status !== "pending" && this.status !== "running";
  }

  start(
    cwd: string,
    env: Record<string, string>,
    hardTimeoutS: number | null,
  ): void {
    try {
      this.child = new Deno.Command("bash", {
        args: ["-c", this.command],
        cwd,
        env,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        detached: true,
      }).spawn();
    } catch (error) {
      this.stderr.push(
        encoder.encode(`bash: ${(error as Error).message}\n`),
      );
      this.status = "killed";
      this.#notify();
      return;
    }
    this.status = "running";
    const child = this.child;
    const pump = async (
      stream: ReadableStream<Uint8Array>,
      log: ByteLog,
    ): Promise<void> => {
      try {
        for await (const chunk of stream) {
          log.push(chunk.slice());
          this.#notify();
        }
      } catch {
        // The stream broke (process killed): what arrived stays.
      }
    };
    const pumps = Promise.all([
      pump(child.stdout, this.stdout),
      pump(child.stderr, this.stderr),
    ]);
    if (hardTimeoutS !== null && hardTimeoutS > 0) {
      this.#hardTimer = setTimeout(() => {
        this.kill("SIGKILL", "timed_out");
      }, hardTimeoutS * 1000);
    }
    this.finished = (async () => {
      const status = await child.status;
      // A killed group closes its pipes; a background job that escaped
      // keeps them open: stop reading a moment after the leader is gone.
      await Promise.race([pumps, new Promise((r) => setTimeout(r, 200))]);
      clearTimeout(this.#hardTimer);
      if (this.stopReason) {
        this.status = this.stopReason;
        this.exitCode = status.signal ? null : status.code;
      } else {
        this.status = "completed";
        this.exitCode = status.signal
          ? 128 + signalNumber(status.signal)
          : status.code;
      }
      this.#notify();
    })();
  }

  kill(signal: Deno.Signal, reason: "killed" | "timed_out"): boolean {
    if (this.done || !this.child) return false;
    this.stopReason ??= reason;
    try {
      Deno.kill(-this.child.pid, signal);
    } catch {
      return false;
    }
    if (signal !== "SIGKILL") {
      // A process that ignores the signal still goes, a moment later.
      setTimeout(() => {
        if (!this.done && this.child) {
          try {
            Deno.kill(-this.child.pid, "SIGKILL");
          } catch { /* gone */ }
        }
      }, 2000);
    }
    return true;
  }

  /** Resolves on new output or the end, or after `ms`. */
  waitForChange(ms: number): Promise<void> {
    if (this.done) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#waiters.add(done);
    });
  }

  /** Resolves when the command ends, or after `ms`. */
  async waitForEnd(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (!this.done) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      await this.waitForChange(left);
    }
  }

  #notify(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }

  info(): Record<string, unknown> {
    return {
      command_id: this.id,
      command: this.command,
      status: this.status,
      exit_code: this.exitCode,
    };
  }
}

function signalNumber(signal: Deno.Signal): number {
  const numbers: Partial<Record<Deno.Signal, number>> = {
    SIGHUP: 1,
    SIGINT: 2,
    SIGQUIT: 3,
    SIGKILL: 9,
    SIGTERM: 15,
    SIGPIPE: 13,
  };
  return numbers[signal] ?? 1;
}

interface Session {
  readonly id: string;
  readonly createdAt: Date;
  lastUsedAt: Date;
  execDir: string;
  current: Command | null;
  readonly commands: Map<string, Command>;
}

/** The body of an injected status fault: the AIO envelope. */
function faultBody(status: number): string {
  return JSON.stringify({
    success: false,
    message: `injected fault: status ${status}`,
    data: null,
    hint: null,
  });
}

/** The envelope of every JSON answer. */
function envelope(
  data: unknown,
  options: { success?: boolean; message?: string; status?: number } = {},
): Response {
  return Response.json({
    success: options.success ?? true,
    message: options.message ?? "Operation successful",
    data: data ?? null,
    hint: null,
  }, { status: options.status ?? 200 });
}

interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

function validationError(issues: ValidationIssue[]): Response {
  return Response.json({ detail: issues }, { status: 422 });
}

type FieldKind =
  | "string"
  | "number"
  | "integer"
  | "boolean"
  | "string-map"
  | "string-array";

interface FieldSpec {
  readonly kind: FieldKind;
  readonly required?: boolean;
  readonly nullable?: boolean;
  readonly values?: readonly string[];
}

/** Validates a JSON body as FastAPI/pydantic would, with its error shapes. */
function validateBody(
  body: unknown,
  fields: Readonly<Record<string, FieldSpec>>,
): ValidationIssue[] {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return [{
      loc: ["body"],
      msg:
        "Input should be a valid dictionary or object to extract fields from",
      type: "model_attributes_type",
    }];
  }
  const record = body as Record<string, unknown>;
  const issues: ValidationIssue[] = [];
  for (const [name, spec] of Object.entries(fields)) {
    const value = record[name];
    if (value === undefined) {
      if (spec.required) {
        issues.push({
          loc: ["body", name],
          msg: "Field required",
          type: "missing",
        });
      }
      continue;
    }
    if (value === null) {
      if (!spec.nullable) {
        issues.push({
          loc: ["body", name],
          msg: `Input should be a valid ${spec.kind}`,
          type: `${spec.kind}_type`,
        });
      }
      continue;
    }
    let ok: boolean;
    switch (spec.kind) {
      case "string":
        ok = typeof value === "string";
        break;
      case "number":
        ok = typeof value === "number" && Number.isFinite(value);
        break;
      case "integer":
        ok = typeof value === "number" && Number.isInteger(value);
        break;
      case "boolean":
        ok = typeof value === "boolean";
        break;
      case "string-map":
        ok = typeof value === "object" && !Array.isArray(value) &&
          Object.values(value as object).every((v) => typeof v === "string");
        break;
      case "string-array":
        ok = Array.isArray(value) && value.every((v) => typeof v === "string");
        break;
    }
    if (ok && spec.values && !spec.values.includes(value as string)) {
      issues.push({
        loc: ["body", name],
        msg: `Input should be ${spec.values.map((v) => `'${v}'`).join(" or ")}`,
        type: "enum",
      });
      continue;
    }
    if (!ok) {
      issues.push({
        loc: ["body", name],
        msg: `Input should be a valid ${spec.kind}`,
        type: `${spec.kind}_type`,
      });
    }
  }
  return issues;
}

async function readJson(
  request: Request,
  fields: Readonly<Record<string, FieldSpec>>,
): Promise<Record<string, unknown> | Response> {
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    return validationError([{
      loc: ["body", 0],
      msg: "JSON decode error",
      type: "json_invalid",
    }]);
  }
  const issues = validateBody(body, fields);
  if (issues.length > 0) return validationError(issues);
  return body as Record<string, unknown>;
}

/** Maps a file-system error to the spec's `error_type`. */
function errorType(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "not_found";
  if (error instanceof Deno.errors.PermissionDenied) return "permission_denied";
  if (error instanceof Deno.errors.AlreadyExists) return "already_exists";
  if (
    error instanceof Deno.errors.IsADirectory ||
    error instanceof Deno.errors.NotADirectory
  ) return "invalid_target";
  if (error instanceof TypeError && /utf-?8|decode/i.test(String(error))) {
    return "decode_error";
  }
  return "io_error";
}

/** HTTP 200 with `success: false` and a `FileOperationError`. */
function fileError(
  path: string,
  operation: string,
  error: unknown,
  type = errorType(error),
): Response {
  const message = error instanceof Error ? error.message : String(error);
  return envelope({
    path,
    operation,
    message,
    error_type: type,
    retryable: false,
    errno: null,
    errno_name: null,
    exception_type: error instanceof Error ? error.name : null,
  }, { success: false, message: `Failed to ${operation} ${path}: ${message}` });
}

function isAbsolutePosix(path: string): boolean {
  return path.startsWith("/");
}

function parentOf(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

function baseName(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  return trimmed.slice(trimmed.lastIndexOf("/") + 1);
}

function modeString(info: Deno.FileInfo): string {
  const mode = info.mode ?? 0;
  const type = info.isSymlink ? "l" : info.isDirectory ? "d" : "-";
  const bits = "rwxrwxrwx";
  let out = type;
  for (let i = 0; i < 9; i++) {
    out += mode & (1 << (8 - i)) ? bits[i] : "-";
  }
  return out;
}

function fileInfoOf(
  path: string,
  info: Deno.FileInfo,
  options: { size: boolean; permissions: boolean },
): Record<string, unknown> {
  const name = baseName(path);
  const dot = name.lastIndexOf(".");
  return {
    name,
    path,
    is_directory: info.isDirectory,
    size: options.size && !info.isDirectory ? info.size : null,
    modified_time: info.mtime ? info.mtime.toISOString() : null,
    permissions: options.permissions ? modeString(info) : null,
    extension: !info.isDirectory && dot > 0 ? name.slice(dot) : null,
  };
}

/**
 * Starts the server on loopback.
 *
 * @example Running a command and reading it back
 * ```ts
 * import { assert } from "@std/assert";
 * import { startAioServer } from "./aio.ts";
 *
 * await using server = startAioServer();
 * const response = await fetch(`${server.baseUrl}/v1/bash/exec`, {
 *   method: "POST",
 *   headers: { "content-type": "application/json" },
 *   body: JSON.stringify({ command: "echo hi; echo no >&2; exit 3" }),
 * });
 * const { success, data } = await response.json();
 * assert(success && data.stdout === "hi\n" && data.stderr === "no\n");
 * assert(data.exit_code === 3 && data.status === "completed");
 * ```
 *
 * @param options Port, token, home, Range support, fault hook.
 * @returns The running server.
 */
export function startAioServer(options: AioServerOptions = {}): AioServer {
  const home = options.home ?? Deno.cwd();
  const sessions = new Map<string, Session>();
  const requests: AioRequestRecord[] = [];
  const allCommands = new Set<Command>();
  const faults = options.faults ??
    new FaultInjector({ errorBody: faultBody });
  const httpServer = serveWithFaults({
    faults,
    ...(options.port === undefined ? {} : { port: options.port }),
    hostname: options.hostname ?? "127.0.0.1",
    control: options.control ?? false,
    handler: async (request) => {
      const url = new URL(request.url);
      requests.push({ method: request.method, path: url.pathname });
      if (options.token !== undefined) {
        const auth = request.headers.get("authorization") ?? "";
        if (auth !== `Bearer ${options.token}`) {
          await request.body?.cancel().catch(() => {});
          return envelope(null, {
            success: false,
            message: "Unauthorized: missing or invalid bearer token",
            status: 401,
          });
        }
      }
      let response: Response;
      try {
        response = await route(request, url);
      } catch (error) {
        response = envelope(null, {
          success: false,
          message: `Internal server error: ${(error as Error).message}`,
          status: 500,
        });
      }
      if (options.contract) {
        await checkContract(options.contract, request.method, url, response);
      }
      return response;
    },
  });
  const violations: string[] = [];

  async function checkContract(
    contract: OpenApiContract,
    method: string,
    url: URL,
    response: Response,
  ): Promise<void> {
    const where = `${method} ${url.pathname} ${response.status}`;
    const type = (response.headers.get("content-type") ?? "").split(";")[0]!
      .trim();
    try {
      contract.responseSpec({
        method,
        path: url.pathname,
        status: response.status,
      });
    } catch {
      if (
        !documentedDeviation(url.pathname, response.status, !!options.range)
      ) {
        violations.push(`${where}: not in the spec`);
      }
      return;
    }
    if (type !== "application/json") {
      const spec = contract.responseSpec({
        method,
        path: url.pathname,
        status: response.status,
      });
      if (!spec.contentTypes.includes(type)) {
        violations.push(`${where}: content type "${type}" is not declared`);
      }
      return;
    }
    const body = JSON.parse(await response.clone().text());
    const result = contract.validate({
      method,
      path: url.pathname,
      status: response.status,
      contentType: type,
    }, body);
    if (!result.valid) {
      violations.push(`${where}: ${result.errors.join("; ")}`);
    }
  }

  const routes: Record<
    string,
    {
      method: string;
      handle: (request: Request, url: URL) => Promise<Response>;
    }
  > = {
    "/v1/bash/exec": { method: "POST", handle: exec },
    "/v1/bash/output": { method: "POST", handle: output },
    "/v1/bash/kill": { method: "POST", handle: kill },
    "/v1/bash/sessions/create": { method: "POST", handle: createSession },
    "/v1/bash/sessions": { method: "GET", handle: listSessions },
    "/v1/file/upload": { method: "POST", handle: upload },
    "/v1/file/download": { method: "GET", handle: download },
    "/v1/file/list": { method: "POST", handle: list },
    "/v1/file/read": { method: "POST", handle: read },
    "/v1/file/write": { method: "POST", handle: write },
  };

  function route(request: Request, url: URL): Promise<Response> {
    const close = /^\/v1\/bash\/sessions\/([^/]+)\/close$/.exec(url.pathname);
    if (close) {
      if (request.method !== "POST") return methodNotAllowed();
      return closeSession(decodeURIComponent(close[1]!));
    }
    const entry = routes[url.pathname];
    if (!entry) {
      return Promise.resolve(
        Response.json({ detail: "Not Found" }, { status: 404 }),
      );
    }
    if (entry.method !== request.method) return methodNotAllowed();
    return entry.handle(request, url);
  }

  function methodNotAllowed(): Promise<Response> {
    return Promise.resolve(
      Response.json({ detail: "Method Not Allowed" }, { status: 405 }),
    );
  }

  function sessionFor(id: string | null | undefined): Session {
    const key = id && id.length > 0 ? id : crypto.randomUUID();
    let session = sessions.get(key);
    if (!session) {
      session = {
        id: key,
        createdAt: new Date(),
        lastUsedAt: new Date(),
        execDir: home,
        current: null,
        commands: new Map(),
      };
      sessions.set(key, session);
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

  async function exec(request: Request): Promise<Response> {
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
    const session = sessionFor(body.session_id as string | null | undefined);
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
    const text = faults.serverFault(request, "ignore-sigterm")
      ? ignoreSigtermCommand(body.command as string)
      : body.command as string;
    session.lastUsedAt = new Date();
    const command = new Command(text, session.id);
    session.current = command;
    session.commands.set(command.id, command);
    allCommands.add(command);
    command.start(
      session.execDir,
      (body.env as Record<string, string> | null | undefined) ?? {},
      (body.hard_timeout as number | null | undefined) ?? null,
    );
    command.finished.then(() => allCommands.delete(command));
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

  async function output(request: Request): Promise<Response> {
    const body = await readJson(request, {
      session_id: { kind: "string", required: true },
      command_id: { kind: "string", nullable: true },
      offset: { kind: "integer" },
      stderr_offset: { kind: "integer" },
      wait: { kind: "boolean" },
      wait_timeout: { kind: "number" },
    });
    if (body instanceof Response) return body;
    const session = sessions.get(body.session_id as string);
    if (!session) {
      return envelope(null, {
        success: false,
        message: `Session not found: ${body.session_id}`,
      });
    }
    const commandId = body.command_id as string | null | undefined;
    const command = commandId
      ? session.commands.get(commandId)
      : session.current;
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

  async function kill(request: Request): Promise<Response> {
    const body = await readJson(request, {
      session_id: { kind: "string", required: true },
      signal: { kind: "string", values: ["SIGTERM", "SIGKILL", "SIGINT"] },
    });
    if (body instanceof Response) return body;
    const session = sessions.get(body.session_id as string);
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

  async function createSession(request: Request): Promise<Response> {
    const body = await readJson(request, {
      session_id: { kind: "string", nullable: true },
      exec_dir: { kind: "string", nullable: true },
      snapshot_path: { kind: "string", nullable: true },
    });
    if (body instanceof Response) return body;
    const id = body.session_id as string | null | undefined;
    if (id && sessions.has(id)) {
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
    const session = sessionFor(id);
    if (execDir) session.execDir = execDir;
    return envelope(sessionInfo(session), { message: "Session created" });
  }

  function listSessions(): Promise<Response> {
    return Promise.resolve(envelope([...sessions.values()].map(sessionInfo)));
  }

  async function closeSession(id: string): Promise<Response> {
    const session = sessions.get(id);
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
    sessions.delete(id);
    return envelope({ session_id: id }, { message: "Session closed" });
  }

  async function upload(request: Request): Promise<Response> {
    let form: FormData;
    try {
      form = await request.formData();
    } catch {
      return validationError([{
        loc: ["body", "file"],
        msg: "Field required",
        type: "missing",
      }]);
    }
    const file = form.get("file");
    if (!(file instanceof File)) {
      return validationError([{
        loc: ["body", "file"],
        msg: file === null ? "Field required" : "Expected UploadFile",
        type: file === null ? "missing" : "value_error",
      }]);
    }
    const pathField = form.get("path");
    const target = typeof pathField === "string" && pathField.length > 0
      ? pathField
      : `${home}/${file.name}`;
    if (!isAbsolutePosix(target)) {
      return fileError(
        target,
        "upload",
        new Error(`Path must be absolute: ${target}`),
        "invalid_path",
      );
    }
    try {
      await Deno.mkdir(parentOf(target), { recursive: true });
      const out = await Deno.open(target, {
        write: true,
        create: true,
        truncate: true,
      });
      await file.stream().pipeTo(out.writable);
    } catch (error) {
      return fileError(target, "upload", error);
    }
    return envelope({
      file_path: target,
      file_size: file.size,
      success: true,
    }, { message: "File uploaded successfully" });
  }

  async function download(_request: Request, url: URL): Promise<Response> {
    const path = url.searchParams.get("path");
    if (path === null) {
      return validationError([{
        loc: ["query", "path"],
        msg: "Field required",
        type: "missing",
      }]);
    }
    const policy = url.searchParams.get("change_policy");
    if (policy !== null && policy !== "ignore" && policy !== "abort") {
      return validationError([{
        loc: ["query", "change_policy"],
        msg: "Input should be 'ignore' or 'abort'",
        type: "enum",
      }]);
    }
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(path);
    } catch (error) {
      const missing = error instanceof Deno.errors.NotFound;
      return envelope(null, {
        success: false,
        message: missing ? `File not found: ${path}` : String(error),
        status: missing ? 404 : 400,
      });
    }
    if (!info.isFile) {
      return envelope(null, {
        success: false,
        message: `Not a file: ${path}`,
        status: 400,
      });
    }
    const size = info.size;
    let start = 0;
    let end = size - 1;
    let partial = false;
    const range = _request.headers.get("range");
    if (options.range && range) {
      const match = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
      if (match && (match[1] || match[2])) {
        if (match[1]) {
          start = Number(match[1]);
          if (match[2]) end = Math.min(Number(match[2]), size - 1);
        } else {
          start = Math.max(0, size - Number(match[2]));
        }
        if (start >= size || start > end) {
          return new Response(null, {
            status: 416,
            headers: { "content-range": `bytes */${size}` },
          });
        }
        partial = true;
      }
    }
    const file = await Deno.open(path, { read: true });
    if (start > 0) await file.seek(start, Deno.SeekMode.Start);
    const length = end - start + 1;
    let left = length;
    const stream = new ReadableStream<Uint8Array>({
      type: "bytes",
      async pull(controller) {
        if (left <= 0) {
          file.close();
          controller.close();
          return;
        }
        const buffer = new Uint8Array(Math.min(256 * 1024, left));
        const n = await file.read(buffer);
        if (n === null) {
          file.close();
          controller.close();
          return;
        }
        left -= n;
        controller.enqueue(buffer.subarray(0, n));
      },
      cancel() {
        file.close();
      },
    });
    const headers: Record<string, string> = {
      "content-type": "application/octet-stream",
      "content-length": String(Math.max(0, length)),
      "content-disposition": `attachment; filename="${
        encodeURIComponent(baseName(path))
      }"`,
    };
    if (partial) headers["content-range"] = `bytes ${start}-${end}/${size}`;
    return new Response(size === 0 ? null : stream, {
      status: partial ? 206 : 200,
      headers,
    });
  }

  async function list(request: Request): Promise<Response> {
    const body = await readJson(request, {
      path: { kind: "string", required: true },
      recursive: { kind: "boolean", nullable: true },
      show_hidden: { kind: "boolean", nullable: true },
      file_types: { kind: "string-array", nullable: true },
      max_depth: { kind: "integer", nullable: true },
      include_size: { kind: "boolean", nullable: true },
      include_permissions: { kind: "boolean", nullable: true },
      sort_by: {
        kind: "string",
        nullable: true,
        values: ["name", "size", "modified", "type"],
      },
      sort_desc: { kind: "boolean", nullable: true },
    });
    if (body instanceof Response) return body;
    const root = body.path as string;
    if (!isAbsolutePosix(root)) {
      return fileError(
        root,
        "list",
        new Error(`Path must be absolute: ${root}`),
        "invalid_path",
      );
    }
    try {
      const info = await Deno.stat(root);
      if (!info.isDirectory) {
        throw new Deno.errors.NotADirectory(`Not a directory: ${root}`);
      }
    } catch (error) {
      return fileError(root, "list", error);
    }
    const recursive = body.recursive === true;
    const maxDepth = recursive
      ? (body.max_depth as number | null | undefined) ?? Infinity
      : 1;
    const showHidden = body.show_hidden !== false;
    const fileTypes = body.file_types as string[] | null | undefined;
    const infoOptions = {
      size: body.include_size !== false,
      permissions: body.include_permissions === true,
    };
    const files: Record<string, unknown>[] = [];
    const walk = async (dir: string, depth: number): Promise<void> => {
      const names: string[] = [];
      for await (const entry of Deno.readDir(dir)) names.push(entry.name);
      names.sort();
      for (const name of names) {
        if (!showHidden && name.startsWith(".")) continue;
        const path = dir === "/" ? `/${name}` : `${dir}/${name}`;
        let info: Deno.FileInfo;
        try {
          info = await Deno.lstat(path);
        } catch {
          continue;
        }
        const item = fileInfoOf(path, info, infoOptions);
        if (
          !fileTypes || info.isDirectory ||
          fileTypes.includes(item.extension as string)
        ) files.push(item);
        if (info.isDirectory && depth < maxDepth) await walk(path, depth + 1);
      }
    };
    try {
      await walk(root, 1);
    } catch (error) {
      return fileError(root, "list", error);
    }
    const sortBy = (body.sort_by as string | null | undefined) ?? "name";
    const key = (item: Record<string, unknown>): string | number =>
      sortBy === "size"
        ? (item.size as number | null) ?? 0
        : sortBy === "modified"
        ? String(item.modified_time ?? "")
        : sortBy === "type"
        ? `${item.is_directory ? 0 : 1}${item.path}`
        : item.path as string;
    files.sort((a, b) => {
      const ka = key(a);
      const kb = key(b);
      const order = ka < kb ? -1 : ka > kb ? 1 : 0;
      return body.sort_desc === true ? -order : order;
    });
    const directories = files.filter((f) => f.is_directory).length;
    return envelope({
      path: root,
      files,
      total_count: files.length,
      directory_count: directories,
      file_count: files.length - directories,
    });
  }

  async function read(request: Request): Promise<Response> {
    const body = await readJson(request, {
      file: { kind: "string", required: true },
      start_line: { kind: "integer", nullable: true },
      end_line: { kind: "integer", nullable: true },
      sudo: { kind: "boolean", nullable: true },
    });
    if (body instanceof Response) return body;
    const path = body.file as string;
    if (!isAbsolutePosix(path)) {
      return fileError(
        path,
        "read",
        new Error(`Path must be absolute: ${path}`),
        "invalid_path",
      );
    }
    let content: string;
    try {
      const bytes = await Deno.readFile(path);
      content = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch (error) {
      return fileError(path, "read", error);
    }
    const start = body.start_line as number | null | undefined;
    const end = body.end_line as number | null | undefined;
    if (typeof start === "number" || typeof end === "number") {
      const lines = content.split(/(?<=\n)/);
      content = lines.slice(start ?? 0, end ?? lines.length).join("");
    }
    return envelope({ content, file: path });
  }

  async function write(request: Request): Promise<Response> {
    const body = await readJson(request, {
      file: { kind: "string", required: true },
      content: { kind: "string", required: true },
      encoding: {
        kind: "string",
        nullable: true,
        values: ["utf-8", "base64", "raw"],
      },
      append: { kind: "boolean", nullable: true },
      leading_newline: { kind: "boolean", nullable: true },
      trailing_newline: { kind: "boolean", nullable: true },
      sudo: { kind: "boolean", nullable: true },
    });
    if (body instanceof Response) return body;
    const path = body.file as string;
    if (!isAbsolutePosix(path)) {
      return fileError(
        path,
        "write",
        new Error(`Path must be absolute: ${path}`),
        "invalid_path",
      );
    }
    let bytes: Uint8Array;
    if (body.encoding === "base64") {
      try {
        const binary = atob(body.content as string);
        bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
      } catch (error) {
        return fileError(path, "write", error, "decode_error");
      }
    } else {
      let text = body.content as string;
      if (body.leading_newline === true) text = `\n${text}`;
      if (body.trailing_newline === true) text = `${text}\n`;
      bytes = encoder.encode(text);
    }
    try {
      await Deno.mkdir(parentOf(path), { recursive: true });
      await Deno.writeFile(path, bytes, { append: body.append === true });
    } catch (error) {
      return fileError(path, "write", error);
    }
    return envelope({ file: path, bytes_written: bytes.length });
  }

  let closing: Promise<void> | null = null;
  const server: AioServer = {
    baseUrl: httpServer.url,
    home,
    faults,
    requests,
    contractViolations: violations,
    requestCount(path?: string): number {
      const handled = path === undefined
        ? requests.length
        : requests.filter((r) => r.path === path).length;
      const faulted = path === undefined
        ? faults.hits.length
        : faults.hits.filter((hit) => hit.path === path).length;
      return handled + faulted;
    },
    refuseConnections: () => httpServer.refuseConnections(),
    acceptConnections: () => httpServer.acceptConnections(),
    runningPids(): number[] {
      return [...allCommands].filter((c) => !c.done && c.child)
        .map((c) => c.child!.pid);
    },
    close(): Promise<void> {
      closing ??= (async () => {
        for (const command of allCommands) command.kill("SIGKILL", "killed");
        await Promise.all([...allCommands].map((c) => c.finished));
        await httpServer.close();
      })();
      return closing;
    },
    [Symbol.asyncDispose](): Promise<void> {
      return server.close();
    },
  };
  return server;
}

function parseArgs(args: readonly string[]): AioServerOptions {
  const options: {
    port?: number;
    token?: string;
    home?: string;
    faults?: FaultInjector;
    control?: boolean;
  } = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [flag, inline] = arg.includes("=")
      ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)]
      : [arg, undefined];
    const value = (): string => {
      const v = inline ?? args[++i];
      if (v === undefined) throw new TypeError(`Missing value for "${flag}"`);
      return v;
    };
    if (flag === "--port") {
      const port = Number(value());
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        throw new RangeError(`Cannot use port "${port}": not a port number`);
      }
      options.port = port;
    } else if (flag === "--token") options.token = value();
    else if (flag === "--home") options.home = value();
    else if (flag === "--fault") {
      options.faults ??= new FaultInjector({ errorBody: faultBody });
      options.faults.add(parseFaultSpec(value()));
    } else if (flag === "--fault-control") options.control = true;
    else throw new TypeError(`Unknown option "${arg}"`);
  }
  return options;
}

if (import.meta.main) {
  let options: AioServerOptions;
  try {
    options = parseArgs(Deno.args);
  } catch (error) {
    console.error((error as Error).message);
    console.error(
      "Usage: deno run -A tests/servers/aio.ts [--port N] [--token T] [--home DIR] [--fault SPEC]... [--fault-control]",
    );
    Deno.exit(2);
  }
  const server = startAioServer(options);
  console.log(server.baseUrl);
  const stop = (): void => {
    server.close().then(() => Deno.exit(0));
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}
