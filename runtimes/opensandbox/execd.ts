/**
 * execd, the daemon inside an OpenSandbox sandbox, as the kit's session:
 * commands through `POST /command`, files through `/files/*` and
 * `/directories/*`, and execd's own background commands.
 *
 * @module
 */
import { type RemoteCommandKind, runRemoteCommand } from "../remote/command.ts";
import { posix } from "../../_internal/std.ts";
import type { HttpClient } from "../remote/http.ts";
import type { RemoteSession } from "../remote/runtime.ts";
import type { RemoteUploadFile } from "../remote/fs.ts";
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
} from "../remote/shell_files.ts";
import { type ServerFileOps, withShellPaths } from "../remote/shell_paths.ts";
import {
  commandOfLine,
  serviceBackgroundHooks,
  type ServiceBackgroundKind,
} from "../remote/service_background.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import { dateOrNull, fileInfo } from "../remote/service_answers.ts";
import type { FileInfo } from "../types.ts";
import {
  commandBody,
  ExecdProtocolError,
  SandboxCommandError,
  startCommand,
} from "./_events.ts";

export { commandBody, SandboxCommandError };

/**
 * The most files of one upload request: Go's `mime/multipart` reads at most
 * 1000 parts, two per file (past that: 400 `multipart form is empty`).
 */
export const EXECD_MAX_UPLOAD_FILES = 500;

/** How many upload requests run at once. */
const UPLOAD_CONCURRENCY = 3;

/** The deadline of one status or logs call (the logs body streamed), in ms. */
const POLL_TIMEOUT_MS = 120_000;

/** A file's facts as execd sends them. */
interface ExecdFileInfo {
  path: string;
  type?: string;
  size?: number;
  modified_at?: string;
  mode?: number;
}

/**
 * The session of one sandbox's execd: a path holding `$` (which execd would
 * expand) goes through helper commands (the kit's `withShellPaths`); ready
 * once `GET /ping` answers.
 *
 * @param http The HTTP client on execd's base URL (with the endpoint's headers).
 * @returns The session.
 */
export function execdSession(http: HttpClient): RemoteSession {
  const commands = execdCommands(http);
  const files = withShellPaths(
    execdFiles(http),
    helperShell((command) => runRemoteCommand(commands, command)),
  );
  return {
    files,
    commands,
    ...serviceBackgroundHooks(execdBackground(http, commands)),
    isReady: (signal) => answers(http, "/ping", signal),
    makeDirectories: files.makeDirectories,
  };
}

/**
 * execd's own file calls, for paths without `$`, and `POST /directories`.
 *
 * @param http The HTTP client on execd's base URL.
 * @returns The calls.
 */
export function execdFiles(http: HttpClient): ServerFileOps {
  // `GET /files/info` of paths, `null` when one is missing (404).
  const infos = (paths: readonly string[], signal?: AbortSignal) =>
    jsonOrNull<Record<string, ExecdFileInfo>>(http, {
      method: "GET",
      path: "/files/info",
      query: { path: [...paths] },
      ...(signal ? { signal } : {}),
    });
  const info = async (path: string, signal?: AbortSignal) => {
    const map = await infos([path], signal);
    return (map && (map[path] ?? Object.values(map)[0])) ?? null;
  };
  const stat = async (path: string, signal?: AbortSignal) => {
    const found = await info(path, signal);
    return found ? toFileInfo(found, path) : null;
  };
  return {
    stat,
    // One call for all; since any missing path makes it 404, a 404 asks
    // again path by path (in parallel).
    statMany: async (paths, signal) => {
      const map = await infos(paths, signal);
      if (map && paths.every((path) => map[path] !== undefined)) {
        return paths.map((path) => toFileInfo(map[path]!, path));
      }
      return await Promise.all(paths.map((path) => stat(path, signal)));
    },
    // Symlinks not followed.
    list: async (path, { depth, signal }) =>
      (await http.json<ExecdFileInfo[]>({
        method: "GET",
        path: "/directories/list",
        query: { path, depth: String(depth) },
        ...(signal ? { signal } : {}),
      })).map((entry) => toFileInfo(entry)),
    open: (path, { offset, signal }) =>
      http.request({
        method: "GET",
        path: "/files/download",
        query: { path },
        // From the end of the file: a 416 with its size (see downloadToFile).
        ...(offset > 0
          ? { headers: { range: `bytes=${offset}-` }, acceptStatuses: [416] }
          : {}),
        timeoutMs: null,
        ...(signal ? { signal } : {}),
      }),
    makeDirectories: async (paths, signal) => {
      await sendCall(http, {
        method: "POST",
        path: "/directories",
        json: Object.fromEntries(paths.map((path) => [path, { mode: 755 }])),
        idempotent: true,
        ...(signal ? { signal } : {}),
      });
    },
    // Multipart requests of `metadata`/`file` pairs, each streamed from
    // disk, three at a time (the server writes one batch while the next is
    // streamed; the first failure stops the others); parents are made.
    upload: async (files, signal) => {
      const sent: RemoteUploadFile[] = [];
      for (const file of files) {
        // Without a mode execd creates 0755 (Go's os.ModePerm): a new file
        // gets 0644 and a replaced one keeps its mode, as on every runtime.
        let mode = file.mode;
        if (mode === undefined) {
          const found = await info(file.remotePath, signal);
          mode = (found?.type === "file" ? modeOf(found) : undefined) ?? 0o644;
        }
        sent.push({ ...file, mode });
      }
      await eachConcurrently(
        inChunks(sent, EXECD_MAX_UPLOAD_FILES),
        UPLOAD_CONCURRENCY,
        (batch, signal) =>
          sendMultipart(
            http,
            {
              method: "POST",
              path: "/files/upload",
              signal,
            },
            batch.flatMap((file): MultipartPart[] => [{
              name: "metadata",
              filename: "metadata",
              contentType: "application/json",
              content: JSON.stringify({
                path: file.remotePath,
                mode: Number((file.mode! & 0o777).toString(8)),
              }),
            }, {
              name: "file",
              filename: posix.basename(file.remotePath),
              contentType: "application/octet-stream",
              content: file.content,
            }]),
          ),
        signal,
      );
    },
  };
}

/**
 * Commands for the kit's `runRemoteCommand`: `POST /command`, named by its
 * `init` event; interrupted by `DELETE /command?id=` (SIGTERM to the group,
 * SIGKILL after 3 s, answered once the group is gone; an unknown or finished
 * id, 500, is no error); execd's own timeout 5 s after ours.
 */
function execdCommands(http: HttpClient): RemoteCommandKind {
  return {
    backstopMs: 5_000,
    start: (request) => startCommand(http, request),
    kill: async (id) => {
      await sendCall(http, {
        method: "DELETE",
        path: "/command",
        query: { id },
        timeoutMs: 15_000,
      }, [500]);
    },
    broken: (cause) => {
      const why = cause === undefined
        ? "the event stream ended before the command finished"
        : cause instanceof ExecdProtocolError
        ? cause.message
        : "the connection broke before the command finished";
      return new SandboxCommandError(
        `Cannot run the command: ${why}; it was interrupted`,
        { reason: "stream", ...(cause === undefined ? {} : { cause }) },
      );
    },
  };
}

/**
 * execd's background commands (`background: true`; state and log by id):
 * both streams in one log. execd sends `init` before it registers the
 * command: status and logs answer 404 / 400 `command not found` a moment.
 */
function execdBackground(
  http: HttpClient,
  commands: RemoteCommandKind,
): ServiceBackgroundKind {
  const notFound = (error: unknown, message: string) =>
    error instanceof RemoteHttpError &&
    (error.status === 404 || error.status === 400) &&
    (error.serverMessage ?? "").includes(message);
  return {
    start: (request) => startCommand(http, request, true),
    // After `init`, a start failure comes as a bare `{code, message}`.
    broken: (cause) =>
      cause instanceof ExecdProtocolError
        ? new SandboxCommandError(
          `Cannot run the command: the sandbox could not start it: ${cause.message}`,
          { reason: "start" },
        )
        : undefined,
    status: async (id) => {
      const answer = await http.json<{
        running?: boolean;
        exit_code?: number | null;
        error?: string;
        content?: string;
        started_at?: string;
      }>({
        method: "GET",
        path: `/command/status/${encodeURIComponent(id)}`,
        timeoutMs: POLL_TIMEOUT_MS,
      });
      return {
        running: answer.running !== false,
        exitCode: answer.exit_code,
        killed: /killed/.test(answer.error ?? ""),
        command: commandOfLine(answer.content ?? ""),
        startedAt: dateOrNull(answer.started_at),
      };
    },
    logs: async (id, cursor) => {
      const logs = await http.request({
        method: "GET",
        path: `/command/${encodeURIComponent(id)}/logs`,
        query: { cursor: String(cursor) },
        timeoutMs: POLL_TIMEOUT_MS,
      });
      const next = logs.headers.get("execd-commands-tail-cursor");
      return { body: logs.body, ...(next ? { next: Number(next) } : {}) };
    },
    kill: commands.kill,
    unknown: (error) => notFound(error, "command not found"),
    absent: (error) => notFound(error, ""),
    idPattern: /^[\w.-]{1,128}$/,
  };
}

function toFileInfo(info: ExecdFileInfo, fallbackPath?: string): FileInfo {
  const known = ["file", "directory", "symlink"] as const;
  const type = known.find((name) => name === (info.type ?? "file"));
  return fileInfo(info.path || fallbackPath || "", type ?? "other", {
    size: info.size,
    modified: info.modified_at,
    mode: modeOf(info),
  });
}

/** Modes are octal digits written as a decimal number: 755 means 0o755. */
function modeOf(info: ExecdFileInfo): number | undefined {
  const mode = parseInt(String(info.mode), 8);
  return typeof info.mode === "number" && !Number.isNaN(mode)
    ? mode
    : undefined;
}
