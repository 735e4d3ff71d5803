import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
import { InMemoryTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
import denoJson from "../../deno.json" with { type: "json" };
import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import type { Tool } from "../types.ts";
import {
  connectMcpServer,
  MCP_SERVER_NAME,
  MCP_SERVER_VERSION,
  serveMcp,
} from "./mod.ts";
import { tinyTools } from "./testdata/tiny_tools.ts";
import { BLOB, fromBase64, makeSkillFiles } from "./testdata/skill_files.ts";

const fixture = new URL("./testdata/tiny_tools.ts", import.meta.url).pathname;

interface TextContent {
  type: string;
  text: string;
}

function texts(result: Record<string, unknown>): string {
  return (result.content as TextContent[]).map((c) => c.text).join("\n");
}

async function stdioClient(): Promise<Client> {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: ["run", "--quiet", "--no-prompt", fixture],
    env: { ...Deno.env.toObject(), NO_COLOR: "1" },
    stderr: "pipe",
  });
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

Deno.test("the server announces the package's name and version", () => {
  assertEquals(MCP_SERVER_NAME, "@skillrun/skillrun");
  assertEquals(MCP_SERVER_NAME, denoJson.name);
  assertEquals(MCP_SERVER_VERSION, denoJson.version);
});

Deno.test("a stdio server in a subprocess lists its tools with their JSON Schemas unchanged", async () => {
  const client = await stdioClient();
  try {
    assertEquals(client.getServerVersion(), {
      name: denoJson.name,
      version: denoJson.version,
    });
    const { tools } = await client.listTools();
    assertEquals(
      tools.map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: t.inputSchema,
      })),
      tinyTools.map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: JSON.parse(JSON.stringify(t.inputSchema)),
      })),
    );
  } finally {
    await client.close();
  }
});

Deno.test("a stdio server in a subprocess calls tools and returns failures as tool errors", async () => {
  const client = await stdioClient();
  try {
    const ok = await client.callTool({
      name: "echo",
      arguments: { text: "héllo" },
    });
    assertEquals(ok.isError, false);
    assertEquals(texts(ok), "echo: héllo");

    const failed = await client.callTool({
      name: "fail",
      arguments: { text: "x" },
    });
    assertEquals(failed.isError, true);
    assertEquals(texts(failed), 'Cannot do "x": it fails');

    const thrown = await client.callTool({ name: "throws", arguments: {} });
    assertEquals(thrown.isError, true);
    assertEquals(texts(thrown), 'Tool "throws" failed: boom');

    const unknown = await client.callTool({ name: "nope", arguments: {} });
    assertEquals(unknown.isError, true);
    assertStringIncludes(texts(unknown), 'Unknown tool "nope"');
    assertStringIncludes(texts(unknown), '"echo"');

    const noArguments = await client.callTool({ name: "echo" });
    assertEquals(texts(noArguments), "echo: undefined");
  } finally {
    await client.close();
  }
});

async function rawSession(
  messages: unknown[],
): Promise<{ code: number; lines: string[]; stderr: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--no-prompt", fixture],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(
    new TextEncoder().encode(
      messages.map((m) => JSON.stringify(m) + "\n").join(""),
    ),
  );
  await writer.close();
  const output = await child.output();
  const stdout = new TextDecoder().decode(output.stdout);
  return {
    code: output.code,
    lines: stdout.split("\n").filter((line) => line !== ""),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "raw", version: "1" },
  },
};

Deno.test("a stdio server exits cleanly when its stdin ends and writes only MCP messages to stdout", async () => {
  const { code, lines, stderr } = await rawSession([initialize]);
  assertEquals(code, 0, stderr);
  assertStringIncludes(stderr, "tiny server: closed");
  assert(lines.length >= 1, "expected the initialize response");
  for (const line of lines) assertEquals(JSON.parse(line).jsonrpc, "2.0");
  assertEquals(JSON.parse(lines[0]!).result.serverInfo.name, denoJson.name);
});

Deno.test("a stdio server answers the calls it received before its stdin ended", async () => {
  const { code, lines, stderr } = await rawSession([
    initialize,
    { jsonrpc: "2.0", method: "notifications/initialized" },
    {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "sleep", arguments: { ms: 300 } },
    },
    {
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { name: "echo", arguments: { text: "last" } },
    },
  ]);
  assertEquals(code, 0, stderr);
  const answers = new Map(
    lines.map((line) => JSON.parse(line)).map((m) => [m.id, m.result]),
  );
  assertEquals(answers.get(2), {
    content: [{ type: "text", text: "slept 300 ms" }],
    isError: false,
  });
  assertEquals(answers.get(3), {
    content: [{ type: "text", text: "echo: last" }],
    isError: false,
  });
});

Deno.test("a call cancelled by the client aborts the tool's signal", async () => {
  const { promise: aborted, resolve } = Promise.withResolvers<string>();
  const waiting: Tool = {
    name: "wait",
    description: "Waits for cancellation",
    inputSchema: {
      type: "object",
      properties: {},
      required: [],
      additionalProperties: false,
    },
    execute: (_input, options) =>
      new Promise((done) => {
        options?.signal?.addEventListener("abort", () => {
          resolve("aborted");
          done({ text: "cancelled", isError: true });
        });
      }),
  };
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await using _connection = await connectMcpServer([waiting], serverSide);
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  const controller = new AbortController();
  const call = client.callTool({ name: "wait", arguments: {} }, undefined, {
    signal: controller.signal,
  });
  setTimeout(() => controller.abort(), 50);
  await assertRejects(() => call);
  assertEquals(await aborted, "aborted");
  await client.close();
});

Deno.test("serveMcp() over a given transport ends when its signal aborts", async () => {
  const [, serverSide] = InMemoryTransport.createLinkedPair();
  const controller = new AbortController();
  const serving = serveMcp(tinyTools, {
    transport: serverSide,
    signal: controller.signal,
  });
  controller.abort();
  await serving;
});

Deno.test("serveMcp() ends when the client closes the connection", async () => {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const serving = serveMcp(tinyTools, { transport: serverSide });
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  await client.close();
  await serving;
});

Deno.test("connectMcpServer() refuses two tools with the same name", async () => {
  const echo = tinyTools[0]!;
  const [, serverSide] = InMemoryTransport.createLinkedPair();
  await assertRejects(
    () => connectMcpServer([echo, echo], serverSide),
    TypeError,
    'Cannot serve tool "echo": another tool has the same name',
  );
});

Deno.test("the server passes instructions, name and version options to the client", async () => {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await using _connection = await connectMcpServer([], serverSide, {
    name: "custom",
    version: "9.9.9",
    instructions: "Use the skill tool first",
  });
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  assertEquals(client.getServerVersion(), { name: "custom", version: "9.9.9" });
  assertEquals(client.getInstructions(), "Use the skill tool first");
  assertEquals((await client.listTools()).tools, []);
  await client.close();
});

Deno.test("a stdio server in a subprocess offers skills as prompts and resources", async () => {
  await using files = await makeSkillFiles();
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      `--allow-read`,
      new URL("./testdata/skill_server.ts", import.meta.url).pathname,
      files.skills,
    ],
    env: { ...Deno.env.toObject(), NO_COLOR: "1" },
    stderr: "pipe",
  });
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(transport);
  try {
    const { prompts } = await client.listPrompts();
    assertEquals(prompts.map((p) => p.name), ["greet", "notes"]);
    const prompt = await client.getPrompt({ name: "greet" });
    assertStringIncludes(
      (prompt.messages[0]!.content as TextContent).text,
      "Say hello.",
    );
    const { resources } = await client.listResources();
    assertEquals(resources.length, 6);
    const { resourceTemplates } = await client.listResourceTemplates();
    assertEquals(resourceTemplates[0]!.uriTemplate, "skill://{skill}/{+path}");
    const text = await client.readResource({
      uri: "skill://notes/scripts/hello.sh",
    });
    assertEquals((text.contents[0] as { text: string }).text, "echo héllo\n");
    const blob = await client.readResource({
      uri: "skill://notes/data/blob.bin",
    });
    assertEquals(
      fromBase64((blob.contents[0] as { blob: string }).blob),
      BLOB,
    );
    await assertRejects(
      () => client.readResource({ uri: "skill://notes/data/big.txt" }),
      Error,
      "the file is larger than the 1024 bytes limit",
    );
    await assertRejects(
      () => client.readResource({ uri: "skill://notes/data/escape.txt" }),
      Error,
      "the path leads outside the skill folder",
    );
  } finally {
    await client.close();
  }
});
