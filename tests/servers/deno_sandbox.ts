/**
 * A Deno Sandbox server for tests: the sandbox endpoint (the WebSocket
 * JSON-RPC at `/api/v3/sandboxes/create` and `/api/v3/sandbox/{id}/connect`,
 * `PATCH` and `DELETE /api/v3/sandbox/{id}`) and the console's
 * `GET /api/v2/sandboxes` on one origin, in the shapes of the SDK's own
 * schemas and the wire facts of `../shared/specs/` (its README section).
 *
 * Each sandbox has its own file system: `/home/app` (its home, where
 * commands start) and `/tmp` are folders of its own, the rest is the host's,
 * read-only. `spawn` runs the program itself (no shell) for real under
 * bubblewrap with those folders bound in, its output as server streams
 * (`"null"` output goes to `/dev/null`); the pid it answers is the program's
 * own, so a program that leads a process group (`timeout`, `setsid`) is
 * reached inside by `kill -- -pid`. File calls
 * see the same folders, with Deno's fs semantics (errors by constructor
 * name: `NotFound`, `AlreadyExists`, ...). `allow_net` and `secrets` start
 * an egress proxy of the sandbox (commands get `HTTP(S)_PROXY`): hosts
 * outside the list are refused, and a secret's variable holds a placeholder
 * the proxy replaces in requests to its hosts (the value never enters the
 * sandbox); `allow_net: []` gives commands no network at all.
 *
 * Every JSON-RPC request goes through the fault injector as
 * `POST /rpc/<method>` (its params the body): a status fault answers a
 * JSON-RPC error carrying the body, a dropped body closes the connection.
 *
 * Run by hand: `deno run -A tests/servers/deno_sandbox.ts --port 0 --token
 * ddo_...`; prints the origin (both endpoints) as the first line of stdout.
 *
 * @module
 */
import {
  encoder,
  errorText,
  isObject,
  sandboxBwrapArgs,
  splitFlag,
} from "./_common.ts";
import { FaultInjector } from "./_faults.ts";
import { serveWithFaults } from "./_fault_server.ts";
import { EgressPolicy } from "../../network/policy.ts";
import { EgressProxy } from "../../network/proxy.ts";
import { CA_VARIABLES } from "../../network/sandbox.ts";

/** Options of {@linkcode startDenoSandboxServer}. */
export interface DenoSandboxServerOptions {
  /** The token required (`Authorization: Bearer`); none: any. */
  readonly token?: string;
  /** Port; default 0. */
  readonly port?: number;
  /** Host folders bound read-write at the same path in every sandbox. */
  readonly volumes?: readonly string[];
  /** The fault injector. */
  readonly faults?: FaultInjector;
  /** Names the egress proxies resolve to fixed addresses (tests' servers). */
  readonly resolve?: Readonly<Record<string, string>>;
  /** Further roots the egress trusts for the real hosts of secrets. */
  readonly upstreamCaCerts?: readonly string[];
}

/** One JSON-RPC call as the server saw it (for contract checks). */
export interface RpcRecord {
  readonly method: string;
  readonly params: unknown;
  readonly result: unknown;
}

/** One program. */
interface Process {
  readonly child: Deno.ChildProcess;
  /** Its standard error without the pid line. */
  readonly stderr: ReadableStream<Uint8Array>;
  readonly status: Promise<{ code: number; signal: string | null }>;
}

/** One sandbox. */
export interface DenoTestSandbox {
  readonly id: string;
  readonly labels: Record<string, string>;
  readonly config: Record<string, unknown>;
  readonly root: string;
  readonly createdAt: string;
  readonly env: Map<string, string>;
  /** The variables the egress gives (proxy, CA, placeholders). */
  egressEnv: Record<string, string>;
  egress?: EgressProxy;
  /** Placeholders by secret name. */
  readonly placeholders: Record<string, string>;
  status: "running" | "stopped";
  stopAt: number | null;
  stoppedAt: string | null;
  timer?: ReturnType<typeof setTimeout>;
  readonly sockets: Set<WebSocket>;
  readonly processes: Map<number, Process>;
}

/** A running Deno Sandbox test server. */
export interface DenoSandboxServer extends AsyncDisposable {
  /** The origin (the SDK's `sandboxEndpoint` and `apiEndpoint`). */
  readonly url: string;
  /** Sandboxes by id (stopped ones stay, as the console lists them). */
  readonly sandboxes: Map<string, DenoTestSandbox>;
  /** Every HTTP call (`METHOD path`) and RPC (`RPC method`). */
  readonly calls: string[];
  /** Every JSON-RPC call with its params and result. */
  readonly rpc: RpcRecord[];
  /** The fault injector. */
  readonly faults: FaultInjector;
  /** Stops serving, kills every program, removes every sandbox's files. */
  close(): Promise<void>;
}

const HOME = "/home/app";
const ID_CHARS = "0123456789abcdefghjkmnpqrstvwxyz";

function json(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { "content-type": "application/json" },
  });
}

const SIGNALS: Record<number, string> = {
  1: "SIGHUP",
  2: "SIGINT",
  9: "SIGKILL",
  15: "SIGTERM",
};

/** An error as the service serializes it. */
function serialized(error: unknown): Record<string, unknown> {
  const e = error instanceof Error ? error : new Error(String(error));
  const code = (e as { code?: unknown }).code;
  return {
    constructorName: e.name === "Error" ? "Error" : e.name,
    message: e.message,
    code: typeof code === "string" ? code : null,
    stack: null,
    name: e.name,
    cause: null,
    errors: null,
    error: null,
    suppressed: null,
  };
}

function fsError(name: string, code: string, message: string): Error {
  const error = new (Deno.errors as unknown as Record<
    string,
    new (m: string) => Error
  >)[name]!(message);
  Object.assign(error, { code });
  return error;
}

/**
 * Starts the server.
 *
 * @param options Token, port, volumes, faults.
 * @returns The server.
 */
export function startDenoSandboxServer(
  options: DenoSandboxServerOptions = {},
): DenoSandboxServer {
  const sandboxes = new Map<string, DenoTestSandbox>();
  const calls: string[] = [];
  const rpc: RpcRecord[] = [];
  const faults = options.faults ?? new FaultInjector();
  let origin = "";

  /** A sandbox path on the host, or undefined (write) outside its own folders. */
  const hostPath = (box: DenoTestSandbox, path: string, write: boolean) => {
    if (typeof path !== "string" || !path.startsWith("/")) {
      throw new TypeError(`path must be absolute: ${String(path)}`);
    }
    const parts: string[] = [];
    for (const part of path.split("/")) {
      if (part === "" || part === ".") continue;
      if (part === "..") parts.pop();
      else parts.push(part);
    }
    const clean = "/" + parts.join("/");
    for (const volume of options.volumes ?? []) {
      if (clean === volume || clean.startsWith(volume + "/")) return clean;
    }
    for (const [inside, outside] of [[HOME, "home"], ["/tmp", "tmp"]]) {
      if (clean === inside || clean.startsWith(inside + "/")) {
        return `${box.root}/${outside}${clean.slice(inside!.length)}`;
      }
    }
    if (write) {
      throw fsError(
        "PermissionDenied",
        "EACCES",
        `Permission denied (os error 13): ${path}`,
      );
    }
    return clean;
  };
  /** A host path back as the sandbox sees it. */
  const sandboxPath = (box: DenoTestSandbox, host: string) => {
    for (const [inside, outside] of [[HOME, "home"], ["/tmp", "tmp"]]) {
      const prefix = `${box.root}/${outside}`;
      if (host === prefix || host.startsWith(prefix + "/")) {
        return inside + host.slice(prefix.length);
      }
    }
    return host;
  };

  const statJson = (info: Deno.FileInfo) => {
    const iso = (d: Date | null) => (d ?? new Date(0)).toISOString();
    return {
      isFile: info.isFile,
      isDirectory: info.isDirectory,
      isSymlink: info.isSymlink,
      size: info.size,
      mtime: iso(info.mtime),
      atime: iso(info.atime),
      birthtime: iso(info.birthtime),
      ctime: iso(info.ctime),
      mode: info.mode ?? 0,
      dev: info.dev ?? 0,
      ino: info.ino ?? 0,
      nlink: info.nlink ?? 1,
      uid: info.uid ?? 0,
      gid: info.gid ?? 0,
      rdev: info.rdev ?? 0,
      blksize: info.blksize ?? 4096,
      blocks: info.blocks ?? 0,
      isBlockDevice: info.isBlockDevice ?? false,
      isCharDevice: info.isCharDevice ?? false,
      isFifo: info.isFifo ?? false,
      isSocket: info.isSocket ?? false,
    };
  };

  /** Starts a program in the sandbox; resolves once its pid is known. */
  const spawn = async (
    box: DenoTestSandbox,
    params: Record<string, unknown>,
  ): Promise<{ pid: number; process: Process }> => {
    const cwd = typeof params.cwd === "string" ? params.cwd : HOME;
    const cwdHost = hostPath(box, cwd, false);
    const info = await Deno.stat(cwdHost).catch(() => null);
    if (!info?.isDirectory) {
      throw fsError(
        "NotFound",
        "ENOENT",
        `Failed to spawn '${
          String(params.command)
        }': No such file or directory (os error 2)`,
      );
    }
    const env: Record<string, string> = params.clearEnv === true ? {} : {
      PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      HOME,
      USER: "app",
      ...Object.fromEntries(box.env),
      ...box.egressEnv,
    };
    Object.assign(env, isObject(params.env) ? params.env : {});
    const args = Array.isArray(params.args) ? params.args.map(String) : [];
    const allowNet = box.config.allow_net;
    const child = new Deno.Command("setsid", {
      args: [
        "bwrap",
        ...sandboxBwrapArgs({
          root: box.root,
          home: HOME,
          volumes: options.volumes ?? [],
          noNetwork: Array.isArray(allowNet) && allowNet.length === 0,
          cwd,
        }),
        // The program's own pid first on stderr (the server keeps it), then
        // the program itself (same pid); stderr "null" goes to /dev/null.
        "bash",
        "-c",
        'echo "$$" >&2; if [ "$1" = null ]; then exec 2>/dev/null; fi; shift; exec "$@"',
        "bash",
        params.stderr === "piped" ? "piped" : "null",
        String(params.command),
        ...args,
      ],
      clearEnv: true,
      env,
      stdin: "null",
      stdout: params.stdout === "piped" ? "piped" : "null",
      stderr: "piped",
    }).spawn();
    const reader = child.stderr.getReader();
    let head = new Uint8Array();
    let rest: Uint8Array = new Uint8Array();
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      head = new Uint8Array([...head, ...value]);
      const newline = head.indexOf(10);
      if (newline >= 0) {
        rest = head.subarray(newline + 1);
        head = head.subarray(0, newline);
        break;
      }
    }
    const pid = Number(new TextDecoder().decode(head)) || child.pid;
    const stderr = new ReadableStream<Uint8Array>({
      start(controller) {
        if (rest.length > 0) controller.enqueue(rest);
      },
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: () => reader.cancel(),
    });
    const status = child.status.then((s) => {
      const code = s.signal ? 128 + signalNumber(s.signal) : s.code;
      return { code, signal: s.signal ?? SIGNALS[code - 128] ?? null };
    });
    const process: Process = {
      child,
      stderr,
      status,
    };
    box.processes.set(pid, process);
    return { pid, process };
  };

  const stop = async (box: DenoTestSandbox) => {
    if (box.status === "stopped") return;
    box.status = "stopped";
    box.stoppedAt = new Date().toISOString();
    clearTimeout(box.timer);
    for (const [pid, { child }] of box.processes) {
      for (const group of [pid, child.pid]) {
        try {
          Deno.kill(-group, "SIGKILL");
        } catch { /* gone */ }
      }
    }
    await Promise.all([...box.processes.values()].map((p) => p.status));
    box.processes.clear();
    for (const socket of box.sockets) {
      try {
        socket.close(1000, "sandbox stopped");
      } catch { /* closed */ }
    }
    await box.egress?.close();
    await Deno.remove(box.root, { recursive: true }).catch(() => {});
  };

  const schedule = (box: DenoTestSandbox) => {
    clearTimeout(box.timer);
    if (box.stopAt === null) return;
    const wait = Math.min(Math.max(0, box.stopAt - Date.now()), 2 ** 31 - 1);
    box.timer = setTimeout(() => stop(box), wait);
  };

  /** Methods of one connection (its streams, its file handles). */
  const connection = (box: DenoTestSandbox, socket: WebSocket) => {
    let nextStream = 1;
    const handles = new Map<number, Deno.FsFile>();
    let nextHandle = 1;
    const incoming = new Map<
      number,
      { chunks: Uint8Array[]; done: boolean; wake?: () => void }
    >();
    const clientStream = (id: number) => {
      let s = incoming.get(id);
      if (!s) incoming.set(id, s = { chunks: [], done: false });
      return s;
    };
    const notify = (method: string, params: Record<string, unknown>) => {
      if (socket.readyState === WebSocket.OPEN) {
        socket.send(JSON.stringify({ jsonrpc: "2.0", method, params }));
      }
    };
    /** A server stream: `start` now, the bytes once the answer is out. */
    const serverStream = (stream: ReadableStream<Uint8Array>) => {
      const streamId = nextStream++;
      notify("$sandbox.stream.start", { streamId });
      const pump = async () => {
        for await (const chunk of stream) {
          while (socket.bufferedAmount > 8 << 20) {
            await new Promise((r) => setTimeout(r, 5));
          }
          notify("$sandbox.stream.enqueue", {
            streamId,
            data: base64(chunk),
          });
        }
        notify("$sandbox.stream.end", { streamId });
      };
      return { streamId, pump };
    };
    async function* readClient(id: number): AsyncGenerator<Uint8Array> {
      const s = clientStream(id);
      while (true) {
        if (s.chunks.length > 0) yield s.chunks.shift()!;
        else if (s.done) break;
        else await new Promise<void>((r) => s.wake = r);
      }
      incoming.delete(id);
    }
    const later: (() => Promise<void>)[] = [];
    const methods: Record<
      string,
      (p: Record<string, unknown>) => Promise<unknown>
    > = {
      lstat: async (p) =>
        statJson(await Deno.lstat(hostPath(box, p.path as string, false))),
      stat: async (p) =>
        statJson(await Deno.stat(hostPath(box, p.path as string, false))),
      realPath: async (p) =>
        sandboxPath(
          box,
          await Deno.realPath(hostPath(box, p.path as string, false)),
        ),
      readDir: async (p) => {
        const out = [];
        for await (
          const e of Deno.readDir(hostPath(box, p.path as string, false))
        ) {
          out.push({
            name: e.name,
            isFile: e.isFile,
            isDirectory: e.isDirectory,
            isSymlink: e.isSymlink,
          });
        }
        return out;
      },
      readFile: async (p) =>
        base64(await Deno.readFile(hostPath(box, p.path as string, false))),
      readTextFile: (p) =>
        Deno.readTextFile(hostPath(box, p.path as string, false)),
      writeFile: async (p) => {
        const host = hostPath(box, p.path as string, true);
        const o = isObject(p.options) ? p.options : {};
        const data = typeof p.contentStreamId === "number"
          ? ReadableStream.from(readClient(p.contentStreamId))
          : decode64(String(p.content ?? ""));
        await Deno.writeFile(host, data, {
          ...(o.append === true ? { append: true } : {}),
          ...(o.create === false ? { create: false } : {}),
          ...(o.createNew === true ? { createNew: true } : {}),
          ...(typeof o.mode === "number" ? { mode: o.mode } : {}),
        });
        return null;
      },
      writeTextFile: async (p) => {
        await Deno.writeTextFile(
          hostPath(box, p.path as string, true),
          String(p.content),
        );
        return null;
      },
      mkdir: async (p) => {
        const o = isObject(p.options) ? p.options : {};
        await Deno.mkdir(hostPath(box, p.path as string, true), {
          recursive: o.recursive === true,
          ...(typeof o.mode === "number" ? { mode: o.mode } : {}),
        });
        return null;
      },
      remove: async (p) => {
        const o = isObject(p.options) ? p.options : {};
        await Deno.remove(hostPath(box, p.path as string, true), {
          recursive: o.recursive === true,
        });
        return null;
      },
      rename: async (p) => {
        await Deno.rename(
          hostPath(box, p.oldPath as string, true),
          hostPath(box, p.newPath as string, true),
        );
        return null;
      },
      chmod: async (p) => {
        await Deno.chmod(hostPath(box, p.path as string, true), Number(p.mode));
        return null;
      },
      open: async (p) => {
        const o = isObject(p.options) ? p.options : { read: true };
        const write = o.write === true || o.append === true;
        const file = await Deno.open(hostPath(box, p.path as string, write), {
          read: o.read !== false,
          write: o.write === true,
          append: o.append === true,
          truncate: o.truncate === true,
          create: o.create === true,
          createNew: o.createNew === true,
        });
        const id = nextHandle++;
        handles.set(id, file);
        return { fileHandleId: id };
      },
      fileRead: async (p) => {
        const file = handle(p);
        const buffer = new Uint8Array(Math.max(0, Number(p.length)));
        const n = await file.read(buffer);
        return { data: n === null ? null : base64(buffer.subarray(0, n)) };
      },
      fileWrite: async (p) => ({
        bytesWritten: await handle(p).write(decode64(String(p.data))),
      }),
      fileSeek: async (p) => ({
        position: await handle(p).seek(Number(p.offset), Number(p.whence)),
      }),
      fileStat: async (p) => statJson(await handle(p).stat()),
      fileClose: (p) => {
        handle(p).close();
        handles.delete(Number(p.fileHandleId));
        return Promise.resolve(null);
      },
      spawn: async (p) => {
        const { pid, process } = await spawn(box, p);
        const out = p.stdout === "piped"
          ? serverStream(process.child.stdout)
          : undefined;
        const err = p.stderr === "piped"
          ? serverStream(process.stderr)
          : (process.stderr.cancel(), undefined);
        later.push(async () => {
          await Promise.all([out?.pump(), err?.pump()]);
        });
        return {
          pid,
          stdoutStreamId: out?.streamId ?? null,
          stderrStreamId: err?.streamId ?? null,
        };
      },
      processWait: async (p) => {
        const process = box.processes.get(Number(p.pid));
        if (!process) {
          throw fsError("NotFound", "ENOENT", `No such process: ${p.pid}`);
        }
        const { code, signal } = await process.status;
        return { success: code === 0, code, signal, oom: null };
      },
      processKill: (p) => {
        const signal =
          (typeof p.signal === "string" ? p.signal : "SIGTERM") as Deno.Signal;
        try {
          Deno.kill(Number(p.pid), signal);
        } catch {
          throw fsError("NotFound", "ENOENT", `No such process: ${p.pid}`);
        }
        return Promise.resolve(null);
      },
      envGet: (p) => Promise.resolve(box.env.get(String(p.key)) ?? null),
      envSet: (p) => {
        box.env.set(String(p.key), String(p.value));
        return Promise.resolve(null);
      },
      envDelete: (p) => {
        box.env.delete(String(p.key));
        return Promise.resolve(null);
      },
      envToObject: () => Promise.resolve(Object.fromEntries(box.env)),
    };
    const handle = (p: Record<string, unknown>) => {
      const file = handles.get(Number(p.fileHandleId));
      if (!file) throw fsError("BadResource", "EBADF", "Bad resource ID");
      return file;
    };
    // One call's answer (`{result}`, or a JSON-RPC `{error}`), logged.
    const dispatch = async (
      method: string,
      params: Record<string, unknown>,
    ): Promise<Record<string, unknown>> => {
      const run = methods[method];
      if (!run) return { error: { code: -32601, message: "Method not found" } };
      let result: unknown;
      try {
        result = { ok: await run(params) };
      } catch (error) {
        result = { error: serialized(error) };
      }
      // Kept for contract checks: long strings cut (same types), the last
      // 10,000 calls only (a 1 GiB download is a thousand 1.4 MB answers).
      rpc.push({ method, params: cut(params), result: cut(result) });
      if (rpc.length > 10_000) rpc.splice(0, rpc.length - 10_000);
      return { result };
    };
    // With a fault armed, each call goes through the injector as
    // `POST /rpc/<method>`, params as body (otherwise straight to dispatch:
    // the detour's Request, Response and two more JSON passes of every
    // answer are this server's cost, not the service's).
    const answer = faults.wrap(async (request) => {
      const params = await request.json();
      return json(
        await dispatch(
          new URL(request.url).pathname.slice(5),
          isObject(params) ? params : {},
        ),
      );
    });
    const receive = async (text: string) => {
      if (text === "ping") {
        socket.send("pong");
        return;
      }
      let message: Record<string, unknown>;
      try {
        message = JSON.parse(text);
      } catch {
        socket.close(4000, "Invalid JSON");
        return;
      }
      if (
        !isObject(message) || message.jsonrpc !== "2.0" ||
        typeof message.method !== "string"
      ) {
        socket.close(4001, "Invalid message");
        return;
      }
      const params = isObject(message.params) ? message.params : {};
      if (message.id === undefined) {
        const s = clientStream(Number(params.streamId));
        if (message.method === "$sandbox.stream.enqueue") {
          s.chunks.push(decode64(String(params.data ?? "")));
        } else if (
          message.method === "$sandbox.stream.end" ||
          message.method === "$sandbox.stream.cancel"
        ) s.done = true;
        s.wake?.();
        return;
      }
      calls.push(`RPC ${message.method}`);
      let reply: Record<string, unknown>;
      if (faults.rules.length === 0) {
        reply = await dispatch(message.method, params);
      } else {
        const response = await answer(
          new Request(`${origin}/rpc/${message.method}`, {
            method: "POST",
            body: JSON.stringify(params),
          }),
        );
        let body: string;
        try {
          body = await response.text();
        } catch {
          socket.close(1011, "connection dropped");
          return;
        }
        reply = response.status === 200 ? JSON.parse(body) : {
          error: { code: -32000, message: body },
        };
      }
      if (socket.readyState !== WebSocket.OPEN) return;
      socket.send(JSON.stringify({ jsonrpc: "2.0", id: message.id, ...reply }));
      for (const run of later.splice(0)) run().catch(() => {});
    };
    socket.onmessage = (event) => {
      receive(String(event.data)).catch((error) => {
        if (socket.readyState === WebSocket.OPEN) {
          socket.close(1011, errorText(error).slice(0, 100));
        }
      });
    };
    socket.onclose = () => {
      box.sockets.delete(socket);
      for (const file of handles.values()) {
        try {
          file.close();
        } catch { /* closed */ }
      }
    };
  };

  /** Starts the sandbox's egress (allowlist, secrets). */
  const startEgress = async (box: DenoTestSandbox) => {
    const allowNet = box.config.allow_net;
    const secrets = isObject(box.config.secrets)
      ? box.config.secrets as Record<string, { hosts: string[]; value: string }>
      : undefined;
    if (allowNet === undefined && secrets === undefined) return;
    const allow = Array.isArray(allowNet)
      ? allowNet.map((p) => /:(\d+)$/.test(String(p)) ? p : `${p}:*`)
      : ["*:*"];
    const policy = EgressPolicy.create({
      network: { allow },
      ...(secrets ? { secrets } : {}),
      resolve: options.resolve ?? {},
    });
    const env: Record<string, string> = {};
    let authority;
    if (secrets) {
      const { CertificateAuthority } = await import("../../network/ca.ts");
      authority = await CertificateAuthority.create();
      const system = await Deno.readTextFile(
        "/etc/ssl/certs/ca-certificates.crt",
      ).catch(() => "");
      await Deno.writeTextFile(
        `${box.root}/tmp/.deno-sandbox-ca.pem`,
        system + "\n" + authority.certificate,
      );
      for (const name of CA_VARIABLES) env[name] = "/tmp/.deno-sandbox-ca.pem";
      for (const name of Object.keys(secrets)) {
        box.placeholders[name] = `DENO_SECRET_PLACEHOLDER_${
          crypto.randomUUID().replaceAll("-", "")
        }`;
        env[name] = box.placeholders[name]!;
      }
    }
    box.egress = await EgressProxy.start({
      policy,
      socketPath: `${box.root}/egress.sock`,
      tcp: { hostname: "127.0.0.1", port: 0 },
      ...(authority ? { authority, placeholders: box.placeholders } : {}),
      ...(options.upstreamCaCerts
        ? { upstreamCaCerts: options.upstreamCaCerts }
        : {}),
    });
    const url = `http://127.0.0.1:${box.egress.tcpAddress!.port}`;
    for (
      const name of ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"]
    ) {
      env[name] = url;
    }
    box.egressEnv = env;
  };

  /** Checks a creation's configuration; the problem, or undefined. */
  const configProblem = (config: Record<string, unknown>) => {
    const memory = config.memory_mb;
    if (
      memory !== undefined &&
      !(Number.isInteger(memory) && Number(memory) >= 768 &&
        Number(memory) <= 4096)
    ) return "memory_mb must be an integer from 768 to 4096";
    if (config.labels !== undefined) {
      if (!isObject(config.labels)) return "labels must be an object";
      const entries = Object.entries(config.labels);
      if (entries.length > 5) return "at most 5 labels";
      for (const [k, v] of entries) {
        if (typeof v !== "string") return `label ${k} must be a string`;
        if (encoder.encode(k).length > 64 || encoder.encode(v).length > 128) {
          return `label ${k} is too long`;
        }
      }
    }
    if (config.volumes !== undefined && !Array.isArray(config.volumes)) {
      return "volumes must be a list";
    }
    const allow = config.allow_net;
    if (
      allow !== undefined &&
      (!Array.isArray(allow) || allow.some((p) => typeof p !== "string"))
    ) return "allow_net must be a list of strings";
    if (
      config.stop_at_ms !== undefined && typeof config.stop_at_ms !== "number"
    ) {
      return "stop_at_ms must be a number";
    }
    return undefined;
  };

  const refuse = (status: number, code: string, message: string) =>
    json({ code, message }, status);

  const authorized = (request: Request) => {
    const header = request.headers.get("authorization") ?? "";
    const token = header.startsWith("Bearer ") ? header.slice(7) : "";
    if (
      token === "" || (options.token !== undefined && token !== options.token)
    ) {
      return false;
    }
    return token.startsWith("ddo_") || request.headers.has("x-deno-org");
  };

  const handler = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const path = url.pathname;
    calls.push(`${request.method} ${path}`);
    if (!authorized(request)) {
      return refuse(
        401,
        "INVALID_TOKEN",
        "The access token is invalid or expired",
      );
    }
    if (path === "/api/v2/sandboxes" && request.method === "GET") {
      const wanted: [string, string][] = [];
      for (const [k, v] of url.searchParams) {
        const match = /^labels\[(.+)\]$/.exec(k);
        if (match) wanted.push([match[1]!, v]);
      }
      return json(
        [...sandboxes.values()].filter((box) =>
          wanted.every(([k, v]) => box.labels[k] === v)
        ).map((box) => ({
          id: box.id,
          createdAt: box.createdAt,
          stoppedAt: box.stoppedAt,
          region: "ord",
          status: box.status,
          labels: box.labels,
        })),
      );
    }
    if (path === "/api/v3/sandboxes/create" && request.method === "GET") {
      let config: Record<string, unknown>;
      try {
        const raw = request.headers.get("x-deno-sandbox-config") ?? "e30=";
        config = JSON.parse(new TextDecoder().decode(decode64(raw)));
        if (!isObject(config)) throw new TypeError("not an object");
      } catch {
        return refuse(
          400,
          "INVALID_CONFIG",
          "x-deno-sandbox-config is not base64 JSON",
        );
      }
      const problem = configProblem(config);
      if (problem) return refuse(400, "INVALID_CONFIG", problem);
      if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
        return refuse(400, "BAD_REQUEST", "expected a WebSocket upgrade");
      }
      let id = "sbx_ord_";
      for (const byte of crypto.getRandomValues(new Uint8Array(20))) {
        id += ID_CHARS[byte % 32];
      }
      const root = await Deno.makeTempDir({ prefix: "deno-sandbox-" });
      await Deno.mkdir(`${root}/home`);
      await Deno.mkdir(`${root}/tmp`);
      const box: DenoTestSandbox = {
        id,
        labels: (config.labels ?? {}) as Record<string, string>,
        config,
        root,
        createdAt: new Date().toISOString(),
        env: new Map(),
        egressEnv: {},
        placeholders: {},
        status: "running",
        stopAt: typeof config.stop_at_ms === "number"
          ? config.stop_at_ms
          : null,
        stoppedAt: null,
        sockets: new Set(),
        processes: new Map(),
      };
      try {
        await startEgress(box);
      } catch (error) {
        await Deno.remove(root, { recursive: true }).catch(() => {});
        return refuse(400, "INVALID_CONFIG", errorText(error));
      }
      sandboxes.set(id, box);
      schedule(box);
      const { socket, response } = Deno.upgradeWebSocket(request);
      box.sockets.add(socket);
      connection(box, socket);
      // A "session" sandbox (no stop_at_ms) ends with its creating socket.
      socket.addEventListener("close", () => {
        if (box.stopAt === null) stop(box);
      });
      response.headers.set("x-deno-sandbox-id", id);
      response.headers.set("x-deno-trace-id", crypto.randomUUID());
      return response;
    }
    const match = /^\/api\/v3\/sandbox\/([^/]+)(\/connect)?$/.exec(path);
    const box = match
      ? sandboxes.get(decodeURIComponent(match[1]!))
      : undefined;
    if (match && (box === undefined || box.status === "stopped")) {
      return refuse(404, "SANDBOX_NOT_FOUND", `Sandbox ${match[1]} not found`);
    }
    if (box && match![2] && request.method === "GET") {
      if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
        return refuse(400, "BAD_REQUEST", "expected a WebSocket upgrade");
      }
      const { socket, response } = Deno.upgradeWebSocket(request);
      box.sockets.add(socket);
      connection(box, socket);
      response.headers.set("x-deno-sandbox-id", box.id);
      return response;
    }
    if (box && request.method === "PATCH") {
      const body = await request.json().catch(() => null);
      if (!isObject(body) || typeof body.stop_at_ms !== "number") {
        return refuse(400, "BAD_REQUEST", "stop_at_ms is required");
      }
      // At most 30 minutes more per call; the answer is what was set.
      box.stopAt = Math.min(body.stop_at_ms, Date.now() + 30 * 60_000);
      schedule(box);
      return json({ stop_at_ms: box.stopAt });
    }
    if (box && request.method === "DELETE") {
      await stop(box);
      return new Response(null, { status: 204 });
    }
    return refuse(404, "NOT_FOUND", `Cannot ${request.method} ${path}`);
  };

  const server = serveWithFaults({
    faults,
    port: options.port ?? 0,
    handler: async (request) => {
      try {
        return await handler(request);
      } catch (error) {
        return refuse(500, "INTERNAL_SERVER_ERROR", errorText(error));
      }
    },
  });
  origin = server.url;

  const close = async () => {
    for (const box of sandboxes.values()) await stop(box);
    await server.close();
  };
  return {
    url: origin,
    sandboxes,
    calls,
    rpc,
    faults,
    close,
    [Symbol.asyncDispose]: close,
  };
}

function signalNumber(signal: Deno.Signal): number {
  return ({ SIGKILL: 9, SIGTERM: 15, SIGINT: 2, SIGHUP: 1 } as Record<
    string,
    number
  >)[signal] ?? 0;
}

/**
 * A JSON value with every string longer than 4 KiB cut to 4 KiB (a copy:
 * a V8 slice would keep the whole string alive).
 */
function cut(value: unknown): unknown {
  if (typeof value === "string") {
    return value.length > 4096
      ? JSON.parse(JSON.stringify(value.slice(0, 4096)))
      : value;
  }
  if (Array.isArray(value)) return value.map(cut);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, cut(v)]),
  );
}

function base64(bytes: Uint8Array): string {
  return bytes.toBase64();
}

function decode64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.fromBase64(text);
}

if (import.meta.main) {
  let port = 0;
  let token: string | undefined;
  const args = [...Deno.args];
  while (args.length > 0) {
    const [flag, inline] = splitFlag(args.shift()!);
    const value = () => inline ?? args.shift() ?? "";
    if (flag === "--port") port = Number(value());
    else if (flag === "--token") token = value();
    else {
      console.error(`Unknown argument ${flag}`);
      Deno.exit(2);
    }
  }
  const server = startDenoSandboxServer({
    port,
    ...(token !== undefined ? { token } : {}),
  });
  console.log(server.url);
}
