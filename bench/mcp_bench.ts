/**
 * Benchmarks of the MCP server: 100 sequential `bash` tool calls of `true`
 * through the MCP SDK's client, over Streamable HTTP (`cli.ts mcp --http`)
 * against the same calls over stdio (`cli.ts mcp`). Both servers are the CLI
 * in a subprocess with a local conversation workspace; the client runs in the
 * bench's child process. Beside them, 100 `tools/list` on each transport: the
 * protocol's own cost, without a process per call.
 *
 * @module
 */
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
import { type BenchCase, runChild } from "./_harness.ts";

const REPO = new URL("../", import.meta.url).pathname;
const CLI = `${REPO}cli.ts`;
const SKILLS = `${REPO}examples/skills`;
const CALLS = 100;

let client: Promise<Client> | undefined;
const cleanups: (() => Promise<void> | void)[] = [];

// After the report: the client, the server and its workspace go, so the
// bench's child process can end.
async function shutdown(): Promise<void> {
  await (await client)?.close();
  for (const cleanup of cleanups.reverse()) await cleanup();
}

function tempRoot(): string {
  const root = Deno.makeTempDirSync({ prefix: "mcp-bench-" });
  cleanups.push(() => Deno.removeSync(root, { recursive: true }));
  return root;
}

async function overStdio(): Promise<Client> {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [
      "run",
      "--quiet",
      "-A",
      CLI,
      "mcp",
      "--skills",
      SKILLS,
      "--conversation",
      "bench",
      "--root",
      tempRoot(),
    ],
    env: { ...Deno.env.toObject(), NO_COLOR: "1" },
    stderr: "inherit",
  });
  const stdio = new Client({ name: "bench", version: "1.0.0" });
  await stdio.connect(transport);
  return stdio;
}

function overHttp(): Promise<Client> {
  return httpServer([]);
}

function overHttpJson(): Promise<Client> {
  return httpServer(["--json-response"]);
}

async function httpServer(flags: string[]): Promise<Client> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "-A",
      CLI,
      "mcp",
      "--skills",
      SKILLS,
      "--root",
      tempRoot(),
      "--http",
      "127.0.0.1:0",
      ...flags,
    ],
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  cleanups.push(async () => {
    child.kill("SIGTERM");
    await reader.cancel();
    await child.status;
  });
  let first = "";
  while (!first.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`The HTTP server printed no URL: "${first}"`);
    first += value;
  }
  const http = new Client({ name: "bench", version: "1.0.0" });
  await http.connect(new StreamableHTTPClientTransport(new URL(first.trim())));
  return http;
}

async function hundredCalls(connect: () => Promise<Client>): Promise<void> {
  const mcp = await (client ??= connect());
  for (let i = 0; i < CALLS; i++) {
    const result = await mcp.callTool({
      name: "bash",
      arguments: { command: "true" },
    });
    if (result.isError) {
      throw new Error(`bash failed: ${JSON.stringify(result.content)}`);
    }
  }
}

// The protocol alone, without a process per call: 100 `tools/list`.
async function hundredLists(connect: () => Promise<Client>): Promise<void> {
  const mcp = await (client ??= connect());
  for (let i = 0; i < CALLS; i++) {
    const { tools } = await mcp.listTools();
    if (tools.length === 0) throw new Error("No tools listed");
  }
}

/** The cases of this file. */
export const cases: BenchCase[] = [{
  id: "mcp-http-vs-stdio",
  title: "MCP: 100 sequential `bash` calls of `true` (SDK client)",
  module: import.meta.url,
  // The first iteration (the warm-up) also starts the server and connects.
  iterations: 3,
  rounds: 2,
  maxRatio: 1.5,
  ours: { label: "Streamable HTTP", fn: () => hundredCalls(overHttp) },
  baseline: { label: "stdio", fn: () => hundredCalls(overStdio) },
  extra: [
    { label: "HTTP, JSON responses", fn: () => hundredCalls(overHttpJson) },
    { label: "100 tools/list, HTTP", fn: () => hundredLists(overHttp) },
    {
      label: "100 tools/list, HTTP JSON",
      fn: () => hundredLists(overHttpJson),
    },
    { label: "100 tools/list, stdio", fn: () => hundredLists(overStdio) },
  ],
}];

if (import.meta.main) {
  try {
    await runChild(cases);
  } finally {
    await shutdown();
  }
}
