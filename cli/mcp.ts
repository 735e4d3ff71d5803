/**
 * `skillrun mcp`: serves the skill tools over MCP on stdio, or over
 * Streamable HTTP with `--http`.
 *
 * @module
 */
import { escapeControl } from "../_internal/escape_text.ts";
import { buildSkillTools } from "../tools/mod.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import { parseArgs, SKILLS_OPTION_HELP, UsageError } from "./_args.ts";
import { readConfigFile } from "./_config.ts";
import { checkRuntimeFlag, remoteRuntime, RUNTIME_HELP } from "./_remote.ts";
import {
  approvalOptions,
  forgetMcpToken,
  serveMcpHttpCommand,
  verboseListeners,
} from "./_mcp_http.ts";
import { EGRESS_FLAGS, egressOptions } from "./_egress.ts";
import { onceEach, parseScopes, SCOPE_OPTION_HELP } from "./_scope.ts";
import type { SkillScope } from "../skill/sources.ts";
import { CATALOG_BUDGET_HELP, parseCatalogBudget } from "./_catalog.ts";
import type { EgressOptions } from "../network/sandbox.ts";
import { defaultMcpConversationsRoot } from "../tools/mcp/_conversations_root.ts";
import {
  checkIsolateFlags,
  type CliStreams,
  createRuntime,
  ISOLATE_HELP,
  USAGE_EXIT_CODE,
} from "./run.ts";

/** The help of `skillrun mcp`. */
export const MCP_HELP: string = `Usage: skillrun mcp --skills <dir> [options]

Serves the skill tools (skill, bash, bash_output, kill_bash, read, write,
edit, ls, glob, grep) to an MCP client over stdio, with the local runtime.
Stdout carries only MCP messages; warnings go to stderr. It ends when the
client closes stdin.
Each skill is also an MCP prompt (its instructions) and its files are
resources (skill://<name>/<path>).

With --http it serves MCP over Streamable HTTP instead, at
http://<host>:<port>/mcp (printed as the first line of stdout), until
interrupted: each MCP session gets its own conversation workspace
<root>/<session id>, closed when the session ends or after 30 minutes idle.
A bearer token is asked when SKILLRUN_MCP_TOKEN is set (it then leaves the
server's environment: no command sees it). Beyond loopback a token is
required unless --allow-public-without-token. Requests naming another Host or
Origin are refused (DNS rebinding): on loopback only loopback names pass;
elsewhere, without a token, only IP addresses and localhost, plus
--allowed-hosts. A session's workspace is deleted when the session ends
(--keep-workspaces keeps it), and workspaces of sessions left behind are
swept after --sweep-after hours (default 24).

Options:
${SKILLS_OPTION_HELP}.
                       Required (or --scope)
${SCOPE_OPTION_HELP}
  --conversation <id>  Work in the conversation workspace <root>/<id>: skills
                       are copied into it and the file tools stay inside it
  --root <dir>         The conversations root (default:
                       $XDG_STATE_HOME/skillrun/conversations, else
                       ~/.local/state/skillrun/conversations)
  --http [host:]port   Serve over HTTP on this address (host default
                       127.0.0.1; port 0 picks a free one)
  --json-response      With --http: answer each request with plain JSON
                       instead of an SSE stream (cheaper; no keep-alive
                       while a long call runs)
  --allow-public-without-token
                       With --http: serve beyond loopback without a token
                       (anyone who reaches the address can run commands)
  --allowed-hosts <h,h>
                       With --http: the names clients may use in Host and
                       Origin (e.g. mcp.example.com; "*" for any)
  --keep-workspaces    With --http: keep each session's workspace after the
                       session ends (default: deleted)
  --sweep-after <hours>
                       With --http: delete session workspaces left unchanged
                       this long (default 24; 0: never)
  --store <where>      With --http: keep sessions in a store that replicas
                       share, so any of them serves any request: a KV file
                       (a path, with --unstable-kv), or a postgres:// URL
                       (default: memory; also SKILLRUN_STORE, which keeps a
                       password out of the process list)
  --max-sessions <n>   With --http: sessions open at once (default 64; with
                       --store, counted across replicas)
  --max-sessions-per-client <n>
                       With --http: sessions of one client (default 16); a
                       client is its token, else its address
  --trusted-proxies <a,a>
                       With --http: proxies whose X-Forwarded-For names the
                       client
  --idle-timeout <s>   With --http: seconds idle before a session ends
                       (default 1800)
  --stream-limit <s>   With --http and --store: seconds a call's stream stays
                       open before the client resumes it (default 120)
  --sweep-interval <s> With --http and --store: seconds between two sweeps of
                       idle sessions in the store, at most (default 60)
  --ask-for-approval   Ask the user before each bash, write and edit call,
                       through the client (MCP elicitation/create; a client
                       without that capability gets an error and nothing
                       runs, as with --json-response); the active skill's
                       allowed-tools pre-approve what they cover (skills
                       from packages or MCP servers excepted)
  --config <file>      A JSON file with each skill's environment and bootstrap
                       commands: {"<skill>": {"env": {"NAME": "value"},
                       "bootstrap": ["command", ...]}}; never shown to the model
${CATALOG_BUDGET_HELP}${ISOLATE_HELP}${RUNTIME_HELP}  --watch              Reload the skills when their folders change: the
                       client is told the tools and prompts changed (with
                       --http, each session watches and is told)
  --verbose            Print the events on stderr (tool calls, preparation
                       steps, command output, HTTP requests; configured
                       values removed); also SKILLRUN_LOG=debug
  -h, --help           Show this help

Example (an MCP client's server entry):
  { "command": "deno", "args": ["run", "-A", "/path/to/skillrun/cli.ts",
    "mcp", "--skills", "/path/to/skills"] }
  With a sandbox per command: add "--isolate" (and "--allow-net" if the
  skills need the network).
Example (over HTTP):
  deno run -A cli.ts mcp --skills examples/skills --http 8080
`;

/** Options of {@linkcode mcpCommand}. */
export interface McpCommandOptions {
  /** Stops serving. */
  readonly signal?: AbortSignal;
  /**
   * Where help, warnings and (with `--http`) the URL go; default the
   * process's streams. MCP over stdio always uses the process's own.
   */
  readonly streams?: CliStreams;
}

/**
 * Runs `skillrun mcp` with its arguments (those after `mcp`): loads the skills,
 * builds the tools on a local runtime and serves them over stdio until the
 * client closes the connection; with `--http`, over Streamable HTTP (one
 * conversation workspace per MCP session) until the signal aborts or the
 * process gets SIGINT or SIGTERM.
 *
 * Permissions: `--allow-read` of the skills (and the workspace),
 * `--allow-write` of what the tools may write, `--allow-run=bash` (and `rg`;
 * with `--isolate`, `bwrap` too); with `--http` also `--allow-net` of the
 * address and `--allow-env=SKILLRUN_MCP_TOKEN` for a token.
 *
 * @param args The arguments after `mcp`.
 * @param options A signal and the streams for help and warnings.
 * @returns The exit code for the process.
 * @throws Never for bad input: that becomes a message and exit code 2.
 *
 * @example Showing the help
 * ```ts
 * import { mcpCommand } from "./mcp.ts";
 * import { assert } from "@std/assert";
 * const chunks: Uint8Array[] = [];
 * const sink = { write: (b: Uint8Array) => (chunks.push(b), Promise.resolve(b.length)) };
 * const code = await mcpCommand(["--help"], { streams: { stdout: sink, stderr: sink } });
 * assert(code === 0 && new TextDecoder().decode(chunks[0]).startsWith("Usage:"));
 * ```
 */
export async function mcpCommand(
  args: readonly string[],
  options: McpCommandOptions = {},
): Promise<number> {
  const streams = options.streams ??
    { stdout: Deno.stdout, stderr: Deno.stderr };
  const encoder = new TextEncoder();
  const out = async (text: string) => {
    await streams.stdout.write(encoder.encode(text));
  };
  const err = async (text: string) => {
    await streams.stderr.write(encoder.encode(escapeControl(text)));
  };
  let parsed;
  let egress: EgressOptions;
  let scopes: SkillScope[] | undefined;
  let catalogBudget: number | undefined;
  try {
    parsed = parseArgs(args, {
      "catalog-budget": "string",
      skills: "list",
      conversation: "string",
      root: "string",
      config: "string",
      http: "string",
      "json-response": "boolean",
      "allow-public-without-token": "boolean",
      "allowed-hosts": "string",
      "keep-workspaces": "boolean",
      "sweep-after": "string",
      store: "string",
      "max-sessions": "string",
      "max-sessions-per-client": "string",
      "trusted-proxies": "string",
      "idle-timeout": "string",
      "stream-limit": "string",
      "sweep-interval": "string",
      isolate: "boolean",
      "allow-net": "boolean",
      ...EGRESS_FLAGS,
      runtime: "string",
      sandbox: "string",
      verbose: "boolean",
      "ask-for-approval": "boolean",
      scope: "list",
      watch: "boolean",
    });
    if (parsed.flags.help === true) {
      await out(MCP_HELP);
      return 0;
    }
    if (parsed.positionals.length > 0 || parsed.rest !== undefined) {
      throw new UsageError(
        `Unexpected argument "${parsed.positionals[0] ?? "--"}"`,
      );
    }
    if (parsed.lists.scope !== undefined) {
      scopes = parseScopes(parsed.lists.scope);
    }
    if (parsed.lists.skills === undefined && scopes === undefined) {
      throw new UsageError('Option "--skills" is required (or "--scope")');
    }
    if (
      typeof parsed.flags.root === "string" &&
      typeof parsed.flags.conversation !== "string" &&
      typeof parsed.flags.http !== "string"
    ) {
      throw new UsageError('Option "--root" needs "--conversation"');
    }
    for (
      const flag of [
        "json-response",
        "allow-public-without-token",
        "allowed-hosts",
        "keep-workspaces",
        "sweep-after",
      ]
    ) {
      if (
        parsed.flags[flag] !== undefined &&
        typeof parsed.flags.http !== "string"
      ) {
        throw new UsageError(`Option "--${flag}" needs "--http"`);
      }
    }
    checkIsolateFlags(parsed.flags);
    egress = egressOptions(parsed.lists, parsed.flags);
    checkRuntimeFlag(parsed.flags);
    catalogBudget = parseCatalogBudget(parsed.flags["catalog-budget"]);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    await err(`skillrun mcp: ${error.message}\n\n${MCP_HELP}`);
    return USAGE_EXIT_CODE;
  }

  let runtime: SkillRuntime | undefined;
  try {
    const configs = typeof parsed.flags.config === "string"
      ? await readConfigFile(parsed.flags.config)
      : undefined;
    const dirs = parsed.lists.skills ?? [];
    if (typeof parsed.flags.http === "string") {
      await serveMcpHttpCommand({
        flags: parsed.flags,
        egress,
        skills: dirs,
        ...(scopes ? { scopes } : {}),
        ...(configs ? { configs } : {}),
        ...(catalogBudget !== undefined ? { catalogBudget } : {}),
        ...(parsed.flags.watch === true ? { watch: true } : {}),
        out,
        err,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      return 0;
    }
    forgetMcpToken();
    const verbose = verboseListeners(parsed.flags, err);
    runtime = remoteRuntime(parsed.flags, undefined, verbose?.runtime) ??
      await createRuntime(
        parsed.flags,
        defaultMcpConversationsRoot,
        verbose?.runtime,
        egress,
      );
    const built = await buildSkillTools({
      skills: dirs,
      ...(parsed.flags.watch === true ? { watch: true } : {}),
      ...(scopes ? { load: { scopes } } : {}),
      runtime,
      ...approvalOptions(parsed.flags),
      ...(configs ? { configs } : {}),
      ...(catalogBudget !== undefined ? { catalogBudget } : {}),
      ...(verbose ? { onEvent: verbose.tools } : {}),
    });
    for (const warning of built.warnings) {
      await err(`skillrun mcp: warning: ${warning}\n`);
    }
    if (built.skills.length === 0) {
      await err(
        `skillrun mcp: no skills found under "${
          [...dirs, ...(scopes ?? [])].join(",")
        }"; serving the file tools only\n`,
      );
    }
    // Loaded here so that the other subcommands never load the MCP SDK.
    const { serveMcp } = await import("../tools/mcp/mod.ts");
    await serveMcp(built.tools, {
      skills: built.skills,
      ...(parsed.flags.watch === true ? { reload: built } : {}),
      onWarning: onceEach((message) =>
        err(`skillrun mcp: warning: ${message}\n`)
      ),
      secrets: () => built.context.secrets(),
      instructions: mcpInstructions(
        runtime.cwd,
        parsed.flags.isolate === true,
        parsed.flags["allow-net"] === true,
        egress,
      ),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    await built.close(); // the watcher, with --watch
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      await err(`skillrun mcp: ${error.message}\n`);
      return USAGE_EXIT_CODE;
    }
    await err(
      `skillrun mcp: ${
        error instanceof Error ? error.message : String(error)
      }\n`,
    );
    return 1;
  } finally {
    await runtime?.close();
  }
}

function mcpInstructions(
  cwd: string,
  isolated: boolean,
  allowNet: boolean,
  egress: EgressOptions,
): string {
  return "These tools give you Agent Skills: when a task matches a skill in the skill tool's list, " +
    "call the skill tool with its name first, then follow its instructions with the other tools. " +
    `Commands run, and relative paths resolve, in ${cwd}.` +
    (isolated
      ? ` Commands run in a sandbox: only that folder (and the skills' folders) and /tmp are writable, /tmp is emptied after each command, and ${
        egress.network || egress.secrets
          ? `the network goes through a policy proxy (HTTP_PROXY) that allows only ${
            [
              ...(egress.network?.allow ?? []),
              ...Object.values(egress.secrets ?? {}).flatMap((s) => s.hosts),
            ].join(", ") || "no host"
          }; a refused request gets 403 with the reason`
          : allowNet
          ? "the network is available"
          : "there is no network"
      }.`
      : "");
}
