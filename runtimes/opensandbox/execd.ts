/**
 * The client of execd, the daemon inside an OpenSandbox sandbox: commands
 * through `POST /command` (an event stream), files through `/files/*` and
 * `/directories/*`, background commands through execd's own (`background:
 * true`, then `GET /command/status/{id}` and the log from a byte cursor,
 * `GET /command/{id}/logs`), and the session the kit gets from all three.
 *
 * @module
 */
import { type RemoteCommandKind, runRemoteCommand } from "../remote/command.ts";
import { posix } from "../../_internal/std.ts";
import type { HttpClient } from "../remote/http.ts";
import type { RemoteSession } from "../remote/runtime.ts";
import type { RemoteFileOps, RemoteUploadFile } from "../remote/fs.ts";
import type { MultipartPart } from "../remote/upload.ts";
import {
  answers,
  jsonOrNull,
  sendCall,
  sendMultipart,
} from "../remote/service_calls.ts";
import {
  eachConcurrently,
  helperShell,
  inChunks,
} from "../remote/_shell_files.ts";
import { withShellPaths } from "../remote/shell_paths.ts";
import {
  commandOfLine,
  launchedBackground,
  serviceBackgroundHooks,
  type ServiceBackgroundKind,
} from "../remote/service_background.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import { dateOrNull, fileInfo } from "../remote/service_answers.ts";
import type { FileInfo, FileType } from "../types.ts";
import {
  commandBody,
  ExecdProtocolError,
  SandboxCommandError,
  startCommand,
} from "./_events.ts";

export { commandBody, SandboxCommandError };

/**
 * The most files of one upload request: Go's `mime/multipart` reads at most
 * 1000 parts of a form, and each file takes two (`metadata` and `file`);
 * past that the real execd answers 400 `multipart form is empty`.
 */
export const EXECD_MAX_UPLOAD_FILES = 500;

/** How many upload requests run at once. */
const UPLOAD_CONCURRENCY = 3;

/** The deadline of one status or logs call (the logs body streamed), in ms. */
const POLL_TIMEOUT_MS = 120_000;

/** A FileInfo as execd sends it. */
interface ExecdFileInfo {
  path: string;
  type?: string;
  size?: number;
  modified_at?: string;
  mode?: number;
}

/**
 * Talks to one sandbox's execd. Every call goes through the given client,
 * whose base URL is execd's (it may carry a path) and whose headers include
 * the endpoint's own.
 *
 * @example Making a client (no request is made)
 * ```ts
 * import { assert } from "@std/assert";
 * import { HttpClient } from "@skillrun/skillrun/runtime";
 * import { ExecdClient } from "./execd.ts";
 * const execd = new ExecdClient(new HttpClient({ baseUrl: "http://127.0.0.1:1/proxy/44772" }));
 * assert(execd.http.baseUrl.endsWith("/proxy/44772"));
 * ```
 */
export class ExecdClient implements RemoteFileOps {
  /**
   * Makes the client.
   *
   * @param http The HTTP client on execd's base URL.
   */
  constructor(readonly http: HttpClient) {}

  /**
   * How execd runs commands for the kit's {@linkcode runRemoteCommand}:
   * `POST /command` (an event stream) named by its `init` event, interrupted
   * with `DELETE /command?id=` (its whole process group), execd's own
   * timeout 5 s after ours.
   */
  readonly commands: RemoteCommandKind = {
    backstopMs: 5_000,
    start: (request) => startCommand(this.http, request),
    kill: (id) => this.interrupt(id),
    broken: (cause) =>
      new SandboxCommandError(
        cause === undefined
          ? "Cannot run the command: the event stream ended before the command finished; it was interrupted"
          : `Cannot run the command: ${
            cause instanceof ExecdProtocolError
              ? cause.message
              : "the connection broke before the command finished"
          }; it was interrupted`,
        { reason: "stream", ...(cause === undefined ? {} : { cause }) },
      ),
  };

  /**
   * `DELETE /command?id=`: SIGTERM to the group, SIGKILL after 3 s; answered
   * once the group is gone. An unknown or finished id (500) is no error.
   *
   * @param id The command id from the `init` event.
   * @returns When done.
   */
  async interrupt(id: string): Promise<void> {
    await sendCall(this.http, {
      method: "DELETE",
      path: "/command",
      query: { id },
      timeoutMs: 15_000,
    }, [500]);
  }

  /** `GET /files/info`. */
  async stat(path: string, signal?: AbortSignal): Promise<FileInfo | null> {
    const info = await this.#info(path, signal);
    return info ? toFileInfo(info, path) : null;
  }

  /**
   * One `GET /files/info` (the path repeated); since any missing path makes
   * it 404, a 404 asks again path by path (in parallel).
   */
  async statMany(
    paths: readonly string[],
    signal?: AbortSignal,
  ): Promise<(FileInfo | null)[]> {
    const map = await this.#infos(paths, signal);
    if (map && paths.every((path) => map[path] !== undefined)) {
      return paths.map((path) => toFileInfo(map[path]!, path));
    }
    return await Promise.all(paths.map((path) => this.stat(path, signal)));
  }

  /** `GET /directories/list`, symlinks not followed. */
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

  /** `GET /files/download` with `Range` (416 from the file's end). */
  open(
    path: string,
    options: { offset: number; signal?: AbortSignal },
  ): Promise<Response> {
    return this.http.request({
      method: "GET",
      path: "/files/download",
      query: { path },
      // From the end of the file: a 416 with its size (see downloadToFile).
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

  /** `POST /directories` (mode 0755), parents too. */
  async makeDirectories(
    paths: readonly string[],
    signal?: AbortSignal,
  ): Promise<void> {
    await sendCall(this.http, {
      method: "POST",
      path: "/directories",
      json: Object.fromEntries(paths.map((path) => [path, { mode: 755 }])),
      idempotent: true,
      ...(signal ? { signal } : {}),
    });
  }

  /**
   * Multipart requests of `metadata`/`file` pairs, at most
   * {@linkcode EXECD_MAX_UPLOAD_FILES} files each, three at a time, each
   * streamed from disk; the server makes the parents.
   */
  async upload(
    files: readonly RemoteUploadFile[],
    signal?: AbortSignal,
  ): Promise<void> {
    const sent: RemoteUploadFile[] = [];
    for (const file of files) {
      // Without a mode execd creates 0755 (Go's os.ModePerm): a new file
      // gets 0644 and a replaced one keeps its mode, as on every runtime.
      let mode = file.mode;
      if (mode === undefined) {
        const info = await this.#info(file.remotePath, signal);
        mode = (info?.type === "file" ? modeOf(info) : undefined) ?? 0o644;
      }
      sent.push({ ...file, mode });
    }
    // A few requests at once: the server writes one batch while the next
    // is streamed. The first failure stops the others.
    await eachConcurrently(
      inChunks(sent, EXECD_MAX_UPLOAD_FILES),
      UPLOAD_CONCURRENCY,
      (batch, each) => this.#uploadBatch(batch, each),
      signal,
    );
  }

  /** execd's facts about one path, `null` when missing. */
  async #info(path: string, signal?: AbortSignal) {
    const map = await this.#infos([path], signal);
    return (map && (map[path] ?? Object.values(map)[0])) ?? null;
  }

  /** `GET /files/info` of paths, `null` when one is missing (404). */
  #infos(paths: readonly string[], signal?: AbortSignal) {
    return jsonOrNull<Record<string, ExecdFileInfo>>(this.http, {
      method: "GET",
      path: "/files/info",
      query: { path: [...paths] },
      ...(signal ? { signal } : {}),
    });
  }

  /** One multipart request of at most {@linkcode EXECD_MAX_UPLOAD_FILES} files. */
  async #uploadBatch(
    files: readonly RemoteUploadFile[],
    signal?: AbortSignal,
  ): Promise<void> {
    const parts = files.flatMap((file): MultipartPart[] => [{
      name: "metadata",
      filename: "metadata",
      contentType: "application/json",
      content: JSON.stringify({
        path: file.remotePath,
        ...(file.mode !== undefined
          ? { mode: Number((file.mode & 0o777).toString(8)) }
          : {}),
      }),
    }, {
      name: "file",
      filename: posix.basename(file.remotePath),
      contentType: "application/octet-stream",
      content: file.content,
    }]);
    await sendMultipart(this.http, {
      method: "POST",
      path: "/files/upload",
      ...(signal ? { signal } : {}),
    }, parts);
  }
}

/** A status answer of execd. */
interface ExecdStatus {
  running?: boolean;
  exit_code?: number | null;
  error?: string;
  content?: string;
  started_at?: string;
}

/**
 * execd's own background commands for the kit's `serviceBackgroundHooks`:
 * started once `init` gave the id (a start failure after it comes as a
 * bare `{code, message}`), both streams in one log (to `onStdout`), the
 * interrupt as for any command. execd sends `init` before it registers the
 * command: status and logs answer 404 / 400 `command not found` a moment.
 */
function execdBackground(execd: ExecdClient): ServiceBackgroundKind {
  const status = (id: string) =>
    execd.http.json<ExecdStatus>({
      method: "GET",
      path: `/command/status/${encodeURIComponent(id)}`,
      timeoutMs: POLL_TIMEOUT_MS,
    });
  const notFound = (error: unknown, message: string) =>
    error instanceof RemoteHttpError &&
    (error.status === 404 || error.status === 400) &&
    (error.serverMessage ?? "").includes(message);
  return {
    start: async (request) =>
      launchedBackground(
        await startCommand(execd.http, request, true),
        (id) => execd.interrupt(id),
        (cause) =>
          cause instanceof ExecdProtocolError
            ? new SandboxCommandError(
              `Cannot run the command: the sandbox could not start it: ${cause.message}`,
              { reason: "start" },
            )
            : undefined,
      ),
    status: async (id) => {
      const answer = await status(id);
      return {
        running: answer.running !== false,
        exitCode: answer.exit_code,
        killed: /killed/.test(answer.error ?? ""),
      };
    },
    logs: async (id, cursor) => {
      const logs = await execd.http.request({
        method: "GET",
        path: `/command/${encodeURIComponent(id)}/logs`,
        query: { cursor: String(cursor) },
        timeoutMs: POLL_TIMEOUT_MS,
      });
      const next = logs.headers.get("execd-commands-tail-cursor");
      return { body: logs.body, ...(next ? { next: Number(next) } : {}) };
    },
    kill: (id) => execd.interrupt(id),
    unknown: (error) => notFound(error, "command not found"),
    describe: async (id) => {
      if (!/^[\w.-]{1,128}$/.test(id)) return undefined;
      let answer: ExecdStatus;
      try {
        answer = await status(id);
      } catch (error) {
        if (notFound(error, "")) return undefined;
        throw error;
      }
      return {
        command: commandOfLine(answer.content ?? ""),
        startedAt: dateOrNull(answer.started_at) ?? new Date(),
      };
    },
  };
}

/**
 * The session the kit gets from one sandbox's execd: its commands, its
 * file calls (a path holding `$`, which execd would expand, through helper
 * commands: the kit's `withShellPaths`), its background commands, and
 * readiness by `GET /ping`.
 *
 * @param http The HTTP client on execd's base URL.
 * @returns The session.
 */
export function execdSession(http: HttpClient): RemoteSession {
  const execd = new ExecdClient(http);
  const files = withShellPaths(
    execd,
    helperShell((command) => runRemoteCommand(execd.commands, command)),
  );
  return {
    files,
    commands: execd.commands,
    ...serviceBackgroundHooks(execdBackground(execd)),
    isReady: (signal) => answers(http, "/ping", signal),
    makeDirectories: files.makeDirectories,
  };
}

function toFileInfo(info: ExecdFileInfo, fallbackPath?: string): FileInfo {
  const type: FileType = info.type === "file" || info.type === "directory" ||
      info.type === "symlink"
    ? info.type
    : info.type === undefined
    ? "file"
    : "other";
  return fileInfo(info.path || fallbackPath || "", type, {
    size: info.size,
    modified: info.modified_at,
    mode: modeOf(info),
  });
}

/** Modes are octal digits written as a decimal number: 755 means 0o755. */
function modeOf(info: ExecdFileInfo): number | undefined {
  const mode = typeof info.mode === "number"
    ? parseInt(String(info.mode), 8)
    : NaN;
  return Number.isNaN(mode) ? undefined : mode;
}
