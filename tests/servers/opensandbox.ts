/**
 * A faithful OpenSandbox server for tests, also startable by hand: the
 * lifecycle API (`/v1/sandboxes...`) and execd (commands, files) on one
 * `Deno.serve` listener on loopback, answering as the specs in
 * `../shared/specs/opensandbox/` and the facts of `../shared/specs/README.md`
 * say (read from the real servers' source).
 *
 * Commands run as real `bash -c` processes, each in its own process group,
 * with the host's real paths: point a client's remote workspace at a
 * temporary folder and a path means the same to a command and to the file
 * API. A {@linkcode FaultInjector} sits in front of every route.
 *
 * By hand:
 * `deno run -A tests/servers/opensandbox.ts [--port N] [--api-key KEY]
 * [--kubernetes] [--pending-ms MS] [--endpoint-path /proxy/{port}]
 * [--linger-ms MS] [--fault "GET /files/download reset:1000 x2"]...`
 * prints the lifecycle base URL (`http://127.0.0.1:N/v1`) as its first line
 * and serves until stopped; `GET/POST/DELETE /__faults` switch faults while
 * it runs.
 *
 * @module
 */
import {
  FaultInjector,
  type FaultServer,
  ignoreSigtermCommand,
  parseFaultSpec,
  serveWithFaults,
} from "./_faults.ts";
import { liveGroupMembers } from "../../_internal/testing.ts";
import { hostPath } from "../../_internal/std.ts";

/** The execd port inside a sandbox. */
export const EXECD_PORT = 44772;

/** Options of {@linkcode startOpenSandboxServer}. */
export interface OpenSandboxServerOptions {
  /** Port; default 0 (any free port). */
  port?: number;
  /** Host name; default `127.0.0.1`. */
  hostname?: string;
  /** The lifecycle API key; default none (no check, as the real server without a key). */
  apiKey?: string;
  /**
   * `"docker"` (default): the 202 already says `Running`, as the Docker
   * provider does. `"kubernetes"`: `Pending` for `pendingMs` first, and execd
   * answers 503 until then.
   */
  provisioning?: "docker" | "kubernetes";
  /** How long a sandbox stays `Pending` in `"kubernetes"` mode; default 300 ms. */
  pendingMs?: number;
  /**
   * The path of an endpoint after `host:port`, with `{id}` and `{port}`;
   * default `/sandboxes/{id}/port/{port}` (the spec's format). Docker bridge
   * mode is `/proxy/{port}`; `""` gives a bare `host:port`.
   */
  endpointPath?: string;
  /** Headers an endpoint names, then required on every execd call. */
  endpointHeaders?: Readonly<Record<string, string>>;
  /** execd's optional `X-EXECD-ACCESS-TOKEN`; default none. */
  execdAccessToken?: string;
  /** How long an event stream stays open after its last event; default 1000 ms (the real server). */
  streamLingerMs?: number;
  /** Interval of `ping` events; default 3000 ms. */
  pingIntervalMs?: number;
  /** How long an interrupt waits after SIGTERM before SIGKILL; default 3000 ms. */
  killGraceMs?: number;
  /** The environment of commands; default this process's environment. */
  env?: Readonly<Record<string, string>>;
  /** The folder of commands without `cwd` and of relative paths; default `Deno.cwd()`. */
  cwd?: string;
  /** The fault injector; default a new one. */
  faults?: FaultInjector;
  /** Serve `/__faults` (see `_faults.ts`); default off. */
  control?: boolean;
}

/** A sandbox the server knows. */
export interface SandboxRecord {
  readonly id: string;
  readonly image?: { uri: string };
  readonly snapshotId?: string;
  readonly entrypoint: readonly string[];
  metadata: Record<string, string>;
  readonly env: Readonly<Record<string, string>>;
  readonly resourceLimits: Readonly<Record<string, string>>;
  readonly createdAt: Date;
  expiresAt?: Date;
  /** When it leaves `Pending` (ms since the epoch). */
  readonly readyAt: number;
  /** `Paused` after a pause, else undefined. */
  paused: boolean;
  /** The last request body received for it (create). */
  readonly request: unknown;
}

/** A command execd ran. */
export interface CommandRecord {
  readonly id: string;
  readonly content: string;
  readonly background: boolean;
  readonly cwd: string;
  /** The process group (the pid of `bash`), or 0 when it never started. */
  readonly pgid: number;
  readonly startedAt: Date;
  running: boolean;
  exitCode?: number;
  error?: string;
  finishedAt?: Date;
  /** The sandbox it ran in, when the endpoint path names one. */
  readonly sandboxId?: string;
  /** The request body as received. */
  readonly request: Readonly<Record<string, unknown>>;
}

/** One request the server answered. */
export interface RequestRecord {
  readonly method: string;
  /** The full path, e.g. `/sandboxes/abc/port/44772/command`. */
  readonly path: string;
  /** The route: `/v1/...` for the lifecycle, the execd path (`/command`) for execd. */
  readonly route: string;
  readonly kind: "lifecycle" | "execd" | "other";
  readonly query: string;
  readonly headers: Readonly<Record<string, string>>;
  /** The status answered (0 until the handler answered). */
  status: number;
  readonly at: number;
}

/** A running server, as {@linkcode startOpenSandboxServer} returns it. */
export interface OpenSandboxServer extends AsyncDisposable {
  /** The lifecycle base URL, `http://127.0.0.1:<port>/v1`. */
  readonly url: string;
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
  /** The port. */
  readonly port: number;
  /** The API key, if one is required. */
  readonly apiKey: string | undefined;
  /** The fault injector in front of every route. */
  readonly faults: FaultInjector;
  /** The listener (refuse and accept connections). */
  readonly listener: FaultServer;
  /** The sandboxes, by id. */
  readonly sandboxes: ReadonlyMap<string, SandboxRecord>;
  /** The commands, by id. */
  readonly commands: ReadonlyMap<string, CommandRecord>;
  /** Every request answered, oldest first. */
  readonly requests: readonly RequestRecord[];
  /** How many requests matched a method and a route (`*` matches any text). */
  count(method: string, route?: string): number;
  /** The endpoint the lifecycle API gives for a port (no scheme). */
  endpoint(id: string, port?: number): string;
  /** The execd base URL of a sandbox (`http://` + endpoint). */
  execdUrl(id: string, port?: number): string;
  /** Headers every execd call must carry (the endpoint's `headers`). */
  readonly execdHeaders: Readonly<Record<string, string>>;
  /** Creates a sandbox without HTTP (as `POST /v1/sandboxes` would). */
  createSandbox(request?: Record<string, unknown>): SandboxRecord;
  /** Whether a command's process group still has live (not zombie) members. */
  commandAlive(id: string): boolean;
  /** Kills every running command and stops serving (idempotent). */
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------
// Small helpers

const encoder = new TextEncoder();

/** Go's encoding/json escapes <, >, & and U+2028/2029 (execd). */
function goJsonText(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** A JSON answer as execd (Go, gin) writes it. */
function json(status: number, value: unknown, headers?: HeadersInit): Response {
  return jsonText(status, goJsonText(value), headers);
}

/** A JSON answer as the lifecycle server (Python, FastAPI) writes it. */
function pyJson(
  status: number,
  value: unknown,
  headers?: HeadersInit,
): Response {
  return jsonText(status, JSON.stringify(value), headers);
}

function jsonText(
  status: number,
  text: string,
  headers?: HeadersInit,
): Response {
  const response = new Response(text, {
    status,
    headers: { "content-type": "application/json; charset=utf-8" },
  });
  if (headers !== undefined) {
    for (const [name, header] of new Headers(headers)) {
      response.headers.set(name, header);
    }
  }
  return response;
}

/** execd's error answer (`{code, message}`; gin's JSON). */
function execdError(status: number, code: string, message: string): Response {
  return json(status, message === "" ? { code } : { code, message });
}

/** The lifecycle server's error answer (always `{code, message}`). */
function lifecycleError(
  status: number,
  code: string,
  message: string,
): Response {
  return pyJson(status, { code, message }, {
    "x-request-id": crypto.randomUUID(),
  });
}

function notFoundText(): Response {
  return new Response("404 page not found", {
    status: 404,
    headers: { "content-type": "text/plain" },
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function isNotFound(error: unknown): boolean {
  return error instanceof Deno.errors.NotFound;
}

/** Octal digits written as a decimal integer (644 means 0644) → mode bits. */
function octalDigits(mode: number): number | undefined {
  const text = String(mode);
  return /^[0-7]+$/.test(text) ? parseInt(text, 8) : undefined;
}

/** Go's `signal: ...` names. */
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

// ---------------------------------------------------------------------------
// Users and file info

class Names {
  #users: Map<number, string> | undefined;
  #groups: Map<number, string> | undefined;

  #read(file: string): Map<number, string> {
    const names = new Map<number, string>();
    try {
      for (const line of Deno.readTextFileSync(file).split("\n")) {
        const fields = line.split(":");
        if (fields.length >= 3 && fields[0] && /^\d+$/.test(fields[2]!)) {
          if (!names.has(Number(fields[2]))) {
            names.set(Number(fields[2]), fields[0]);
          }
        }
      }
    } catch {
      // No names: ids are shown as numbers, as Go does.
    }
    return names;
  }

  user(uid: number | null): string {
    this.#users ??= this.#read("/etc/passwd");
    return uid === null ? "" : this.#users.get(uid) ?? String(uid);
  }

  group(gid: number | null): string {
    this.#groups ??= this.#read("/etc/group");
    return gid === null ? "" : this.#groups.get(gid) ?? String(gid);
  }

  uidOf(name: string): number | undefined {
    this.#users ??= this.#read("/etc/passwd");
    for (const [id, user] of this.#users) if (user === name) return id;
    return undefined;
  }

  gidOf(name: string): number | undefined {
    this.#groups ??= this.#read("/etc/group");
    for (const [id, group] of this.#groups) if (group === name) return id;
    return undefined;
  }
}

function fileType(info: Deno.FileInfo): string {
  if (info.isSymlink) return "symlink";
  if (info.isDirectory) return "directory";
  if (info.isFile) return "file";
  return "other";
}

// ---------------------------------------------------------------------------
// Glob on base names (doublestar semantics for one segment)

function globToRegExp(pattern: string): RegExp {
  let source = "";
  let braces = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      const next = pattern[++i];
      if (next === undefined) throw new SyntaxError("syntax error in pattern");
      source += next.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
    } else if (c === "*") {
      while (pattern[i + 1] === "*") i++;
      source += "[^/]*";
    } else if (c === "?") {
      source += "[^/]";
    } else if (c === "[") {
      const end = pattern.indexOf("]", i + 2);
      if (end < 0) throw new SyntaxError("syntax error in pattern");
      let body = pattern.slice(i + 1, end);
      let negate = false;
      if (body.startsWith("!") || body.startsWith("^")) {
        negate = true;
        body = body.slice(1);
      }
      source += `[${negate ? "^" : ""}${body.replace(/[\\\]^]/g, "\\$&")}]`;
      i = end;
    } else if (c === "{") {
      braces++;
      source += "(?:";
    } else if (c === "}" && braces > 0) {
      braces--;
      source += ")";
    } else if (c === "," && braces > 0) {
      source += "|";
    } else {
      source += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
    }
  }
  if (braces > 0) throw new SyntaxError("syntax error in pattern");
  return new RegExp(`^${source}$`, "s");
}

// ---------------------------------------------------------------------------
// Event stream of a command

class EventStream {
  readonly stream: ReadableStream<Uint8Array>;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #closed = false;
  #onClose: (() => void)[] = [];

  constructor() {
    this.stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      cancel: () => {
        // A client that goes away does not stop the command.
        this.#finish();
      },
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  onClose(callback: () => void): void {
    if (this.#closed) callback();
    else this.#onClose.push(callback);
  }

  send(event: Record<string, unknown>): void {
    if (this.#closed) return;
    try {
      this.#controller.enqueue(encoder.encode(goJsonText(event) + "\n\n"));
    } catch {
      this.#finish();
    }
  }

  sendRaw(text: string): void {
    if (this.#closed) return;
    try {
      this.#controller.enqueue(encoder.encode(text));
    } catch {
      this.#finish();
    }
  }

  close(): void {
    if (this.#closed) return;
    try {
      this.#controller.close();
    } catch {
      // already errored
    }
    this.#finish();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const callback of this.#onClose.splice(0)) callback();
  }
}

/** Splits bytes into lines as execd does: `\n` and `\r` end a line, `\r\n` once. */
class LineSplitter {
  #buffer: number[] = [];
  #cr = false;
  readonly #emit: (text: string) => void;
  readonly #decoder = new TextDecoder();

  constructor(emit: (text: string) => void) {
    this.#emit = emit;
  }

  push(chunk: Uint8Array): void {
    for (const byte of chunk) {
      if (byte === 0x0a || byte === 0x0d) {
        if (this.#buffer.length > 0) {
          this.#flush();
        } else if (!(byte === 0x0a && this.#cr)) {
          this.#emit("\n");
        }
        this.#cr = byte === 0x0d;
        continue;
      }
      this.#cr = false;
      this.#buffer.push(byte);
    }
  }

  end(): void {
    if (this.#buffer.length > 0) this.#flush();
  }

  #flush(): void {
    const text = this.#decoder.decode(new Uint8Array(this.#buffer));
    this.#buffer = [];
    if (text !== "") this.#emit(text);
  }
}

// ---------------------------------------------------------------------------
// The server

interface RunningCommand {
  record: CommandRecord;
  child?: Deno.ChildProcess;
  status?: Promise<Deno.CommandStatus>;
  output: Uint8Array[];
  outputLength: number;
  finished: Promise<void>;
}

class OpenSandboxState {
  readonly options: OpenSandboxServerOptions;
  readonly sandboxes = new Map<string, SandboxRecord>();
  readonly commands = new Map<string, RunningCommand>();
  readonly records = new Map<string, CommandRecord>();
  readonly streams = new Set<EventStream>();
  readonly timers = new Set<ReturnType<typeof setTimeout>>();
  readonly names = new Names();
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly lingerMs: number;
  readonly pingMs: number;
  readonly graceMs: number;
  readonly faults: FaultInjector;
  host = "";
  closed = false;

  constructor(options: OpenSandboxServerOptions, faults: FaultInjector) {
    this.options = options;
    this.faults = faults;
    this.env = options.env ?? Deno.env.toObject();
    this.cwd = options.cwd ?? Deno.cwd();
    this.lingerMs = options.streamLingerMs ?? 1000;
    this.pingMs = options.pingIntervalMs ?? 3000;
    this.graceMs = options.killGraceMs ?? 3000;
  }

  later(ms: number, callback: () => void): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      callback();
    }, ms);
    this.timers.add(timer);
    return timer;
  }

  cancelLater(timer: ReturnType<typeof setTimeout> | undefined): void {
    if (timer === undefined) return;
    clearTimeout(timer);
    this.timers.delete(timer);
  }

  // -- paths ----------------------------------------------------------------

  /** pathutil.ExpandPath: `$VAR`/`${VAR}` (undefined → error) and `~`. */
  expand(
    path: string,
    overrides: Readonly<Record<string, string>> = {},
  ): string {
    if (path === "") return "";
    const env = { ...this.env, ...overrides };
    const missing = new Set<string>();
    const pattern =
      /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g;
    const expanded = path.replace(pattern, (_, braced, bare) => {
      const name = (braced ?? bare) as string;
      if (!Object.hasOwn(env, name)) missing.add(name);
      return env[name] ?? "";
    });
    if (missing.size > 0) {
      throw new Error(
        `path references undefined environment variables: ${
          [...missing].sort().join(",")
        }`,
      );
    }
    const home = env.HOME ?? "/";
    if (expanded === "~") return home;
    if (expanded.startsWith("~/")) {
      return hostPath.join(home, expanded.slice(2));
    }
    return expanded;
  }

  /** ExpandAbsPath. */
  absolute(path: string): string {
    return hostPath.resolve(this.cwd, this.expand(path));
  }

  fileInfo(path: string, info: Deno.FileInfo): Record<string, unknown> {
    return {
      path,
      type: fileType(info),
      size: info.size,
      modified_at: (info.mtime ?? new Date(0)).toISOString(),
      created_at: (info.ctime ?? info.mtime ?? new Date(0)).toISOString(),
      owner: this.names.user(info.uid),
      group: this.names.group(info.gid),
      mode: Number(((info.mode ?? 0) & 0o777).toString(8)),
    };
  }

  async chmodFile(
    path: string,
    permission: Record<string, unknown>,
  ): Promise<void> {
    const mode = typeof permission.mode === "number" ? permission.mode : 0;
    if (mode !== 0) {
      const bits = octalDigits(mode);
      if (bits === undefined) {
        throw new Error(`strconv.ParseUint: parsing "${mode}": invalid syntax`);
      }
      await Deno.chmod(path, bits);
    }
    const owner = typeof permission.owner === "string" ? permission.owner : "";
    const group = typeof permission.group === "string" ? permission.group : "";
    if (owner !== "" || group !== "") {
      const uid = owner === "" ? null : this.names.uidOf(owner) ?? null;
      const gid = group === "" ? null : this.names.gidOf(group) ?? null;
      if (uid !== null || gid !== null) await Deno.chown(path, uid, gid);
    }
  }

  // -- sandboxes --------------------------------------------------------------

  createSandbox(request: Record<string, unknown>): SandboxRecord {
    const now = new Date();
    const pending = this.options.provisioning === "kubernetes"
      ? this.options.pendingMs ?? 300
      : 0;
    const image =
      isObject(request.image) && typeof request.image.uri === "string"
        ? { uri: request.image.uri }
        : undefined;
    const timeout = typeof request.timeout === "number"
      ? request.timeout
      : undefined;
    const record: SandboxRecord = {
      id: crypto.randomUUID(),
      ...(image === undefined ? {} : { image }),
      ...(typeof request.snapshotId === "string"
        ? { snapshotId: request.snapshotId }
        : {}),
      entrypoint: Array.isArray(request.entrypoint)
        ? request.entrypoint.map(String)
        : ["tail", "-f", "/dev/null"],
      metadata: isObject(request.metadata)
        ? Object.fromEntries(
          Object.entries(request.metadata).map(([k, v]) => [k, String(v)]),
        )
        : {},
      env: isObject(request.env)
        ? Object.fromEntries(
          Object.entries(request.env).map(([k, v]) => [k, String(v)]),
        )
        : {},
      resourceLimits: isObject(request.resourceLimits)
        ? Object.fromEntries(
          Object.entries(request.resourceLimits).map((
            [k, v],
          ) => [k, String(v)]),
        )
        : {},
      createdAt: now,
      ...(timeout === undefined
        ? {}
        : { expiresAt: new Date(now.getTime() + timeout * 1000) }),
      readyAt: now.getTime() + pending,
      paused: false,
      request,
    };
    this.sandboxes.set(record.id, record);
    return record;
  }

  state(sandbox: SandboxRecord): string {
    if (Date.now() < sandbox.readyAt) return "Pending";
    return sandbox.paused ? "Paused" : "Running";
  }

  status(sandbox: SandboxRecord): Record<string, unknown> {
    const state = this.state(sandbox);
    const reasons: Record<string, [string, string]> = {
      Pending: ["SANDBOX_SCHEDULED", "Sandbox is being provisioned"],
      Running: ["CONTAINER_RUNNING", "Sandbox is running"],
      Paused: ["CONTAINER_PAUSED", "Sandbox is paused"],
    };
    const [reason, message] = reasons[state]!;
    const since = state === "Pending"
      ? sandbox.createdAt.getTime()
      : sandbox.readyAt;
    return {
      state,
      reason,
      message,
      lastTransitionAt: new Date(since).toISOString(),
    };
  }

  sandboxJson(sandbox: SandboxRecord, full: boolean): Record<string, unknown> {
    return {
      id: sandbox.id,
      ...(full && sandbox.image !== undefined ? { image: sandbox.image } : {}),
      ...(full && sandbox.snapshotId !== undefined
        ? { snapshotId: sandbox.snapshotId }
        : {}),
      status: this.status(sandbox),
      metadata: sandbox.metadata,
      ...(sandbox.expiresAt === undefined
        ? {}
        : { expiresAt: sandbox.expiresAt.toISOString() }),
      createdAt: sandbox.createdAt.toISOString(),
      entrypoint: sandbox.entrypoint,
    };
  }

  /** Removes expired sandboxes (as the TTL would). */
  sweep(): void {
    const now = Date.now();
    for (const sandbox of [...this.sandboxes.values()]) {
      if (
        sandbox.expiresAt !== undefined && sandbox.expiresAt.getTime() <= now
      ) {
        this.removeSandbox(sandbox.id);
      }
    }
  }

  removeSandbox(id: string): void {
    this.sandboxes.delete(id);
    for (const command of this.commands.values()) {
      if (command.record.sandboxId === id && command.record.running) {
        this.signalGroup(command.record.pgid, "SIGKILL");
      }
    }
  }

  // -- commands -------------------------------------------------------------

  signalGroup(pgid: number, signal: Deno.Signal): boolean {
    if (pgid <= 1) return false;
    try {
      Deno.kill(-pgid, signal);
      return true;
    } catch {
      return false;
    }
  }

  groupAlive(pgid: number): boolean {
    return pgid > 1 && liveGroupMembers(pgid).length > 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const command of this.commands.values()) {
      if (command.record.running) {
        this.signalGroup(command.record.pgid, "SIGKILL");
      }
    }
    await Promise.all(
      [...this.commands.values()].map((command) => command.finished),
    );
    for (const stream of this.streams) stream.close();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}

// ---------------------------------------------------------------------------
// Lifecycle routes

async function readJson(
  request: Request,
): Promise<{ ok: true; value: unknown } | { ok: false; error: string }> {
  const text = await request.text();
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, error: goJsonError(text, error) };
  }
}

/** encoding/json's words for a body that does not decode (as near as JS tells). */
function goJsonError(text: string, error: unknown): string {
  if (text.trim() === "") return "EOF";
  const message = errorText(error);
  if (/end of JSON input|Unterminated/i.test(message)) return "unexpected EOF";
  const position = /position (\d+)/.exec(message);
  const at = position === null ? undefined : text[Number(position[1])];
  return at === undefined
    ? "unexpected EOF"
    : `invalid character '${at}' looking for beginning of value`;
}

/** The JSON type of a value, in encoding/json's words. */
function goJsonType(value: unknown): string {
  if (typeof value === "boolean") return "bool";
  if (Array.isArray(value)) return "array";
  if (value === null) return "null";
  return typeof value;
}

/** A Deno file-system error in Go's words: `open /p: no such file or directory`. */
function goFsError(op: string, path: string, error: unknown): string {
  const reason = error instanceof Deno.errors.NotFound
    ? "no such file or directory"
    : error instanceof Deno.errors.PermissionDenied
    ? "permission denied"
    : error instanceof Deno.errors.NotADirectory
    ? "not a directory"
    : error instanceof Deno.errors.IsADirectory
    ? "is a directory"
    : error instanceof Deno.errors.AlreadyExists
    ? "file exists"
    : errorText(error).replace(/ \(os error \d+\).*$/, "").replace(
      /^./,
      (c) => c.toLowerCase(),
    );
  return `${op} ${path}: ${reason}`;
}

async function lifecycle(
  state: OpenSandboxState,
  request: Request,
  route: string,
): Promise<Response> {
  const url = new URL(request.url);
  if (route === "/health") return pyJson(200, { status: "healthy" });
  const apiKey = state.options.apiKey;
  if (apiKey !== undefined && apiKey !== "") {
    const given = request.headers.get("open-sandbox-api-key");
    if (given === null || given === "") {
      return lifecycleError(
        401,
        "MISSING_API_KEY",
        "Authentication credentials are missing. Provide API key via OPEN-SANDBOX-API-KEY header.",
      );
    }
    if (given !== apiKey) {
      return lifecycleError(
        401,
        "INVALID_API_KEY",
        "Authentication credentials are invalid. Check your API key and try again.",
      );
    }
  }
  state.sweep();
  const method = request.method;
  const parts = route.split("/").slice(2); // ["sandboxes", id, ...]
  const notFound = () =>
    lifecycleError(404, "GENERAL::UNKNOWN_ERROR", "Not Found");
  const notAllowed = () =>
    lifecycleError(405, "GENERAL::UNKNOWN_ERROR", "Method Not Allowed");
  if (parts[0] !== "sandboxes") return notFound();
  if (parts.length === 1) {
    if (method === "POST") return await createSandbox(state, request);
    if (method === "GET") return listSandboxes(state, url);
    return notAllowed();
  }
  const id = decodeURIComponent(parts[1] ?? "");
  const sandbox = state.sandboxes.get(id);
  const missing = () =>
    lifecycleError(
      404,
      "DOCKER::SANDBOX_NOT_FOUND",
      `Sandbox ${id} not found.`,
    );
  if (parts.length === 2) {
    if (method === "GET") {
      return sandbox === undefined
        ? missing()
        : pyJson(200, state.sandboxJson(sandbox, true));
    }
    if (method === "DELETE") {
      if (sandbox === undefined) return missing();
      state.removeSandbox(id);
      return new Response(null, {
        status: 204,
        headers: { "x-request-id": crypto.randomUUID() },
      });
    }
    return notAllowed();
  }
  const action = parts[2];
  if (action === "endpoints" && parts.length === 4) {
    if (method !== "GET") return notAllowed();
    const port = Number(parts[3]);
    if (!/^\d+$/.test(parts[3] ?? "") || port < 1 || port > 65535) {
      return lifecycleError(
        400,
        "GENERAL::INVALID_REQUEST",
        `Invalid port: ${parts[3]}`,
      );
    }
    if (sandbox === undefined) return missing();
    const headers = state.options.endpointHeaders;
    return pyJson(200, {
      endpoint: endpointOf(state, id, port),
      ...(headers === undefined || Object.keys(headers).length === 0
        ? {}
        : { headers }),
    });
  }
  if (parts.length !== 3) return notFound();
  if (action === "renew-expiration") {
    if (method !== "POST") return notAllowed();
    if (sandbox === undefined) return missing();
    const body = await readJson(request);
    const raw = body.ok && isObject(body.value)
      ? body.value.expiresAt
      : undefined;
    const at = typeof raw === "string" ? new Date(raw) : undefined;
    if (at === undefined || Number.isNaN(at.getTime())) {
      return lifecycleError(
        400,
        "GENERAL::INVALID_REQUEST",
        "expiresAt must be an RFC 3339 date-time",
      );
    }
    if (at.getTime() <= Date.now()) {
      return lifecycleError(
        400,
        "GENERAL::INVALID_REQUEST",
        "expiresAt must be in the future",
      );
    }
    sandbox.expiresAt = at;
    return pyJson(200, { expiresAt: at.toISOString() });
  }
  if (action === "pause" || action === "resume") {
    if (method !== "POST") return notAllowed();
    if (sandbox === undefined) return missing();
    sandbox.paused = action === "pause";
    return new Response(null, { status: 202 });
  }
  if (action === "metadata") {
    if (method !== "PATCH") return notAllowed();
    if (sandbox === undefined) return missing();
    const body = await readJson(request);
    if (!body.ok || !isObject(body.value)) {
      return lifecycleError(
        400,
        "GENERAL::INVALID_REQUEST",
        "The body must be a JSON object",
      );
    }
    for (const [key, value] of Object.entries(body.value)) {
      if (value === null) delete sandbox.metadata[key];
      else sandbox.metadata[key] = String(value);
    }
    return pyJson(200, state.sandboxJson(sandbox, true));
  }
  return notFound();
}

function endpointOf(state: OpenSandboxState, id: string, port: number): string {
  const template = state.options.endpointPath ?? "/sandboxes/{id}/port/{port}";
  return state.host +
    template.replaceAll("{id}", encodeURIComponent(id)).replaceAll(
      "{port}",
      String(port),
    );
}

async function createSandbox(
  state: OpenSandboxState,
  request: Request,
): Promise<Response> {
  const body = await readJson(request);
  if (!body.ok || !isObject(body.value)) {
    return lifecycleError(
      400,
      "GENERAL::INVALID_REQUEST",
      "The body must be a JSON object",
    );
  }
  const value = body.value;
  const invalid = (message: string) =>
    lifecycleError(400, "GENERAL::INVALID_REQUEST", message);
  const hasImage = value.image !== undefined && value.image !== null;
  const hasSnapshot = value.snapshotId !== undefined &&
    value.snapshotId !== null;
  if (hasImage === hasSnapshot) {
    return invalid("Exactly one of image or snapshotId must be provided");
  }
  if (
    hasImage &&
    (!isObject(value.image) || typeof value.image.uri !== "string" ||
      value.image.uri === "")
  ) {
    return invalid("image.uri is required");
  }
  if (
    hasImage &&
    (!Array.isArray(value.entrypoint) || value.entrypoint.length === 0)
  ) {
    return invalid("entrypoint is required when image is provided");
  }
  if (
    value.timeout !== undefined && value.timeout !== null &&
    (typeof value.timeout !== "number" || !Number.isInteger(value.timeout) ||
      value.timeout < 60)
  ) {
    return invalid("timeout must be an integer of at least 60 seconds");
  }
  for (const field of ["metadata", "env", "resourceLimits"]) {
    const map = value[field];
    if (map !== undefined && map !== null) {
      if (
        !isObject(map) ||
        Object.values(map).some((entry) => typeof entry !== "string")
      ) {
        return invalid(`${field} must be an object of strings`);
      }
    }
  }
  const sandbox = state.createSandbox(value);
  return pyJson(202, state.sandboxJson(sandbox, false), {
    "x-request-id": crypto.randomUUID(),
    location: `/v1/sandboxes/${sandbox.id}`,
  });
}

function listSandboxes(state: OpenSandboxState, url: URL): Response {
  const states = url.searchParams.getAll("state");
  const metadata = url.searchParams.get("metadata");
  const wanted = metadata === null ? [] : [...new URLSearchParams(metadata)];
  const page = Math.max(1, Number(url.searchParams.get("page") ?? 1) || 1);
  const pageSize = Math.max(
    1,
    Number(url.searchParams.get("pageSize") ?? 20) || 20,
  );
  const matching = [...state.sandboxes.values()]
    .filter((sandbox) =>
      (states.length === 0 ||
        states.some((s) =>
          s.toLowerCase() === state.state(sandbox).toLowerCase()
        )) &&
      wanted.every(([key, value]) => sandbox.metadata[key] === value)
    )
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  const totalPages = Math.ceil(matching.length / pageSize);
  return pyJson(200, {
    items: matching.slice((page - 1) * pageSize, page * pageSize).map((
      sandbox,
    ) => state.sandboxJson(sandbox, true)),
    pagination: {
      page,
      pageSize,
      totalItems: matching.length,
      totalPages,
      hasNextPage: page < totalPages,
    },
  });
}

// ---------------------------------------------------------------------------
// execd routes

async function execd(
  state: OpenSandboxState,
  request: Request,
  route: string,
  sandboxId: string | undefined,
): Promise<Response> {
  const token = state.options.execdAccessToken;
  if (token !== undefined && token !== "") {
    if (request.headers.get("x-execd-access-token") !== token) {
      return json(401, {
        error: "Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN",
      });
    }
  }
  const url = new URL(request.url);
  const method = request.method;
  const key = `${method} ${route}`;
  switch (key) {
    case "GET /ping":
      return new Response(null, { status: 200 });
    case "POST /command":
      return await runCommand(state, request, sandboxId);
    case "DELETE /command":
      return await interruptCommand(state, url);
    case "GET /files/info":
      return await filesInfo(state, url);
    case "DELETE /files":
      return await removeFiles(state, url);
    case "POST /files/upload":
      return await upload(state, request);
    case "GET /files/download":
      return await download(state, request, url);
    case "GET /files/search":
      return await searchFiles(state, url);
    case "POST /files/mv":
      return await moveFiles(state, request);
    case "POST /files/permissions":
      return await chmodFiles(state, request);
    case "POST /files/replace":
      return await replaceContent(state, request, url);
    case "GET /directories/list":
      return await listDirectory(state, url);
    case "POST /directories":
      return await makeDirs(state, request);
    case "DELETE /directories":
      return await removeDirs(state, url);
    case "GET /metrics":
      return metrics();
  }
  let match: RegExpExecArray | null;
  if (
    method === "GET" && (match = /^\/command\/status\/([^/]+)$/.exec(route))
  ) {
    return commandStatus(state, decodeURIComponent(match[1]!));
  }
  if (method === "GET" && (match = /^\/command\/([^/]+)\/logs$/.exec(route))) {
    return commandLogs(state, decodeURIComponent(match[1]!), url);
  }
  return notFoundText();
}

function metrics(): Response {
  const memory = Deno.systemMemoryInfo();
  return json(200, {
    cpu_count: navigator.hardwareConcurrency,
    cpu_used_pct: Math.min(
      100,
      Deno.loadavg()[0]! / navigator.hardwareConcurrency * 100,
    ),
    mem_total_mib: memory.total / 1048576,
    mem_used_mib: (memory.total - memory.available) / 1048576,
    timestamp: Date.now(),
  });
}

function invalidBody(message: string): Response {
  return execdError(400, "INVALID_REQUEST_BODY", message);
}

async function runCommand(
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
      env: { ...state.env, ...envs },
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
      if (record.running) state.signalGroup(pgid, "SIGKILL");
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

async function interruptCommand(
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
  if (state.signalGroup(pgid, "SIGTERM") && await waitGone(state.graceMs)) {
    await reaped();
    return new Response(null, { status: 200 });
  }
  state.signalGroup(pgid, "SIGKILL");
  await waitGone(1000);
  await reaped();
  return new Response(null, { status: 200 });
}

function commandStatus(state: OpenSandboxState, id: string): Response {
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

function commandLogs(state: OpenSandboxState, id: string, url: URL): Response {
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

// -- files ---------------------------------------------------------------------

function fileError(error: unknown, op?: string, path?: string): Response {
  const text = op === undefined || path === undefined
    ? errorText(error)
    : goFsError(op, path, error);
  return isNotFound(error)
    ? execdError(404, "FILE_NOT_FOUND", `file not found. ${text}`)
    : execdError(500, "RUNTIME_ERROR", `error accessing file: ${text}`);
}

async function filesInfo(state: OpenSandboxState, url: URL): Promise<Response> {
  const result: Record<string, unknown> = {};
  for (const path of url.searchParams.getAll("path")) {
    let absolute: string;
    try {
      absolute = state.absolute(path);
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error accessing file: invalid path ${path}: ${errorText(error)}`,
      );
    }
    try {
      result[path] = state.fileInfo(absolute, await Deno.lstat(absolute));
    } catch (error) {
      return isNotFound(error)
        ? execdError(
          404,
          "FILE_NOT_FOUND",
          `file not found. file not found: ${path}: lstat ${absolute}: no such file or directory`,
        )
        : fileError(error);
    }
  }
  // Go writes a map's keys in sorted order.
  return json(200, sortedKeys(result));
}

function sortedKeys<T>(map: Record<string, T>): Record<string, T> {
  return Object.fromEntries(
    Object.entries(map).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0),
  );
}

async function removeFiles(
  state: OpenSandboxState,
  url: URL,
): Promise<Response> {
  for (const path of url.searchParams.getAll("path")) {
    const fail = (reason: string) =>
      execdError(
        500,
        "RUNTIME_ERROR",
        `error removing file ${path}. ${reason}`,
      );
    let absolute: string;
    try {
      absolute = state.absolute(path);
    } catch (error) {
      return fail(`invalid path: ${errorText(error)}`);
    }
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(absolute);
    } catch (error) {
      if (isNotFound(error)) continue;
      return fail(errorText(error));
    }
    if (info.isDirectory) return fail(`path is a directory: ${path}`);
    try {
      await Deno.remove(absolute);
    } catch (error) {
      return fail(`failed to remove file: ${errorText(error)}`);
    }
  }
  return new Response(null, { status: 200 });
}

async function upload(
  state: OpenSandboxState,
  request: Request,
): Promise<Response> {
  let form: FormData;
  try {
    form = await request.formData();
  } catch {
    return execdError(400, "INVALID_FILE", "multipart form is empty");
  }
  // Go's multipart form: only parts with a file name are files.
  const metadataParts = form.getAll("metadata").filter((entry): entry is File =>
    entry instanceof File
  );
  const fileParts = form.getAll("file").filter((entry): entry is File =>
    entry instanceof File
  );
  if (metadataParts.length === 0) {
    return execdError(400, "INVALID_FILE_METADATA", "metadata file is missing");
  }
  if (fileParts.length === 0) {
    return execdError(400, "INVALID_FILE_CONTENT", "file is missing");
  }
  if (metadataParts.length !== fileParts.length) {
    return execdError(
      400,
      "INVALID_FILE",
      `metadata and file count mismatch: ${metadataParts.length} vs ${fileParts.length}`,
    );
  }
  for (let i = 0; i < metadataParts.length; i++) {
    let meta: unknown;
    try {
      meta = JSON.parse(await metadataParts[i]!.text());
    } catch (error) {
      return execdError(
        400,
        "INVALID_FILE_METADATA",
        `invalid metadata format. ${errorText(error)}`,
      );
    }
    if (!isObject(meta)) {
      return execdError(
        400,
        "INVALID_FILE_METADATA",
        "invalid metadata format. json: cannot unmarshal into model.FileMetadata",
      );
    }
    const target = typeof meta.path === "string" ? meta.path : "";
    if (target === "") {
      return execdError(400, "INVALID_FILE_METADATA", "metadata path is empty");
    }
    let resolved: string;
    try {
      resolved = hostPath.resolve(state.cwd, state.expand(target));
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error resolving target path ${target}. ${errorText(error)}`,
      );
    }
    const directory = hostPath.dirname(resolved);
    try {
      await Deno.mkdir(directory, { recursive: true, mode: 0o777 });
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error creating target directory ${directory}. ${errorText(error)}`,
      );
    }
    try {
      await Deno.writeFile(resolved, fileParts[i]!.stream(), { mode: 0o777 });
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error opening destination file ${resolved}. ${errorText(error)}`,
      );
    }
    try {
      await state.chmodFile(resolved, meta);
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error chmoding file ${resolved}. ${errorText(error)}`,
      );
    }
  }
  return new Response(null, { status: 200 });
}

function contentDisposition(name: string): string {
  if (![...name].some((c) => c.codePointAt(0)! > 127)) {
    return `attachment; filename="${name}"`;
  }
  const encoded = encodeURIComponent(name).replace(/%2F/gi, "/");
  return `attachment; filename="${encoded}"; filename*=UTF-8''${encoded}`;
}

/** ParseRange of execd: null on a syntax error, else satisfiable ranges. */
function parseRange(
  header: string,
  size: number,
): { start: number; length: number }[] | null {
  if (!header.startsWith("bytes=")) return null;
  const result: { start: number; length: number }[] = [];
  for (const raw of header.slice(6).split(",")) {
    const range = raw.trim();
    if (range === "") continue;
    const dash = range.indexOf("-");
    if (dash < 0) return null;
    const first = range.slice(0, dash).trim();
    const last = range.slice(dash + 1).trim();
    let start: number;
    let length: number;
    if (first === "") {
      if (!/^\d+$/.test(last)) return null;
      const n = Math.min(Number(last), size);
      start = size - n;
      length = size - start;
    } else {
      if (!/^\d+$/.test(first)) return null;
      start = Number(first);
      if (last === "") {
        length = size - start;
      } else {
        if (!/^\d+$/.test(last) || Number(last) < start) return null;
        length = Number(last) - start + 1;
      }
    }
    if (start >= size) continue;
    if (start + length > size) length = size - start;
    result.push({ start, length });
  }
  return result;
}

/** A body that ends before its announced length: the connection closes. */
function shortBody(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (bytes.length > 0) controller.enqueue(bytes);
      controller.close();
    },
  });
}

function fileStream(
  file: Deno.FsFile,
  length: number,
): ReadableStream<Uint8Array> {
  let left = length;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (left <= 0) {
        file.close();
        controller.close();
        return;
      }
      const buffer = new Uint8Array(Math.min(left, 1024 * 1024));
      const read = await file.read(buffer);
      if (read === null || read === 0) {
        file.close();
        controller.close();
        return;
      }
      left -= read;
      controller.enqueue(buffer.subarray(0, read));
    },
    cancel() {
      file.close();
    },
  });
}

async function download(
  state: OpenSandboxState,
  request: Request,
  url: URL,
): Promise<Response> {
  const path = url.searchParams.get("path") ?? "";
  if (path === "") {
    return execdError(400, "MISSING_QUERY", "missing query parameter 'path'");
  }
  let resolved: string;
  try {
    resolved = hostPath.resolve(state.cwd, state.expand(path));
  } catch (error) {
    return execdError(
      500,
      "RUNTIME_ERROR",
      `error resolving file path: ${path}. ${errorText(error)}`,
    );
  }
  let file: Deno.FsFile;
  try {
    file = await Deno.open(resolved, { read: true });
  } catch (error) {
    return fileError(error, "open", resolved);
  }
  let info: Deno.FileInfo;
  try {
    info = await file.stat();
  } catch (error) {
    file.close();
    return execdError(
      500,
      "RUNTIME_ERROR",
      `error getting file stat info: ${resolved}. ${errorText(error)}`,
    );
  }
  if (info.isDirectory) {
    // The real execd opens a folder fine and http.ServeContent answers 200
    // with a Content-Length of the largest int64, then fails reading: a
    // client sees a 200 whose body breaks.
    file.close();
    return new Response(shortBody(new Uint8Array()), {
      status: 200,
      headers: {
        "content-type": "application/octet-stream",
        "content-disposition": contentDisposition(hostPath.basename(resolved)),
        "content-length": "9223372036854775807",
        "accept-ranges": "bytes",
      },
    });
  }
  const size = info.size;
  const headers = new Headers({
    "content-type": "application/octet-stream",
    "content-disposition": contentDisposition(hostPath.basename(resolved)),
    "content-length": String(size),
  });
  const rangeHeader = request.headers.get("range") ?? "";
  if (rangeHeader !== "") {
    const ranges = parseRange(rangeHeader, size);
    if (ranges === null) {
      // The real execd has set Content-Type and Content-Length for the file
      // already; its JSON error goes out under them, so the body is cut
      // short of the announced length (or cut at it) and the connection
      // closes: a client sees a broken body.
      file.close();
      const error = encoder.encode(JSON.stringify({ code: "UNKNOWN" }));
      return new Response(shortBody(error.subarray(0, size)), {
        status: 416,
        headers,
      });
    }
    const range = ranges[0];
    if (range !== undefined) {
      await file.seek(range.start, Deno.SeekMode.Start);
      headers.set(
        "content-range",
        `bytes ${range.start}-${range.start + range.length - 1}/${size}`,
      );
      headers.set("content-length", String(range.length));
      return new Response(fileStream(file, range.length), {
        status: 206,
        headers,
      });
    }
    if (size > 0) {
      // http.ServeContent: no range overlaps the file.
      file.close();
      return new Response("invalid range: failed to overlap\n", {
        status: 416,
        headers: {
          "content-type": "text/plain; charset=utf-8",
          "content-disposition": headers.get("content-disposition")!,
          "x-content-type-options": "nosniff",
          "content-range": `bytes */${size}`,
        },
      });
    }
  }
  headers.set("accept-ranges", "bytes");
  if (info.mtime !== null) {
    headers.set("last-modified", info.mtime.toUTCString());
  }
  // The whole file: Deno streams a file's own readable without copies.
  return new Response(file.readable, { status: 200, headers });
}

async function searchFiles(
  state: OpenSandboxState,
  url: URL,
): Promise<Response> {
  const path = url.searchParams.get("path") ?? "";
  if (path === "") {
    return execdError(400, "MISSING_QUERY", "missing query parameter 'path'");
  }
  let root: string;
  try {
    root = state.absolute(path);
  } catch (error) {
    return execdError(
      500,
      "RUNTIME_ERROR",
      `error converting path ${path} to absolute. ${errorText(error)}`,
    );
  }
  try {
    await Deno.stat(root);
  } catch (error) {
    return fileError(error, "stat", root);
  }
  const pattern = url.searchParams.get("pattern") || "**";
  let matcher: RegExp;
  try {
    matcher = globToRegExp(pattern);
  } catch (error) {
    return execdError(
      500,
      "RUNTIME_ERROR",
      `error searching files. invalid pattern ${pattern}: ${errorText(error)}`,
    );
  }
  const files: Record<string, unknown>[] = [];
  const walk = async (current: string, info: Deno.FileInfo): Promise<void> => {
    if (info.isDirectory) {
      let names: string[];
      try {
        names = [];
        for await (const entry of Deno.readDir(current)) names.push(entry.name);
      } catch (error) {
        if (isNotFound(error)) return;
        throw error;
      }
      names.sort();
      for (const name of names) {
        const child = hostPath.join(current, name);
        let childInfo: Deno.FileInfo;
        try {
          childInfo = await Deno.lstat(child);
        } catch (error) {
          if (isNotFound(error)) continue;
          throw error;
        }
        await walk(child, childInfo);
      }
      return;
    }
    if (matcher.test(hostPath.basename(current))) {
      files.push(state.fileInfo(current, info));
    }
  };
  try {
    await walk(root, await Deno.lstat(root));
  } catch (error) {
    return execdError(
      500,
      "RUNTIME_ERROR",
      `error searching files. ${errorText(error)}`,
    );
  }
  return json(200, files);
}

async function parseBody(
  request: Request,
): Promise<{ ok: true; value: unknown } | { ok: false; response: Response }> {
  const body = await readJson(request);
  if (!body.ok) {
    return {
      ok: false,
      response: invalidBody(
        `error parsing request, MAYBE invalid body format. ${body.error}`,
      ),
    };
  }
  return body;
}

async function moveFiles(
  state: OpenSandboxState,
  request: Request,
): Promise<Response> {
  const body = await parseBody(request);
  if (!body.ok) return body.response;
  if (!Array.isArray(body.value)) {
    return invalidBody(
      "error parsing request, MAYBE invalid body format. json: cannot unmarshal object into Go value of type []model.RenameFileItem",
    );
  }
  for (const item of body.value) {
    if (!isObject(item)) continue;
    try {
      const src = state.absolute(String(item.src ?? ""));
      const dest = state.absolute(String(item.dest ?? ""));
      try {
        await Deno.stat(src);
      } catch (error) {
        if (isNotFound(error)) {
          throw new Deno.errors.NotFound(
            `source path not found: ${item.src}: stat ${src}: no such file or directory`,
          );
        }
      }
      await Deno.mkdir(hostPath.dirname(dest), {
        recursive: true,
        mode: 0o755,
      });
      let exists = true;
      try {
        await Deno.stat(dest);
      } catch {
        exists = false;
      }
      if (exists) {
        throw new Error(`destination path already exists: ${item.dest}`);
      }
      await Deno.rename(src, dest);
    } catch (error) {
      return fileError(error);
    }
  }
  return new Response(null, { status: 200 });
}

async function chmodFiles(
  state: OpenSandboxState,
  request: Request,
): Promise<Response> {
  const body = await parseBody(request);
  if (!body.ok) return body.response;
  if (!isObject(body.value)) {
    return invalidBody(
      "error parsing request, MAYBE invalid body format. json: cannot unmarshal into Go value of type map[string]model.Permission",
    );
  }
  for (const [path, permission] of Object.entries(body.value)) {
    try {
      await state.chmodFile(
        state.absolute(path),
        isObject(permission) ? permission : {},
      );
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error changing permissions for ${path}. ${errorText(error)}`,
      );
    }
  }
  return new Response(null, { status: 200 });
}

async function replaceContent(
  state: OpenSandboxState,
  request: Request,
  url: URL,
): Promise<Response> {
  const verbose = url.searchParams.get("verbose") === "true";
  const body = await parseBody(request);
  if (!body.ok) return body.response;
  if (!isObject(body.value)) {
    return invalidBody(
      "error parsing request, MAYBE invalid body format. json: cannot unmarshal into Go value of type map[string]model.ReplaceFileContentItem",
    );
  }
  const results: Record<string, { replacedCount: number }> = {};
  for (const [path, item] of Object.entries(body.value)) {
    const old = isObject(item) && typeof item.old === "string" ? item.old : "";
    const replacement = isObject(item) && typeof item.new === "string"
      ? item.new
      : "";
    try {
      const absolute = state.absolute(path);
      try {
        await Deno.stat(absolute);
      } catch (error) {
        return fileError(error, "stat", absolute);
      }
      const content = await Deno.readTextFile(absolute);
      if (old === "") return invalidBody("old content must not be empty");
      await Deno.writeTextFile(absolute, content.replaceAll(old, replacement));
      results[path] = { replacedCount: content.split(old).length - 1 };
    } catch (error) {
      return fileError(error);
    }
  }
  return verbose
    ? json(200, sortedKeys(results))
    : new Response(null, { status: 200 });
}

async function listDirectory(
  state: OpenSandboxState,
  url: URL,
): Promise<Response> {
  const raw = url.searchParams.get("path") ?? "";
  if (raw === "") {
    return execdError(400, "MISSING_QUERY", "missing query parameter 'path'");
  }
  let depth = 1;
  const rawDepth = url.searchParams.get("depth") ?? "";
  if (rawDepth !== "") {
    if (!/^[+-]?\d+$/.test(rawDepth) || Number(rawDepth) < 0) {
      return invalidBody(`invalid query parameter 'depth': ${rawDepth}`);
    }
    depth = Number(rawDepth);
  }
  let root: string;
  try {
    root = state.absolute(raw);
  } catch (error) {
    return execdError(
      500,
      "RUNTIME_ERROR",
      `error converting path ${raw} to absolute. ${errorText(error)}`,
    );
  }
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(root);
  } catch (error) {
    return fileError(error, "lstat", root);
  }
  if (info.isSymlink) {
    return invalidBody(
      `path is a symbolic link, refusing to traverse: ${root}`,
    );
  }
  if (!info.isDirectory) return invalidBody(`path is not a directory: ${root}`);
  const entries: Record<string, unknown>[] = [];
  const walk = async (directory: string, level: number): Promise<void> => {
    const names: string[] = [];
    for await (const entry of Deno.readDir(directory)) names.push(entry.name);
    names.sort();
    for (const name of names) {
      const child = hostPath.join(directory, name);
      const childInfo = await Deno.lstat(child);
      entries.push(state.fileInfo(child, childInfo));
      if (childInfo.isDirectory && level + 1 < depth) {
        await walk(child, level + 1);
      }
    }
  };
  if (depth > 0) {
    try {
      await walk(root, 0);
    } catch (error) {
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error listing directory ${root}. ${errorText(error)}`,
      );
    }
  }
  return json(200, entries);
}

async function makeDirs(
  state: OpenSandboxState,
  request: Request,
): Promise<Response> {
  const body = await parseBody(request);
  if (!body.ok) return body.response;
  if (!isObject(body.value)) {
    return invalidBody(
      "error parsing request, MAYBE invalid body format. json: cannot unmarshal into Go value of type map[string]model.Permission",
    );
  }
  for (const [path, permission] of Object.entries(body.value)) {
    try {
      const absolute = state.absolute(path);
      await Deno.mkdir(absolute, { recursive: true, mode: 0o777 });
      await state.chmodFile(absolute, isObject(permission) ? permission : {});
    } catch (error) {
      return fileError(error);
    }
  }
  return new Response(null, { status: 200 });
}

async function removeDirs(
  state: OpenSandboxState,
  url: URL,
): Promise<Response> {
  for (const path of url.searchParams.getAll("path")) {
    try {
      await Deno.remove(state.absolute(path), { recursive: true });
    } catch (error) {
      if (isNotFound(error)) continue;
      return execdError(
        500,
        "RUNTIME_ERROR",
        `error removing directory ${path}. ${errorText(error)}`,
      );
    }
  }
  return new Response(null, { status: 200 });
}

// ---------------------------------------------------------------------------
// Routing and start

interface Route {
  kind: "lifecycle" | "execd" | "other";
  route: string;
  sandboxId?: string;
}

function routePattern(template: string): RegExp {
  let source = "";
  for (const part of template.split(/(\{id\}|\{port\})/)) {
    if (part === "{id}") source += "(?<id>[^/]+)";
    else if (part === "{port}") source += "(?<port>\\d+)";
    else source += part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${source}(?<rest>/.*)?$`);
}

/**
 * Starts the server on loopback.
 *
 * @param options API key, provisioning, endpoint shape, timings, faults.
 * @returns The running server.
 *
 * @example Create a sandbox and run a command in it
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { startOpenSandboxServer } from "./opensandbox.ts";
 *
 * await using server = await startOpenSandboxServer({ apiKey: "k", streamLingerMs: 0 });
 * const created = await fetch(`${server.url}/sandboxes`, {
 *   method: "POST",
 *   headers: { "OPEN-SANDBOX-API-KEY": "k", "content-type": "application/json" },
 *   body: JSON.stringify({ image: { uri: "ubuntu" }, entrypoint: ["bash"], resourceLimits: {} }),
 * });
 * assertEquals(created.status, 202);
 * const { id } = await created.json();
 * const answer = await fetch(`${server.execdUrl(id)}/command`, {
 *   method: "POST",
 *   body: JSON.stringify({ command: "echo hi; exit 3" }),
 * });
 * const events = (await answer.text()).split("\n\n").filter(Boolean).map((line) => JSON.parse(line));
 * assertEquals(events.find((event) => event.type === "stdout").text, "hi");
 * assertEquals(events.at(-1).error.evalue, "3");
 * ```
 */
export function startOpenSandboxServer(
  options: OpenSandboxServerOptions = {},
): Promise<OpenSandboxServer> {
  const template = options.endpointPath ?? "/sandboxes/{id}/port/{port}";
  const execdPattern = routePattern(template);
  const routeOf = (request: Request): Route => {
    const path = new URL(request.url).pathname;
    if (path === "/v1" || path.startsWith("/v1/") || path === "/health") {
      return { kind: "lifecycle", route: path };
    }
    const match = execdPattern.exec(path);
    if (match !== null) {
      const id = match.groups?.id;
      return {
        kind: "execd",
        route: match.groups?.rest ?? "/",
        ...(id === undefined ? {} : { sandboxId: decodeURIComponent(id) }),
      };
    }
    return { kind: "other", route: path };
  };
  const faults = options.faults ??
    new FaultInjector({
      routeOf: (request) => ({
        method: request.method,
        path: routeOf(request).route,
      }),
    });
  const state = new OpenSandboxState(options, faults);
  const requests: RequestRecord[] = [];
  const execdHeaders = options.endpointHeaders ?? {};

  const handler = async (request: Request): Promise<Response> => {
    const { kind, route, sandboxId } = routeOf(request);
    if (kind === "lifecycle") return await lifecycle(state, request, route);
    if (kind === "other") return notFoundText();
    for (const [name, value] of Object.entries(execdHeaders)) {
      if (request.headers.get(name) !== value) {
        return json(401, {
          code: "UNAUTHORIZED",
          message: `Missing or invalid endpoint header ${name}`,
        });
      }
    }
    if (sandboxId !== undefined) {
      const sandbox = state.sandboxes.get(sandboxId);
      if (sandbox === undefined) {
        return json(404, {
          code: "DOCKER::SANDBOX_NOT_FOUND",
          message: `Sandbox ${sandboxId} not found.`,
        });
      }
      if (state.state(sandbox) !== "Running") {
        return json(503, {
          code: "SANDBOX_NOT_READY",
          message: `Sandbox ${sandboxId} is ${state.state(sandbox)}`,
        });
      }
    }
    return await execd(state, request, route, sandboxId);
  };
  const logged = faults.wrap(handler);
  const listener = serveWithFaults({
    handler: async (request) => {
      const { kind, route } = routeOf(request);
      const url = new URL(request.url);
      const record: RequestRecord = {
        method: request.method,
        path: url.pathname,
        route,
        kind,
        query: url.search,
        headers: Object.fromEntries(request.headers),
        status: 0,
        at: Date.now(),
      };
      requests.push(record);
      try {
        const response = await logged(request);
        record.status = response.status;
        return response;
      } catch (error) {
        record.status = 500;
        return execdError(500, "RUNTIME_ERROR", errorText(error));
      }
    },
    faults,
    port: options.port ?? 0,
    hostname: options.hostname ?? "127.0.0.1",
    control: options.control ?? false,
  });
  state.host = listener.url.replace(/^http:\/\//, "");
  const origin = listener.url;
  let closing: Promise<void> | undefined;
  const server: OpenSandboxServer = {
    url: `${origin}/v1`,
    origin,
    port: listener.port,
    apiKey: options.apiKey,
    faults,
    listener,
    sandboxes: state.sandboxes,
    commands: state.records,
    requests,
    count(method, route) {
      const pattern = route === undefined
        ? undefined
        : new RegExp(`^${
          route.split("*").map((part) =>
            part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
          ).join(".*")
        }$`);
      return requests.filter((record) =>
        (method === "*" || record.method === method.toUpperCase()) &&
        (pattern === undefined || pattern.test(record.route))
      ).length;
    },
    endpoint: (id, port = EXECD_PORT) => endpointOf(state, id, port),
    execdUrl: (id, port = EXECD_PORT) =>
      `http://${endpointOf(state, id, port)}`,
    execdHeaders,
    createSandbox: (
      request = { image: { uri: "ubuntu" }, entrypoint: ["bash"] },
    ) => state.createSandbox(request),
    commandAlive(id) {
      const command = state.commands.get(id);
      return command !== undefined && state.groupAlive(command.record.pgid);
    },
    close() {
      closing ??= (async () => {
        await state.close();
        await listener.close();
      })();
      return closing;
    },
    [Symbol.asyncDispose]() {
      return server.close();
    },
  };
  return Promise.resolve(server);
}

// ---------------------------------------------------------------------------
// By hand

function parseArgs(
  args: readonly string[],
): OpenSandboxServerOptions & { faultSpecs: string[] } {
  const options: OpenSandboxServerOptions & { faultSpecs: string[] } = {
    faultSpecs: [],
    control: true,
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [flag, inline] = arg.includes("=")
      ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)]
      : [arg, undefined];
    const value = (): string => {
      const next = inline ?? args[++i];
      if (next === undefined) {
        throw new TypeError(`Cannot read "${flag}": a value is missing`);
      }
      return next;
    };
    const number = (): number => {
      const text = value();
      if (!/^\d+$/.test(text)) {
        throw new TypeError(
          `Cannot read "${flag}": "${text}" is not a whole number`,
        );
      }
      return Number(text);
    };
    switch (flag) {
      case "--port":
        options.port = number();
        break;
      case "--hostname":
        options.hostname = value();
        break;
      case "--api-key":
        options.apiKey = value();
        break;
      case "--kubernetes":
        options.provisioning = "kubernetes";
        break;
      case "--pending-ms":
        options.pendingMs = number();
        break;
      case "--endpoint-path":
        options.endpointPath = value();
        break;
      case "--linger-ms":
        options.streamLingerMs = number();
        break;
      case "--cwd":
        options.cwd = value();
        break;
      case "--fault":
        options.faultSpecs.push(value());
        break;
      default:
        throw new TypeError(
          `Cannot read "${arg}": usage: opensandbox.ts [--port N] [--api-key KEY] [--kubernetes] [--pending-ms MS] [--endpoint-path /proxy/{port}] [--linger-ms MS] [--cwd DIR] [--fault "METHOD PATH KIND[:ARG] [xN]"]...`,
        );
    }
  }
  return options;
}

if (import.meta.main) {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(Deno.args);
    for (const spec of parsed.faultSpecs) parseFaultSpec(spec);
  } catch (error) {
    console.error(errorText(error));
    Deno.exit(2);
  }
  const { faultSpecs, ...options } = parsed;
  const server = await startOpenSandboxServer(options);
  for (const spec of faultSpecs) server.faults.add(parseFaultSpec(spec));
  console.log(server.url);
  console.error(
    `OpenSandbox test server: lifecycle ${server.url}, execd at http://${
      server.endpoint("<id>")
    }${
      server.apiKey === undefined ? "" : ", API key required"
    }; faults: ${server.origin}/__faults`,
  );
  const stop = () => {
    server.close().finally(() => Deno.exit(0));
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}
