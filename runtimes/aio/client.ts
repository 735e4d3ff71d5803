/**
 * {@linkcode AioClient}: the calls of one AIO Sandbox container
 * (`/v1/bash/*`, `/v1/file/*`) over the shared {@linkcode HttpClient}, each
 * answer's envelope read by the kit's `envelopeCall` (an answer with
 * `success: false` throws an {@linkcode AioOperationError}). A command
 * (`exec`) is never retried.
 *
 * @module
 */
import { HttpClient, type HttpRequest } from "../remote/http.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import {
  type EnvelopeCall,
  envelopeCall,
  type JsonEnvelope,
} from "../remote/envelope.ts";
import { httpOptionsOf } from "../remote/service_calls.ts";
import { multipartBody, type MultipartPart } from "../remote/upload.ts";
import type { AioSkillRuntimeOptions } from "./runtime.ts";

/** A command's state, as `/v1/bash/*` names it. */
export type AioCommandStatus =
  | "pending"
  | "running"
  | "completed"
  | "timed_out"
  | "killed";

/** The body of `/v1/bash/exec`. */
export interface AioExecRequest {
  /** The command, run with `bash -c`. */
  readonly command: string;
  /** The session; a new one is made when absent. */
  readonly session_id?: string;
  /** The working directory (absolute); it becomes the session's default. */
  readonly exec_dir?: string;
  /** Variables for this command alone. */
  readonly env?: Readonly<Record<string, string>>;
  /** Answer at once with `running`. */
  readonly async_mode?: boolean;
  /** Soft timeout in seconds: the answer comes, the command goes on. */
  readonly timeout?: number;
  /** Hard timeout in seconds: the command is killed (`timed_out`). */
  readonly hard_timeout?: number;
  /** The most characters of each stream in the answer (0: all). */
  readonly max_output_length?: number;
}

/** A command's state in `/v1/bash/exec` and `/v1/bash/output`. */
export interface AioCommandInfo {
  readonly command_id: string;
  readonly command: string;
  readonly status: AioCommandStatus;
  /** Once completed. */
  readonly exit_code?: number | null;
}

/** The output in `/v1/bash/exec` and `/v1/bash/output` answers. */
export interface AioOutput {
  /** Standard output from the offset asked for (middle cut at `max_output_length`). */
  readonly stdout?: string | null;
  readonly stderr?: string | null;
  /** Bytes of stdout produced so far: the offset of the next read. */
  readonly offset?: number;
  /** Bytes of stderr produced so far. */
  readonly stderr_offset?: number;
}

/** What `/v1/bash/exec` answers. */
export interface AioExecResult extends AioCommandInfo, AioOutput {
  readonly session_id: string;
}

/** The body of `/v1/bash/output`. */
export interface AioOutputRequest {
  readonly session_id: string;
  /** Default the session's current command. */
  readonly command_id?: string;
  /** Byte offset in stdout, as the server last returned it. */
  readonly offset?: number;
  /** Byte offset in stderr, as the server last returned it. */
  readonly stderr_offset?: number;
  /** Long-poll until new output or the end. */
  readonly wait?: boolean;
  /** The longest wait, in seconds. */
  readonly wait_timeout?: number;
}

/** What `/v1/bash/output` answers. */
export interface AioOutputResult extends AioOutput {
  readonly session_id: string;
  readonly command?: AioCommandInfo | null;
}

/** One entry of `/v1/file/list`. */
export interface AioFileInfo {
  /** The last segment of the path. */
  readonly name: string;
  /** The absolute path. */
  readonly path: string;
  readonly is_directory: boolean;
  /** Size in bytes, when asked for. */
  readonly size?: number | null;
  /** Last modification (ISO 8601). */
  readonly modified_time?: string | null;
  /** Permissions, when asked for (`-rwxr-xr-x` style; `l` first for a symlink on the test server). */
  readonly permissions?: string | null;
}

/** The body of `/v1/file/list`. */
export interface AioListRequest {
  /** The folder (absolute). */
  readonly path: string;
  readonly recursive?: boolean;
  /** How deep to descend when recursive. */
  readonly max_depth?: number;
  /** Whether to show dot files (default true). */
  readonly show_hidden?: boolean;
  /** Whether to give sizes (default true). */
  readonly include_size?: boolean;
  /** Whether to give permissions (default false). */
  readonly include_permissions?: boolean;
}

/** Options of every call: its signal and deadline (`null`: none; default the client's). */
export type AioCallOptions = Pick<HttpRequest, "signal" | "timeoutMs">;

/** Options of {@linkcode AioClient}: the runtime's own. */
export type AioClientOptions = Pick<
  AioSkillRuntimeOptions,
  "baseUrl" | "apiKey" | "headers" | "requestTimeoutMs" | "fetch" | "onEvent"
>;

/** Options of {@linkcode AioOperationError}. */
export interface AioOperationErrorOptions {
  /** The HTTP method. */
  readonly method: string;
  /** The URL called. */
  readonly url: string;
  /** The HTTP status (200 for an envelope with `success: false`). */
  readonly status: number;
  /** The server's message. */
  readonly serverMessage: string;
  /** The file error category (`not_found`, `invalid_target`, ...), if given. */
  readonly errorType?: string | undefined;
  /** The file operation, if given. */
  readonly operation?: string | undefined;
  /** The path the server names, if given. */
  readonly path?: string | undefined;
  /** Whether the server says a retry may succeed. */
  readonly retryable?: boolean | undefined;
}

/**
 * The server answered `success: false`: it refused the operation. `code`
 * (and `errorType`) hold the file error category when the server gave one.
 *
 * @example The details of a refused read
 * ```ts
 * import { assert } from "@std/assert";
 * import { AioOperationError } from "@skillrun/skillrun/aio";
 *
 * const error = new AioOperationError({
 *   method: "POST",
 *   url: "http://h/v1/file/read",
 *   status: 200,
 *   serverMessage: "No such file",
 *   errorType: "not_found",
 *   path: "/a.txt",
 * });
 * assert(error.errorType === "not_found" && error.code === "not_found");
 * assert(error.message === "POST http://h/v1/file/read: not_found: No such file");
 * ```
 */
export class AioOperationError extends RemoteHttpError {
  /** The file error category, when the server gave one. */
  readonly errorType: string | undefined;
  /** The file operation, when the server named it. */
  readonly operation: string | undefined;
  /** The path the server names, when it did. */
  readonly path: string | undefined;
  /** Whether the server says a retry may succeed. */
  readonly retryable: boolean;

  /**
   * Makes the error.
   *
   * @param options What the server said.
   */
  constructor(options: AioOperationErrorOptions) {
    super(
      `${options.method} ${options.url}: ${
        options.errorType ? `${options.errorType}: ` : ""
      }${options.serverMessage}`,
      {
        method: options.method,
        url: options.url,
        status: options.status,
        code: options.errorType,
        serverMessage: options.serverMessage,
      },
    );
    Object.defineProperty(this, "name", { value: "AioOperationError" });
    this.errorType = options.errorType;
    this.operation = options.operation;
    this.path = options.path;
    this.retryable = options.retryable ?? false;
  }
}

/**
 * The calls of one AIO container. Makes no request until a call.
 *
 * @example Running a command on a container
 * ```ts ignore
 * import { AioClient } from "./client.ts";
 * const client = new AioClient({ baseUrl: "http://127.0.0.1:8080" });
 * const result = await client.exec({ command: "echo hi" });
 * console.log(result.stdout, result.exit_code);
 * ```
 */
export class AioClient {
  /** The HTTP client (bearer token included). */
  readonly http: HttpClient;

  /**
   * Makes the client; makes no request.
   *
   * @param options Base URL, token, headers, deadline.
   * @throws {TypeError} The base URL is not an http(s) URL.
   */
  constructor(options: AioClientOptions) {
    const headers: Record<string, string> = { ...options.headers };
    if (options.apiKey !== undefined) {
      headers.authorization = `Bearer ${options.apiKey}`;
    }
    this.http = new HttpClient({
      baseUrl: options.baseUrl,
      headers,
      secretHeaders: ["authorization"],
      ...httpOptionsOf(options),
      ...(options.onEvent === undefined ? {} : { onEvent: options.onEvent }),
    });
  }

  /** The container's base URL. */
  get baseUrl(): string {
    return this.http.baseUrl;
  }

  /** Runs a command (`POST /v1/bash/exec`). Never retried. */
  exec(body: AioExecRequest, options?: AioCallOptions): Promise<AioExecResult> {
    return this.#post("/v1/bash/exec", body, options, false);
  }

  /** Reads a command's output from byte offsets (`POST /v1/bash/output`). */
  output(
    body: AioOutputRequest,
    options?: AioCallOptions,
  ): Promise<AioOutputResult> {
    return this.#post("/v1/bash/output", body, options);
  }

  /**
   * Signals a session's current process (`POST /v1/bash/kill`); `false` when
   * the server says there was nothing to kill.
   */
  async kill(
    sessionId: string,
    signal: "SIGTERM" | "SIGKILL" | "SIGINT" = "SIGTERM",
    options?: AioCallOptions,
  ): Promise<boolean> {
    try {
      const json = { session_id: sessionId, signal };
      await this.#post("/v1/bash/kill", json, options, true, false);
      return true;
    } catch (error) {
      if (error instanceof AioOperationError) return false;
      throw error;
    }
  }

  /**
   * Uploads one file, streamed (`POST /v1/file/upload`, multipart `file` +
   * `path`; the server makes the parents); no deadline by default, the body
   * may be long. Answers the size the server wrote.
   */
  async upload(
    path: string,
    content: MultipartPart["content"],
    options: AioCallOptions = {},
  ): Promise<number> {
    const name = path.slice(path.lastIndexOf("/") + 1) || "file";
    const multipart = multipartBody([
      { name: "path", content: path },
      {
        name: "file",
        filename: name,
        contentType: "application/octet-stream",
        content,
      },
    ], options.signal ? { signal: options.signal } : {});
    const data = await this.#call<{ file_size?: number }>({
      method: "POST",
      path: "/v1/file/upload",
      body: multipart.body,
      headers: {
        "content-type": multipart.contentType,
        "content-length": String(multipart.length),
      },
      idempotent: false,
    }, { timeoutMs: null, ...options });
    return data.file_size ?? 0;
  }

  /**
   * Opens a file for download (`GET /v1/file/download?path=`). With
   * `offset > 0` it sends `Range: bytes=<offset>-`; the server may answer
   * 206 (the rest) or 200 (the whole file), or 416 at the end of the file:
   * check the status. The body is still to read.
   */
  async download(
    path: string,
    options: { offset?: number; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const offset = options.offset ?? 0;
    return await this.http.request({
      method: "GET",
      path: "/v1/file/download",
      query: { path },
      // From the end of the file: a 416 with its size (see downloadToFile).
      ...(offset > 0
        ? { headers: { range: `bytes=${offset}-` }, acceptStatuses: [416] }
        : {}),
      timeoutMs: null,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /** Lists a folder (`POST /v1/file/list`). */
  async list(
    body: AioListRequest,
    options?: AioCallOptions,
  ): Promise<AioFileInfo[]> {
    const data = await this.#post<{ files?: AioFileInfo[] }>(
      "/v1/file/list",
      body,
      options,
    );
    return data.files ?? [];
  }

  /** Reads a text file (`POST /v1/file/read`, field `file`). */
  async read(file: string, options?: AioCallOptions): Promise<string> {
    const data = await this.#post<{ content?: string }>(
      "/v1/file/read",
      { file },
      options,
    );
    return data.content ?? "";
  }

  /**
   * Writes a file (`POST /v1/file/write`, field `file`; bytes go as base64);
   * answers the bytes written, as the server says.
   */
  async write(
    file: string,
    content: string | Uint8Array,
    options?: AioCallOptions,
  ): Promise<number> {
    const json = typeof content === "string"
      ? { file, content }
      : { file, content: content.toBase64(), encoding: "base64" };
    const data = await this.#post<{ bytes_written?: number | null }>(
      "/v1/file/write",
      json,
      options,
    );
    return data.bytes_written ?? 0;
  }

  /** Creates a bash session with our own id (`POST /v1/bash/sessions/create`). */
  async createSession(sessionId: string, options?: AioCallOptions) {
    const json = { session_id: sessionId };
    await this.#post("/v1/bash/sessions/create", json, options, false, false);
  }

  /** Closes a bash session (`POST /v1/bash/sessions/{id}/close`). */
  async closeSession(sessionId: string, options?: AioCallOptions) {
    const path = `/v1/bash/sessions/${encodeURIComponent(sessionId)}/close`;
    await this.#post(path, undefined, options, true, false);
  }

  /** The shell sessions' ids (`GET /v1/bash/sessions`). */
  async sessions(
    options: AioCallOptions = {},
  ): Promise<{ readonly session_id: string }[]> {
    const data = await this.#call<{ session_id: string }[] | null>(
      { method: "GET", path: "/v1/bash/sessions", idempotent: true },
      options,
    );
    return Array.isArray(data) ? data : [];
  }

  /** A `POST` of `json` (none when `undefined`) through {@linkcode #call}. */
  #post<T>(
    path: string,
    json: unknown,
    options: AioCallOptions = {},
    idempotent = true,
    needsData = true,
  ): Promise<T> {
    return this.#call<T>(
      {
        method: "POST",
        path,
        ...(json === undefined ? {} : { json }),
        idempotent,
      },
      options,
      needsData,
    );
  }

  #call<T>(
    request: HttpRequest,
    options: AioCallOptions,
    needsData = true,
  ): Promise<T> {
    const refused = operationError;
    return envelopeCall<T>(this.http, { ...request, ...options }, {
      needsData,
      refused,
    });
  }
}

/** The error of an envelope with `success: false`. */
function operationError(envelope: JsonEnvelope, call: EnvelopeCall): Error {
  const data = (envelope.data ?? {}) as Record<string, unknown>;
  const str = (v: unknown): string | undefined =>
    typeof v === "string" ? v : undefined;
  return new AioOperationError({
    ...call,
    serverMessage: str(envelope.message) ?? str(data.message) ??
      "the server refused the operation",
    errorType: str(data.error_type),
    operation: str(data.operation),
    path: str(data.path),
    retryable: data.retryable === true,
  });
}
