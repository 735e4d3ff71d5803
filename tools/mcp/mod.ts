/**
 * Serves skillrun's tools over the Model Context Protocol (MCP).
 *
 * This entry point (`@skillrun/skillrun/mcp`) is the only part of skillrun that
 * imports the MCP SDK. It uses the SDK's low-level server so the tools' own JSON
 * Schemas reach the client unchanged. A tool's failure becomes a tool result with
 * `isError: true`, never a protocol error, so the model sees the message.
 *
 * Transports: stdio ({@linkcode serveMcp}), any SDK transport
 * ({@linkcode connectMcpServer}), and Streamable HTTP through a web-standard
 * handler ({@linkcode createMcpHttpHandler}, {@linkcode serveMcpHttp}) that
 * gives each MCP session its own runtime. Given `skills`, the server also
 * offers each skill as a prompt and its files as `skill://<name>/<path>`
 * resources.
 *
 * Permissions: serving needs none of its own; the tools need what their runtime
 * needs (for the local runtime: read, write and run); HTTP needs `--allow-net`.
 *
 * @example Serving tools to an in-memory client
 * ```ts
 * import { assert } from "@std/assert";
 * import { connectMcpServer } from "@skillrun/skillrun/mcp";
 * import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
 * // @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
 * import {
 *   InMemoryTransport,
 * } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
 *
 * const echo = {
 *   name: "echo",
 *   description: "Repeats the text",
 *   inputSchema: {
 *     type: "object",
 *     properties: { text: { type: "string" } },
 *     required: ["text"],
 *     additionalProperties: false,
 *   },
 *   execute: (input: unknown) =>
 *     Promise.resolve({ text: String((input as { text: string }).text), isError: false }),
 * } as const;
 * const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
 * await using _connection = await connectMcpServer([echo], serverSide);
 * const client = new Client({ name: "example", version: "1.0.0" });
 * await client.connect(clientSide);
 * const result = await client.callTool({ name: "echo", arguments: { text: "hi" } });
 * assert(JSON.stringify(result.content) === '[{"type":"text","text":"hi"}]');
 * await client.close();
 * ```
 *
 * @module
 */
import type { Tool } from "../types.ts";
// The SDK's "./*" export maps `x.js` to types at `x.js.d.ts`, which do not
// exist: the types are read from the path without `.js`.
type StdioModule =
  typeof import("npm:@modelcontextprotocol/sdk@1.32.2/server/stdio");
import {
  connect,
  type McpConnection,
  type McpServerOptions,
  type McpTransport,
} from "./_server.ts";

export type {
  JsonSchema,
  Tool,
  ToolCallOptions,
  ToolResult,
} from "../types.ts";
export {
  MCP_SERVER_NAME,
  MCP_SERVER_VERSION,
  type McpConnection,
  type McpReloadSource,
  type McpServerOptions,
  type McpTransport,
} from "./_server.ts";
export * from "./http.ts";
export * from "./skills_client.ts";

/**
 * Connects a server for `tools` to any MCP transport (stdio, in-memory,
 * HTTP...).
 *
 * @param tools The tools to serve.
 * @param transport An MCP transport, not yet started.
 * @param options Name, version and instructions.
 * @returns The connection; `closed` settles when it ends.
 * @throws {TypeError} Two tools have the same name.
 *
 * Permissions: none of its own; the transport may need some.
 *
 * @example Connecting and closing
 * ```ts
 * import { connectMcpServer } from "@skillrun/skillrun/mcp";
 * // @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
 * import {
 *   InMemoryTransport,
 * } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
 * const [, serverSide] = InMemoryTransport.createLinkedPair();
 * const connection = await connectMcpServer([], serverSide);
 * await connection.close();
 * await connection.closed;
 * ```
 */
export async function connectMcpServer(
  tools: readonly Tool[],
  transport: McpTransport,
  options: McpServerOptions = {},
): Promise<McpConnection> {
  return (await connect(tools, transport, options)).connection;
}

/** Options of {@linkcode serveMcp}. */
export interface ServeMcpOptions extends McpServerOptions {
  /** The transport; default stdio (this process's stdin and stdout). */
  readonly transport?: McpTransport;
  /** Closes the server. */
  readonly signal?: AbortSignal;
}

/**
 * Serves `tools` until the connection closes: over stdio by default (it then
 * also ends when stdin ends, once the calls already received have answered),
 * or over the given transport. Nothing but MCP
 * messages is written to stdout.
 *
 * @param tools The tools to serve.
 * @param options Transport, abort signal, name, version and instructions.
 * @returns Settles when the connection has closed.
 * @throws {TypeError} Two tools have the same name.
 *
 * Permissions: none of its own; the tools need what their runtime needs.
 *
 * @example Serving until aborted
 * ```ts
 * import { serveMcp } from "@skillrun/skillrun/mcp";
 * // @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
 * import {
 *   InMemoryTransport,
 * } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
 * const [, serverSide] = InMemoryTransport.createLinkedPair();
 * const controller = new AbortController();
 * const serving = serveMcp([], { transport: serverSide, signal: controller.signal });
 * controller.abort();
 * await serving;
 * ```
 */
export async function serveMcp(
  tools: readonly Tool[],
  options: ServeMcpOptions = {},
): Promise<void> {
  const { transport, signal, ...serverOptions } = options;
  const stdio = transport === undefined;
  // Loaded only to serve over stdio (node:process costs a cold start).
  const process = stdio ? (await import("node:process")).default : undefined;
  const connection = await connectMcpServer(
    tools,
    transport ?? new (await stdioTransport())(),
    serverOptions,
  );
  const onAbort = () => void connection.close();
  // End of input: let the calls already received answer, then close.
  const onEnd = () => void connection.idle().then(() => connection.close());
  if (signal?.aborted) onAbort();
  signal?.addEventListener("abort", onAbort, { once: true });
  process?.stdin.once("end", onEnd);
  try {
    await connection.closed;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    process?.stdin.off("end", onEnd);
  }
}

/** The SDK's stdio transport, loaded when a server is served over stdio. */
async function stdioTransport(): Promise<StdioModule["StdioServerTransport"]> {
  const module: StdioModule = await import(
    "npm:@modelcontextprotocol/sdk@1.32.2/server/stdio.js"
  );
  return module.StdioServerTransport;
}
