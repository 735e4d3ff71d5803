/**
 * The client of execd, the daemon inside an OpenSandbox sandbox: commands
 * through `POST /command` (an event stream), files through `/files/*` and
 * `/directories/*`.
 *
 * @module
 */
import {
  namedCommand,
  type RemoteCommandKind,
  type RemoteCommandStart,
  type RemoteStreamEvent,
  runRemoteCommand,
  serverDeadlineMs,
  type StartedRemoteCommand,
} from "../remote/command.ts";
import { posix } from "../../_internal/std.ts";
import type { HttpClient } from "../remote/http.ts";
import type { RemoteCommand } from "../remote/runtime.ts";
import type { RemoteFileOps, RemoteUploadFile } from "../remote/fs.ts";
import type { MultipartPart } from "../remote/upload.ts";
import { shellQuote } from "../remote/shell.ts";
import {
  jsonOrNull,
  sendCall,
  sendMultipart,
} from "../remote/service_calls.ts";
import {
  eachConcurrently,
  helperShell,
  inChunks,
  needsShellPath,
  PATHS_PER_COMMAND,
  runChecked,
  shellList,
  shellMakeDirectories,
  shellStat,
  shellStatMany,
} from "../remote/_shell_files.ts";
import type { FileInfo, FileType } from "../types.ts";
import {
  ExecdProtocolError,
  postCommand,
  readExecdEvents,
  SandboxCommandError,
} from "./_events.ts";

export { SandboxCommandError };

/**
 * The most files of one upload request: Go's `mime/multipart` reads at most
 * 1000 parts of a form, and each file takes two (`metadata` and `file`);
 * past that the real execd answers 400 `multipart form is empty`.
 */
export const EXECD_MAX_UPLOAD_FILES = 500;

/** How many upload requests run at once. */
const UPLOAD_CONCURRENCY = 3;

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
    start: (request) => this.#start(request),
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

  async #start(request: RemoteCommandStart): Promise<StartedRemoteCommand> {
    const body = await postCommand(this.http, commandBody(request), {
      signal: request.signal,
      timeoutMs: null,
    });
    return await namedCommand(execdEvents(body, request.cwd));
  }

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
    if (needsShellPath(path)) return await shellStat(this.#shell, path, signal);
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
    if (paths.some(needsShellPath)) {
      return await shellStatMany(this.#shell, paths, signal);
    }
    const map = await jsonOrNull<Record<string, ExecdFileInfo>>(this.http, {
      method: "GET",
      path: "/files/info",
      query: { path: [...paths] },
      ...(signal ? { signal } : {}),
    });
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
    if (needsShellPath(path)) {
      return await shellList(this.#shell, path, options.depth, options.signal);
    }
    const entries = await this.http.json<ExecdFileInfo[]>({
      method: "GET",
      path: "/directories/list",
      query: { path, depth: String(options.depth) },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return entries.map((entry) => toFileInfo(entry));
  }

  /** `GET /files/download` with `Range` (416 from the file's end). */
  async open(
    path: string,
    options: { offset: number; signal?: AbortSignal },
  ): Promise<Response> {
    // execd would expand a `$`: such a file is downloaded through a `$`-free
    // symlink, removed once the server has opened it (the answer's head came).
    const alias = needsShellPath(path)
      ? `/tmp/.skillrun-link-${crypto.randomUUID()}`
      : undefined;
    if (alias) {
      await runChecked(
        this.#shell,
        `ln -sfn -- ${shellQuote(path)} ${shellQuote(alias)}`,
        `read "${path}"`,
        options.signal,
      );
    }
    try {
      return await this.http.request({
        method: "GET",
        path: "/files/download",
        query: { path: alias ?? path },
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
    } finally {
      if (alias) {
        await this.#shell(`rm -f -- ${shellQuote(alias)}`).catch(() => {});
      }
    }
  }

  /** `POST /directories` (mode 0755), parents too. */
  async makeDirectories(
    paths: readonly string[],
    signal?: AbortSignal,
  ): Promise<void> {
    await shellMakeDirectories(
      this.#shell,
      paths.filter(needsShellPath),
      signal,
    );
    const plain = paths.filter((path) => !needsShellPath(path));
    if (plain.length === 0) return;
    await sendCall(this.http, {
      method: "POST",
      path: "/directories",
      json: Object.fromEntries(plain.map((path) => [path, { mode: 755 }])),
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
    // execd would expand a `$` in a target: such files go to `$`-free
    // temporary paths, then one quoted command moves them into place.
    const moves: { from: string; to: string; keepMode: boolean }[] = [];
    const staging = `/tmp/.skillrun-upload-${crypto.randomUUID()}`;
    const sent: RemoteUploadFile[] = [];
    for (const file of files) {
      let { remotePath, mode } = file;
      if (needsShellPath(remotePath)) {
        const from = `${staging}/${moves.length}`;
        moves.push({ from, to: remotePath, keepMode: mode === undefined });
        remotePath = from;
        mode ??= 0o644;
      } else if (mode === undefined) {
        // Without a mode execd creates 0755 (Go's os.ModePerm): a new file
        // gets 0644 and a replaced one keeps its mode, as on every runtime.
        const info = await this.#info(remotePath, signal);
        mode = (info?.type === "file" ? modeOf(info) : undefined) ?? 0o644;
      }
      sent.push({ ...file, remotePath, mode });
    }
    // A few requests at once: the server writes one batch while the next
    // is streamed. The first failure stops the others.
    await eachConcurrently(
      inChunks(sent, EXECD_MAX_UPLOAD_FILES),
      UPLOAD_CONCURRENCY,
      (batch, each) => this.#uploadBatch(batch, each),
      signal,
    );
    if (moves.length === 0) return;
    try {
      for (const chunk of inChunks(moves, PATHS_PER_COMMAND)) {
        await runChecked(
          this.#shell,
          chunk.map(({ from, to, keepMode }) => {
            const [f, t] = [shellQuote(from), shellQuote(to)];
            return `mkdir -p -- ${shellQuote(posix.dirname(to))} && ${
              keepMode
                ? `{ [ ! -f ${t} ] || chmod --reference=${t} -- ${f}; } && `
                : ""
            }mv -f -- ${f} ${t}`;
          }).join(" && "),
          `upload "${chunk[0]!.to}"`,
          signal,
        );
      }
    } finally {
      await this.#shell(`rm -rf -- ${shellQuote(staging)}`).catch(() => {});
    }
  }

  /** execd's facts about one path (`GET /files/info`), `null` when missing. */
  async #info(
    path: string,
    signal?: AbortSignal,
  ): Promise<ExecdFileInfo | null> {
    const map = await jsonOrNull<Record<string, ExecdFileInfo>>(this.http, {
      method: "GET",
      path: "/files/info",
      query: { path },
      ...(signal ? { signal } : {}),
    });
    return (map && (map[path] ?? Object.values(map)[0])) ?? null;
  }

  /** Runs a helper command (never retried): file calls on `$` paths. */
  readonly #shell = helperShell((command) =>
    runRemoteCommand(this.commands, command)
  );

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

/**
 * The JSON body of `POST /command` for a command: the command wrapped (see
 * below), its folder, its environment, and the server's own timeout as a
 * backstop a little later than ours. A folder holding `$` (which execd would
 * expand) is entered by the wrapper instead, quoted.
 *
 * @example The body of a command
 * ```ts
 * import { assert } from "@std/assert";
 * import { commandBody } from "./execd.ts";
 * const body = commandBody({ command: "true", cwd: "/w", env: {}, timeoutMs: 1000 });
 * assert(body.cwd === "/w" && body.timeout === 6000);
 * assert(commandBody({ command: "true", cwd: "/w/a$1", env: {}, timeoutMs: 1 }).cwd === "/");
 * ```
 *
 * @param request The command, folder, environment and timeout.
 * @returns The body.
 */
export function commandBody(
  request: Pick<RemoteCommand, "command" | "cwd" | "env" | "timeoutMs">,
): {
  command: string;
  cwd: string;
  envs: Readonly<Record<string, string>>;
  timeout: number;
} {
  const viaShell = needsShellPath(request.cwd);
  return {
    command: wrapCommand(request.command, viaShell ? request.cwd : undefined),
    cwd: viaShell ? "/" : request.cwd,
    envs: request.env,
    // Never past the longest timer (a server that keeps time in a 32-bit
    // timer would fire at once).
    timeout: serverDeadlineMs(request.timeoutMs, 5_000),
  };
}

/**
 * What the wrapper prints, on its own line, when a stream's last byte was a
 * `\r`: execd ends a line at a `\r` and swallows the `\n` after it, so the
 * wrapper's own newline could not tell `abc\r` from `abc`.
 */
const TRAILING_CR_MARK = "\u0000skillrun:trailing-cr\u0000";

/**
 * What the wrapper writes on standard error when SIGTERM stops it (execd's
 * interrupt), after its subshell, which outlived its foreground child to
 * reap the rest, reported that child's signal ({@linkcode SIGTERM_REPORT}).
 */
const STOPPED_MARK = "\u0000skillrun:stopped\u0000";
/** bash's report of a foreground child killed by SIGTERM (`j_strsignal`). */
const SIGTERM_REPORT = "Terminated";

/** What the wrapper writes (and its status) when it cannot enter a `$` folder. */
const NO_FOLDER_MARK = "\u0000skillrun:no-folder\u0000";
const NO_FOLDER_STATUS = 1;

/**
 * The command sent to execd. The caller's command runs with `eval` in a
 * subshell of the wrapper (so that `exit` in it still reaches the end), then
 * the wrapper writes one newline on each stream and exits with the command's
 * status: execd strips each line's newline, so without this marker a last
 * line printed without a newline could not be told from one with it. When a
 * stream's last byte was a `\r` (read back from execd's output file),
 * {@linkcode TRAILING_CR_MARK} is written instead.
 *
 * On SIGTERM (execd's interrupt signals the whole group), each shell first
 * waits for its own children and only then dies of the signal: every process
 * of the group is reaped by its parent, none is left to pid 1 as a zombie,
 * which execd's interrupt would wait for (it polls `kill(-pgid, 0)`).
 */
function wrapCommand(command: string, cwd?: string): string {
  const enter = cwd === undefined
    ? ""
    : `{ cd -- ${
      shellQuote(cwd)
    } 2>/dev/null || { printf '\\000skillrun:no-folder\\000' >&2; exit ${NO_FOLDER_STATUS}; }; } && `;
  const end = (fd: 1 | 2) =>
    `if [ -f /proc/$$/fd/${fd} ] && [ -s /proc/$$/fd/${fd} ] && [ "$(tail -c 1 /proc/$$/fd/${fd} | tr -d '\\000')" = "$(printf '\\r')" ]; then printf '\\000skillrun:trailing-cr\\000\\n'${
      fd === 2 ? " >&2" : ""
    }; else printf '\\n'${fd === 2 ? " >&2" : ""}; fi`;
  return [
    `__skillrun_stopped() { printf '\\000skillrun:stopped\\000\\n' >&2; trap - TERM; kill -TERM $$; }`,
    `trap __skillrun_stopped TERM`,
    `(trap 'wait; exit 143' TERM; ${enter}eval -- ${shellQuote(command)})`,
    `__skillrun_status=$?`,
    end(1),
    end(2),
    `exit "$__skillrun_status"`,
  ].join("\n");
}

/**
 * The events of execd's stream for the kit: `init` names the command, each
 * stream's lines are rejoined ({@linkcode ExecdLines}), and the end says
 * the exit code, or why the command could not run.
 */
async function* execdEvents(
  body: ReadableStream<Uint8Array>,
  cwd: string,
): AsyncGenerator<RemoteStreamEvent> {
  const lines = { stdout: new ExecdLines(), stderr: new ExecdLines() };
  for await (const event of readExecdEvents(body)) {
    if (event.type === "init" && typeof event.text === "string") {
      yield { type: "id", id: event.text };
    } else if (event.type === "stdout" || event.type === "stderr") {
      for (const data of lines[event.type].line(event.text)) {
        yield { type: event.type, data };
      }
    } else if (event.type === "execution_complete" || event.type === "error") {
      const value = (event.error?.evalue ?? "0").trim();
      const numeric = /^-?\d+$/.test(value);
      const exitCode = numeric ? Number(value) : -1;
      // Our wrapper ended each stream with a newline of its own: dropping it
      // gives the output exactly, with or without a final newline. A process
      // killed by a signal never wrote it.
      for (const type of ["stdout", "stderr"] as const) {
        for (const data of lines[type].end(exitCode !== -1)) {
          yield { type, data };
        }
      }
      let failure: SandboxCommandError | undefined;
      if (!numeric) {
        failure = new SandboxCommandError(
          `Cannot run the command: the sandbox could not start it: ${
            event.error?.evalue || event.error?.ename || "unknown error"
          }`,
          { reason: "start" },
        );
      } else if (
        exitCode === NO_FOLDER_STATUS && needsShellPath(cwd) &&
        lines.stderr.text === NO_FOLDER_MARK && lines.stdout.text === ""
      ) {
        // The wrapper could not enter a folder holding `$` (execd refuses a
        // missing folder itself, before running anything, for the others).
        failure = new SandboxCommandError(
          `Cannot run the command in "${cwd}": the sandbox refused it: the working directory does not exist or is not a folder`,
          { reason: "refused" },
        );
      }
      yield { type: "exit", exitCode, ...(failure ? { failure } : {}) };
      return;
    }
  }
}

/**
 * Rejoins execd's lines of one stream (one event per line, newline
 * stripped; an empty line arrives as `"\n"`) into output: each line's
 * newline is held back until the next line or the end, where the wrapper's
 * own is dropped. The first bytes are kept in `text` (to recognise the
 * wrapper's own marks).
 */
class ExecdLines {
  #pendingNewline = false;
  /** A line held back until the next one tells what it was (see `line`). */
  #held: string | undefined;
  /** The start of what was given out. */
  text = "";

  line(text: string | undefined): string[] {
    const out: string[] = [];
    if (text === undefined) return out;
    if (text === STOPPED_MARK) {
      // The wrapper was stopped (SIGTERM): the shell's own report of its
      // child's signal just before is not the command's output.
      if (this.#held === SIGTERM_REPORT) this.#held = undefined;
      else this.#release(out);
      return out;
    }
    this.#release(out);
    if (text === TRAILING_CR_MARK || text === SIGTERM_REPORT) {
      // Held: the wrapper's mark only when nothing follows it; the shell's
      // report only when the wrapper's stop mark follows it.
      this.#held = text;
      return out;
    }
    this.#emit(text, out);
    return out;
  }

  /**
   * Ends the stream: with the wrapper's newline dropped (its mark says the
   * last line ended with `\r`, which the kit makes a line end), or every
   * newline kept.
   */
  end(dropLastNewline: boolean): string[] {
    const out: string[] = [];
    if (this.#held === TRAILING_CR_MARK && dropLastNewline) {
      this.#held = undefined;
      this.#pendingNewline = false;
      this.#give("\r", out);
      return out;
    }
    this.#release(out);
    if (this.#pendingNewline && !dropLastNewline) this.#give("\n", out);
    this.#pendingNewline = false;
    return out;
  }

  #emit(text: string, out: string[]): void {
    if (this.#pendingNewline) this.#give("\n", out);
    if (text !== "\n" && text !== "") this.#give(text, out);
    this.#pendingNewline = true;
  }

  /** A held line that turned out to be the command's own text. */
  #release(out: string[]): void {
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    this.#emit(held, out);
  }

  #give(text: string, out: string[]): void {
    if (this.text.length < 64) this.text += text;
    out.push(text);
  }
}

function toFileInfo(info: ExecdFileInfo, fallbackPath?: string): FileInfo {
  const path = info.path || fallbackPath || "";
  const type: FileType = info.type === "file" || info.type === "directory" ||
      info.type === "symlink"
    ? info.type
    : info.type === undefined
    ? "file"
    : "other";
  const modified = info.modified_at ? new Date(info.modified_at) : null;
  const mode = modeOf(info);
  return {
    path,
    name: posix.basename(path),
    type,
    size: typeof info.size === "number" ? info.size : 0,
    modifiedAt: modified && !Number.isNaN(modified.getTime()) ? modified : null,
    ...(mode === undefined ? {} : { executable: (mode & 0o100) !== 0 }),
  };
}

/** Modes are octal digits written as a decimal number: 755 means 0o755. */
function modeOf(info: ExecdFileInfo): number | undefined {
  const mode = typeof info.mode === "number"
    ? parseInt(String(info.mode), 8)
    : NaN;
  return Number.isNaN(mode) ? undefined : mode;
}
