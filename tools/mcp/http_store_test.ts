// The MCP HTTP handler with a shared store: several handlers (instances)
// serving one endpoint through a round-robin client, each store kind.
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import {
  type ConversationStore,
  KvConversationStore,
} from "../../runtimes/stores/conversation_store.ts";
import { PostgresConversationStore } from "../../runtimes/stores/postgres.ts";
import { postgresOrSkip } from "../../tests/helpers/postgres.ts";
import { type McpHttpServer, serveMcpHttp } from "./http.ts";

const TOKEN = "mcp-store-t0ken-5551";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function text(result: Record<string, unknown>): string {
  return (result.content as { text: string }[]).map((c) => c.text).join("\n");
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

interface Cluster extends AsyncDisposable {
  readonly root: string;
  readonly servers: McpHttpServer[];
  /** A fetch that sends each request to the next instance in turn. */
  readonly fetch: typeof fetch;
  /** Which instance each request went to, in order. */
  readonly hits: number[];
  /** The instance of each JSON-RPC method sent, last one wins. */
  readonly methods: Map<string, number>;
  readonly errors: Error[];
  start(i: number, extra?: Record<string, unknown>): Promise<void>;
  stop(i: number): Promise<void>;
}

type StoreMaker = () => Promise<ConversationStore>;

async function cluster(
  makeStore: StoreMaker,
  count = 2,
  extra: Record<string, unknown> = {},
): Promise<Cluster> {
  const root = await Deno.makeTempDir({ prefix: "skillrun-mcp-store-" });
  await Deno.mkdir(`${root}/skills/greet`, { recursive: true });
  await Deno.writeTextFile(
    `${root}/skills/greet/SKILL.md`,
    "---\nname: greet\ndescription: Greets.\n---\nRun `echo hello`.\n",
  );
  const servers: McpHttpServer[] = [];
  const stores: ConversationStore[] = [];
  const errors: Error[] = [];
  const hits: number[] = [];
  const methods = new Map<string, number>();
  const start = async (i: number, more: Record<string, unknown> = {}) => {
    const store = await makeStore();
    stores[i] = store;
    servers[i] = await serveMcpHttp({
      skills: `${root}/skills`,
      conversationsRoot: `${root}/conversations`,
      token: TOKEN,
      store,
      onError: (error) => errors.push(error),
      ...extra,
      ...more,
    });
  };
  for (let i = 0; i < count; i++) await start(i);
  let next = 0;
  const roundRobin: typeof fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    let i = next++ % servers.length;
    for (let tries = 0; !servers[i] && tries < servers.length; tries++) {
      i = next++ % servers.length;
    }
    hits.push(i);
    if (typeof init?.body === "string") {
      const method = (JSON.parse(init.body) as { method?: string }).method;
      if (method) methods.set(method, i);
    }
    url.port = new URL(servers[i]!.url).port;
    return fetch(url, init);
  };
  const stop = async (i: number) => {
    await servers[i]?.close();
    stores[i]?.close();
    delete servers[i];
  };
  return {
    root,
    servers,
    fetch: roundRobin,
    hits,
    methods,
    errors,
    start,
    stop,
    async [Symbol.asyncDispose]() {
      for (let i = 0; i < servers.length; i++) await stop(i);
      await Deno.remove(root, { recursive: true });
    },
  };
}

function client(c: Cluster, token = TOKEN) {
  const transport = new StreamableHTTPClientTransport(
    new URL(c.servers[0]!.url),
    {
      fetch: c.fetch,
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      reconnectionOptions: {
        initialReconnectionDelay: 200,
        maxReconnectionDelay: 1000,
        reconnectionDelayGrowFactor: 1.5,
        maxRetries: 20,
      },
    },
  );
  return {
    client: new Client({ name: "store-test", version: "1.0.0" }),
    transport,
  };
}

/** `family()` gives the store maker of one cluster (its instances share it). */
function suite(label: string, family: (() => StoreMaker) | undefined) {
  const test = (name: string, fn: (make: StoreMaker) => Promise<void>) =>
    Deno.test({
      name: `${label}: ${name}`,
      ignore: family === undefined,
      sanitizeResources: false,
      sanitizeOps: false,
      fn: () => fn(family!()),
    });

  test("a session moves between instances: same workspace, deleted once through another", async (make) => {
    await using c = await cluster(make);
    const { client: mcp, transport } = client(c);
    await mcp.connect(transport);
    const id = transport.sessionId!;
    assertEquals(id.length, 40);
    const wrote = await mcp.callTool({
      name: "write",
      arguments: { file_path: "a.txt", content: "from one instance" },
    });
    assertFalse(wrote.isError, text(wrote));
    const read = await mcp.callTool({
      name: "read",
      arguments: { file_path: "a.txt" },
    });
    assertStringIncludes(text(read), "from one instance");
    const ran = await mcp.callTool({
      name: "bash",
      arguments: { command: "cat a.txt && pwd" },
    });
    assertStringIncludes(text(ran), "from one instance");
    assertStringIncludes(text(ran), `conversations/${id}`);
    const { prompts } = await mcp.listPrompts();
    assertEquals(prompts[0]?.name, "greet");
    // Both instances served the session.
    assert(c.servers.every((s) => s.handler.sessionIds().includes(id)));
    assertEquals(new Set(c.hits).size, 2);
    const workspace = `${c.root}/conversations/${id}`;
    assert(await exists(workspace));
    await transport.terminateSession();
    await mcp.close();
    assertFalse(await exists(workspace));
    // Every instance now answers 404, and creates nothing.
    for (const server of c.servers) {
      const answer = await fetch(server.url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TOKEN}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": id,
          "mcp-protocol-version": "2025-11-25",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      await answer.body?.cancel();
      assertEquals(answer.status, 404);
    }
    assertFalse(await exists(workspace));
    assertEquals(c.errors.map((e) => e.message), []);
  });

  test("forged ids and another token's session get 404, nothing created", async (make) => {
    await using c = await cluster(make);
    const { client: mcp, transport } = client(c);
    await mcp.connect(transport);
    const id = transport.sessionId!;
    const ask = (url: string, sessionId: string, token: string) =>
      fetch(url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": sessionId,
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
    for (
      const forged of ["0".repeat(40), "../../etc", "x".repeat(5000), id + "0"]
    ) {
      const answer = await ask(c.servers[1]!.url, forged, TOKEN);
      await answer.body?.cancel();
      assertEquals(answer.status, 404);
    }
    // An instance with another token (a rotated one) on the same store.
    await c.start(2, { token: "another-t0ken-8" });
    const other = await ask(c.servers[2]!.url, id, "another-t0ken-8");
    const body = await other.text();
    assertEquals(other.status, 404);
    assertFalse(body.includes(id));
    assertEquals(c.servers[2]!.handler.sessionIds(), []);
    const folders = await Array.fromAsync(
      Deno.readDir(`${c.root}/conversations`),
    );
    assertEquals(folders.map((f) => f.name), [id]);
    await transport.terminateSession();
    await mcp.close();
  });

  test("a call longer than the stream limit: the client resumes on another instance and gets the result", async (make) => {
    await using c = await cluster(make, 2, {
      streamLimitMs: 1000,
      retryMs: 200,
    });
    const { client: mcp, transport } = client(c);
    await mcp.connect(transport);
    const started = Date.now();
    const result = await mcp.callTool(
      {
        name: "bash",
        arguments: { command: "sleep 3; echo finished-late" },
      },
      undefined,
      { timeout: 30_000 },
    );
    assertStringIncludes(text(result), "finished-late");
    assert(Date.now() - started >= 3000);
    // The result came through a GET with Last-Event-ID (on either instance).
    await transport.terminateSession();
    await mcp.close();
  });

  test("a cancellation sent through another instance stops the command within 2 s", async (make) => {
    await using c = await cluster(make);
    const { client: mcp, transport } = client(c);
    await mcp.connect(transport);
    const id = transport.sessionId!;
    const controller = new AbortController();
    const call = mcp.callTool(
      {
        name: "bash",
        arguments: { command: "touch started; sleep 2.5; touch late" },
      },
      undefined,
      { signal: controller.signal, timeout: 30_000 },
    ).catch((error) => error);
    const workspace = `${c.root}/conversations/${id}`;
    for (let i = 0; i < 100 && !(await exists(`${workspace}/started`)); i++) {
      await sleep(50);
    }
    controller.abort("enough");
    await call;
    // The cancellation went through the other instance than the call.
    assertEquals(
      new Set([
        c.methods.get("tools/call"),
        c.methods.get("notifications/cancelled"),
      ]).size,
      2,
    );
    await sleep(3500);
    assertFalse(await exists(`${workspace}/late`));
    await transport.terminateSession();
    await mcp.close();
  });

  test("idle sessions are swept by another instance after every instance stopped", async (make) => {
    await using c = await cluster(make, 2, {
      idleTimeoutMs: 1000,
      sweepIntervalMs: 300,
    });
    const { client: mcp, transport } = client(c);
    await mcp.connect(transport);
    const id = transport.sessionId!;
    await mcp.callTool({ name: "bash", arguments: { command: "true" } });
    const workspace = `${c.root}/conversations/${id}`;
    assert(await exists(workspace));
    await c.stop(0);
    await c.stop(1);
    // Nothing deleted by the instances going away: the session lives on.
    assert(await exists(workspace));
    await sleep(1500);
    await c.start(0);
    await c.start(1);
    for (let i = 0; i < 60 && await exists(workspace); i++) await sleep(100);
    assertFalse(await exists(workspace));
    const answer = await fetch(c.servers[1]!.url, {
      method: "DELETE",
      headers: { authorization: `Bearer ${TOKEN}`, "mcp-session-id": id },
    });
    await answer.body?.cancel();
    assertEquals(answer.status, 404);
    await mcp.close().catch(() => {});
  });

  test("sweep() (what Deno.cron calls) on two instances at once, past the interval: the idle session is deleted once", async (make) => {
    await using c = await cluster(make, 2, {
      idleTimeoutMs: 1000,
      // No sweep on requests or on the timer during the test.
      sweepIntervalMs: 3_600_000,
    });
    const { client: mcp, transport } = client(c);
    await mcp.connect(transport);
    const id = transport.sessionId!;
    await mcp.callTool({ name: "bash", arguments: { command: "true" } });
    const workspace = `${c.root}/conversations/${id}`;
    assert(await exists(workspace));
    await sleep(1500);
    // Still there: nothing swept it on its own.
    assert(await exists(workspace));
    await Promise.all([
      c.servers[0]!.handler.sweep(),
      c.servers[1]!.handler.sweep(),
    ]);
    assertFalse(await exists(workspace));
    assertEquals(c.errors.map((e) => e.message), []);
    for (const server of c.servers) {
      const answer = await fetch(server.url, {
        method: "DELETE",
        headers: { authorization: `Bearer ${TOKEN}`, "mcp-session-id": id },
      });
      await answer.body?.cancel();
      assertEquals(answer.status, 404);
    }
    await mcp.close().catch(() => {});
  });

  test("a session deleted through another instance leaves this one's memory at its next sweep", async (make) => {
    await using c = await cluster(make, 2, { sweepIntervalMs: 3_600_000 });
    const { client: mcp, transport } = client(c);
    await mcp.connect(transport);
    const id = transport.sessionId!;
    // Both instances serve it (round robin), so both hold it.
    for (let i = 0; i < 2; i++) {
      await mcp.callTool({ name: "bash", arguments: { command: "true" } });
    }
    assertEquals(c.servers[0]!.handler.sessionIds(), [id]);
    assertEquals(c.servers[1]!.handler.sessionIds(), [id]);
    const ended = await fetch(c.servers[1]!.url, {
      method: "DELETE",
      headers: { authorization: `Bearer ${TOKEN}`, "mcp-session-id": id },
    });
    await ended.body?.cancel();
    assertEquals(ended.status, 200);
    assertEquals(c.servers[1]!.handler.sessionIds(), []);
    // Instance 0 learns of it from the store at its sweep, not before.
    assertEquals(c.servers[0]!.handler.sessionIds(), [id]);
    await c.servers[0]!.handler.sweep();
    assertEquals(c.servers[0]!.handler.sessionIds(), []);
    assertEquals(c.errors.map((e) => e.message), []);
    await mcp.close().catch(() => {});
  });

  test("the session limits count across instances; an ended session frees its place on any of them", async (make) => {
    await using c = await cluster(make, 2, {
      maxSessions: 3,
      maxSessionsPerClient: 2,
    });
    const start = async (on: number) => {
      const answer = await fetch(c.servers[on]!.url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TOKEN}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: {
            protocolVersion: "2025-11-25",
            capabilities: {},
            clientInfo: { name: "t", version: "1" },
          },
        }),
      });
      const body = await answer.text();
      return {
        status: answer.status,
        body,
        id: answer.headers.get("mcp-session-id"),
      };
    };
    // One client (its token): 2 sessions, one on each instance; the third
    // is refused, though each instance holds only one.
    const a = await start(0);
    const b = await start(1);
    assertEquals([a.status, b.status], [200, 200]);
    const third = await start(0);
    assertEquals(third.status, 503);
    assertStringIncludes(third.body, "this client already has 2 sessions open");
    assertEquals(third.id, null);
    // Ended through the other instance: its place is free again.
    const ended = await fetch(c.servers[0]!.url, {
      method: "DELETE",
      headers: { authorization: `Bearer ${TOKEN}`, "mcp-session-id": b.id! },
    });
    await ended.body?.cancel();
    assertEquals(ended.status, 200);
    const again = await start(1);
    assertEquals(again.status, 200);
    assertEquals(c.errors.map((e) => e.message), []);
  });
}

const kvDir = await Deno.makeTempDir({ prefix: "skillrun-mcp-kv-" });
let kvFiles = 0;
suite("KV file shared by instances", () => {
  const file = `${kvDir}/store-${++kvFiles}.kv`;
  return () => KvConversationStore.open(file);
});

const pg = await postgresOrSkip("the MCP HTTP handler's PostgreSQL tests");
let pgTables = 0;
suite(
  "PostgreSQL (through the transaction-mode pooler when there is one)",
  pg
    ? () => {
      const prefix = `mcp${++pgTables}_`;
      return () =>
        Promise.resolve(
          new PostgresConversationStore(pg.poolerUrl ?? pg.url, {
            tablePrefix: prefix,
          }),
        );
    }
    : undefined,
);

Deno.test("an unreachable store: 503 with a one-line reason, no secret, nothing created", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const root = await Deno.makeTempDir({ prefix: "skillrun-mcp-down-" });
  const store = new PostgresConversationStore(
    `postgres://app:db-pa55-77@127.0.0.1:${port}/db`,
    { connectTimeoutS: 2 },
  );
  try {
    await using server = await serveMcpHttp({
      tools: ["bash"],
      conversationsRoot: `${root}/conversations`,
      token: TOKEN,
      store,
    });
    const answer = await fetch(server.url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TOKEN}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "t", version: "1" },
        },
      }),
    });
    const body = await answer.json();
    assertEquals(answer.status, 503);
    const message = body.error.message as string;
    assertStringIncludes(message, "Cannot reach the PostgreSQL store");
    assertFalse(message.includes("\n"));
    assertFalse(message.includes("db-pa55-77"));
    assertFalse(message.includes(TOKEN));
    assertFalse(await exists(`${root}/conversations`));
    assertEquals(server.handler.sessionIds(), []);
  } finally {
    store.close();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test({
  name: "store test clean-up",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await pg?.stop();
    await Deno.remove(kvDir, { recursive: true });
  },
});
