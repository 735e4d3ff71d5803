/**
 * Serves skillrun's tools over the Model Context Protocol (MCP).
 *
 * This entry point (`@skillrun/skillrun/mcp`) is the only part of skillrun that
 * imports the MCP SDK. It uses the SDK's low-level server so the tools' own JSON
 * Schemas reach the client unchanged. A tool's failure becomes a tool result with
 * `isError: true`, never a protocol error, so the model sees the message.
 *
 * Permissions: serving needs none of its own; the tools need what their runtime
 * needs (for the local runtime: read, write and run).
 *
 * @example Serving tools to an in-memory client
 * ```ts
 * import { assert } from "@std/assert";
 * import { connectMcpServer } from "./mod.ts";
 * import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
 * // @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
 * import { InMemoryTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
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
import process from "node:process";
// The SDK's "./*" export maps `x.js` to types at `x.js.d.ts`, which do not
// exist: `@ts-types` points the type checker at the right declarations.
import { Server } from "npm:@modelcontextprotocol/sdk@1.32.2/server";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/stdio"
import { StdioServerTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/server/stdio.js";
import type { Transport } from "npm:@modelcontextprotocol/sdk@1.32.2/shared/transport";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type ListToolsResult,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import denoJson from "../../deno.json" with { type: "json" };
import type { Tool } from "../types.ts";

export type {
  JsonSchema,
  Tool,
  ToolCallOptions,
  ToolResult,
} from "../types.ts";

/** The server name announced to MCP clients: the package's name. */
export const MCP_SERVER_NAME: string = denoJson.name;

/** The server version announced to MCP clients: the package's version. */
export const MCP_SERVER_VERSION: string = denoJson.version;

/** Options of {@linkcode connectMcpServer} and {@linkcode serveMcp}. */
export interface McpServerOptions {
  /** The name announced to clients; default {@linkcode MCP_SERVER_NAME}. */
  readonly name?: string;
  /** The version announced to clients; default {@linkcode MCP_SERVER_VERSION}. */
  readonly version?: string;
  /** Instructions for the client's model, sent at initialisation. */
  readonly instructions?: string;
}

// Builds the low-level server: lists the tools with their JSON Schemas, calls
// them, turns unknown tools and failures into results with `isError: true`, and
// aborts a tool's signal when the client cancels its call.
function createMcpServer(
  tools: readonly Tool[],
  options: McpServerOptions,
  calls: InFlight,
): Server {
  const byName = new Map<string, Tool>();
  for (const tool of tools) {
    if (byName.has(tool.name)) {
      throw new TypeError(
        `Cannot serve tool "${tool.name}": another tool has the same name`,
      );
    }
    byName.set(tool.name, tool);
  }
  const server = new Server(
    {
      name: options.name ?? MCP_SERVER_NAME,
      version: options.version ?? MCP_SERVER_VERSION,
    },
    {
      capabilities: { tools: {} },
      ...(options.instructions === undefined
        ? {}
        : { instructions: options.instructions }),
    },
  );
  server.setRequestHandler(
    ListToolsRequestSchema,
    (): ListToolsResult => ({
      tools: tools.map((tool) => ({
        name: tool.name,
        description: tool.description,
        // Passed through unchanged (the SDK's type is mutable, ours readonly).
        inputSchema: tool.inputSchema as unknown as McpInputSchema,
      })),
    }),
  );
  server.setRequestHandler(
    CallToolRequestSchema,
    async (request, extra): Promise<CallToolResult> => {
      const { name, arguments: input } = request.params;
      const tool = byName.get(name);
      if (tool === undefined) {
        const known = [...byName.keys()].map((n) => `"${n}"`).join(", ");
        return errorResult(
          `Unknown tool "${name}": available tools are ${known || "none"}`,
        );
      }
      try {
        const result = await calls.track(
          tool.execute(input ?? {}, { signal: extra.signal }),
        );
        return {
          content: [{ type: "text", text: result.text }],
          isError: result.isError,
        };
      } catch (error) {
        // The Tool contract says execute never throws; keep the promise anyway.
        return errorResult(
          `Tool "${name}" failed: ${
            error instanceof Error ? error.message : String(error)
          }`,
        );
      }
    },
  );
  return server;
}

/** Counts the tool calls running, to let them answer before closing. */
class InFlight {
  #count = 0;
  #waiters: (() => void)[] = [];

  async track<T>(promise: Promise<T>): Promise<T> {
    this.#count++;
    try {
      return await promise;
    } finally {
      if (--this.#count === 0) {
        for (const wake of this.#waiters.splice(0)) wake();
      }
    }
  }

  /** Settles once no call runs and their answers have been handed to the transport. */
  async idle(): Promise<void> {
    do {
      while (this.#count > 0) {
        await new Promise<void>((resolve) => this.#waiters.push(resolve));
      }
      // The SDK sends an answer a few microtasks after the handler settles;
      // a call that started meanwhile is waited for too.
      await new Promise((resolve) => setTimeout(resolve, 0));
    } while (this.#count > 0);
  }
}

/**
 * An MCP transport: the SDK's `Transport` (stdio, in-memory, Streamable
 * HTTP...), of which these are the members skillrun relies on. Give it
 * unstarted: connecting starts it.
 */
export interface McpTransport {
  /** Starts the transport (called when connecting). */
  start(): Promise<void>;
  /** Sends one JSON-RPC message. */
  send(message: unknown, options?: unknown): Promise<void>;
  /** Closes the transport. */
  close(): Promise<void>;
}

/** A server connected to a transport. */
export interface McpConnection extends AsyncDisposable {
  /** Settles when the connection closes (by either side). */
  readonly closed: Promise<void>;
  /**
   * Settles when no tool call is running and every answer has been handed to
   * the transport (e.g. to close gracefully when the input ends).
   */
  idle(): Promise<void>;
  /** Closes the connection now; running calls are aborted. Idempotent. */
  close(): Promise<void>;
}

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
 * import { connectMcpServer } from "./mod.ts";
 * // @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
 * import { InMemoryTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
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
  const calls = new InFlight();
  const server = createMcpServer(tools, options, calls);
  const { promise: closed, resolve } = Promise.withResolvers<void>();
  server.onclose = () => resolve();
  // Our interface is a structural subset of the SDK's.
  await server.connect(transport as unknown as Transport);
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= server.close().then(() => closed);
    return closing;
  };
  return {
    closed,
    idle: () => calls.idle(),
    close,
    [Symbol.asyncDispose]: close,
  };
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
 * import { serveMcp } from "./mod.ts";
 * // @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
 * import { InMemoryTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
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
  const connection = await connectMcpServer(
    tools,
    transport ?? new StdioServerTransport(),
    serverOptions,
  );
  const onAbort = () => void connection.close();
  // End of input: let the calls already received answer, then close.
  const onEnd = () => void connection.idle().then(() => connection.close());
  if (signal?.aborted) onAbort();
  signal?.addEventListener("abort", onAbort, { once: true });
  if (stdio) process.stdin.once("end", onEnd);
  try {
    await connection.closed;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    if (stdio) process.stdin.off("end", onEnd);
  }
}

type McpInputSchema = ListToolsResult["tools"][number]["inputSchema"];

function errorResult(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}
