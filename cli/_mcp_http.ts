/**
 * `skillrun mcp --http [host:]port`: the skill tools over MCP's Streamable
 * HTTP transport, one conversation workspace per MCP session.
 *
 * @module
 */
import type { SkillRuntimeConfig } from "../runtimes/config.ts";
import type { SkillScope } from "../skill/sources.ts";
import { UsageError } from "./_args.ts";
import {
  type ConversationStore,
  KvConversationStore,
} from "../runtimes/stores/conversation_store.ts";
import { createRuntime, eventPrinter } from "./run.ts";
import { onceEach } from "./_scope.ts";
import { checkRuntimeFlag, remoteRuntime } from "./_remote.ts";
import type { SkillEventListener } from "../observe/events.ts";
import type { EgressOptions } from "../network/sandbox.ts";
import { defaultMcpConversationsRoot } from "../tools/mcp/_conversations_root.ts";

/** The variable holding the bearer token that `mcp --http` asks for. */
export const MCP_TOKEN_VARIABLE = "SKILLRUN_MCP_TOKEN";

/** Where to listen. */
export interface ListenAddress {
  /** The hostname or IP address (IPv6 without brackets). */
  readonly hostname: string;
  /** The port (0: any free port). */
  readonly port: number;
}

/**
 * Parses `[host:]port` (`8080`, `0.0.0.0:8080`, `[::1]:8080`); the host
 * defaults to `127.0.0.1`.
 *
 * @param value The flag's value.
 * @returns The address.
 * @throws {UsageError} The value is not of that form.
 *
 * @example Reading addresses
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseListenAddress } from "./_mcp_http.ts";
 * assert(parseListenAddress("8080").hostname === "127.0.0.1");
 * assert(parseListenAddress("[::1]:0").hostname === "::1");
 * ```
 */
export function parseListenAddress(value: string): ListenAddress {
  const match = /^(?:(\[[0-9A-Fa-f:.]+\]|[^:[\]]+):)?(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (!match || port > 65535) {
    throw new UsageError(
      `Cannot listen on "${value}": expected [host:]port with a port from 0 to 65535`,
    );
  }
  const host = match[1] ?? "127.0.0.1";
  return { hostname: host.replace(/^\[(.*)\]$/, "$1"), port };
}

/** What the HTTP path of `skillrun mcp` needs. */
export interface McpHttpCommandOptions {
  /** The parsed flags of `skillrun mcp`. */
  readonly flags: Readonly<Record<string, string | boolean>>;
  /** The egress options of the isolated runtimes (from the egress flags). */
  readonly egress?: EgressOptions;
  /** The skill folders of `--skills`. */
  readonly skills: readonly string[];
  /** The standard places of `--scope`. */
  readonly scopes?: readonly SkillScope[];
  /** The skills' configurations from `--config`. */
  readonly configs?: ReadonlyMap<string, SkillRuntimeConfig>;
  /** The skill tool's catalog budget from `--catalog-budget`. */
  readonly catalogBudget?: number;
  /** `--watch`: each session reloads the skills when their folders change. */
  readonly watch?: boolean;
  /** Prints a line on stdout. */
  readonly out: (text: string) => Promise<void>;
  /** Prints a line on stderr. */
  readonly err: (text: string) => Promise<void>;
  /** Stops serving. */
  readonly signal?: AbortSignal;
}

/** The tools `--ask-for-approval` asks about. */
export const ASKED_TOOLS: readonly string[] = ["bash", "write", "edit"];

/**
 * The tool set's approval policy of `--ask-for-approval` (named like the
 * Codex CLI's option): `bash`, `write` and `edit` ask, the rest runs.
 *
 * @param flags The parsed flags.
 * @returns `{ approve }`, or nothing without the flag.
 */
export function approvalOptions(
  flags: Readonly<Record<string, unknown>>,
): { approve?: (call: { tool: string }) => "allow" | "ask" } {
  if (flags["ask-for-approval"] !== true) return {};
  return {
    approve: (call) => ASKED_TOOLS.includes(call.tool) ? "ask" : "allow",
  };
}

/**
 * Serves until the signal aborts or the process gets SIGINT or SIGTERM, then
 * closes every session. Prints the endpoint's URL as the first line of stdout.
 *
 * @param options Flags, configurations, output and signal.
 * @returns When the server has stopped.
 */
export async function serveMcpHttpCommand(
  options: McpHttpCommandOptions,
): Promise<void> {
  const { flags, out, err, signal, egress } = options;
  const address = parseListenAddress(flags.http as string);
  if (typeof flags.conversation === "string") {
    throw new UsageError(
      'Option "--conversation" does not go with "--http": each MCP session gets its own conversation',
    );
  }
  const token = await readToken(err);
  const verbose = verboseListeners(flags, err);
  const allowedHosts = typeof flags["allowed-hosts"] === "string"
    ? flags["allowed-hosts"].split(",").map((h) => h.trim()).filter(Boolean)
    : undefined;
  const sweepAfterMs = parseSweepAfter(flags["sweep-after"]);
  const keepWorkspaces = flags["keep-workspaces"] === true;
  // The root whose left session workspaces are swept (none when unknown).
  let root: string | undefined;
  try {
    root = typeof flags.root === "string"
      ? flags.root
      : defaultMcpConversationsRoot();
  } catch {
    root = undefined;
  }
  const whole = (name: string): number | undefined => {
    const v = flags[name];
    if (v === undefined) return undefined;
    const n = Number(v);
    if (typeof v !== "string" || !Number.isInteger(n) || n <= 0) {
      throw new UsageError(
        `Option "--${name}" takes a positive whole number, not ${
          JSON.stringify(v)
        }`,
      );
    }
    return n;
  };
  const maxSessions = whole("max-sessions");
  const maxSessionsPerClient = whole("max-sessions-per-client");
  const idleTimeoutS = whole("idle-timeout");
  const streamLimitS = whole("stream-limit");
  const sweepIntervalS = whole("sweep-interval");
  const trustedProxies = typeof flags["trusted-proxies"] === "string"
    ? flags["trusted-proxies"].split(",").map((h) => h.trim()).filter(Boolean)
    : undefined;
  // --runtime opensandbox|aio|...: each session's conversation is a sandbox
  // (its --root is a folder in the sandbox, not swept on this machine).
  const remote = checkRuntimeFlag(flags);
  if (remote !== undefined) root = undefined;
  const store = await openCliStore(
    typeof flags.store === "string"
      ? flags.store
      : Deno.env.get("SKILLRUN_STORE"),
  );
  // Loaded here so that the other subcommands never load the MCP SDK.
  const { serveMcpHttp } = await import("../tools/mcp/mod.ts");
  const server = await serveMcpHttp({
    ...(store
      ? { store, runtimeDescription: { kind: remote ?? "local" } }
      : {}),
    ...(maxSessions ? { maxSessions } : {}),
    ...(maxSessionsPerClient ? { maxSessionsPerClient } : {}),
    ...(idleTimeoutS ? { idleTimeoutMs: idleTimeoutS * 1000 } : {}),
    ...(streamLimitS ? { streamLimitMs: streamLimitS * 1000 } : {}),
    ...(sweepIntervalS ? { sweepIntervalMs: sweepIntervalS * 1000 } : {}),
    ...(trustedProxies ? { trustedProxies } : {}),
    hostname: address.hostname,
    port: address.port,
    skills: options.skills,
    ...(options.scopes ? { load: { scopes: options.scopes } } : {}),
    ...(options.configs ? { configs: options.configs } : {}),
    ...(options.catalogBudget !== undefined
      ? { catalogBudget: options.catalogBudget }
      : {}),
    ...(options.watch === true ? { watch: true } : {}),
    ...(token !== undefined ? { token } : {}),
    jsonResponse: flags["json-response"] === true,
    allowPublicWithoutToken: flags["allow-public-without-token"] === true,
    ...(allowedHosts ? { allowedHosts } : {}),
    keepWorkspaces,
    ...(sweepAfterMs !== undefined ? { sweepAfterMs } : {}),
    ...(root !== undefined ? { conversationsRoot: root } : {}),
    ...(verbose ? { onEvent: verbose.tools } : {}),
    ...approvalOptions(flags),
    runtime: async (sessionId) =>
      remoteRuntime(
        { ...flags, conversation: sessionId },
        undefined,
        verbose?.runtime,
        store,
      ) ??
        await createRuntime(
          { ...flags, conversation: sessionId },
          defaultMcpConversationsRoot,
          verbose?.runtime,
          egress,
        ),
    onError: (error) => void err(`skillrun mcp: ${error.message}\n`),
    onWarning: onceEach((message) =>
      err(`skillrun mcp: warning: ${message}\n`)
    ),
  });
  for (const warning of server.handler.warnings) {
    await err(`skillrun mcp: warning: ${warning}\n`);
  }
  if (server.handler.skills.length === 0) {
    await err(
      `skillrun mcp: no skills found under "${
        [...options.skills, ...(options.scopes ?? [])].join(",")
      }"; serving the file tools only\n`,
    );
  }
  await out(`${server.url}\n`);
  if (
    token === undefined &&
    !server.url.match(/^http:\/\/(127\.|\[::1\]|localhost)/)
  ) {
    await err(
      `skillrun mcp: warning: listening beyond loopback without a token (--allow-public-without-token): anyone who reaches ${server.url} can run commands (set ${MCP_TOKEN_VARIABLE})\n`,
    );
  }
  const stop = () => void server.close();
  const signals: Deno.Signal[] = Deno.build.os === "windows"
    ? ["SIGINT"]
    : ["SIGINT", "SIGTERM"];
  for (const name of signals) Deno.addSignalListener(name, stop);
  signal?.addEventListener("abort", stop, { once: true });
  if (signal?.aborted) stop();
  try {
    await server.finished;
  } finally {
    for (const name of signals) Deno.removeSignalListener(name, stop);
    signal?.removeEventListener("abort", stop);
    await server.close();
    store?.close();
  }
}

/** `--sweep-after <hours>` in ms: `false` for 0, `undefined` when not given. */
function parseSweepAfter(
  value: string | boolean | undefined,
): number | false | undefined {
  if (value === undefined) return undefined;
  const hours = Number(value);
  if (typeof value !== "string" || !Number.isFinite(hours) || hours < 0) {
    throw new UsageError(
      `Cannot use --sweep-after "${
        String(value)
      }": expected a number of hours (0: never)`,
    );
  }
  return hours === 0 ? false : Math.max(1, Math.round(hours * 3_600_000));
}

/**
 * Takes {@linkcode MCP_TOKEN_VARIABLE} out of this process's environment
 * (when `--allow-env` lets it be read): the server's own credential never
 * reaches a command, and commands inherit this process's environment.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { forgetMcpToken, MCP_TOKEN_VARIABLE } from "./_mcp_http.ts";
 * Deno.env.set(MCP_TOKEN_VARIABLE, "example-token-123");
 * forgetMcpToken();
 * assert(Deno.env.get(MCP_TOKEN_VARIABLE) === undefined);
 * ```
 */
export function forgetMcpToken(): void {
  const state = Deno.permissions.querySync({
    name: "env",
    variable: MCP_TOKEN_VARIABLE,
  }).state;
  if (state === "granted") Deno.env.delete(MCP_TOKEN_VARIABLE);
}

// The token comes from the environment, never from the command line (which
// other users can see in the process list).
async function readToken(
  err: (text: string) => Promise<void>,
): Promise<string | undefined> {
  const state = Deno.permissions.querySync({
    name: "env",
    variable: MCP_TOKEN_VARIABLE,
  }).state;
  if (state !== "granted") {
    await err(
      `skillrun mcp: warning: ${MCP_TOKEN_VARIABLE} not read (no --allow-env for it): no bearer token is asked\n`,
    );
    return undefined;
  }
  const token = Deno.env.get(MCP_TOKEN_VARIABLE);
  forgetMcpToken();
  return token === undefined || token === "" ? undefined : token;
}

/**
 * The `--verbose` listeners of `mcp`: the tools' (tool calls, preparation,
 * command output) and the runtime's (only its HTTP requests and lifecycle,
 * which the tools do not see), so no event is printed twice; `undefined`
 * without `--verbose` or `SKILLRUN_LOG=debug`.
 *
 * @param flags The parsed flags.
 * @param err Writes to stderr.
 * @returns The listeners, or `undefined`.
 */
export function verboseListeners(
  flags: Readonly<Record<string, string | boolean>>,
  err: (text: string) => unknown,
): { tools: SkillEventListener; runtime: SkillEventListener } | undefined {
  const tools = eventPrinter(flags, err);
  const runtime = eventPrinter(
    flags,
    err,
    (event) =>
      event.type === "http_request" || event.type === "runtime_lifecycle",
  );
  return tools && runtime ? { tools, runtime } : undefined;
}

/**
 * The store of `--store` (or `SKILLRUN_STORE`): PostgreSQL for a
 * `postgres://` URL, else a KV file at that path; none for `memory` or none.
 */
async function openCliStore(
  where: string | undefined,
): Promise<ConversationStore | undefined> {
  if (where === undefined || where === "" || where === "memory") {
    return undefined;
  }
  if (/^postgres(ql)?:\/\//.test(where)) {
    const { PostgresConversationStore } = await import(
      "../runtimes/stores/postgres.ts"
    );
    return new PostgresConversationStore(where);
  }
  try {
    return await KvConversationStore.open(where);
  } catch (error) {
    throw new UsageError(
      `Cannot use --store "${where}": ${(error as Error).message}`,
    );
  }
}
