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
 * This file holds the public API, the routing and the command line; the
 * rest is in private siblings: `_opensandbox_state.ts` (sandboxes, commands,
 * event streams), `_opensandbox_answers.ts` (answers and errors as the real
 * servers write them), `_opensandbox_lifecycle.ts` (`/v1/sandboxes...`),
 * `_opensandbox_commands.ts` (execd's commands), `_opensandbox_files.ts` and
 * `_opensandbox_directories.ts` (execd's files and folders); helpers both
 * test servers use are in `_common.ts`.
 *
 * @module
 */
import { FaultInjector, parseFaultSpec } from "./_faults.ts";
import { type FaultServer, serveWithFaults } from "./_fault_server.ts";
import { errorText, splitFlag } from "./_common.ts";
import { execdError, json, notFoundText } from "./_opensandbox_answers.ts";
import { OpenSandboxState } from "./_opensandbox_state.ts";
import { endpointOf, lifecycle } from "./_opensandbox_lifecycle.ts";
import {
  commandLogs,
  commandStatus,
  interruptCommand,
  runCommand,
} from "./_opensandbox_commands.ts";
import {
  chmodFiles,
  download,
  filesInfo,
  moveFiles,
  removeFiles,
  replaceContent,
  searchFiles,
  upload,
} from "./_opensandbox_files.ts";
import {
  listDirectory,
  makeDirs,
  removeDirs,
} from "./_opensandbox_directories.ts";

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
  /**
   * How often a foreground command's output files are read, in ms; default
   * 100 (execd's tail). The output arrives at the latest at the exit.
   */
  tailIntervalMs?: number;
  /** How long an interrupt waits after SIGTERM before SIGKILL; default 3000 ms. */
  killGraceMs?: number;
  /**
   * How long after `init` a command stays unknown to its status (404) and
   * logs (400 `command not found: <id>`), as the real execd, which sends
   * `init` before it registers the command; default 0 (known at once).
   */
  registerDelayMs?: number;
  /**
   * Zombie semantics of the interrupt (default on, as the real execd): it
   * answers once `kill(-pgid, 0)` fails, so a zombie of the group (a process
   * orphaned to pid 1, not yet reaped) holds it up to the SIGKILL after
   * `killGraceMs`. `false`: only live members count.
   */
  zombies?: boolean;
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
// execd routing

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
    return await commandLogs(state, decodeURIComponent(match[1]!), url);
  }
  // gin's RedirectTrailingSlash: a known route with a trailing slash moves.
  if (route.length > 1 && route.endsWith("/")) {
    const bare = route.replace(/\/+$/, "");
    if (EXECD_ROUTES.has(`${method} ${bare}`)) {
      const location = bare.slice(bare.lastIndexOf("/"));
      return new Response(
        method === "GET"
          ? `<a href="${location}">Moved Permanently</a>.\n\n`
          : null,
        {
          status: method === "GET" ? 301 : 307,
          headers: {
            location,
            ...(method === "GET"
              ? { "content-type": "text/html; charset=utf-8" }
              : {}),
          },
        },
      );
    }
  }
  return notFoundText();
}

/** The fixed routes of execd (`METHOD /path`). */
const EXECD_ROUTES = new Set([
  "GET /ping",
  "POST /command",
  "DELETE /command",
  "GET /files/info",
  "DELETE /files",
  "POST /files/upload",
  "GET /files/download",
  "GET /files/search",
  "POST /files/mv",
  "POST /files/permissions",
  "POST /files/replace",
  "GET /directories/list",
  "POST /directories",
  "DELETE /directories",
  "GET /metrics",
]);

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
    return await execd(state.forSandbox(sandboxId), request, route, sandboxId);
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
    const [flag, inline] = splitFlag(arg);
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
      // The placeholder is shown as it is, not URL-encoded.
      server.endpoint("SANDBOXID").replace("SANDBOXID", "<id>")}${
      server.apiKey === undefined ? "" : ", API key required"
    }; faults: ${server.origin}/__faults`,
  );
  const stop = () => {
    server.close().finally(() => Deno.exit(0));
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}
