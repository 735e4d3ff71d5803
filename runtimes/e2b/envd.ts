/**
 * The client of envd, the daemon inside an E2B sandbox: processes and the
 * file system over the Connect protocol (JSON codec) on `fetch`, file bytes
 * through its HTTP `/files`.
 *
 * @module
 */
import { posix } from "../../_internal/std.ts";
import {
  namedCommand,
  type RemoteCommandKind,
  type RemoteCommandStart,
  runRemoteCommand,
  type StartedRemoteCommand,
} from "../remote/command.ts";
import type { HttpClient } from "../remote/http.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import type { RemoteFileOps, RemoteUploadFile } from "../remote/fs.ts";
import type { MultipartPart } from "../remote/upload.ts";
import { sessionBashArgs } from "../remote/shell.ts";
import { connectEnvelope, readConnectStream } from "../remote/streams.ts";
import { connectUnary, sendMultipart } from "../remote/service_calls.ts";
import {
  eachConcurrently,
  helperShell,
  inChunks,
  shellSetModes,
} from "../remote/shell_files.ts";
import type { FileInfo } from "../types.ts";

/** The port envd listens on inside every sandbox. */
export const ENVD_PORT = 49983;

/** Files per multipart upload request. */
const UPLOAD_BATCH = 200;
/** Upload requests at once. */
const UPLOAD_CONCURRENCY = 3;

/**
 * An envd call failed with a Connect error (`not_found`,
 * `invalid_argument`, ...), or a command stream broke.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { EnvdError } from "@skillrun/skillrun/e2b";
 * assert(new EnvdError("not_found", "no such file").code === "not_found");
 * ```
 */
export class EnvdError extends Error {
  /** The error's name. */
  override readonly name = "EnvdError";
  /** The Connect code (`not_found`, `invalid_argument`, ...) or `stream`. */
  readonly code: string;

  /**
   * Makes the error.
   *
   * @param code The Connect code.
   * @param message What failed.
   */
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** An `EntryInfo` in its JSON form. */
interface EntryInfo {
  name?: string;
  type?: string;
  path?: string;
  size?: string | number;
  mode?: number;
  permissions?: string;
  modifiedTime?: string;
}

/**
 * Talks to one sandbox's envd through the given client (whose headers carry
 * the access token and the routing headers).
 *
 * @example Making a client (no request is made)
 * ```ts
 * import { assert } from "@std/assert";
 * import { EnvdClient } from "./envd.ts";
 * import { HttpClient } from "@skillrun/skillrun/runtime";
 * const envd = new EnvdClient(new HttpClient({ baseUrl: "http://127.0.0.1:9" }));
 * assert(envd.http.baseUrl === "http://127.0.0.1:9");
 * ```
 */
export class EnvdClient implements RemoteFileOps {
  /** The HTTP client of envd. */
  readonly http: HttpClient;

  /**
   * Makes the client.
   *
   * @param http The HTTP client on envd's base URL.
   */
  constructor(http: HttpClient) {
    this.http = http;
  }

  /**
   * One unary Connect call (`POST /<service>/<method>`, JSON).
   *
   * @param method E.g. `filesystem.Filesystem/Stat`.
   * @param message The request message.
   * @param signal Stops the call.
   * @returns The answer message.
   * @throws {EnvdError} A Connect error (its code and message).
   */
  call<T>(method: string, message: unknown, signal?: AbortSignal): Promise<T> {
    return connectUnary<T>(this.http, method, message, {
      idempotent: !/\/(SendSignal)$/.test(method),
      error: (code, text) => new EnvdError(code, text),
      signal,
    });
  }

  /**
   * How envd runs commands for the kit's {@linkcode runRemoteCommand}:
   * `process.Process/Start` (a Connect stream) named by the pid of its start
   * event, killed with SIGTERM (its whole session stops), envd's own
   * deadline 10 s after ours.
   */
  readonly commands: RemoteCommandKind = {
    backstopMs: 10_000,
    start: (request) => this.#start(request),
    kill: async (id) => {
      await this.call("process.Process/SendSignal", {
        process: { pid: Number(id) },
        signal: "SIGNAL_SIGTERM",
      });
    },
    broken: (cause) =>
      cause instanceof EnvdError && cause.code !== "stream"
        ? cause
        : new EnvdError(
          "stream",
          cause === undefined
            ? "Cannot run the command: the stream ended before the command finished; it was stopped"
            : `Cannot run the command: ${
              cause instanceof EnvdError
                ? cause.message
                : "the connection broke before the command finished"
            }; it was stopped`,
        ),
  };

  async #start(request: RemoteCommandStart): Promise<StartedRemoteCommand> {
    const refused = (code: string, message: string) =>
      new EnvdError(
        code,
        `Cannot run the command in "${request.cwd}": ${message}`,
      );
    let response: Response;
    try {
      response = await this.http.request({
        method: "POST",
        path: "/process.Process/Start",
        body: connectEnvelope({
          process: {
            cmd: "/bin/bash",
            args: sessionBashArgs(request.command),
            envs: request.env,
            cwd: request.cwd,
          },
        }),
        headers: {
          "content-type": "application/connect+json",
          "connect-protocol-version": "1",
          "connect-timeout-ms": String(request.serverTimeoutMs),
        },
        idempotent: false,
        timeoutMs: null,
        signal: request.signal,
      });
    } catch (error) {
      if (error instanceof RemoteHttpError && error.code !== undefined) {
        throw refused(error.code, error.serverMessage ?? error.message);
      }
      throw error;
    }
    if (!response.body) throw new EnvdError("stream", "the answer has no body");
    const body = response.body;
    return await namedCommand((async function* () {
      for await (
        const { flags, message } of readConnectStream(
          body,
          (reason) => new EnvdError("stream", reason),
        )
      ) {
        if (flags & 2) {
          const error = message.error as
            | { code?: string; message?: string }
            | undefined;
          if (error) {
            throw refused(
              error.code ?? "unknown",
              error.message ?? error.code ?? "unknown",
            );
          }
          return;
        }
        const event = (message.event ?? {}) as Record<
          string,
          Record<string, unknown>
        >;
        if (event.start) yield { type: "id", id: String(event.start.pid) };
        for (const type of ["stdout", "stderr"] as const) {
          const text = event.data?.[type];
          if (typeof text !== "string") continue;
          yield {
            type,
            data: Uint8Array.from(atob(text), (c) => c.charCodeAt(0)),
          };
        }
        if (event.end) {
          yield { type: "exit", exitCode: Number(event.end.exitCode ?? 0) };
        }
      }
    })());
  }

  /**
   * Facts about a path, symlinks not followed (`filesystem.Filesystem/Stat`),
   * or `null` when missing.
   *
   * @param path An absolute POSIX path.
   * @param signal Stops the call.
   * @returns The facts.
   */
  async stat(path: string, signal?: AbortSignal): Promise<FileInfo | null> {
    try {
      const answer = await this.call<{ entry?: EntryInfo }>(
        "filesystem.Filesystem/Stat",
        { path },
        signal,
      );
      return answer.entry ? toFileInfo(answer.entry, path) : null;
    } catch (error) {
      if (error instanceof EnvdError && error.code === "not_found") return null;
      throw error;
    }
  }

  /**
   * Lists a folder down to `depth` levels (`filesystem.Filesystem/ListDir`).
   *
   * @param path An absolute POSIX path.
   * @param options The depth and a signal.
   * @returns The entries.
   */
  async list(
    path: string,
    options: { depth: number; signal?: AbortSignal },
  ): Promise<FileInfo[]> {
    try {
      const answer = await this.call<{ entries?: EntryInfo[] }>(
        "filesystem.Filesystem/ListDir",
        { path, depth: options.depth },
        options.signal,
      );
      return (answer.entries ?? []).map((entry) => toFileInfo(entry));
    } catch (error) {
      if (error instanceof EnvdError && error.code === "not_found") {
        throw new Deno.errors.NotFound(`Cannot list "${path}": no such folder`);
      }
      throw error;
    }
  }

  /**
   * Opens a file's bytes from an offset (`GET /files?path=`, with `Range`).
   *
   * @param path An absolute POSIX path.
   * @param options The offset and a signal.
   * @returns The response.
   */
  open(
    path: string,
    options: { offset: number; signal?: AbortSignal },
  ): Promise<Response> {
    return this.http.request({
      method: "GET",
      path: "/files",
      query: { path },
      ...(options.offset > 0
        ? {
          headers: { range: `bytes=${options.offset}-` },
          acceptStatuses: [416],
        }
        : {}),
      timeoutMs: null,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /**
   * Makes folders and their parents (`filesystem.Filesystem/MakeDir`; one
   * that exists is no error).
   *
   * @param paths Absolute POSIX paths.
   * @param signal Stops the calls.
   * @returns When done.
   */
  async makeDirectories(
    paths: readonly string[],
    signal?: AbortSignal,
  ): Promise<void> {
    for (const path of paths) {
      try {
        await this.call("filesystem.Filesystem/MakeDir", { path }, signal);
      } catch (error) {
        if (!(error instanceof EnvdError && error.code === "already_exists")) {
          throw error;
        }
      }
    }
  }

  /**
   * Uploads files through `POST /files`: files with plain names go
   * {@linkcode UPLOAD_BATCH} to a multipart request (each part's file name is
   * its path), others one by one with `?path=`; parents are made by envd.
   * Modes are set afterwards by one `chmod` per mode (a file without a mode
   * keeps envd's default, or the mode of the file it replaces).
   *
   * @param files The files, their absolute POSIX targets and modes.
   * @param signal Stops the upload.
   * @returns When done.
   */
  async upload(
    files: readonly RemoteUploadFile[],
    signal?: AbortSignal,
  ): Promise<void> {
    const requests: RemoteUploadFile[][] = [];
    const plain: RemoteUploadFile[] = [];
    for (const file of files) {
      if (plainName(file.remotePath)) plain.push(file);
      else requests.push([file]);
    }
    requests.push(...inChunks(plain, UPLOAD_BATCH));
    await eachConcurrently(
      requests,
      UPLOAD_CONCURRENCY,
      (batch, each) => this.#send(batch, each),
      signal,
    );
    await shellSetModes(
      helperShell((command) => runRemoteCommand(this.commands, command)),
      files,
      signal ? { signal } : {},
    );
  }

  async #send(
    files: readonly RemoteUploadFile[],
    signal: AbortSignal,
  ): Promise<void> {
    const single = !plainName(files[0]!.remotePath);
    const parts: MultipartPart[] = files.map((file) => ({
      name: "file",
      filename: single ? posix.basename(file.remotePath) : file.remotePath,
      contentType: "application/octet-stream",
      content: file.content,
    }));
    await sendMultipart(this.http, {
      method: "POST",
      path: "/files",
      ...(single ? { query: { path: files[0]!.remotePath } } : {}),
      signal,
    }, parts);
  }
}

/** A path that a multipart file name carries as is (Go reads it back whole). */
function plainName(path: string): boolean {
  return /^[\x20-\x7e]*$/.test(path) && !/["\\%]/.test(path);
}

/**
 * Go's `os.FileMode` bits of what is no regular file (named pipe, socket,
 * device, character device, irregular): envd sends the mode as Go has it,
 * so a FIFO may come as a "file" whose mode says otherwise.
 */
const GO_SPECIAL_MODE = (1 << 25) | (1 << 24) | (1 << 26) | (1 << 21) |
  (1 << 19);

function toFileInfo(entry: EntryInfo, fallbackPath?: string): FileInfo {
  const path = entry.path || fallbackPath || "";
  const special = (typeof entry.mode === "number" &&
    ((entry.mode >>> 0) & GO_SPECIAL_MODE) !== 0) ||
    /^[pSDcu?]/.test(entry.permissions ?? "");
  const type = special
    ? "other"
    : entry.type === "FILE_TYPE_FILE"
    ? "file"
    : entry.type === "FILE_TYPE_DIRECTORY"
    ? "directory"
    : entry.type === "FILE_TYPE_SYMLINK"
    ? "symlink"
    : "other";
  const modified = entry.modifiedTime ? new Date(entry.modifiedTime) : null;
  return {
    path,
    name: entry.name || posix.basename(path),
    type,
    size: Number(entry.size ?? 0),
    modifiedAt: modified && !Number.isNaN(modified.getTime()) ? modified : null,
    ...(typeof entry.mode === "number"
      ? { executable: (entry.mode & 0o100) !== 0 }
      : {}),
  };
}
