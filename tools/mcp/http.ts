/**
 * MCP over Streamable HTTP: a web-standard `(request) => Promise<Response>`
 * handler built on the MCP SDK's `WebStandardStreamableHTTPServerTransport`,
 * so it runs in `Deno.serve`, Deno Deploy and Supabase alike, with one
 * conversation workspace per MCP session.
 *
 * This file holds the public options, `serveMcpHttp` (the handler on
 * `Deno.serve`) and `createMcpHttpHandler`, which loads the request handler
 * (starting a session, routing a request to its session, in
 * `_http_handler.ts`) on first use, so that importing `./mcp` stays light;
 * the checks before any session is touched (path, Host, Origin, token, the
 * bounded start body) are in `_http_guards.ts`, the session table (limits,
 * idle timers, closing, the sweep of left workspaces) in `_http_sessions.ts`.
 *
 * @module
 */
import type { SkillRuntime } from "../../runtimes/types.ts";
import type { Skill } from "../../skill/types.ts";
import type { BuildSkillToolsOptions } from "../builder.ts";
import type { McpServerOptions } from "./_server.ts";
import type { ConversationStore } from "../../runtimes/stores/conversation_store.ts";

/** Hostnames of the loopback interface, as the `Host` header names them. */
export const LOOPBACK_HOSTNAMES: readonly string[] = Object.freeze([
  "localhost",
  "127.0.0.1",
  "[::1]",
]);

/** The default idle timeout of an MCP session: 30 minutes. */
export const DEFAULT_MCP_SESSION_IDLE_MS = 30 * 60 * 1000;

/** The default most MCP sessions open at once: 64. */
export const DEFAULT_MAX_MCP_SESSIONS = 64;

/** The default most MCP sessions one client has open at once: 16. */
export const DEFAULT_MAX_MCP_SESSIONS_PER_CLIENT = 16;

/** The default age after which left session workspaces are swept: 24 hours. */
export const DEFAULT_MCP_SWEEP_AFTER_MS = 24 * 60 * 60 * 1000;

export { defaultMcpConversationsRoot } from "./_conversations_root.ts";

/** What a runtime factory gets besides the session id. */
export interface McpRuntimeFactoryOptions {
  /** Aborted when the handler closes before the runtime is ready. */
  readonly signal: AbortSignal;
}

/**
 * Makes the runtime of one MCP session, whose id (a random UUID) can serve as
 * its conversation id. The handler closes it when the session ends.
 */
export type McpRuntimeFactory = (
  sessionId: string,
  options: McpRuntimeFactoryOptions,
) => Promise<SkillRuntime>;

/** Options of {@linkcode createMcpHttpHandler}. */
export interface McpHttpHandlerOptions
  extends
    Omit<BuildSkillToolsOptions, "runtime" | "signal">,
    Omit<McpServerOptions, "skills" | "instructions"> {
  /**
   * Makes each session's runtime. Default: a local runtime in conversation
   * mode, the session id as conversation id, under `conversationsRoot`.
   */
  readonly runtime?: McpRuntimeFactory;
  /**
   * The conversations root of the default factory; default
   * {@linkcode defaultMcpConversationsRoot} (an absolute place).
   */
  readonly conversationsRoot?: string;
  /**
   * Instructions for the client's model, or a function of the session's
   * runtime that writes them. Default: use the skill tool first, and where
   * commands run.
   */
  readonly instructions?: string | ((runtime: SkillRuntime) => string);
  /**
   * A bearer token every request must carry (`Authorization: Bearer <token>`);
   * a request without it, or with another, gets 401. Default: none asked.
   */
  readonly token?: string;
  /**
   * Hostnames (without port; IPv6 in brackets) accepted in the `Host` header,
   * against DNS rebinding; any other gets 403; `"*"` accepts any. Default:
   * without a token, only IP addresses and `localhost` (a page that rebinds
   * its own name to this machine sends its name, never an address); with a
   * token, any (the page cannot send the token). Serving on loopback, pass
   * {@linkcode LOOPBACK_HOSTNAMES} (as {@linkcode serveMcpHttp} does by
   * itself); behind a name (a proxy, a platform), list that name.
   */
  readonly allowedHosts?: readonly string[];
  /**
   * Origins (`http://localhost:3000`) accepted in the `Origin` header that
   * browsers send; any other gets 403. Requests without `Origin` (not from a
   * browser) pass. Default: an origin whose hostname is in `allowedHosts`
   * when given, else the request's own host (same origin only).
   */
  readonly allowedOrigins?: readonly string[];
  /**
   * A session without requests or running tool calls for this long (ms) is
   * closed, and its runtime with it. Default 30 minutes.
   */
  readonly idleTimeoutMs?: number;
  /**
   * The most sessions open at once. At the limit the oldest session idle for
   * a minute or more (no request, no running call) is closed to make room;
   * when none is, a new one gets 503. Default 64.
   */
  readonly maxSessions?: number;
  /**
   * The most sessions one client (one remote address) has open at once. At
   * the limit its own oldest idle session is closed to make room; when none
   * is, its new one gets 503. Default 16: one client cannot take every
   * session.
   */
  readonly maxSessionsPerClient?: number;
  /**
   * Keep each session's workspace when the session ends. Default `false`:
   * when a session ends (`DELETE`, idle timeout, reclaimed, or the handler
   * closing) its runtime is destroyed if it can be (`destroy()`: a local
   * conversation's folder is deleted, an OpenSandbox conversation's sandbox
   * deleted, an AIO conversation's folder removed).
   */
  readonly keepWorkspaces?: boolean;
  /**
   * With the default runtime or a `conversationsRoot`: session workspaces
   * (folders named by a session id, never another conversation) left in the
   * root and unchanged for this long (ms) are deleted, when the handler
   * starts and then hourly (e.g. after a crash). `false`: never. Default 24
   * hours, or `false` with `keepWorkspaces`.
   */
  readonly sweepAfterMs?: number | false;
  /** The one path served (e.g. `/mcp`); others get 404. Default: any path. */
  readonly path?: string;
  /** Answer with plain JSON instead of an SSE stream per request. Default false. */
  readonly jsonResponse?: boolean;
  /**
   * Told of what fails out of any request: a runtime that cannot be made
   * or closed, a transport error. Default: nothing (errors stay silent).
   */
  readonly onError?: (error: Error) => void;
  /** Stops loading the skills. */
  readonly signal?: AbortSignal;
  /**
   * A conversation store shared by the instances serving this endpoint
   * (Deno KV, PostgreSQL): each session's record (its conversation, the
   * runtime's kind and non-secret options, the negotiated protocol version
   * and client capabilities, the digest of its token, its last use) and the
   * events of its streams live there, so that any instance serves any
   * request of any session, the session limits count across instances, and
   * idle sessions are swept by whichever instance comes next. Without it,
   * sessions live in this instance's memory.
   */
  readonly store?: ConversationStore;
  /**
   * What a session's record says of its runtime (never a secret): its kind
   * and options, e.g. `{ kind: "opensandbox", options: { image } }`.
   * Default `{ kind: "custom", options: {} }` (`local` for the default runtime).
   */
  readonly runtimeDescription?: {
    readonly kind: string;
    readonly options?: Readonly<Record<string, unknown>>;
  };
  /**
   * With a `store`: a POST stream still open after this long (ms) is closed
   * (the call goes on; the client reconnects with `Last-Event-ID` on any
   * instance and gets the rest), before a platform cuts the request (e.g.
   * Supabase's 150 s). Default 120 000.
   */
  readonly streamLimitMs?: number;
  /** The `retry` (ms) told to clients in each priming event. Default 1000. */
  readonly retryMs?: number;
  /** With a `store`: the sweep of idle sessions runs at most this often (ms). Default 60 000. */
  readonly sweepIntervalMs?: number;
  /**
   * Who a client is for `maxSessionsPerClient`: its token when the request
   * carries one; else its address, or, when the request came through one of
   * these proxies (their addresses), the first address of
   * `X-Forwarded-For`. Default: no proxy trusted.
   */
  readonly trustedProxies?: readonly string[];
}

/** A web-standard request handler serving MCP, one workspace per session. */
export interface McpHttpHandler extends AsyncDisposable {
  /**
   * Answers one HTTP request (`POST`, `GET` or `DELETE` of the Streamable
   * HTTP transport). Never throws: failures are HTTP errors. `info` (what
   * `Deno.serve` passes) names the client for the per-client session limit;
   * without it every request counts as one client.
   */
  (request: Request, info?: McpClientInfo): Promise<Response>;
  /** The skills offered, loaded once for every session. */
  readonly skills: readonly Skill[];
  /** What loading the skills skipped or noticed. */
  readonly warnings: readonly string[];
  /** The ids of the sessions open now. */
  sessionIds(): string[];
  /**
   * With a `store`: sweeps idle sessions now (claims each one idle past the
   * timeout, deletes its sandbox, removes its record; and drops from memory
   * the sessions held here that ended on another instance), whatever the
   * sweep interval; for a platform's scheduler, e.g. `Deno.cron` on Deno Deploy.
   * Without a store it does nothing (each session has its own idle timer).
   * Never throws: failures go to `onError`.
   */
  sweep(): Promise<void>;
  /**
   * Closes every session (and its runtime); later requests get 503.
   * Idempotent.
   */
  close(): Promise<void>;
}

/** What the handler reads of `Deno.serve`'s handler info. */
export interface McpClientInfo {
  /** The client's address. */
  readonly remoteAddr?: Deno.Addr;
}

/**
 * Makes a web-standard handler that serves the skill tools over MCP's
 * Streamable HTTP transport, with each skill as a prompt and its files as
 * resources. Each MCP session gets its own runtime from `runtime(sessionId)`
 * (by default a local conversation workspace named after the session), made
 * when the client initialises and closed when the session ends: on `DELETE`,
 * after `idleTimeoutMs` without activity, or when the handler closes.
 *
 * Security: an optional bearer token (401 otherwise), `Host` checked against
 * `allowedHosts` when given, a browser's `Origin` against `allowedOrigins`
 * (same origin by default), all before any session is touched.
 *
 * Permissions: `--allow-read` of the skills; the runtimes need their own
 * (the default local one: read and write of the conversations root,
 * `--allow-run=bash`). Serving needs `--allow-net`.
 *
 * @param options Skills, configurations, runtime factory, security, limits.
 * @returns The handler; close it when done.
 * @throws {TypeError} An option has the wrong type (see
 * {@linkcode buildSkillTools} for the skills' options).
 * @throws {RangeError} A limit is not a positive integer, or a selected name
 * or a configuration's name matches no skill.
 *
 * @example Serving skills with Deno.serve, one workspace per session
 * ```ts
 * import { assert } from "@std/assert";
 * import { createMcpHttpHandler } from "@skillrun/skillrun/mcp";
 * import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
 * // @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
 * import {
 *   StreamableHTTPClientTransport,
 * } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
 *
 * const root = await Deno.makeTempDir();
 * await Deno.mkdir(`${root}/skills/greet`, { recursive: true });
 * await Deno.writeTextFile(
 *   `${root}/skills/greet/SKILL.md`,
 *   "---\nname: greet\ndescription: Greets the user.\n---\nRun `echo hello`.\n",
 * );
 * const handler = await createMcpHttpHandler({
 *   skills: `${root}/skills`,
 *   conversationsRoot: `${root}/conversations`,
 *   allowedHosts: ["127.0.0.1"],
 * });
 * const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
 * const client = new Client({ name: "example", version: "1.0.0" });
 * const transport = new StreamableHTTPClientTransport(
 *   new URL(`http://127.0.0.1:${server.addr.port}/mcp`),
 * );
 * await client.connect(transport);
 * const ran = await client.callTool({ name: "bash", arguments: { command: "pwd" } });
 * assert(JSON.stringify(ran.content).includes(`conversations/${transport.sessionId}`));
 * const { prompts } = await client.listPrompts();
 * assert(prompts[0]?.name === "greet");
 * await transport.terminateSession();
 * await client.close();
 * await handler.close();
 * await server.shutdown();
 * await Deno.remove(root, { recursive: true });
 * ```
 */
export async function createMcpHttpHandler(
  options: McpHttpHandlerOptions = {},
): Promise<McpHttpHandler> {
  // Loaded on first use: importing `./mcp` stays light.
  const { createMcpHttpHandler: create } = await import("./_http_handler.ts");
  return await create(options);
}

/** Options of {@linkcode serveMcpHttp}. */
export interface ServeMcpHttpOptions extends McpHttpHandlerOptions {
  /** The address to listen on; default `127.0.0.1`. */
  readonly hostname?: string;
  /** The port; default 0 (any free port). */
  readonly port?: number;
  /**
   * Serve beyond loopback without a `token`. Default `false`: that is
   * refused, since anyone who reaches the address could run commands. Even
   * then the `Host` check refuses names that are not IP addresses or
   * `localhost` unless `allowedHosts` lists them.
   */
  readonly allowPublicWithoutToken?: boolean;
}

/** An MCP HTTP server listening with `Deno.serve`. */
export interface McpHttpServer extends AsyncDisposable {
  /** The URL of the MCP endpoint, e.g. `http://127.0.0.1:8080/mcp`. */
  readonly url: string;
  /** The handler it serves. */
  readonly handler: McpHttpHandler;
  /** Settles when the server has stopped. */
  readonly finished: Promise<void>;
  /** Closes every session, then stops listening. Idempotent. */
  close(): Promise<void>;
}

/**
 * Serves {@linkcode createMcpHttpHandler} with `Deno.serve` at `/mcp` (unless
 * `path` says otherwise). On a loopback address the `Host` header must name
 * loopback ({@linkcode LOOPBACK_HOSTNAMES}) unless `allowedHosts` says
 * otherwise, and so must a browser's `Origin`: a page from another site that
 * rebinds its name to this machine is refused. Beyond loopback a `token` is
 * required (unless `allowPublicWithoutToken`), and without one the `Host`
 * must be an IP address, `localhost` or a name of `allowedHosts`.
 *
 * Permissions: `--allow-net` for the address, and what the handler needs.
 *
 * @param options The handler's options, the hostname and the port.
 * @returns The running server; `close()` it when done.
 * @throws {TypeError} See {@linkcode createMcpHttpHandler}; or a public
 * address without a token nor `allowPublicWithoutToken`.
 * @throws {Deno.errors.AddrInUse} The port is taken.
 *
 * @example Listening on a free port of loopback
 * ```ts
 * import { assert } from "@std/assert";
 * import { serveMcpHttp } from "@skillrun/skillrun/mcp";
 * await using server = await serveMcpHttp({ port: 0, tools: ["bash"] });
 * assert(server.url.startsWith("http://127.0.0.1:") && server.url.endsWith("/mcp"));
 * const refused = await fetch(server.url, {
 *   method: "POST",
 *   headers: { origin: "http://evil.example", "content-type": "application/json" },
 *   body: "{}",
 * });
 * await refused.body?.cancel();
 * assert(refused.status === 403);
 * ```
 */
export async function serveMcpHttp(
  options: ServeMcpHttpOptions = {},
): Promise<McpHttpServer> {
  const {
    hostname = "127.0.0.1",
    port = 0,
    allowPublicWithoutToken = false,
    ...rest
  } = options;
  const loopback = isLoopback(hostname);
  if (!loopback && rest.token === undefined && !allowPublicWithoutToken) {
    throw new TypeError(
      `Cannot serve MCP on ${hostname} without a token: anyone who reaches it could run commands; give a token, serve on loopback, or set allowPublicWithoutToken (--allow-public-without-token)`,
    );
  }
  const handler = await createMcpHttpHandler({
    path: "/mcp",
    ...(loopback && rest.allowedHosts === undefined
      ? { allowedHosts: LOOPBACK_HOSTNAMES }
      : {}),
    ...rest,
  });
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({ hostname, port, onListen() {} }, handler);
  } catch (error) {
    await handler.close();
    throw error;
  }
  const { addr } = server;
  const host = addr.hostname.includes(":")
    ? `[${addr.hostname}]`
    : addr.hostname;
  let stopping: Promise<void> | undefined;
  const close = (): Promise<void> => {
    stopping ??= (async () => {
      await handler.close();
      await server.shutdown();
    })();
    return stopping;
  };
  return {
    url: `http://${host}:${addr.port}${rest.path ?? "/mcp"}`,
    handler,
    finished: server.finished,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** Whether an address to listen on is loopback only. */
function isLoopback(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}
