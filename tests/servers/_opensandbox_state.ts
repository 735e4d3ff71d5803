/**
 * The state of the OpenSandbox test server (`opensandbox.ts`): its sandboxes
 * and commands, timers, paths expanded as execd does, file info with user and
 * group names, a command's event stream, and the line splitter that cuts a
 * command's output into events as execd does.
 *
 * @module
 */
import type { SandboxEgressRecord } from "./_opensandbox_egress.ts";
import type {
  CommandRecord,
  OpenSandboxServerOptions,
  SandboxRecord,
} from "./opensandbox.ts";
import type { FaultInjector } from "./_faults.ts";
import { encoder, isObject, signalGroup } from "./_common.ts";
import { goJsonText } from "./_opensandbox_answers.ts";
import { liveGroupMembers } from "../helpers/testing.ts";
import { hostPath } from "../../_internal/std.ts";

function octalDigits(mode: number): number | undefined {
  const text = String(mode);
  return /^[0-7]+$/.test(text) ? parseInt(text, 8) : undefined;
}

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

const SHELL_SPECIAL = new Set("*#$@!?-0123456789");
const ALPHANUMERIC = /^[A-Za-z0-9_]$/;

/** Go's `os.getShellName`: the name after a `$` and how many bytes it took. */
function shellName(s: string): [string, number] {
  if (s[0] === "{") {
    if (s.length > 2 && SHELL_SPECIAL.has(s[1]!) && s[2] === "}") {
      return [s[1]!, 3];
    }
    for (let i = 1; i < s.length; i++) {
      if (s[i] === "}") return i === 1 ? ["", 2] : [s.slice(1, i), i + 1];
    }
    return ["", 1]; // bad syntax: "${" is eaten
  }
  if (SHELL_SPECIAL.has(s[0]!)) return [s[0]!, 1];
  let i = 0;
  while (i < s.length && ALPHANUMERIC.test(s[i]!)) i++;
  return [s.slice(0, i), i];
}

/**
 * The environment a sandbox's execd starts with, taken from this process's:
 * only names a shell could define. `deno task` exports `?` (the status of
 * its previous command, e.g. `?=0` after `a && b`), which no container holds
 * and which `os.Expand` would then put into every path holding `$?`.
 */
function sandboxEnvironment(
  env: Readonly<Record<string, string>>,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(([name]) =>
      /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)
    ),
  );
}

/** Go's `os.Expand`. */
export function goExpand(s: string, mapping: (name: string) => string): string {
  let buffer: string | undefined;
  let i = 0;
  for (let j = 0; j < s.length; j++) {
    if (s[j] === "$" && j + 1 < s.length) {
      buffer ??= "";
      buffer += s.slice(i, j);
      const [name, width] = shellName(s.slice(j + 1));
      if (name === "" && width > 0) {
        // bad syntax: eaten
      } else if (name === "") {
        buffer += "$"; // not followed by a name: kept
      } else {
        buffer += mapping(name);
      }
      j += width;
      i = j + 1;
    }
  }
  return buffer === undefined ? s : buffer + s.slice(i);
}

function fileType(info: Deno.FileInfo): string {
  if (info.isSymlink) return "symlink";
  if (info.isDirectory) return "directory";
  if (info.isFile) return "file";
  return "other";
}

// ---------------------------------------------------------------------------
// Event stream of a command

/** A command's event stream: one JSON event and a blank line per event, as execd writes them. */
export class EventStream {
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
export class LineSplitter {
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

/** A command with its process and, for a background one, its output. */
export interface RunningCommand {
  record: CommandRecord;
  child?: Deno.ChildProcess;
  status?: Promise<Deno.CommandStatus>;
  output: Uint8Array[];
  outputLength: number;
  /** A background command's combined output file. */
  outputFile?: string;
  finished: Promise<void>;
}

/** The server's sandboxes, commands, streams and timers, and its path rules. */
export class OpenSandboxState {
  readonly options: OpenSandboxServerOptions;
  readonly sandboxes = new Map<string, SandboxRecord>();
  readonly commands = new Map<string, RunningCommand>();
  readonly records = new Map<string, CommandRecord>();
  readonly streams = new Set<EventStream>();
  readonly timers = new Set<ReturnType<typeof setTimeout>>();
  readonly names = new Names();
  /** The egress of each sandbox created with a `networkPolicy`. */
  readonly egress = new Map<string, SandboxEgressRecord>();
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly lingerMs: number;
  readonly pingMs: number;
  readonly graceMs: number;
  /** See `OpenSandboxServerOptions.registerDelayMs`. */
  readonly registerDelayMs: number;
  /** How often a command's output files are read, in ms (execd: 100). */
  readonly tailMs: number;
  /** Shared with the per-sandbox views (`forSandbox`), so not private. */
  readonly output: { dir?: Promise<string>; files: Set<string> } = {
    files: new Set(),
  };
  readonly faults: FaultInjector;
  host = "";
  closed = false;

  constructor(options: OpenSandboxServerOptions, faults: FaultInjector) {
    this.options = options;
    this.faults = faults;
    this.env = options.env ?? sandboxEnvironment(Deno.env.toObject());
    this.cwd = options.cwd ?? Deno.cwd();
    this.lingerMs = options.streamLingerMs ?? 1000;
    this.pingMs = options.pingIntervalMs ?? 3000;
    this.graceMs = options.killGraceMs ?? 3000;
    this.registerDelayMs = options.registerDelayMs ?? 0;
    this.tailMs = options.tailIntervalMs ?? 100;
  }

  /**
   * The folder of the commands' output files: `os.TempDir()` as execd uses
   * it (`$TMPDIR`, else `/tmp`), files named `<id>.stdout`, `<id>.stderr`
   * (removed once read to the end, unlike execd, which leaves them).
   */
  outputDir(): Promise<string> {
    this.output.dir ??= Promise.resolve(Deno.env.get("TMPDIR") || "/tmp");
    return this.output.dir;
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

  /**
   * pathutil.ExpandPathWithEnv, as the real execd runs it on every path it
   * receives: a `$NAME`/`${NAME}` whose name is not defined is an error; then
   * Go's `os.Expand` replaces every `$` name, the special ones (`$1`, `$$`,
   * `$#`, `$?`, `${1}`...) included, by its value or `""`; then a leading `~`.
   */
  expand(
    path: string,
    overrides: Readonly<Record<string, string>> = {},
  ): string {
    if (path === "") return "";
    const env = { ...this.env, ...overrides };
    const missing = new Set<string>();
    const pattern =
      /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g;
    for (const match of path.matchAll(pattern)) {
      const name = match[1] ?? match[2]!;
      if (!Object.hasOwn(env, name)) missing.add(name);
    }
    if (missing.size > 0) {
      throw new Error(
        `path references undefined environment variables: ${
          [...missing].sort().join(",")
        }`,
      );
    }
    const expanded = goExpand(
      path,
      (name) => Object.hasOwn(env, name) ? env[name]! : "",
    );
    const home = env.HOME ?? "/";
    if (expanded === "~") return home;
    if (expanded.startsWith("~/")) {
      return hostPath.join(home, expanded.slice(2));
    }
    return expanded;
  }

  /**
   * This state as seen from one sandbox: its creation `env` is part of the
   * environment of execd there (of every command and of path expansion).
   */
  forSandbox(sandboxId: string | undefined): OpenSandboxState {
    const sandbox = sandboxId === undefined
      ? undefined
      : this.sandboxes.get(sandboxId);
    if (sandbox === undefined || Object.keys(sandbox.env).length === 0) {
      return this;
    }
    return Object.create(this, {
      env: { value: { ...this.env, ...sandbox.env } },
    });
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
    this.egress.get(id)?.close();
    this.egress.delete(id);
    for (const command of this.commands.values()) {
      if (command.record.sandboxId === id && command.record.running) {
        signalGroup(command.record.pgid, "SIGKILL");
      }
    }
  }

  // -- commands -------------------------------------------------------------

  groupAlive(pgid: number): boolean {
    return pgid > 1 && liveGroupMembers(pgid).length > 0;
  }

  /**
   * Whether `kill(-pgid, 0)` still succeeds, as execd's interrupt probes it:
   * zombies count (a process orphaned to pid 1 counts until pid 1 reaps it),
   * unless the server was started with `zombies: false`.
   */
  groupObservable(pgid: number): boolean {
    if (pgid <= 1) return false;
    if (this.options.zombies === false) return this.groupAlive(pgid);
    for (const entry of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      let stat: string;
      try {
        stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      } catch {
        continue;
      }
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid) return true;
    }
    return false;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const command of this.commands.values()) {
      if (command.record.running) {
        signalGroup(command.record.pgid, "SIGKILL");
      }
    }
    await Promise.all(
      [...this.commands.values()].map((command) => command.finished),
    );
    for (const stream of this.streams) stream.close();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const egress of this.egress.values()) await egress.close();
    this.egress.clear();
    // Background output files (execd leaves them in /tmp; the tests do not).
    for (const file of this.output.files) {
      await Deno.remove(file).catch(() => {});
    }
    this.output.files.clear();
  }
}
