import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
import {
  assert,
  assertEquals,
  assertNotEquals,
  assertRejects,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { LocalSkillRuntime } from "../../runtimes/local/mod.ts";
import type { SkillRuntime } from "../../runtimes/types.ts";
import type { FilePublisher } from "../context.ts";
import {
  createMcpHttpHandler,
  type McpHttpHandler,
  type McpHttpHandlerOptions,
  serveMcpHttp,
} from "./http.ts";
import {
  BLOB,
  fromBase64,
  makeSkillFiles,
  type SkillFiles,
  SMALL_LIMIT,
} from "./testdata/skill_files.ts";

interface TextContent {
  type: string;
  text: string;
}

function texts(result: Record<string, unknown>): string {
  return (result.content as TextContent[]).map((c) => c.text).join("\n");
}

/** A handler served by `Deno.serve` on loopback, with its runtimes watched. */
interface Served extends AsyncDisposable {
  readonly files: SkillFiles;
  readonly url: URL;
  readonly port: number;
  readonly handler: McpHttpHandler;
  /** Session ids whose runtime was made, in order. */
  readonly created: string[];
  /** Session ids whose runtime was closed, in order. */
  readonly closed: string[];
  /** The real runtime of each session. */
  readonly runtimes: Map<string, LocalSkillRuntime>;
  /** Errors the handler reported. */
  readonly errors: Error[];
}

// A local conversation runtime whose close() is recorded.
function watched(
  runtime: LocalSkillRuntime,
  onClose: () => void,
): SkillRuntime {
  return {
    name: runtime.name,
    cwd: runtime.cwd,
    fs: runtime.fs,
    search: runtime.search,
    prepare: (request) => runtime.prepare(request),
    execute: (request) => runtime.execute(request),
    environment: () => runtime.environment(),
    close: async () => {
      onClose();
      await runtime.close();
    },
    [Symbol.asyncDispose]: () => runtime.close(),
  };
}

async function serve(
  options: Partial<McpHttpHandlerOptions> = {},
): Promise<Served> {
  const files = await makeSkillFiles();
  const created: string[] = [];
  const closed: string[] = [];
  const errors: Error[] = [];
  const runtimes = new Map<string, LocalSkillRuntime>();
  const publisher: FilePublisher = {
    async publish({ stream, fileName }) {
      await Deno.mkdir(`${files.root}/published`, { recursive: true });
      const target = `${files.root}/published/${fileName}`;
      await Deno.writeFile(target, stream);
      return { url: `file://${target}` };
    },
  };
  const handler = await createMcpHttpHandler({
    skills: files.skills,
    publisher,
    maxResourceBytes: SMALL_LIMIT,
    runtime: async (sessionId) => {
      const runtime = await LocalSkillRuntime.create({
        conversationsRoot: `${files.root}/conversations`,
        conversationId: sessionId,
      });
      created.push(sessionId);
      runtimes.set(sessionId, runtime);
      return watched(runtime, () => closed.push(sessionId));
    },
    onError: (error) => errors.push(error),
    ...options,
  });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    handler,
  );
  const port = server.addr.port;
  return {
    files,
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    port,
    handler,
    created,
    closed,
    runtimes,
    errors,
    async [Symbol.asyncDispose]() {
      await handler.close();
      await server.shutdown();
      await files[Symbol.asyncDispose]();
    },
  };
}

interface Connected extends AsyncDisposable {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
  readonly sessionId: string;
}

async function connectClient(
  url: URL,
  headers: Record<string, string> = {},
): Promise<Connected> {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers },
  });
  const client = new Client({ name: "http-test", version: "1.0.0" });
  await client.connect(transport);
  return {
    client,
    transport,
    sessionId: transport.sessionId!,
    [Symbol.asyncDispose]: () => client.close(),
  };
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "raw", version: "1" },
  },
};

async function post(
  url: URL,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return {
    status: response.status,
    text: await response.text(),
    headers: response.headers,
  };
}

/** Sends raw HTTP/1.1 (to set a Host header fetch would not send). */
async function rawHttp(port: number, request: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(new TextEncoder().encode(request));
    const chunks: Uint8Array[] = [];
    const buffer = new Uint8Array(4096);
    while (true) {
      const n = await conn.read(buffer);
      if (n === null) break;
      chunks.push(buffer.slice(0, n));
    }
    return new TextDecoder().decode(
      chunks.reduce(
        (all, c) => new Uint8Array([...all, ...c]),
        new Uint8Array(),
      ),
    );
  } finally {
    conn.close();
  }
}

function rawPost(host: string, extra = ""): string {
  const body = JSON.stringify(INITIALIZE);
  return `POST /mcp HTTP/1.1\r\nHost: ${host}\r\n${extra}` +
    "Content-Type: application/json\r\n" +
    "Accept: application/json, text/event-stream\r\n" +
    `Content-Length: ${new TextEncoder().encode(body).length}\r\n` +
    `Connection: close\r\n\r\n${body}`;
}

async function waitFor(condition: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("Timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

Deno.test("the SDK client over HTTP lists and calls every tool in its session's workspace", async () => {
  await using served = await serve();
  await using session = await connectClient(served.url);
  const { client, sessionId } = session;
  assertEquals(served.created, [sessionId]);
  const workspace = `${served.files.root}/conversations/${sessionId}`;
  assertStringIncludes(client.getInstructions() ?? "", workspace);

  const { tools } = await client.listTools();
  assertEquals(tools.map((t) => t.name), [
    "skill",
    "bash",
    "bash_output",
    "kill_bash",
    "read",
    "write",
    "edit",
    "ls",
    "glob",
    "grep",
    "publish_file",
  ]);
  const call = async (name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args });
    assertEquals(result.isError, false, `${name}: ${texts(result)}`);
    return texts(result);
  };
  const loaded = await call("skill", { name: "notes" });
  assertStringIncludes(loaded, "# Notes");
  const base = /Base directory: (.+)/.exec(loaded)![1]!;
  assert(base.startsWith(`${workspace}/skills/`), base);
  assertStringIncludes(
    await call("bash", {
      command: "bash scripts/hello.sh && pwd",
      working_directory: base,
    }),
    `héllo\n${base}`,
  );
  await call("write", { file_path: "notes.txt", content: "alpha beta\n" });
  assertStringIncludes(
    await call("read", { file_path: "notes.txt" }),
    "alpha beta",
  );
  await call("edit", {
    file_path: "notes.txt",
    old_string: "alpha",
    new_string: "gamma",
  });
  assertEquals(
    await Deno.readTextFile(`${workspace}/notes.txt`),
    "gamma beta\n",
  );
  assertStringIncludes(await call("ls", { path: "." }), "notes.txt");
  assertStringIncludes(await call("glob", { pattern: "**/*.sh" }), "hello.sh");
  assertStringIncludes(await call("grep", { pattern: "gamma" }), "notes.txt");
  assertStringIncludes(
    await call("publish_file", { file_path: "notes.txt" }),
    `file://${served.files.root}/published/notes.txt`,
  );
  assertEquals(
    await Deno.readTextFile(`${served.files.root}/published/notes.txt`),
    "gamma beta\n",
  );
  const unknown = await client.callTool({ name: "nope", arguments: {} });
  assertEquals(unknown.isError, true);
});

Deno.test("two concurrent HTTP sessions get separate workspaces and cannot see each other's files", async () => {
  await using served = await serve();
  const [a, b] = await Promise.all([
    connectClient(served.url),
    connectClient(served.url),
  ]);
  await using _a = a;
  await using _b = b;
  assertNotEquals(a.sessionId, b.sessionId);
  assertEquals(
    served.created.toSorted(),
    [a.sessionId, b.sessionId].toSorted(),
  );
  assertEquals(
    served.handler.sessionIds().toSorted(),
    served.created.toSorted(),
  );

  await Promise.all([
    a.client.callTool({
      name: "write",
      arguments: { file_path: "own.txt", content: "from A" },
    }),
    b.client.callTool({
      name: "write",
      arguments: { file_path: "own.txt", content: "from B" },
    }),
  ]);
  const [pwdA, pwdB] = await Promise.all([
    a.client.callTool({
      name: "bash",
      arguments: { command: "pwd; cat own.txt" },
    }),
    b.client.callTool({
      name: "bash",
      arguments: { command: "pwd; cat own.txt" },
    }),
  ]);
  const wsA = `${served.files.root}/conversations/${a.sessionId}`;
  const wsB = `${served.files.root}/conversations/${b.sessionId}`;
  assertEquals(texts(pwdA).split("\n").slice(0, 2), [wsA, "from A"]);
  assertEquals(texts(pwdB).split("\n").slice(0, 2), [wsB, "from B"]);

  // B's file tools are fenced inside B's workspace: A's file is out of reach.
  const peek = await b.client.callTool({
    name: "read",
    arguments: { file_path: `${wsA}/own.txt` },
  });
  assertEquals(peek.isError, true);
  assertStringIncludes(texts(peek), "outside");
  const climb = await b.client.callTool({
    name: "read",
    arguments: { file_path: `../${a.sessionId}/own.txt` },
  });
  assertEquals(climb.isError, true);
  const listing = await b.client.callTool({
    name: "glob",
    arguments: { pattern: "**/own.txt" },
  });
  assertStringIncludes(texts(listing), "own.txt");
  assert(!texts(listing).includes(a.sessionId), texts(listing));
});

Deno.test("a session ended by the client closes its runtime and leaves nothing open", async () => {
  await using served = await serve();
  const session = await connectClient(served.url);
  const { sessionId } = session;
  await session.client.callTool({
    name: "bash",
    arguments: { command: "true" },
  });
  await session.transport.terminateSession();
  await session.client.close();
  assertEquals(served.closed, [sessionId]);
  assertEquals(served.handler.sessionIds(), []);
  // The runtime itself is closed: it refuses work.
  await assertRejects(
    () => served.runtimes.get(sessionId)!.execute({ command: "true" }),
    Error,
    "closed",
  );
  // The session id is no longer known.
  const late = await post(served.url, {
    jsonrpc: "2.0",
    id: 2,
    method: "tools/list",
  }, {
    "mcp-session-id": sessionId,
  });
  assertEquals(late.status, 404);
  assertStringIncludes(late.text, "Session not found");
});

Deno.test("ending a session aborts its running command before its runtime closes", async () => {
  await using served = await serve();
  const session = await connectClient(served.url);
  const workspace = `${served.files.root}/conversations/${session.sessionId}`;
  const running = session.client.callTool({
    name: "bash",
    arguments: { command: "echo $$ > pid.txt; exec sleep 30" },
  }).then(() => "answered", () => "rejected");
  let pid = "";
  await waitFor(() => {
    try {
      pid = Deno.readTextFileSync(`${workspace}/pid.txt`).trim();
    } catch {
      return false;
    }
    return pid !== "";
  });
  const started = Date.now();
  await session.transport.terminateSession();
  assert(Date.now() - started < 5000, "the session took too long to close");
  assertEquals(served.closed, [session.sessionId]);
  // The command's process is gone: nothing keeps running for a closed session.
  await waitFor(() => {
    try {
      const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
      return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
    } catch {
      return true;
    }
  });
  await session.client.close();
  assertEquals(await running, "rejected");
});

Deno.test("an idle session is closed after the idle timeout, but not during a running call", async () => {
  await using served = await serve({ idleTimeoutMs: 300 });
  await using session = await connectClient(served.url);
  const slow = await session.client.callTool({
    name: "bash",
    arguments: { command: "sleep 0.8; echo done" },
  });
  assertEquals(texts(slow).trim(), "done");
  assertEquals(served.closed, []);
  await waitFor(() => served.closed.length === 1);
  assertEquals(served.closed, [session.sessionId]);
  assertEquals(served.handler.sessionIds(), []);
  await assertRejects(() => session.client.listTools());
});

Deno.test("closing the handler closes every open session", async () => {
  await using served = await serve();
  await using a = await connectClient(served.url);
  await using b = await connectClient(served.url);
  await served.handler.close();
  assertEquals(served.closed.toSorted(), [a.sessionId, b.sessionId].toSorted());
  const after = await post(served.url, INITIALIZE);
  assertEquals(after.status, 503);
  assertEquals(served.created.length, 2);
});

Deno.test("a wrong or missing bearer token gets 401 and starts nothing", async () => {
  const token = "s3cret-token-value";
  await using served = await serve({ token });
  for (
    const headers of [
      {},
      { authorization: "Bearer wrong" },
      { authorization: `Basic ${token}` },
      { authorization: `Bearer ${token}x` },
    ]
  ) {
    const refused = await post(served.url, INITIALIZE, headers);
    assertEquals(refused.status, 401, JSON.stringify(headers));
    assertEquals(refused.headers.get("www-authenticate"), 'Bearer realm="mcp"');
    assert(!refused.text.includes(token));
  }
  await assertRejects(() =>
    connectClient(served.url, { authorization: "Bearer wrong" })
  );
  assertEquals(served.created, []);
  await using ok = await connectClient(served.url, {
    authorization: `Bearer ${token}`,
  });
  assertEquals((await ok.client.listTools()).tools.length, 11);
  // Every request of the session needs it, not only the first.
  const unauthorised = await post(
    served.url,
    { jsonrpc: "2.0", id: 2, method: "tools/list" },
    { "mcp-session-id": ok.sessionId },
  );
  assertEquals(unauthorised.status, 401);
});

Deno.test("a request with a foreign Origin is refused; the same origin is served", async () => {
  await using served = await serve();
  const foreign = await post(served.url, INITIALIZE, {
    origin: "http://evil.example",
  });
  assertEquals(foreign.status, 403);
  assertEquals(
    JSON.parse(foreign.text).error.message,
    'Forbidden: Origin "http://evil.example" is not allowed',
  );
  const otherPort = await post(served.url, INITIALIZE, {
    origin: `http://127.0.0.1:${served.port + 1}`,
  });
  assertEquals(otherPort.status, 403);
  assertEquals(served.created, []);
  const same = await post(served.url, INITIALIZE, {
    origin: `http://127.0.0.1:${served.port}`,
  });
  assertEquals(same.status, 200, same.text);
  assertEquals(served.created.length, 1);
});

Deno.test("serveMcpHttp on loopback refuses a foreign Host or Origin (DNS rebinding)", async () => {
  await using files = await makeSkillFiles();
  await using server = await serveMcpHttp({
    skills: files.skills,
    conversationsRoot: `${files.root}/conversations`,
  });
  const url = new URL(server.url);
  assertEquals(url.pathname, "/mcp");
  const port = Number(url.port);
  const rebound = await rawHttp(port, rawPost(`evil.example:${port}`));
  assert(rebound.startsWith("HTTP/1.1 403"), rebound);
  assertStringIncludes(
    rebound,
    `Host \\"evil.example:${port}\\" is not allowed`,
  );
  const foreign = await rawHttp(
    port,
    rawPost(`localhost:${port}`, "Origin: http://evil.example\r\n"),
  );
  assert(foreign.startsWith("HTTP/1.1 403"), foreign);
  const local = await rawHttp(
    port,
    rawPost(`localhost:${port}`, `Origin: http://localhost:${port}\r\n`),
  );
  assert(local.startsWith("HTTP/1.1 200"), local);
  assertEquals(server.handler.sessionIds().length, 1);
  const elsewhere = await post(new URL("/other", url), INITIALIZE);
  assertEquals(elsewhere.status, 404);
  // The SDK client works through it.
  await using session = await connectClient(url);
  const ran = await session.client.callTool({
    name: "bash",
    arguments: { command: "pwd" },
  });
  assertEquals(
    texts(ran).trim(),
    `${files.root}/conversations/${session.sessionId}`,
  );
});

Deno.test("requests outside a session get the transport's errors and start no runtime", async () => {
  await using served = await serve({ path: "/mcp" });
  const list = { jsonrpc: "2.0", id: 2, method: "tools/list" };
  assertEquals((await post(served.url, list)).status, 400);
  assertEquals((await post(served.url, "{not json")).status, 400);
  const unknown = await post(served.url, list, { "mcp-session-id": "nope" });
  assertEquals(unknown.status, 404);
  const get = await fetch(served.url, {
    headers: { accept: "text/event-stream" },
  });
  await get.body?.cancel();
  assertEquals(get.status, 400);
  const put = await fetch(served.url, { method: "PUT" });
  await put.body?.cancel();
  assertEquals(put.status, 405);
  const wrongPath = await post(new URL("/elsewhere", served.url), INITIALIZE);
  assertEquals(wrongPath.status, 404);
  // An initialisation the transport refuses (no SSE in Accept) leaves no session.
  const refused = await post(served.url, INITIALIZE, {
    accept: "application/json",
  });
  assertEquals(refused.status, 406);
  assertEquals(served.handler.sessionIds(), []);
  assertEquals(served.created.length, served.closed.length);
});

Deno.test("a runtime that cannot be made fails the initialisation with its reason, secrets redacted", async () => {
  const errors: Error[] = [];
  await using served = await serve({
    runtime: () =>
      Promise.reject(
        new Error("the sandbox is full (key sk-configured-1, token tok-12345)"),
      ),
    onError: (error) => errors.push(error),
    configs: { notes: { env: { API_KEY: "sk-configured-1" } } },
    token: "tok-12345",
  });
  const failed = await post(served.url, INITIALIZE, {
    authorization: "Bearer tok-12345",
  });
  assertEquals(failed.status, 500);
  assertEquals(
    JSON.parse(failed.text).error.message,
    "Cannot start a session: the sandbox is full (key [redacted], token [redacted])",
  );
  await assertRejects(() =>
    connectClient(served.url, { authorization: "Bearer tok-12345" })
  );
  assertEquals(served.handler.sessionIds(), []);
  assertStringIncludes(errors[0]!.message, "the sandbox is full");
});

Deno.test("sessions beyond maxSessions get 503 and the open ones keep working", async () => {
  await using served = await serve({ maxSessions: 1 });
  await using first = await connectClient(served.url);
  const second = await post(served.url, INITIALIZE);
  assertEquals(second.status, 503);
  assertStringIncludes(second.text, "already has 1 sessions open");
  assertEquals(served.created.length, 1);
  const ran = await first.client.callTool({
    name: "bash",
    arguments: { command: "echo still" },
  });
  assertEquals(texts(ran).trim(), "still");
});

Deno.test("skills are prompts and resources over HTTP", async () => {
  await using served = await serve();
  await using session = await connectClient(served.url);
  const { client } = session;
  const { prompts } = await client.listPrompts();
  assertEquals(prompts.map((p) => p.name), ["greet", "notes"]);
  const prompt = await client.getPrompt({ name: "notes" });
  assertStringIncludes(
    (prompt.messages[0]!.content as TextContent).text,
    "Run `bash scripts/hello.sh` to greet.",
  );
  const { resources } = await client.listResources();
  assertEquals(resources.length, 6);
  const script = await client.readResource({
    uri: "skill://notes/scripts/hello.sh",
  });
  assertEquals((script.contents[0] as { text: string }).text, "echo héllo\n");
  const blob = await client.readResource({
    uri: "skill://notes/data/blob.bin",
  });
  assertEquals(fromBase64((blob.contents[0] as { blob: string }).blob), BLOB);
  await assertRejects(
    () => client.readResource({ uri: "skill://notes/data/big.txt" }),
    Error,
    "the file is larger than the 1024 bytes limit",
  );
  await assertRejects(
    () => client.readResource({ uri: "skill://notes/.env" }),
    Error,
    "the copy policy excludes this file",
  );
});

Deno.test("createMcpHttpHandler() checks its options before serving", async () => {
  await assertRejects(
    () => createMcpHttpHandler({ idleTimeoutMs: 0 }),
    RangeError,
    'Cannot use idleTimeoutMs "0": it must be a positive integer',
  );
  await assertRejects(
    () => createMcpHttpHandler({ maxResourceBytes: -1 }),
    RangeError,
    'Cannot use maxResourceBytes "-1": it must be a positive integer',
  );
  await assertRejects(
    () => createMcpHttpHandler({ token: "" }),
    TypeError,
    "token must be a non-empty string",
  );
  await assertRejects(
    () => createMcpHttpHandler({ path: "mcp" }),
    TypeError,
    'Cannot serve MCP at path "mcp": it must start with "/"',
  );
  await using files = await makeSkillFiles();
  await assertRejects(
    () =>
      createMcpHttpHandler({
        skills: files.skills,
        configs: { nope: { env: { A: "1" } } },
      }),
    RangeError,
    'Cannot bind a configuration to skill "nope"',
  );
  // Checked at creation too, as building the tools checks them.
  await assertRejects(
    () =>
      createMcpHttpHandler({
        skills: files.skills,
        limits: { readMaxBytes: 0 },
      }),
    RangeError,
    'Cannot use limit readMaxBytes "0": it must be a positive integer',
  );
  await assertRejects(
    () =>
      createMcpHttpHandler({
        skills: files.skills,
        publisher: {} as FilePublisher,
      }),
    TypeError,
    "publisher must have a publish() method",
  );
});
