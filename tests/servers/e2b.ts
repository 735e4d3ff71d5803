/**
 * An E2B server for tests: the control plane (`../shared/specs/e2b/openapi.yml`,
 * both the spec's paths and the `/v2/` ones the current SDK calls) and envd
 * (`envd/envd.yaml` and the Connect services of `envd/*.proto`, JSON codec)
 * on one origin, envd calls routed by the `E2b-Sandbox-Id` header (as the
 * SDK's `sandboxUrl` does) or a `49983-<id>.` host. Real `bash` processes on
 * real host paths; behaviour as `../shared/specs/README.md` records for the
 * real envd: Start streams `start`, `data` (base64), `end` and an end-stream
 * envelope; the `Connect-Timeout-Ms` deadline SIGKILLs only the direct child
 * (`exitCode: -1`, `signal: killed`); a missing `cwd` is `invalid_argument`
 * before the start event; a client that disconnects does not stop the
 * process; `/files` takes multipart (one `file` part with `?path=`, or many
 * parts whose file names are their paths) or raw bytes, writes in place
 * (a replaced file keeps its mode, a new one is 0644) and honours one
 * `Range`; ListDir returns folders first, then by lower-cased name; Remove
 * of a missing path is no error; MakeDir of an existing folder is
 * `already_exists`; envd answers 502 while its sandbox is paused or gone.
 * Pause stops the sandbox's processes (SIGSTOP) and resume continues them.
 * A sandbox created with a `network` that denies by default (`denyOut`
 * `0.0.0.0/0`, or `allow_internet_access: false`) gets a policy proxy
 * letting out only the host names of `allowOut`; its commands get the
 * proxy's variables.
 *
 * Run by hand: `deno run -A tests/servers/e2b.ts [--port N] [--api-key KEY]
 * [--fault SPEC]... [--fault-control]`; prints its base URL (the control
 * plane and, with the SDK's `sandboxUrl`, envd) as the first line of stdout.
 *
 * @module
 */
import { FaultInjector, parseFaultSpec } from "./_faults.ts";
import { serveWithFaults } from "./_fault_server.ts";
import {
  byteRange,
  encoder,
  errorText,
  fileStream,
  isObject,
  signalGroup,
  splitFlag,
} from "./_common.ts";
import {
  type SandboxEgressRecord,
  startHostEgress,
} from "./_opensandbox_egress.ts";

/** Options of {@linkcode startE2BServer}. */
export interface E2BServerOptions {
  /** The API key required in `X-API-Key`; none: any. */
  readonly apiKey?: string;
  /** Port; default 0. */
  readonly port?: number;
  /** The fault injector. */
  readonly faults?: FaultInjector;
  /** Serve `/__faults`. */
  readonly faultControl?: boolean;
  /** Where relative envd paths resolve; default the current directory. */
  readonly home?: string;
  /**
   * Names the egress proxy of a sandbox created with a deny-by-default
   * network resolves to fixed addresses (the tests' own loopback servers).
   */
  readonly resolve?: Readonly<Record<string, string>>;
}

/** One sandbox of the test server. */
export interface E2BTestSandbox {
  /** Its id. */
  readonly id: string;
  /** Template, metadata, environment, network, as created. */
  readonly templateID: string;
  readonly metadata: Record<string, string>;
  readonly envVars: Record<string, string>;
  readonly network: unknown;
  readonly allowInternetAccess: boolean | null;
  /**
   * The egress enforcing `network` when it denies by default (`denyOut`
   * `0.0.0.0/0` or `allow_internet_access: false`): the hosts of
   * `allowOut` go out, nothing else. Commands get its proxy variables; the
   * real service also fences what ignores them, the test server does not.
   */
  egress?: Omit<SandboxEgressRecord, "networkPolicy">;
  /** envd's token. */
  readonly token: string;
  /** `running` or `paused`. */
  state: "running" | "paused";
  /** Expiry (ms since the epoch). */
  endAt: number;
  readonly startedAt: number;
  /** Its processes by pid. */
  readonly processes: Map<number, Deno.ChildProcess>;
  timer?: ReturnType<typeof setTimeout>;
}

/** A running E2B test server. */
export interface E2BServer extends AsyncDisposable {
  /** The base URL (control plane and envd). */
  readonly url: string;
  /** Its sandboxes by id. */
  readonly sandboxes: Map<string, E2BTestSandbox>;
  /** Every call seen, `METHOD path`. */
  readonly calls: string[];
  /** The fault injector. */
  readonly faults: FaultInjector;
  /** Stops serving, kills every process. */
  close(): Promise<void>;
}

const ENVD_PORT = "49983";

/**
 * Starts the server.
 *
 * @param options Key, port, faults, home.
 * @returns The server.
 */
export function startE2BServer(options: E2BServerOptions = {}): E2BServer {
  const sandboxes = new Map<string, E2BTestSandbox>();
  const calls: string[] = [];
  const home = options.home ?? Deno.cwd();
  const handler = (request: Request): Promise<Response> | Response => {
    const url = new URL(request.url);
    calls.push(`${request.method} ${url.pathname}`);
    const routed = request.headers.get("e2b-sandbox-id") ??
      /^49983-([^.]+)\./.exec(url.hostname)?.[1];
    if (routed !== undefined && routed !== null) {
      if (
        request.headers.get("e2b-sandbox-port") !== null &&
        request.headers.get("e2b-sandbox-port") !== ENVD_PORT
      ) {
        return apiError(502, "port not open");
      }
      return envd(sandboxes.get(routed), request, url, home);
    }
    if (options.apiKey !== undefined) {
      if (request.headers.get("x-api-key") !== options.apiKey) {
        return apiError(401, "Invalid API key");
      }
    }
    return api(sandboxes, request, url, options.resolve ?? {});
  };
  const faults = options.faults ?? new FaultInjector({
    errorBody: (status) =>
      JSON.stringify({ code: status, message: "injected fault" }),
  });
  const server = serveWithFaults({
    handler,
    faults,
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.faultControl ? { control: true } : {}),
  });
  const close = async () => {
    for (const sandbox of sandboxes.values()) kill(sandboxes, sandbox);
    await server.close();
  };
  return {
    url: server.url,
    sandboxes,
    calls,
    faults,
    close,
    [Symbol.asyncDispose]: close,
  };
}

// --- control plane -------------------------------------------------------

/** Checks `network` as the real API does (`SandboxNetworkConfig`). */
function networkProblem(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) return "network must be an object";
  for (const field of ["allowOut", "denyOut"]) {
    const list = value[field];
    if (
      list !== undefined &&
      (!Array.isArray(list) || list.some((e) => typeof e !== "string"))
    ) {
      return `network.${field} must be a list of strings`;
    }
  }
  return undefined;
}

/**
 * The egress of a sandbox whose network denies by default: the host names
 * and `*.suffix` of `allowOut` (address ranges are not enforced here).
 */
function startNetworkEgress(
  network: unknown,
  allowInternetAccess: unknown,
  resolve: Readonly<Record<string, string>>,
): Promise<Omit<SandboxEgressRecord, "networkPolicy">> | undefined {
  const config = isObject(network) ? network : {};
  const denyOut = (config.denyOut ?? []) as string[];
  if (allowInternetAccess !== false && !denyOut.includes("0.0.0.0/0")) {
    return undefined;
  }
  const allowOut = (config.allowOut ?? []) as string[];
  return startHostEgress({
    allow: allowOut.filter((entry) => !entry.includes("/")),
    resolve,
  });
}

function json(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { "content-type": "application/json" },
  });
}

function apiError(status: number, message: string): Response {
  return json({ code: status, message }, status);
}

function kill(
  sandboxes: Map<string, E2BTestSandbox>,
  sandbox: E2BTestSandbox,
): void {
  clearTimeout(sandbox.timer);
  for (const [pid, child] of sandbox.processes) {
    signalGroup(pid, "SIGCONT");
    signalGroup(pid, "SIGKILL");
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
  }
  sandboxes.delete(sandbox.id);
  void sandbox.egress?.close();
}

function setEnd(
  sandboxes: Map<string, E2BTestSandbox>,
  sandbox: E2BTestSandbox,
  seconds: number,
): void {
  clearTimeout(sandbox.timer);
  sandbox.endAt = Date.now() + seconds * 1000;
  const timer = setTimeout(() => kill(sandboxes, sandbox), seconds * 1000);
  Deno.unrefTimer(timer);
  sandbox.timer = timer;
}

function sandboxJson(sandbox: E2BTestSandbox): Record<string, unknown> {
  return {
    templateID: sandbox.templateID,
    sandboxID: sandbox.id,
    clientID: "test-client",
    envdVersion: "0.2.4",
    envdAccessToken: sandbox.token,
    trafficAccessToken: null,
    domain: null,
  };
}

function detailJson(sandbox: E2BTestSandbox): Record<string, unknown> {
  return {
    templateID: sandbox.templateID,
    sandboxID: sandbox.id,
    clientID: "test-client",
    startedAt: new Date(sandbox.startedAt).toISOString(),
    endAt: new Date(sandbox.endAt).toISOString(),
    cpuCount: 2,
    memoryMB: 512,
    diskSizeMB: 1024,
    state: sandbox.state,
    envdVersion: "0.2.4",
    envdAccessToken: sandbox.token,
    domain: null,
    metadata: sandbox.metadata,
    allowInternetAccess: sandbox.allowInternetAccess,
    ...(sandbox.network ? { network: sandbox.network } : {}),
  };
}

function stopProcesses(sandbox: E2BTestSandbox, signal: Deno.Signal): void {
  for (const pid of sandbox.processes.keys()) signalGroup(pid, signal);
}

async function api(
  sandboxes: Map<string, E2BTestSandbox>,
  request: Request,
  url: URL,
  resolve: Readonly<Record<string, string>>,
): Promise<Response> {
  const path = url.pathname.replace(/^\/v2(?=\/sandboxes)/, "");
  const method = request.method;
  const body = async (): Promise<Record<string, unknown> | Response> => {
    try {
      const value = await request.json();
      return isObject(value) ? value : apiError(400, "body is not an object");
    } catch {
      return apiError(400, "body is not JSON");
    }
  };
  if (path === "/health" && method === "GET") return new Response(null);
  if (path === "/sandboxes" && method === "POST") {
    const given = await body();
    if (given instanceof Response) return given;
    if (typeof given.templateID !== "string") {
      return apiError(400, "templateID is required");
    }
    const sandbox: E2BTestSandbox = {
      id: `i${crypto.randomUUID().replaceAll("-", "").slice(0, 19)}`,
      templateID: given.templateID,
      metadata: isObject(given.metadata)
        ? given.metadata as Record<string, string>
        : {},
      envVars: isObject(given.envVars)
        ? given.envVars as Record<string, string>
        : {},
      network: given.network ?? null,
      allowInternetAccess: typeof given.allow_internet_access === "boolean"
        ? given.allow_internet_access
        : null,
      token: crypto.randomUUID(),
      state: "running",
      endAt: 0,
      startedAt: Date.now(),
      processes: new Map(),
    };
    const problem = networkProblem(given.network);
    if (problem !== undefined) return apiError(400, problem);
    const egress = await startNetworkEgress(
      given.network,
      given.allow_internet_access,
      resolve,
    );
    if (egress) sandbox.egress = egress;
    sandboxes.set(sandbox.id, sandbox);
    setEnd(
      sandboxes,
      sandbox,
      typeof given.timeout === "number" ? given.timeout : 15,
    );
    return json(sandboxJson(sandbox), 201);
  }
  if (path === "/sandboxes" && method === "GET") {
    const wanted = new URLSearchParams(url.searchParams.get("metadata") ?? "");
    const states = (url.searchParams.get("state") ?? "running,paused").split(
      ",",
    );
    const listed = [...sandboxes.values()].filter((sandbox) =>
      states.includes(sandbox.state) &&
      [...wanted].every(([k, v]) => sandbox.metadata[k] === v)
    ).map((sandbox) => {
      const { envdAccessToken: _, ...rest } = detailJson(sandbox);
      return rest;
    });
    return json(listed);
  }
  const match = /^\/sandboxes\/([^/]+)(\/[a-z]+)?$/.exec(path);
  if (!match) return apiError(404, "not found");
  const sandbox = sandboxes.get(decodeURIComponent(match[1]!));
  if (!sandbox) return apiError(404, `sandbox "${match[1]}" not found`);
  switch (`${method} ${match[2] ?? ""}`) {
    case "GET ":
      return json(detailJson(sandbox));
    case "DELETE ":
      kill(sandboxes, sandbox);
      return new Response(null, { status: 204 });
    case "POST /timeout": {
      const given = await body();
      if (given instanceof Response) return given;
      if (typeof given.timeout !== "number") {
        return apiError(400, "timeout is required");
      }
      if (sandbox.state === "paused") {
        return apiError(404, `sandbox "${sandbox.id}" is not running`);
      }
      setEnd(sandboxes, sandbox, given.timeout);
      return new Response(null, { status: 204 });
    }
    case "POST /pause":
      if (sandbox.state === "paused") {
        return apiError(409, `sandbox "${sandbox.id}" is already paused`);
      }
      sandbox.state = "paused";
      clearTimeout(sandbox.timer);
      stopProcesses(sandbox, "SIGSTOP");
      return new Response(null, { status: 204 });
    case "POST /resume":
    case "POST /connect": {
      const given = await body();
      if (given instanceof Response) return given;
      const timeout = typeof given.timeout === "number" ? given.timeout : 15;
      const resumed = sandbox.state === "paused";
      if (!resumed && match[2] === "/resume") {
        return apiError(409, `sandbox "${sandbox.id}" is already running`);
      }
      sandbox.state = "running";
      stopProcesses(sandbox, "SIGCONT");
      // Connect only lengthens the life of a running sandbox.
      if (resumed || Date.now() + timeout * 1000 > sandbox.endAt) {
        setEnd(sandboxes, sandbox, timeout);
      }
      return json(sandboxJson(sandbox), resumed ? 201 : 200);
    }
  }
  return apiError(404, "not found");
}

// --- envd ------------------------------------------------------------------

const CONNECT_STATUS: Record<string, number> = {
  invalid_argument: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  already_exists: 409,
  internal: 500,
  unimplemented: 404,
  deadline_exceeded: 504,
};

function connectError(code: string, message: string): Response {
  return json({ code, message }, CONNECT_STATUS[code] ?? 500);
}

function envdError(status: number, message: string): Response {
  return json({ code: status, message }, status);
}

function envd(
  sandbox: E2BTestSandbox | undefined,
  request: Request,
  url: URL,
  home: string,
): Promise<Response> | Response {
  if (!sandbox || sandbox.state !== "running") {
    return new Response("sandbox not running", { status: 502 });
  }
  if (url.pathname === "/health" && request.method === "GET") {
    return new Response(null, { status: 204 });
  }
  if (request.headers.get("x-access-token") !== sandbox.token) {
    return url.pathname.startsWith("/files")
      ? envdError(401, "invalid access token")
      : connectError("unauthenticated", "invalid access token");
  }
  const resolve = (path: unknown) =>
    typeof path !== "string" || path === ""
      ? home
      : path.startsWith("/")
      ? path
      : `${home}/${path}`;
  if (url.pathname === "/files") {
    if (request.method === "GET") {
      return download(resolve(url.searchParams.get("path")), request);
    }
    if (request.method === "POST") {
      const path = url.searchParams.get("path");
      return upload(path === null ? null : resolve(path), request, home);
    }
    return envdError(405, "method not allowed");
  }
  if (request.method !== "POST") {
    return connectError("unimplemented", "not found");
  }
  if (url.pathname === "/process.Process/Start") {
    return start(sandbox, request, resolve);
  }
  return unary(sandbox, url.pathname, request, resolve);
}

async function unary(
  sandbox: E2BTestSandbox,
  path: string,
  request: Request,
  resolve: (path: unknown) => string,
): Promise<Response> {
  if (!request.headers.get("content-type")?.startsWith("application/json")) {
    return new Response("unsupported content type", { status: 415 });
  }
  let message: Record<string, unknown>;
  try {
    const value = await request.json();
    if (!isObject(value)) throw new Error("not an object");
    message = value;
  } catch (error) {
    return connectError("invalid_argument", errorText(error));
  }
  try {
    switch (path) {
      case "/filesystem.Filesystem/Stat": {
        const target = resolve(message.path);
        return json({ entry: await entryInfo(target) });
      }
      case "/filesystem.Filesystem/ListDir": {
        const target = resolve(message.path);
        const info = await Deno.stat(target);
        if (!info.isDirectory) {
          return connectError(
            "invalid_argument",
            `path is not a directory: ${target}`,
          );
        }
        const depth = Math.max(1, Number(message.depth ?? 1));
        return json({ entries: await listDir(target, depth) });
      }
      case "/filesystem.Filesystem/MakeDir": {
        const target = resolve(message.path);
        try {
          const info = await Deno.lstat(target);
          return connectError(
            "already_exists",
            info.isDirectory
              ? `directory already exists: ${target}`
              : `path already exists but it is not a directory: ${target}`,
          );
        } catch (error) {
          if (!(error instanceof Deno.errors.NotFound)) throw error;
        }
        await Deno.mkdir(target, { recursive: true });
        return json({ entry: await entryInfo(target) });
      }
      case "/filesystem.Filesystem/Remove":
        await Deno.remove(resolve(message.path), { recursive: true }).catch(
          (error) => {
            if (!(error instanceof Deno.errors.NotFound)) throw error;
          },
        );
        return json({});
      case "/filesystem.Filesystem/Move": {
        const destination = resolve(message.destination);
        await Deno.rename(resolve(message.source), destination);
        return json({ entry: await entryInfo(destination) });
      }
      case "/process.Process/SendSignal": {
        const pid = Number((message.process as { pid?: unknown })?.pid);
        const child = sandbox.processes.get(pid);
        if (!child) {
          return connectError("not_found", `process with pid ${pid} not found`);
        }
        const signal = message.signal === "SIGNAL_SIGKILL" ||
            message.signal === 9
          ? "SIGKILL"
          : "SIGTERM";
        try {
          Deno.kill(pid, signal);
        } catch { /* already gone */ }
        return json({});
      }
      case "/process.Process/List":
        return json({
          // Each process as it was started (envd keeps its ProcessConfig).
          processes: [...sandbox.processes].map(([pid, child]) => ({
            pid,
            config: startedAs.get(child) ?? { cmd: "", args: [], envs: {} },
          })),
        });
    }
    return connectError("unimplemented", `${path} is not implemented`);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return connectError("not_found", `no such file or directory`);
    }
    return connectError("internal", errorText(error));
  }
}

/** The `ProcessConfig` each process was started with (`Process/List`). */
const startedAs = new WeakMap<Deno.ChildProcess, Record<string, unknown>>();

/** An `EntryInfo` in protojson form (int64 as a string, enums by name). */
async function entryInfo(path: string): Promise<Record<string, unknown>> {
  const info = await Deno.lstat(path);
  const type = info.isSymlink
    ? "FILE_TYPE_SYMLINK"
    : info.isDirectory
    ? "FILE_TYPE_DIRECTORY"
    : "FILE_TYPE_FILE";
  const mode = (info.mode ?? 0) & 0o777;
  // Go's os.FileMode type bits (uint32) and the letter FileMode.String()
  // writes first: ModeDir, ModeNamedPipe, ModeSocket, ModeDevice (with
  // ModeCharDevice for a character device).
  const [bits, letter] = info.isDirectory
    ? [2 ** 31, "d"]
    : info.isFifo
    ? [2 ** 25, "p"]
    : info.isSocket
    ? [2 ** 24, "S"]
    : info.isCharDevice
    ? [2 ** 26 + 2 ** 21, "Dc"]
    : info.isBlockDevice
    ? [2 ** 26, "D"]
    : [0, "-"];
  const entry: Record<string, unknown> = {
    name: path.slice(path.lastIndexOf("/") + 1),
    type,
    path,
    size: String(info.size),
    mode: mode + bits,
    permissions: letter +
      [...mode.toString(2).padStart(9, "0")].map((bit, i) =>
        bit === "1" ? "rwx"[i % 3] : "-"
      ).join(""),
    owner: "user",
    group: "user",
    modifiedTime: (info.mtime ?? new Date(0)).toISOString(),
  };
  if (info.isSymlink) {
    entry.symlinkTarget = await Deno.readLink(path).catch(() => "");
  }
  return entry;
}

async function listDir(
  root: string,
  depth: number,
): Promise<Record<string, unknown>[]> {
  const names: { name: string; dir: boolean }[] = [];
  for await (const entry of Deno.readDir(root)) {
    names.push({ name: entry.name, dir: entry.isDirectory });
  }
  names.sort((a, b) =>
    a.dir !== b.dir
      ? (a.dir ? -1 : 1)
      : a.name.toLowerCase() < b.name.toLowerCase()
      ? -1
      : a.name.toLowerCase() > b.name.toLowerCase()
      ? 1
      : 0
  );
  const entries: Record<string, unknown>[] = [];
  for (const { name, dir } of names) {
    const path = `${root === "/" ? "" : root}/${name}`;
    try {
      entries.push(await entryInfo(path));
    } catch {
      continue; // removed meanwhile
    }
    if (dir && depth > 1) entries.push(...await listDir(path, depth - 1));
  }
  return entries;
}

/** `[flags][length][json]`. */
function envelope(message: unknown, flags = 0): Uint8Array {
  const bytes = encoder.encode(JSON.stringify(message));
  const out = new Uint8Array(5 + bytes.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, bytes.length);
  out.set(bytes, 5);
  return out;
}

function base64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(text);
}

async function start(
  sandbox: E2BTestSandbox,
  request: Request,
  resolve: (path: unknown) => string,
): Promise<Response> {
  const type = request.headers.get("content-type") ?? "";
  if (!type.startsWith("application/connect+json")) {
    return new Response("unsupported content type", { status: 415 });
  }
  const raw = new Uint8Array(await request.arrayBuffer());
  const streamed = (messages: Uint8Array[]) =>
    new Response(new Blob(messages as BlobPart[]).stream(), {
      headers: { "content-type": "application/connect+json" },
    });
  const fail = (code: string, message: string) =>
    streamed([envelope({ error: { code, message } }, 2)]);
  if (raw.length < 5) return fail("invalid_argument", "no message");
  const length = new DataView(raw.buffer).getUint32(1);
  let message: Record<string, unknown>;
  try {
    message = JSON.parse(new TextDecoder().decode(raw.subarray(5, 5 + length)));
  } catch {
    return fail("invalid_argument", "the message is not JSON");
  }
  const config = (message.process ?? {}) as Record<string, unknown>;
  if (typeof config.cmd !== "string") {
    return fail("invalid_argument", "process.cmd is required");
  }
  const cwd = resolve(config.cwd);
  try {
    if (!(await Deno.stat(cwd)).isDirectory) throw new Error();
  } catch {
    return fail(
      "invalid_argument",
      `invalid cwd '${cwd}': no such file or directory`,
    );
  }
  const deadline = Number(request.headers.get("connect-timeout-ms") ?? 0);
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(config.cmd, {
      args: Array.isArray(config.args) ? config.args.map(String) : [],
      cwd,
      env: {
        ...sandbox.egress?.env,
        ...sandbox.envVars,
        ...(isObject(config.envs) ? config.envs as Record<string, string> : {}),
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      detached: true,
    }).spawn();
  } catch (error) {
    return fail("internal", `error starting process: ${errorText(error)}`);
  }
  const pid = child.pid;
  sandbox.processes.set(pid, child);
  startedAs.set(child, {
    cmd: config.cmd,
    args: Array.isArray(config.args) ? config.args.map(String) : [],
    envs: isObject(config.envs) ? config.envs : {},
    cwd,
  });
  let killedByDeadline = false;
  const timer = deadline > 0
    ? setTimeout(() => {
      killedByDeadline = true;
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* gone */ }
    }, deadline)
    : undefined;
  let send: ((bytes: Uint8Array) => void) | undefined;
  let connected = true;
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      send = (bytes) => {
        if (connected) controller.enqueue(bytes);
      };
      send(envelope({ event: { start: { pid } } }));
      const keepalive = setInterval(
        () => send!(envelope({ event: { keepalive: {} } })),
        15_000,
      );
      const pump = async (
        stream: ReadableStream<Uint8Array>,
        name: "stdout" | "stderr",
      ) => {
        for await (const chunk of stream) {
          send!(envelope({ event: { data: { [name]: base64(chunk) } } }));
        }
      };
      await Promise.all([
        pump(child.stdout, "stdout"),
        pump(child.stderr, "stderr"),
      ]);
      const status = await child.status;
      clearInterval(keepalive);
      clearTimeout(timer);
      sandbox.processes.delete(pid);
      const signalled = status.signal !== null || killedByDeadline;
      const text = signalled
        ? `signal: ${status.signal === "SIGTERM" ? "terminated" : "killed"}`
        : `exit status ${status.code}`;
      const end: Record<string, unknown> = {
        exited: !signalled,
        status: text,
      };
      if (signalled) {
        end.exitCode = -1;
        end.error = text;
      } else if (status.code !== 0) end.exitCode = status.code;
      send!(envelope({ event: { end } }));
      send!(envelope({}, 2));
      if (connected) controller.close();
    },
    cancel() {
      // A client that goes away does not stop the process.
      connected = false;
    },
  });
  return new Response(body, {
    headers: { "content-type": "application/connect+json" },
  });
}

async function download(path: string, request: Request): Promise<Response> {
  let file: Deno.FsFile;
  let size: number;
  try {
    const info = await Deno.stat(path);
    if (info.isDirectory) {
      return envdError(400, `path '${path}' is a directory`);
    }
    file = await Deno.open(path);
    size = info.size;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return envdError(404, `path '${path}' does not exist`);
    }
    return envdError(500, `error opening file '${path}': ${errorText(error)}`);
  }
  const name = path.slice(path.lastIndexOf("/") + 1);
  const headers: Record<string, string> = {
    "content-type": "application/octet-stream",
    // As Go's mime.FormatMediaType: a non-ASCII name goes in filename*.
    "content-disposition": /^[\x20-\x7e]*$/.test(name)
      ? `inline; filename="${name.replace(/["\\]/g, "\\$&")}"`
      : `inline; filename*=utf-8''${encodeURIComponent(name)}`,
    "accept-ranges": "bytes",
  };
  const range = /^bytes=(\d*)-(\d*)$/.exec(request.headers.get("range") ?? "");
  if (range) {
    const wanted = byteRange(range[1]!, range[2]!, size);
    if (wanted === "unsatisfiable") {
      file.close();
      return new Response("invalid range", {
        status: 416,
        headers: { "content-range": `bytes */${size}` },
      });
    }
    if (wanted !== "invalid") {
      await file.seek(wanted.start, Deno.SeekMode.Start);
      return new Response(fileStream(file, wanted.length, 256 * 1024), {
        status: 206,
        headers: {
          ...headers,
          "content-length": String(wanted.length),
          "content-range": `bytes ${wanted.start}-${
            wanted.start + wanted.length - 1
          }/${size}`,
        },
      });
    }
  }
  return new Response(fileStream(file, size, 256 * 1024), {
    headers: { ...headers, "content-length": String(size) },
  });
}

/** Writes in place (a replaced file keeps its mode; a new one is 0644). */
async function writeFile(
  path: string,
  content: ReadableStream<Uint8Array>,
): Promise<void> {
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")) || "/", {
    recursive: true,
  });
  const file = await Deno.open(path, {
    write: true,
    create: true,
    truncate: true,
    mode: 0o644,
  });
  await content.pipeTo(file.writable);
}

async function upload(
  path: string | null,
  request: Request,
  home: string,
): Promise<Response> {
  const type = request.headers.get("content-type") ?? "";
  const written: { name: string; type: "file"; path: string }[] = [];
  const done = (target: string) =>
    written.push({
      name: target.slice(target.lastIndexOf("/") + 1),
      type: "file",
      path: target,
    });
  try {
    if (type.startsWith("multipart/form-data")) {
      const form = await request.formData();
      const files = form.getAll("file").filter((v) => v instanceof File);
      if (files.length === 0) return envdError(400, "no file in the request");
      if (path !== null && files.length > 1) {
        return envdError(400, "one file expected with a path");
      }
      for (const file of files) {
        const target = path ??
          (file.name.startsWith("/") ? file.name : `${home}/${file.name}`);
        const stat = await Deno.stat(target).catch(() => null);
        if (stat?.isDirectory) {
          return envdError(400, `path '${target}' is a directory`);
        }
        await writeFile(target, file.stream());
        done(target);
      }
    } else {
      if (path === null) {
        return envdError(400, "the path parameter is required");
      }
      if (!request.body) return envdError(400, "no body");
      const body = request.headers.get("content-encoding") === "gzip"
        ? request.body.pipeThrough(new DecompressionStream("gzip"))
        : request.body;
      await writeFile(path, body);
      done(path);
    }
  } catch (error) {
    return envdError(500, `error writing file: ${errorText(error)}`);
  }
  return json(written);
}

if (import.meta.main) {
  let port = 0;
  let apiKey: string | undefined;
  let faultControl = false;
  const faults = new FaultInjector({
    errorBody: (status) =>
      JSON.stringify({ code: status, message: "injected fault" }),
  });
  const args = [...Deno.args];
  while (args.length > 0) {
    const [flag, inline] = splitFlag(args.shift()!);
    const value = () => inline ?? args.shift() ?? "";
    if (flag === "--port") port = Number(value());
    else if (flag === "--api-key") apiKey = value();
    else if (flag === "--fault") faults.add(parseFaultSpec(value()));
    else if (flag === "--fault-control") faultControl = true;
    else {
      console.error(`Unknown argument ${flag}`);
      Deno.exit(2);
    }
  }
  const server = startE2BServer({
    port,
    faults,
    faultControl,
    ...(apiKey !== undefined ? { apiKey } : {}),
  });
  console.log(server.url);
}
