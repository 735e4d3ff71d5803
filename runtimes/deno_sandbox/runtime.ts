/**
 * The Deno Sandbox runtime: skills uploaded into a Deno Sandbox (Deno
 * Deploy) and commands run there, over the service's own transport: its
 * WebSocket JSON-RPC for the sandbox, `fetch` for its HTTP calls.
 *
 * @module
 */
import {
  EgressPolicy,
  type NetworkPolicy,
  type SecretsOption,
} from "../../network/policy.ts";
import type { RemoteSession } from "../remote/runtime.ts";
import {
  type SandboxKindOptions,
  type SandboxService,
  SandboxServiceRuntime,
  type ServiceCreateOptions,
  type ServiceSandbox,
} from "../remote/sandbox_service.ts";
import {
  type RemoteCommandEvent,
  type RemoteCommandKind,
  type RemoteCommandStart,
  runRemoteCommand,
} from "../remote/command.ts";
import {
  eachConcurrently,
  helperShell,
  shellList,
} from "../remote/shell_files.ts";
import type { HttpClient } from "../remote/http.ts";
import { sendCall } from "../remote/service_calls.ts";
import { serviceClient } from "../remote/service_answers.ts";
import type { RemoteUploadFile } from "../remote/fs.ts";
import type { FileInfo } from "../types.ts";
import { SandboxSocket } from "./rpc.ts";

/**
 * Options of {@linkcode DenoSandboxSkillRuntime}. Defaults: `cwd`
 * `/home/app`, `skillsRoot` `/home/app/skills`, `conversationsRoot`
 * `/home/app/conversations`; `sandboxId` (`sbx_...`) names the sandbox;
 * `renewIntervalMs` (half the lifetime) paces the moves of its lifetime.
 */
export interface DenoSandboxSkillRuntimeOptions extends SandboxKindOptions {
  /** The access token (`DENO_DEPLOY_TOKEN`, `ddo_...`); never shown in errors. */
  readonly token?: string;
  /** The organization, for a token that is not an organization's (`X-Deno-Org`). */
  readonly org?: string;
  /** The sandbox endpoint. Default `https://ord.sandbox-api.deno.net`. */
  readonly baseUrl?: string;
  /** The console API (where sandboxes are listed). Default `https://console.deno.com`. */
  readonly consoleUrl?: string;
  /** Memory of a sandbox the runtime creates, in MiB (768..4096). Default 1280. */
  readonly memoryMb?: number;
  /** The sandbox's lifetime in seconds, moved on while the runtime is used. Default 600. */
  readonly timeoutSeconds?: number;
  /**
   * The egress of a sandbox the runtime creates, as the service's allowlist
   * (`allow_net`; a name without a port is sent for ports 80 and 443). A deny
   * pattern is refused unless no allowed name reaches it. Not with `sandboxId`.
   */
  readonly network?: NetworkPolicy;
  /**
   * Secrets the service injects itself (its host-scoped `secrets`): the
   * sandbox sees a placeholder, HTTPS requests to the hosts carry the value.
   * Not with `sandboxId`.
   */
  readonly secrets?: SecretsOption;
}

/** A Deno Sandbox as the console lists it. */
export interface DenoSandbox extends ServiceSandbox {
  /** `running` or `stopped`. */
  readonly status?: string;
  /** Its labels. */
  readonly labels?: Readonly<Record<string, string>>;
}

/**
 * The Deno Sandbox runtime (`name: "deno-sandbox"`).
 *
 * **Plain**: on first real use it creates a sandbox (labelled with the
 * runtime's metadata) or attaches to `sandboxId`; `close()` deletes only a
 * sandbox it created. **Conversation** (`conversationId`): the sandbox is
 * labelled with the conversation's key and recorded in the store; the next
 * runtime on the conversation attaches to it. Sandboxes are created with a
 * lifetime (`stop_at_ms`), moved on while used, so they outlive the
 * connection.
 *
 * Commands are spawned through the sandbox's WebSocket (`bash -c` under
 * `timeout`, the server's backstop, in a process group of its own, which the
 * kill reaches); files move as `writeFile` calls and handle reads. No request
 * is made before real use.
 *
 * @example A runtime is made without any request
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { DenoSandboxSkillRuntime } from "@skillrun/skillrun/deno-sandbox";
 * const runtime = new DenoSandboxSkillRuntime({ token: "ddo_k" });
 * assertEquals(runtime.cwd, "/home/app");
 * await runtime.close(); // never used: no request
 * ```
 */
export class DenoSandboxSkillRuntime
  extends SandboxServiceRuntime<DenoSandbox> {
  /**
   * Makes the runtime; makes no request.
   *
   * @param options The service, the sandbox, the mode.
   * @throws {TypeError} A bad conversation id, path or variable, `sandboxId`
   * with a conversation, or `network`/`secrets` with `sandboxId`.
   * @throws {RangeError} A `network` pattern or secret the service cannot take.
   */
  constructor(options: DenoSandboxSkillRuntimeOptions) {
    super({
      ...options,
      cwd: options.cwd ?? "/home/app",
      skillsRoot: options.skillsRoot ?? "/home/app/skills",
      name: "deno-sandbox",
      service: new DenoSandboxService(options, egressConfig(options)),
      conversationsRoot: options.conversationsRoot ??
        "/home/app/conversations",
      timeoutSeconds: options.timeoutSeconds ?? 600,
    });
  }
}

/** `network` and `secrets` as the creation's `allow_net` and `secrets`. */
function egressConfig(
  { network, secrets, sandboxId }: DenoSandboxSkillRuntimeOptions,
): Record<string, unknown> {
  if (network === undefined && secrets === undefined) return {};
  if (sandboxId !== undefined) {
    throw new TypeError(
      "Cannot use network or secrets with sandboxId: an existing sandbox keeps the egress it was created with",
    );
  }
  const policy = EgressPolicy.create({
    ...(network ? { network } : {}),
    ...(secrets ? { secrets } : {}),
  });
  const config: Record<string, unknown> = {};
  if (secrets !== undefined) {
    config.secrets = Object.fromEntries(policy.secrets.map((s) => [s.name, {
      hosts: s.hosts.map((h) => h.source),
      value: s.value,
    }]));
  }
  const denyAll = policy.deny.some((d) => d.host === "*");
  const everything = policy.allow.some((a) =>
    a.host === "*" && typeof a.port !== "number"
  );
  if (network === undefined || (everything && !denyAll)) {
    if (network?.deny?.length) {
      throw new RangeError(
        `Cannot give the network pattern "${
          network.deny[0]
        }" to Deno Sandbox: its allowlist denies nothing, and "*" lets every host out`,
      );
    }
    return config;
  }
  const covers = (w: string, h: string) =>
    w === h || (w.startsWith("*.") && h.endsWith(w.slice(1)));
  for (const d of denyAll ? [] : policy.deny) {
    const reached = policy.allow.find((a) =>
      covers(a.host, d.host) || covers(d.host, a.host)
    );
    if (reached) {
      throw new RangeError(
        `Cannot give the network pattern "${d.source}" to Deno Sandbox: its allowlist denies nothing, and "${reached.source}" is allowed`,
      );
    }
  }
  // A name without a port means ports 80 and 443 here; a secret's hosts are
  // allowed over HTTPS.
  const allow = denyAll ? [] : [
    ...policy.allow.flatMap((a) => {
      if (a.host === "*") {
        throw new RangeError(
          `Cannot give the network pattern "${a.source}" to Deno Sandbox: its allowlist names hosts`,
        );
      }
      const host = a.host.includes(":") ? `[${a.host}]` : a.host;
      return a.port === "*"
        ? [host]
        : a.port === undefined
        ? [`${host}:80`, `${host}:443`]
        : [`${host}:${a.port}`];
    }),
    ...policy.secrets.flatMap((s) => s.hosts.map((h) => `${h.host}:443`)),
  ];
  return { ...config, allow_net: [...new Set(allow)] };
}

/** Deno Sandbox as a sandbox service. */
class DenoSandboxService implements SandboxService<DenoSandbox> {
  readonly serverUrl: string;
  readonly #console: HttpClient;
  readonly #endpoint: HttpClient;
  readonly #headers: Record<string, string>;
  readonly #options: DenoSandboxSkillRuntimeOptions;
  readonly #egress: Record<string, unknown>;
  readonly #sockets = new Map<string, SandboxSocket>();

  constructor(
    options: DenoSandboxSkillRuntimeOptions,
    egress: Record<string, unknown>,
  ) {
    const origin = (url: string) => url.replace(/\/+$/, "");
    this.serverUrl = origin(
      options.baseUrl ?? "https://ord.sandbox-api.deno.net",
    );
    this.#headers = {
      ...(options.token !== undefined
        ? { authorization: `Bearer ${options.token}` }
        : {}),
      ...(options.org !== undefined ? { "x-deno-org": options.org } : {}),
    };
    this.#endpoint = serviceClient(this.serverUrl, this.#headers, options);
    this.#console = serviceClient(
      origin(options.consoleUrl ?? "https://console.deno.com"),
      this.#headers,
      options,
    );
    this.#options = options;
    this.#egress = egress;
  }

  /** Closes every connection (the runtime's `close()`, last). */
  close(): Promise<void> {
    for (const socket of this.#sockets.values()) socket.close();
    this.#sockets.clear();
    return Promise.resolve();
  }

  async create(options: ServiceCreateOptions): Promise<DenoSandbox> {
    // No WebSocket API shows the upgrade's headers (where the id is): a
    // label of its own finds the new sandbox in the console's list.
    const mark = crypto.randomUUID();
    const stopAt = Date.now() + (this.#options.timeoutSeconds ?? 600) * 1000;
    const config = new TextEncoder().encode(JSON.stringify({
      stop_at_ms: stopAt,
      memory_mb: this.#options.memoryMb ?? 1280,
      labels: { ...options.metadata, "skillrun.instance": mark },
      volumes: [],
      ...this.#egress,
    }));
    const socket = await this.#open("/api/v3/sandboxes/create", {
      "x-deno-sandbox-config": config.toBase64(),
    });
    try {
      const [found] = await this.#list({ "skillrun.instance": mark });
      if (!found) {
        throw new Error("Cannot use the new sandbox: the console lists none");
      }
      this.#sockets.set(found.id, socket);
      return { ...found, expiresAt: new Date(stopAt) };
    } catch (error) {
      socket.close();
      throw error;
    }
  }

  async get(id: string, signal?: AbortSignal): Promise<DenoSandbox | null> {
    return (await this.#list({}, signal)).find((b) => b.id === id) ?? null;
  }

  gone(box: DenoSandbox): string | undefined {
    return box.status === "stopped" ? "stopped" : undefined;
  }

  delete(id: string, signal?: AbortSignal): Promise<boolean> {
    this.#sockets.get(id)?.close();
    this.#sockets.delete(id);
    return sendCall(this.#endpoint, {
      method: "DELETE",
      path: `/api/v3/sandbox/${encodeURIComponent(id)}`,
      ...(signal ? { signal } : {}),
    }, [404]);
  }

  async renew(id: string, at: Date, signal?: AbortSignal): Promise<Date> {
    const answer = await this.#endpoint.json<{ stop_at_ms: unknown }>({
      method: "PATCH",
      path: `/api/v3/sandbox/${encodeURIComponent(id)}`,
      json: { stop_at_ms: at.getTime() },
      ...(signal ? { signal } : {}),
    });
    return new Date(Number(answer.stop_at_ms));
  }

  async open(box: DenoSandbox): Promise<RemoteSession> {
    let rpc = this.#sockets.get(box.id);
    if (!rpc || rpc.closed) {
      const path = `/api/v3/sandbox/${encodeURIComponent(box.id)}/connect`;
      this.#sockets.set(box.id, rpc = await this.#open(path, {}));
    }
    const socket = rpc;
    const commands = new SpawnCommands(socket);
    // Helper commands (the list) through the kit's protocol, stderr unread.
    const shell = helperShell((helper) =>
      runRemoteCommand(commands, {
        ...helper,
        command: `(${helper.command}) 2>/dev/null`,
      }), { maxOutputBytes: 256 << 20 });
    const mkdir = (path: string, signal?: AbortSignal) =>
      socket.call("mkdir", { path, options: { recursive: true } }, signal);
    return {
      commands,
      files: {
        stat: (path, signal) =>
          socket.call("lstat", { path }, signal).then(
            (value) => info(path, value),
            (error) => {
              if (error instanceof Deno.errors.NotFound) return null;
              throw error;
            },
          ),
        list: (path, options) =>
          shellList(shell, path, options.depth, options.signal),
        open: (path, options) =>
          download(socket, path, options.offset, options.signal),
        upload: (files, signal) => upload(socket, files, signal),
      },
      makeDirectories: async (paths, signal) => {
        for (const path of paths) await mkdir(path, signal);
      },
      isReady: () => Promise.resolve(!socket.closed),
    };
  }

  /** Opens a WebSocket on the endpoint (with the token). */
  async #open(
    path: string,
    headers: Record<string, string>,
  ): Promise<SandboxSocket> {
    const url = `${this.serverUrl.replace(/^http/, "ws")}${path}`;
    try {
      return await SandboxSocket.open(
        url,
        { ...this.#headers, ...headers },
        this.#options.requestTimeoutMs ?? 60_000,
      );
    } catch (error) {
      // The upgrade's answer cannot be read: the console says why (a bad
      // token) when it can.
      await this.#list({});
      throw error;
    }
  }

  /** The console's sandboxes with these labels. */
  async #list(
    labels: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<DenoSandbox[]> {
    const items = await this.#console.json<unknown>({
      method: "GET",
      path: "/api/v2/sandboxes",
      query: Object.fromEntries(
        Object.entries(labels).map(([k, v]) => [`labels[${k}]`, v]),
      ),
      ...(signal ? { signal } : {}),
    });
    if (!Array.isArray(items)) {
      throw new Error("Cannot use the console's answer: it is not a list");
    }
    // The expiry is not listed: unknown (now), so an attach moves it on.
    return items.filter((item) => typeof item?.id === "string").map((
      item,
    ) => ({ ...item, expiresAt: new Date(), status: String(item.status) }));
  }
}

/** A `stat`/`lstat` answer as facts. */
function info(path: string, value: unknown): FileInfo {
  const s = value as Record<string, unknown>;
  const type = s.isFile
    ? "file"
    : s.isDirectory
    ? "directory"
    : s.isSymlink
    ? "symlink"
    : "other";
  return {
    path,
    name: path.split("/").filter(Boolean).at(-1) ?? "/",
    type,
    size: s.isFile ? Number(s.size) : 0,
    modifiedAt: typeof s.mtime === "string" ? new Date(s.mtime) : null,
    executable: (Number(s.mode) & 0o100) !== 0,
  };
}

/**
 * Commands through `spawn`: `bash -c` under `timeout` (the backstop, and a
 * process group of its own), killed group-wide by a second spawn (TERM, KILL
 * two seconds later); output as the server's streams, the exit from
 * `processWait`.
 */
class SpawnCommands implements RemoteCommandKind {
  readonly backstopMs = 5_000;
  readonly #rpc: SandboxSocket;

  constructor(rpc: SandboxSocket) {
    this.#rpc = rpc;
  }

  async start(request: RemoteCommandStart) {
    const seconds = String(Math.ceil(request.serverTimeoutMs / 1000));
    const spawned = await this.#rpc.call("spawn", {
      command: "timeout",
      // `--`: a command starting with `-` is a command, not an option.
      args: ["-s", "KILL", seconds, "bash", "-c", "--", request.command],
      env: request.env,
      cwd: request.cwd,
      stdout: "piped",
      stderr: "piped",
    }, request.signal) as Record<string, unknown>;
    return {
      id: String(spawned.pid),
      events: this.#events(spawned, request.signal),
    };
  }

  async kill(id: string): Promise<void> {
    const group = `-${Number(id)}`;
    await this.#rpc.call("spawn", {
      command: "bash",
      args: [
        "-c",
        `kill -TERM -- ${group} || exit 0; for i in $(seq 20); do ` +
        `kill -0 -- ${group} || exit 0; sleep 0.1; done; kill -KILL -- ${group}`,
      ],
      stdout: "null",
      stderr: "null",
    });
  }

  /** The output streams and the exit, in order of arrival. */
  async *#events(
    spawned: Record<string, unknown>,
    signal: AbortSignal,
  ): AsyncGenerator<RemoteCommandEvent> {
    const queue: RemoteCommandEvent[] = [];
    let wake = () => {};
    let failed: { error: unknown } | undefined;
    const push = (event: RemoteCommandEvent) => {
      queue.push(event);
      wake();
    };
    const pump = async (id: unknown, type: "stdout" | "stderr") => {
      if (typeof id !== "number") return;
      for await (const data of this.#rpc.read(id, signal)) push({ type, data });
    };
    Promise.all([
      pump(spawned.stdoutStreamId, "stdout"),
      pump(spawned.stderrStreamId, "stderr"),
      this.#rpc.call("processWait", { pid: spawned.pid }, signal),
    ]).then(([, , wait]) => {
      push({ type: "exit", exitCode: Number((wait as { code: number }).code) });
    }, (error) => {
      failed = { error };
      wake();
    });
    while (true) {
      while (queue.length > 0) {
        const event = queue.shift()!;
        yield event;
        if (event.type === "exit") return;
      }
      if (failed) throw failed.error;
      await new Promise<void>((resolve) => wake = resolve);
    }
  }
}

/**
 * The piece read (and streamed up) at a time: its message stays below V8's
 * large-object size, so the garbage goes with the young generation (1 MiB
 * pieces peaked at 158 MiB for a 1 GiB download, these at 88).
 */
const CHUNK = 64 << 10;

/**
 * A file from `offset` as a response: 200 (whole, with its length), 206
 * (`Content-Range`) or 416 past the end; the body reads the file's handle
 * a piece at a time.
 *
 * @param rpc The sandbox's connection.
 * @param path The absolute path.
 * @param offset The first byte.
 * @param signal Stops it.
 * @returns The answer, its body the file.
 */
export async function download(
  rpc: SandboxSocket,
  path: string,
  offset: number,
  signal?: AbortSignal,
): Promise<Response> {
  const { fileHandleId } = await rpc.call("open", {
    path,
    options: { read: true },
  }, signal) as { fileHandleId: number };
  const close = () => rpc.call("fileClose", { fileHandleId }).catch(() => {});
  let size: number;
  try {
    const stat = await rpc.call("fileStat", { fileHandleId }, signal) as {
      size: number;
      isFile: boolean;
    };
    if (!stat.isFile) {
      throw new Deno.errors.IsADirectory(`Cannot read "${path}": not a file`);
    }
    size = stat.size;
    if (offset > 0 && offset >= size) {
      await close();
      const headers = { "content-range": `bytes */${size}` };
      return new Response(null, { status: 416, headers });
    }
    if (offset > 0) {
      await rpc.call("fileSeek", { fileHandleId, offset, whence: 0 }, signal);
    }
  } catch (error) {
    await close();
    throw error;
  }
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { data } = await rpc.call("fileRead", {
          fileHandleId,
          length: CHUNK,
        }, signal) as { data: string | null };
        if (data !== null) {
          return controller.enqueue(Uint8Array.fromBase64(data));
        }
        await close();
        controller.close();
      } catch (error) {
        await close();
        controller.error(error);
      }
    },
    cancel: () => close().then(() => {}),
  }, { highWaterMark: 1 });
  return new Response(body, {
    status: offset > 0 ? 206 : 200,
    headers: offset > 0
      ? { "content-range": `bytes ${offset}-${size - 1}/${size}` }
      : { "content-length": String(size) },
  });
}

/** How many writes are in flight at once. */
const WINDOW = 64;
/** The largest file sent inline (base64 in the request). */
const INLINE = 256 << 10;

/**
 * Files by `writeFile` (the bytes inline, or a stream of this client for a
 * large file on disk), their folders made first; pipelined.
 *
 * @param rpc The sandbox's connection.
 * @param files The files.
 * @param signal Stops it.
 */
export async function upload(
  rpc: SandboxSocket,
  files: readonly RemoteUploadFile[],
  signal?: AbortSignal,
): Promise<void> {
  const folders = new Set(
    files.map((f) => f.remotePath.replace(/\/[^/]*$/, "") || "/"),
  );
  await Promise.all(
    [...folders].map((path) =>
      rpc.call("mkdir", { path, options: { recursive: true } }, signal)
    ),
  );
  await eachConcurrently(files, WINDOW, async (file, signal) => {
    const { remotePath: path, content, mode } = file;
    const options = mode === undefined ? {} : { options: { mode } };
    if (typeof content !== "string" && !(content instanceof Uint8Array)) {
      if (content.size > INLINE) {
        const { streamId, sent } = rpc.send(
          pieces(content.path, content.size),
        );
        await Promise.all([
          sent,
          rpc.call("writeFile", {
            path,
            contentStreamId: streamId,
            ...options,
          }, signal),
        ]);
        return;
      }
    }
    const bytes = typeof content === "string"
      ? new TextEncoder().encode(content)
      : content instanceof Uint8Array
      ? content
      : (await Deno.readFile(content.path)).subarray(0, content.size);
    await rpc.call("writeFile", {
      path,
      content: bytes.toBase64(),
      ...options,
    }, signal);
  }, signal);
}

/** A local file's first `size` bytes in pieces (closed at the end). */
async function* pieces(path: string, size: number): AsyncGenerator<Uint8Array> {
  using file = await Deno.open(path);
  for (let left = size; left > 0;) {
    const buffer = new Uint8Array(Math.min(left, CHUNK));
    const read = await file.read(buffer);
    if (read === null) break;
    left -= read;
    yield buffer.subarray(0, read);
  }
}
