/**
 * An edge function (Supabase Edge Functions / Deno Deploy style) that serves
 * the skill tools over MCP's Streamable HTTP transport and runs every
 * session's commands in a remote sandbox: OpenSandbox, AIO Sandbox, E2B,
 * Vercel Sandbox, Daytona or Deno Sandbox, chosen by environment variables. Each MCP session gets its own conversation
 * workspace (an OpenSandbox sandbox of its own, or a folder of its own in the
 * AIO container). With Deno KV available (`--unstable-kv`, or Deno Deploy),
 * conversations are recorded there; otherwise in memory.
 *
 * It needs exactly `--allow-net --allow-env --allow-read=<its skills folder>`
 * (plus `--unstable-kv` for KV) and imports nothing that needs more:
 *
 * ```sh
 * OPEN_SANDBOX_URL=http://localhost:8080 OPEN_SANDBOX_API_KEY=... MCP_TOKEN=... \
 *   npx -y deno@2.9.6 run --allow-net --allow-env --allow-read=examples/edge/skills \
 *   --unstable-kv examples/edge/main.ts
 * ```
 *
 * Environment:
 * - `OPEN_SANDBOX_URL`, `OPEN_SANDBOX_API_KEY`, `OPEN_SANDBOX_IMAGE`
 *   (default `ubuntu:24.04`): an OpenSandbox lifecycle server;
 * - or `AIO_SANDBOX_URL`, `AIO_SANDBOX_TOKEN`: an AIO Sandbox container;
 * - or `E2B_API_KEY` (and `E2B_API_URL`, `E2B_SANDBOX_URL`, `E2B_TEMPLATE`):
 *   E2B, a sandbox per session, paused when the session ends;
 * - or `VERCEL_TOKEN`, `VERCEL_TEAM_ID`, `VERCEL_PROJECT_ID` (and
 *   `VERCEL_API_URL`): Vercel Sandbox, a persistent sandbox per session;
 * - or `DAYTONA_API_KEY` (and `DAYTONA_API_URL`): Daytona, a sandbox per
 *   session found again by its labels;
 * - or `DENO_DEPLOY_TOKEN` (and `DENO_DEPLOY_ORG`, `DENO_SANDBOX_ENDPOINT`,
 *   `DENO_DEPLOY_ENDPOINT`, the variables of the official SDK): Deno Sandbox,
 *   a sandbox per session with a lifetime moved on while it is used;
 * - `SANDBOX` (or `SKILLRUN_SANDBOX`): `opensandbox`, `aio`, `e2b`,
 *   `vercel`, `daytona` or `deno-sandbox` when several are set;
 * - `SKILLRUN_CONVERSATIONS_ROOT`: where conversation workspaces go in the
 *   sandbox (default: the runtime's own);
 * - `MCP_TOKEN`: the bearer token clients must send (recommended). Without
 *   it the function listens on loopback only (`127.0.0.1`), unless
 *   `MCP_ALLOW_PUBLIC_WITHOUT_TOKEN=1` says otherwise, and only IP addresses
 *   and `localhost` are accepted as `Host`;
 * - `MCP_ALLOWED_HOSTS`: the names clients may use in `Host`/`Origin`
 *   (comma-separated, e.g. `mcp.example.com`; `*` for any);
 * - `SKILLRUN_ASK_FOR_APPROVAL=1`: ask the client's user (MCP
 *   `elicitation/create`) before each bash, write and edit call; a client
 *   without that capability gets an error and nothing runs;
 * - `SKILLRUN_KEEP_WORKSPACES=1`: keep each session's workspace (and
 *   OpenSandbox sandbox) when the session ends; by default it is deleted;
 * - `SKILLRUN_CATALOG_BUDGET`: the most characters the skill tool's
 *   description and input schema take (default 8,000; over it the tool lists
 *   the skills that fit and `skill_search` finds the rest);
 * - `HOSTNAME`: the address to listen on with a token (default `0.0.0.0`);
 * - `PORT`: the port to listen on (default 8000; Deno Deploy sets its own);
 * - `SUPABASE_DB_URL` (Supabase) or `DATABASE_URL` (Deno Deploy): the
 *   PostgreSQL database where sessions and conversations are kept, so that
 *   any instance serves any request; else Deno KV where `Deno.openKv` works;
 *   else memory (one instance only; said at start);
 * - `SKILLRUN_IDLE_TIMEOUT_S` (default 1800), `SKILLRUN_SWEEP_INTERVAL_S`
 *   (default 60), `SKILLRUN_STREAM_LIMIT_S` (default 120: below Supabase's
 *   150 s), `SKILLRUN_MAX_SESSIONS` (default 64),
 *   `SKILLRUN_MAX_SESSIONS_PER_CLIENT` (default 16), `SKILLRUN_TRUSTED_PROXIES`
 *   (addresses whose `X-Forwarded-For` names the client).
 *
 * @module
 */
import { fromFileUrl } from "@std/path";
import {
  createMcpHttpHandler,
  type McpHttpHandler,
  type McpRuntimeFactory,
} from "@skillrun/skillrun/mcp";
import {
  type ConversationStore,
  KvConversationStore,
  MemoryConversationStore,
} from "@skillrun/skillrun";
import { PostgresConversationStore } from "@skillrun/skillrun/postgres";
import { OpenSandboxSkillRuntime } from "@skillrun/skillrun/opensandbox";
import { AioSkillRuntime } from "@skillrun/skillrun/aio";
import { E2BSkillRuntime } from "@skillrun/skillrun/e2b";
import { VercelSandboxSkillRuntime } from "@skillrun/skillrun/vercel";
import { DaytonaSkillRuntime } from "@skillrun/skillrun/daytona";
import { DenoSandboxSkillRuntime } from "@skillrun/skillrun/deno-sandbox";

/** The skills this function bundles (beside it). */
export const SKILLS_FOLDER: string = fromFileUrl(
  new URL("./skills", import.meta.url),
);

/** Which sandbox serves the sessions, and how to reach it. */
export type EdgeSandbox =
  | {
    readonly kind: "opensandbox";
    readonly url: string;
    readonly apiKey?: string;
    readonly image: string;
  }
  | { readonly kind: "aio"; readonly url: string; readonly apiKey?: string }
  | {
    readonly kind: "e2b";
    readonly apiKey: string;
    readonly baseUrl?: string;
    readonly sandboxUrl?: string;
    readonly template?: string;
  }
  | {
    readonly kind: "vercel";
    readonly apiKey: string;
    readonly teamId?: string;
    readonly projectId?: string;
    readonly baseUrl?: string;
  }
  | {
    readonly kind: "daytona";
    readonly apiKey: string;
    readonly baseUrl?: string;
  }
  | {
    readonly kind: "deno-sandbox";
    readonly token: string;
    readonly org?: string;
    readonly baseUrl?: string;
    readonly consoleUrl?: string;
  };

/** The function's configuration, read from its environment. */
export interface EdgeConfig {
  /** The sandbox. */
  readonly sandbox: EdgeSandbox;
  /** Where conversation workspaces go in the sandbox (default: the runtime's). */
  readonly conversationsRoot?: string;
  /** The bearer token clients must send, if any. */
  readonly token?: string;
  /** The names accepted in `Host`/`Origin` (default: see the handler). */
  readonly allowedHosts?: readonly string[];
  /** Keep each session's workspace when it ends (default: deleted). */
  readonly keepWorkspaces?: boolean;
  /**
   * Ask the client's user (MCP elicitation) before each bash, write and
   * edit call (`SKILLRUN_ASK_FOR_APPROVAL=1`).
   */
  readonly askForApproval?: boolean;
  /** Where to listen: loopback without a token unless told otherwise. */
  readonly hostname: string;
  /** The PostgreSQL URL of the store (`SUPABASE_DB_URL`, `DATABASE_URL`). */
  readonly databaseUrl?: string;
  /** A session idle this long (s) ends. */
  readonly idleTimeoutS?: number;
  /** The sweep of idle sessions runs at most this often (s). */
  readonly sweepIntervalS?: number;
  /** A POST stream is closed after this long (s); the client resumes it. */
  readonly streamLimitS?: number;
  /** The most sessions open at once (across instances with a shared store). */
  readonly maxSessions?: number;
  /** The most sessions of one client. */
  readonly maxSessionsPerClient?: number;
  /** Proxies whose `X-Forwarded-For` names the client. */
  readonly trustedProxies?: readonly string[];
  /** The skill tool's catalog budget in characters (default: the library's). */
  readonly catalogBudget?: number;
}

/**
 * Reads the configuration from environment variables (see the module's doc).
 *
 * @example A configuration for OpenSandbox
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { configFromEnv } from "./main.ts";
 * const env: Record<string, string> = { OPEN_SANDBOX_URL: "http://sandbox.example:8080" };
 * const config = configFromEnv((name) => env[name]);
 * assertEquals(config.sandbox.kind, "opensandbox");
 * ```
 *
 * @param get Reads one variable (e.g. `(n) => Deno.env.get(n)`).
 * @returns The configuration.
 * @throws {TypeError} No sandbox is configured, or `SKILLRUN_SANDBOX` is not
 * `opensandbox` or `aio`, or names one that is not configured.
 */
export function configFromEnv(
  get: (name: string) => string | undefined,
): EdgeConfig {
  const value = (name: string) => {
    const v = get(name)?.trim();
    return v ? v : undefined;
  };
  const openSandbox = value("OPEN_SANDBOX_URL");
  const aio = value("AIO_SANDBOX_URL");
  const e2b = value("E2B_API_KEY");
  const vercel = value("VERCEL_TOKEN");
  const daytona = value("DAYTONA_API_KEY");
  const deno = value("DENO_DEPLOY_TOKEN");
  const chosen = value("SKILLRUN_SANDBOX") ?? value("SANDBOX") ??
    (openSandbox
      ? "opensandbox"
      : aio
      ? "aio"
      : e2b
      ? "e2b"
      : vercel
      ? "vercel"
      : daytona
      ? "daytona"
      : deno
      ? "deno-sandbox"
      : undefined);
  const some = (entries: Record<string, string | undefined>) =>
    Object.fromEntries(
      Object.entries(entries).filter(([, v]) => v !== undefined),
    );
  let sandbox: EdgeSandbox;
  if (chosen === "opensandbox" && openSandbox) {
    const apiKey = value("OPEN_SANDBOX_API_KEY");
    sandbox = {
      kind: "opensandbox",
      url: openSandbox,
      image: value("OPEN_SANDBOX_IMAGE") ?? "ubuntu:24.04",
      ...(apiKey ? { apiKey } : {}),
    };
  } else if (chosen === "aio" && aio) {
    const token = value("AIO_SANDBOX_TOKEN");
    sandbox = { kind: "aio", url: aio, ...(token ? { apiKey: token } : {}) };
  } else if (chosen === "e2b" && e2b) {
    sandbox = {
      kind: "e2b",
      apiKey: e2b,
      ...some({
        baseUrl: value("E2B_API_URL"),
        sandboxUrl: value("E2B_SANDBOX_URL"),
        template: value("E2B_TEMPLATE"),
      }),
    };
  } else if (chosen === "vercel" && vercel) {
    sandbox = {
      kind: "vercel",
      apiKey: vercel,
      ...some({
        teamId: value("VERCEL_TEAM_ID"),
        projectId: value("VERCEL_PROJECT_ID"),
        baseUrl: value("VERCEL_API_URL"),
      }),
    };
  } else if (chosen === "daytona" && daytona) {
    sandbox = {
      kind: "daytona",
      apiKey: daytona,
      ...some({ baseUrl: value("DAYTONA_API_URL") }),
    };
  } else if (chosen === "deno-sandbox" && deno) {
    sandbox = {
      kind: "deno-sandbox",
      token: deno,
      ...some({
        org: value("DENO_DEPLOY_ORG"),
        baseUrl: value("DENO_SANDBOX_ENDPOINT"),
        consoleUrl: value("DENO_DEPLOY_ENDPOINT"),
      }),
    };
  } else if (chosen === undefined) {
    throw new TypeError(
      "Cannot start the edge function: set OPEN_SANDBOX_URL (OpenSandbox) or AIO_SANDBOX_URL (AIO Sandbox)",
    );
  } else {
    throw new TypeError(
      `Cannot use SKILLRUN_SANDBOX "${chosen}": it must be "opensandbox" (with OPEN_SANDBOX_URL), "aio" (with AIO_SANDBOX_URL), "e2b" (with E2B_API_KEY), "vercel" (with VERCEL_TOKEN), "daytona" (with DAYTONA_API_KEY) or "deno-sandbox" (with DENO_DEPLOY_TOKEN)`,
    );
  }
  const conversationsRoot = value("SKILLRUN_CONVERSATIONS_ROOT");
  const budget = value("SKILLRUN_CATALOG_BUDGET");
  if (budget !== undefined && !/^[1-9]\d*$/.test(budget)) {
    throw new TypeError(
      `Cannot use SKILLRUN_CATALOG_BUDGET "${budget}": it must be a positive number of characters`,
    );
  }
  const token = value("MCP_TOKEN");
  const yes = (name: string) => /^(1|true|yes)$/i.test(value(name) ?? "");
  const allowedHosts = value("MCP_ALLOWED_HOSTS")?.split(",").map((h) =>
    h.trim()
  ).filter(Boolean);
  // Without a token, loopback only unless told: anyone who reached a public
  // address could run commands in the sandbox.
  const hostname = token || yes("MCP_ALLOW_PUBLIC_WITHOUT_TOKEN")
    ? value("HOSTNAME") ?? "0.0.0.0"
    : "127.0.0.1";
  const seconds = (name: string): number | undefined => {
    const v = value(name);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) {
      throw new TypeError(
        `Cannot use ${name} "${v}": expected a positive whole number`,
      );
    }
    return n;
  };
  const numbers = Object.fromEntries(
    ([
      ["idleTimeoutS", "SKILLRUN_IDLE_TIMEOUT_S"],
      ["sweepIntervalS", "SKILLRUN_SWEEP_INTERVAL_S"],
      ["streamLimitS", "SKILLRUN_STREAM_LIMIT_S"],
      ["maxSessions", "SKILLRUN_MAX_SESSIONS"],
      ["maxSessionsPerClient", "SKILLRUN_MAX_SESSIONS_PER_CLIENT"],
    ] as const).flatMap(([key, name]) => {
      const n = seconds(name);
      return n === undefined ? [] : [[key, n]];
    }),
  );
  const databaseUrl = value("SUPABASE_DB_URL") ?? value("DATABASE_URL");
  const trustedProxies = value("SKILLRUN_TRUSTED_PROXIES")?.split(",").map((
    h,
  ) => h.trim()).filter(Boolean);
  return {
    sandbox,
    hostname,
    ...numbers,
    ...(databaseUrl ? { databaseUrl } : {}),
    ...(trustedProxies ? { trustedProxies } : {}),
    ...(conversationsRoot ? { conversationsRoot } : {}),
    ...(token ? { token } : {}),
    ...(allowedHosts ? { allowedHosts } : {}),
    ...(yes("SKILLRUN_KEEP_WORKSPACES") ? { keepWorkspaces: true } : {}),
    ...(yes("SKILLRUN_ASK_FOR_APPROVAL") ? { askForApproval: true } : {}),
    ...(budget !== undefined ? { catalogBudget: Number(budget) } : {}),
  };
}

/**
 * The conversation store: PostgreSQL when the configuration names a
 * database (`SUPABASE_DB_URL`, `DATABASE_URL`), else Deno KV when this
 * runtime has it (`--unstable-kv`, Deno Deploy), else one in memory.
 *
 * @param config The configuration (its `databaseUrl`).
 * @returns The store and what it is.
 */
export async function openStore(
  config: Pick<EdgeConfig, "databaseUrl"> = {},
): Promise<
  { store: ConversationStore; kind: "postgres" | "kv" | "memory" }
> {
  if (config.databaseUrl) {
    return {
      store: new PostgresConversationStore(config.databaseUrl),
      kind: "postgres",
    };
  }
  try {
    return { store: await KvConversationStore.open(), kind: "kv" };
  } catch {
    // No KV here (run without --unstable-kv): conversations live in memory.
    return { store: new MemoryConversationStore(), kind: "memory" };
  }
}

/**
 * Makes the function's request handler: the bundled skills served over MCP,
 * one conversation workspace in the sandbox per MCP session.
 *
 * @param config The configuration.
 * @param store Where conversations are recorded.
 * @returns The handler (for `Deno.serve`); close it to end every session.
 */
export async function createEdgeHandler(
  config: EdgeConfig,
  store: ConversationStore,
): Promise<McpHttpHandler> {
  const { sandbox, conversationsRoot } = config;
  const conversation = (sessionId: string) => ({
    conversationId: sessionId,
    store,
    ...(conversationsRoot ? { conversationsRoot } : {}),
  });
  const runtime: McpRuntimeFactory = (sessionId) => {
    switch (sandbox.kind) {
      case "opensandbox":
        return Promise.resolve(
          new OpenSandboxSkillRuntime({
            baseUrl: sandbox.url,
            ...(sandbox.apiKey ? { apiKey: sandbox.apiKey } : {}),
            sandbox: { image: sandbox.image },
            ...conversation(sessionId),
          }),
        );
      case "aio":
        return Promise.resolve(
          new AioSkillRuntime({
            baseUrl: sandbox.url,
            ...(sandbox.apiKey ? { apiKey: sandbox.apiKey } : {}),
            ...conversation(sessionId),
          }),
        );
      case "e2b": {
        const { kind: _, template, ...rest } = sandbox;
        return Promise.resolve(
          new E2BSkillRuntime({
            ...rest,
            ...(template ? { sandbox: { template } } : {}),
            ...conversation(sessionId),
          }),
        );
      }
      case "vercel": {
        const { kind: _, ...rest } = sandbox;
        return Promise.resolve(
          new VercelSandboxSkillRuntime({
            ...rest,
            ...conversation(sessionId),
          }),
        );
      }
      case "daytona": {
        const { kind: _, ...rest } = sandbox;
        return Promise.resolve(
          new DaytonaSkillRuntime({ ...rest, ...conversation(sessionId) }),
        );
      }
      case "deno-sandbox": {
        const { kind: _, ...rest } = sandbox;
        return Promise.resolve(
          new DenoSandboxSkillRuntime({ ...rest, ...conversation(sessionId) }),
        );
      }
    }
  };
  return await createMcpHttpHandler({
    skills: SKILLS_FOLDER,
    runtime,
    ...(config.token ? { token: config.token } : {}),
    ...(config.allowedHosts ? { allowedHosts: config.allowedHosts } : {}),
    keepWorkspaces: config.keepWorkspaces ?? false,
    ...(config.askForApproval
      ? {
        approve: ({ tool }: { tool: string }) =>
          ["bash", "write", "edit"].includes(tool) ? "ask" as const : "allow",
      }
      : {}),
    ...(config.catalogBudget !== undefined
      ? { catalogBudget: config.catalogBudget }
      : {}),
    onError: (error) => console.error(`edge: ${error.message}`),
    store,
    runtimeDescription: describe(sandbox),
    ...(config.idleTimeoutS
      ? { idleTimeoutMs: config.idleTimeoutS * 1000 }
      : {}),
    ...(config.sweepIntervalS
      ? { sweepIntervalMs: config.sweepIntervalS * 1000 }
      : {}),
    ...(config.streamLimitS
      ? { streamLimitMs: config.streamLimitS * 1000 }
      : {}),
    ...(config.maxSessions ? { maxSessions: config.maxSessions } : {}),
    ...(config.maxSessionsPerClient
      ? { maxSessionsPerClient: config.maxSessionsPerClient }
      : {}),
    ...(config.trustedProxies ? { trustedProxies: config.trustedProxies } : {}),
  });
}

/** What a session's record says of its sandbox: its kind and no secret. */
function describe(
  sandbox: EdgeSandbox,
): { kind: string; options: Record<string, unknown> } {
  switch (sandbox.kind) {
    case "opensandbox":
      return { kind: "opensandbox", options: { image: sandbox.image } };
    case "e2b":
      return {
        kind: "e2b",
        options: sandbox.template ? { template: sandbox.template } : {},
      };
    default:
      return { kind: sandbox.kind, options: {} };
  }
}

if (import.meta.main) {
  let config: EdgeConfig;
  try {
    config = configFromEnv((name) => Deno.env.get(name));
  } catch (error) {
    console.error(`error: ${(error as Error).message}`);
    Deno.exit(1);
  }
  const { store, kind } = await openStore(config);
  if (kind === "memory") {
    console.error(
      "edge: warning: no SUPABASE_DB_URL, DATABASE_URL nor Deno KV: sessions are kept in memory, so run one instance only",
    );
  }
  let handler: McpHttpHandler;
  try {
    handler = await createEdgeHandler(config, store);
  } catch (error) {
    // A configuration the handler refuses (a catalog budget too small for
    // the tool's own text...): one line, no stack.
    console.error(`error: ${(error as Error).message}`);
    Deno.exit(1);
  }
  // Where the platform schedules (Deno.cron: Deno Deploy; locally with
  // --unstable-cron), idle sessions are also swept every minute, so that a
  // function without requests still deletes their sandboxes.
  const cron = (Deno as {
    cron?: (name: string, schedule: string, run: () => Promise<void>) => void;
  }).cron;
  if (kind !== "memory" && typeof cron === "function") {
    cron("skillrun idle sessions", "* * * * *", () => handler.sweep());
    console.error(
      "edge: idle sessions are also swept every minute by Deno.cron",
    );
  }
  const port = Number(Deno.env.get("PORT") ?? 8000);
  if (!config.token) {
    console.error(
      config.hostname === "127.0.0.1"
        ? "edge: no MCP_TOKEN: listening on loopback only (set MCP_TOKEN to serve beyond it)"
        : "edge: warning: no MCP_TOKEN and MCP_ALLOW_PUBLIC_WITHOUT_TOKEN set: anyone who reaches this address can run commands",
    );
  }
  Deno.serve({
    hostname: config.hostname,
    port,
    onListen: ({ hostname, port }) =>
      console.log(
        `http://${hostname}:${port}/mcp (${config.sandbox.kind}, ${kind} store, ${handler.skills.length} skills)`,
      ),
  }, handler);
}
