/**
 * An AIO Sandbox server for tests: a real `Deno.serve` HTTP server that runs
 * real `bash` processes and reads and writes real host paths, answering the
 * `/v1/bash/*` and `/v1/file/*` endpoints that the AIO runtime and the official
 * client (`@agent-infra/sandbox`) use, in the shapes of
 * `../shared/specs/aio-sandbox/openapi.json` and with the deviations listed in
 * `../shared/specs/README.md`:
 *
 * - every JSON answer is the envelope `{success, message, data, hint}`;
 * - a failed file operation is HTTP 200 with `success: false` and a
 *   `FileOperationError` (`error_type` not_found, invalid_target, ...) as data;
 * - a malformed request is 422 with FastAPI's `{detail: [{loc, msg, type}]}`;
 * - a failed download is an HTTP error status (404 / 400) with the envelope;
 * - `/v1/bash/exec` keeps stdout and stderr apart, applies `max_output_length`
 *   in characters (head and tail kept), lets a soft `timeout` return `running`
 *   while the command goes on, and kills the process group at `hard_timeout`
 *   (`timed_out`); `/v1/bash/output` reads from byte offsets and long-polls
 *   with `wait`; `/v1/bash/kill` signals the session's current process group.
 *
 * Range: the spec documents only 200 for `/v1/file/download` (no 206, no
 * `Accept-Ranges`), so by default the server ignores `Range` and streams the
 * whole file, as a plain streaming response does; `range: true` makes it
 * honour one `bytes=a-b` range (206 + `Content-Range`, 416 when unsatisfiable)
 * so that a client's resume path can be tested too.
 *
 * Run by hand: `deno run -A tests/servers/aio.ts [--port N] [--token T] [--home DIR]
 * [--fault SPEC]... [--fault-control]`
 * prints its base URL as the first line of stdout and serves until stopped.
 *
 * This file holds the public API, the routing and the command line; the
 * rest is in private siblings: `_aio_state.ts` (commands, sessions),
 * `_aio_answers.ts` (the envelope, validation, file errors), `_aio_bash.ts`
 * (`/v1/bash/*`) and `_aio_files.ts` (`/v1/file/*`); helpers both test
 * servers use are in `_common.ts`.
 *
 * @module
 */

import { FaultInjector, parseFaultSpec } from "./_faults.ts";
import { serveWithFaults } from "./_fault_server.ts";
import { loadSharedContract, type OpenApiContract } from "./_contract.ts";
import { splitFlag } from "./_common.ts";
import type { AioState } from "./_aio_state.ts";
import { envelope, faultBody } from "./_aio_answers.ts";
import {
  closeSession,
  createSession,
  exec,
  kill,
  listSessions,
  output,
} from "./_aio_bash.ts";
import { download, list, read, upload, write } from "./_aio_files.ts";
import {
  closeShells,
  shellCreateSession,
  shellDeleteSession,
  shellDeleteSessions,
  shellExec,
  shellKill,
  shellListSessions,
  shellSessionStats,
  shellTerminalUrl,
  shellUpdateSession,
  shellView,
  shellWait,
  shellWrite,
} from "./_aio_shell.ts";

/** A command's state, as the spec names it. */
export type AioCommandStatus =
  | "pending"
  | "running"
  | "completed"
  | "timed_out"
  | "killed";

/** One request the server received (faults and auth failures included). */
export interface AioRequestRecord {
  /** The HTTP method. */
  readonly method: string;
  /** The path, without the query. */
  readonly path: string;
}

/** Options of {@linkcode startAioServer}. */
export interface AioServerOptions {
  /** The port; 0 (default) picks a free one. */
  readonly port?: number;
  /** The host name to listen on. Default `127.0.0.1`. */
  readonly hostname?: string;
  /** When set, every request must carry `Authorization: Bearer <token>`. */
  readonly token?: string;
  /**
   * The sessions' default working directory (the container's home).
   * Default: the process's current directory.
   */
  readonly home?: string;
  /** Honour `Range` on downloads (206). Default false: the spec has no 206. */
  readonly range?: boolean;
  /**
   * The fault injector in front of the handler (shared with the OpenSandbox
   * server); default a new one whose status faults answer with the AIO
   * envelope. The `ignore-sigterm` fault applies to `/v1/bash/exec`.
   */
  readonly faults?: FaultInjector;
  /** Serve `/__faults` to add and clear faults while running. Default off. */
  readonly control?: boolean;
  /**
   * The AIO OpenAPI contract (`loadAioContract()`): every real answer (before
   * any injected fault) is checked against it, and what does not match is
   * kept in {@linkcode AioServer.contractViolations}.
   */
  readonly contract?: OpenApiContract | undefined;
}

/**
 * Loads the official AIO OpenAPI contract
 * (`../shared/specs/aio-sandbox/openapi.json`) for
 * {@linkcode AioServerOptions.contract}, when it is beside the clone.
 *
 * @returns The contract, or `undefined` without `../shared`.
 */
export function loadAioContract(): Promise<OpenApiContract | undefined> {
  return loadSharedContract(
    "aio-sandbox/openapi.json",
    "the official AIO OpenAPI description",
  );
}

/**
 * Answers the spec does not list but `../shared/specs/README.md` documents:
 * the optional bearer check (401) and a failed download (4xx); with
 * `range: true`, the opt-in partial download (206).
 */
function documentedDeviation(
  path: string,
  status: number,
  range: boolean,
): boolean {
  if (status === 401) return true;
  if (path !== "/v1/file/download") return false;
  return (status >= 400 && status < 500) || (range && status === 206);
}

/** A running {@linkcode startAioServer}. */
export interface AioServer extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  /** The sessions' default working directory. */
  readonly home: string;
  /** The fault injector. */
  readonly faults: FaultInjector;
  /** Every request that reached the handler, in order (faulted ones not). */
  readonly requests: readonly AioRequestRecord[];
  /**
   * Real answers that did not match the contract (`METHOD path status:
   * finding`), when one was given. Empty is good.
   */
  readonly contractViolations: readonly string[];
  /**
   * How many requests hit `path` (every path when omitted), those answered
   * by an injected fault included.
   */
  requestCount(path?: string): number;
  /** Closes the listener: connections are refused until {@linkcode acceptConnections}. */
  refuseConnections(): Promise<void>;
  /** Listens again on the same port. */
  acceptConnections(): Promise<void>;
  /** The process ids of the commands still running. */
  runningPids(): number[];
  /** Kills every command still running and stops serving. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts the server on loopback.
 *
 * @example Running a command and reading it back
 * ```ts
 * import { assert } from "@std/assert";
 * import { startAioServer } from "./aio.ts";
 *
 * await using server = startAioServer();
 * const response = await fetch(`${server.baseUrl}/v1/bash/exec`, {
 *   method: "POST",
 *   headers: { "content-type": "application/json" },
 *   body: JSON.stringify({ command: "echo hi; echo no >&2; exit 3" }),
 * });
 * const { success, data } = await response.json();
 * assert(success && data.stdout === "hi\n" && data.stderr === "no\n");
 * assert(data.exit_code === 3 && data.status === "completed");
 * ```
 *
 * @param options Port, token, home, Range support, fault hook.
 * @returns The running server.
 */
export function startAioServer(options: AioServerOptions = {}): AioServer {
  const home = options.home ?? Deno.cwd();
  const requests: AioRequestRecord[] = [];
  const faults = options.faults ??
    new FaultInjector({ errorBody: faultBody });
  const state: AioState = {
    home,
    range: options.range ?? false,
    faults,
    sessions: new Map(),
    commands: new Set(),
  };
  const allCommands = state.commands;
  const httpServer = serveWithFaults({
    faults,
    ...(options.port === undefined ? {} : { port: options.port }),
    hostname: options.hostname ?? "127.0.0.1",
    control: options.control ?? false,
    handler: async (request) => {
      const url = new URL(request.url);
      requests.push({ method: request.method, path: url.pathname });
      if (options.token !== undefined) {
        const auth = request.headers.get("authorization") ?? "";
        if (auth !== `Bearer ${options.token}`) {
          await request.body?.cancel().catch(() => {});
          return envelope(null, {
            success: false,
            message: "Unauthorized: missing or invalid bearer token",
            status: 401,
          });
        }
      }
      let response: Response;
      try {
        response = await route(request, url);
      } catch (error) {
        response = envelope(null, {
          success: false,
          message: `Internal server error: ${(error as Error).message}`,
          status: 500,
        });
      }
      if (options.contract) {
        await checkContract(options.contract, request.method, url, response);
      }
      return response;
    },
  });
  const violations: string[] = [];

  async function checkContract(
    contract: OpenApiContract,
    method: string,
    url: URL,
    response: Response,
  ): Promise<void> {
    const where = `${method} ${url.pathname} ${response.status}`;
    const type = (response.headers.get("content-type") ?? "").split(";")[0]!
      .trim();
    try {
      contract.responseSpec({
        method,
        path: url.pathname,
        status: response.status,
      });
    } catch {
      if (
        !documentedDeviation(url.pathname, response.status, !!options.range)
      ) {
        violations.push(`${where}: not in the spec`);
      }
      return;
    }
    if (type !== "application/json") {
      const spec = contract.responseSpec({
        method,
        path: url.pathname,
        status: response.status,
      });
      if (!spec.contentTypes.includes(type)) {
        violations.push(`${where}: content type "${type}" is not declared`);
      }
      return;
    }
    const body = JSON.parse(await response.clone().text());
    const result = contract.validate({
      method,
      path: url.pathname,
      status: response.status,
      contentType: type,
    }, body);
    if (!result.valid) {
      violations.push(`${where}: ${result.errors.join("; ")}`);
    }
  }

  const routes: Record<
    string,
    {
      method: string;
      handle: (request: Request, url: URL) => Promise<Response>;
    }
  > = {
    "/v1/bash/exec": { method: "POST", handle: (r) => exec(state, r) },
    "/v1/bash/output": { method: "POST", handle: (r) => output(state, r) },
    "/v1/bash/kill": { method: "POST", handle: (r) => kill(state, r) },
    "/v1/bash/sessions/create": {
      method: "POST",
      handle: (r) => createSession(state, r),
    },
    "/v1/bash/sessions": { method: "GET", handle: () => listSessions(state) },
    "/v1/file/upload": { method: "POST", handle: (r) => upload(state, r) },
    "/v1/file/download": {
      method: "GET",
      handle: (r, url) => download(state, r, url),
    },
    "/v1/file/list": { method: "POST", handle: list },
    "/v1/file/read": { method: "POST", handle: read },
    "/v1/file/write": { method: "POST", handle: write },
    "/v1/shell/exec": { method: "POST", handle: (r) => shellExec(state, r) },
    "/v1/shell/view": { method: "POST", handle: (r) => shellView(state, r) },
    "/v1/shell/wait": { method: "POST", handle: (r) => shellWait(state, r) },
    "/v1/shell/write": { method: "POST", handle: (r) => shellWrite(state, r) },
    "/v1/shell/kill": { method: "POST", handle: (r) => shellKill(state, r) },
    "/v1/shell/sessions/create": {
      method: "POST",
      handle: (r) => shellCreateSession(state, r),
    },
    "/v1/shell/sessions/update": {
      method: "POST",
      handle: (r) => shellUpdateSession(state, r),
    },
    "/v1/shell/sessions/stats": {
      method: "GET",
      handle: () => shellSessionStats(state),
    },
    "/v1/shell/terminal-url": {
      method: "GET",
      handle: (_r, url) => shellTerminalUrl(url),
    },
  };

  function route(request: Request, url: URL): Promise<Response> {
    const close = /^\/v1\/bash\/sessions\/([^/]+)\/close$/.exec(url.pathname);
    if (close) {
      if (request.method !== "POST") return methodNotAllowed();
      return closeSession(state, decodeURIComponent(close[1]!));
    }
    if (url.pathname === "/v1/shell/sessions") {
      if (request.method === "GET") return shellListSessions(state);
      if (request.method === "DELETE") return shellDeleteSessions(state);
      return methodNotAllowed();
    }
    const shellSession = /^\/v1\/shell\/sessions\/([^/]+)$/.exec(
      url.pathname,
    );
    if (shellSession && !routes[url.pathname]) {
      if (request.method !== "DELETE") return methodNotAllowed();
      return shellDeleteSession(state, decodeURIComponent(shellSession[1]!));
    }
    const entry = routes[url.pathname];
    if (!entry) {
      return Promise.resolve(
        Response.json({ detail: "Not Found" }, { status: 404 }),
      );
    }
    if (entry.method !== request.method) return methodNotAllowed();
    return entry.handle(request, url);
  }

  function methodNotAllowed(): Promise<Response> {
    return Promise.resolve(
      Response.json({ detail: "Method Not Allowed" }, { status: 405 }),
    );
  }

  let closing: Promise<void> | null = null;
  const server: AioServer = {
    baseUrl: httpServer.url,
    home,
    faults,
    requests,
    contractViolations: violations,
    requestCount(path?: string): number {
      const handled = path === undefined
        ? requests.length
        : requests.filter((r) => r.path === path).length;
      const faulted = path === undefined
        ? faults.hits.length
        : faults.hits.filter((hit) => hit.path === path).length;
      return handled + faulted;
    },
    refuseConnections: () => httpServer.refuseConnections(),
    acceptConnections: () => httpServer.acceptConnections(),
    runningPids(): number[] {
      return [...allCommands].filter((c) => !c.done && c.child)
        .map((c) => c.child!.pid);
    },
    close(): Promise<void> {
      closing ??= (async () => {
        for (const command of allCommands) command.kill("SIGKILL", "killed");
        await Promise.all([...allCommands].map((c) => c.finished));
        await closeShells(state);
        await httpServer.close();
      })();
      return closing;
    },
    [Symbol.asyncDispose](): Promise<void> {
      return server.close();
    },
  };
  return server;
}

function parseArgs(args: readonly string[]): AioServerOptions {
  const options: {
    port?: number;
    token?: string;
    home?: string;
    faults?: FaultInjector;
    control?: boolean;
  } = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [flag, inline] = splitFlag(arg);
    const value = (): string => {
      const v = inline ?? args[++i];
      if (v === undefined) throw new TypeError(`Missing value for "${flag}"`);
      return v;
    };
    if (flag === "--port") {
      const port = Number(value());
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        throw new RangeError(`Cannot use port "${port}": not a port number`);
      }
      options.port = port;
    } else if (flag === "--token") options.token = value();
    else if (flag === "--home") options.home = value();
    else if (flag === "--fault") {
      options.faults ??= new FaultInjector({ errorBody: faultBody });
      options.faults.add(parseFaultSpec(value()));
    } else if (flag === "--fault-control") options.control = true;
    else throw new TypeError(`Unknown option "${arg}"`);
  }
  return options;
}

if (import.meta.main) {
  let options: AioServerOptions;
  try {
    options = parseArgs(Deno.args);
  } catch (error) {
    console.error((error as Error).message);
    console.error(
      "Usage: deno run -A tests/servers/aio.ts [--port N] [--token T] [--home DIR] [--fault SPEC]... [--fault-control]",
    );
    Deno.exit(2);
  }
  const server = startAioServer(options);
  console.log(server.baseUrl);
  const stop = (): void => {
    server.close().then(() => Deno.exit(0));
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}
