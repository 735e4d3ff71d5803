/**
 * Security suite: an MCP server reachable by others. A public address
 * without a token is refused unless told; a foreign `Host` or `Origin` (DNS
 * rebinding) is refused whatever the address; one client cannot take every
 * session; a session's workspace does not outlive it unless kept, and what a
 * crash left is swept.
 *
 * @module
 */
import { assert, assertEquals, assertRejects } from "../helpers/assert.ts";
import {
  createMcpHttpHandler,
  type McpClientInfo,
  type McpHttpHandler,
  serveMcpHttp,
} from "../../tools/mcp/http.ts";
import { mcpHttpCommand } from "./_harness.ts";

const repo = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
const skills = `${repo}/examples/skills`;

const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "security", version: "1.0.0" },
  },
};

function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Request {
  return new Request(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

function from(hostname: string): McpClientInfo {
  return { remoteAddr: { transport: "tcp", hostname, port: 40000 } };
}

/** Starts a session through the handler; its id, or the refusal's status. */
async function start(
  handler: McpHttpHandler,
  client: string,
  url = "http://127.0.0.1/mcp",
  headers: Record<string, string> = {},
): Promise<{ id: string | null; status: number }> {
  const response = await handler(post(url, INIT, headers), from(client));
  await response.body?.cancel();
  return {
    id: response.headers.get("mcp-session-id"),
    status: response.status,
  };
}

/** Calls a tool in a session; settles when the call answers. */
async function call(
  handler: McpHttpHandler,
  client: string,
  session: string,
  command: string,
): Promise<string> {
  const headers = {
    "mcp-session-id": session,
    "mcp-protocol-version": "2025-06-18",
  };
  const initialized = await handler(
    post(
      "http://127.0.0.1/mcp",
      { jsonrpc: "2.0", method: "notifications/initialized" },
      headers,
    ),
    from(client),
  );
  await initialized.body?.cancel();
  const response = await handler(
    post("http://127.0.0.1/mcp", {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "bash", arguments: { command } },
    }, headers),
    from(client),
  );
  return await response.text();
}

/**
 * A POST over a raw connection (fetch sets `Host` itself): the answer's
 * status line and headers.
 */
async function rawPost(
  port: number,
  headers: Record<string, string>,
  body: unknown,
): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const text = JSON.stringify(body);
    const head = [
      "POST /mcp HTTP/1.1",
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      "content-type: application/json",
      "accept: application/json, text/event-stream",
      `content-length: ${new TextEncoder().encode(text).length}`,
      "connection: close",
      "",
      "",
    ].join("\r\n");
    await conn.write(new TextEncoder().encode(head + text));
    const answer = await new Response(conn.readable).text();
    return answer.split("\r\n\r\n")[0]!;
  } finally {
    try {
      conn.close();
    } catch {
      // closed by reading to the end
    }
  }
}

async function tempRoot(): Promise<string> {
  return await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-security-mcp-public-" }),
  );
}

/**
 * Registers a test (Linux only) with a temporary conversations root, removed
 * after it.
 */
function publicTest(name: string, fn: (root: string) => Promise<void>): void {
  Deno.test({
    name,
    ignore: Deno.build.os !== "linux",
    async fn() {
      const root = await tempRoot();
      try {
        await fn(root);
      } finally {
        await Deno.remove(root, { recursive: true });
      }
    },
  });
}

async function listing(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names.sort();
}

publicTest(
  "security: mcp public: a public address without a token is refused unless told; a foreign Host or Origin never gets a session",
  async (root) => {
    await assertRejects(
      () =>
        serveMcpHttp({
          hostname: "0.0.0.0",
          port: 0,
          skills,
          conversationsRoot: root,
        }),
      TypeError,
      "without a token",
    );
    await using server = await serveMcpHttp({
      hostname: "0.0.0.0",
      port: 0,
      skills,
      conversationsRoot: root,
      allowPublicWithoutToken: true,
      jsonResponse: true,
    });
    const port = new URL(server.url).port;
    const before = await listing(root);
    // Attack: a page whose name was rebound to this machine.
    for (
      const headers of [
        { host: `evil.example:${port}` },
        { host: `127.0.0.1:${port}`, origin: "http://evil.example" },
        { host: `rebind.127.0.0.1.nip.io:${port}` },
      ]
    ) {
      const response = await rawPost(Number(port), headers, INIT);
      assert(response.startsWith("HTTP/1.1 403"), response);
      assert(!/mcp-session-id/i.test(response), response);
    }
    assertEquals(server.handler.sessionIds(), []);
    assertEquals(await listing(root), before);
    // Control: by address, the session starts and runs a command.
    const ok = await start(
      server.handler,
      "127.0.0.1",
      `http://127.0.0.1:${port}/mcp`,
    );
    assertEquals(ok.status, 200);
    assert(
      (await call(server.handler, "127.0.0.1", ok.id!, "echo ran"))
        .includes("ran"),
    );
    // Alive.
    assertEquals(server.handler.sessionIds(), [ok.id]);
  },
);

publicTest(
  "security: mcp public: allowedHosts lists the server's names; others are refused even with a public bind",
  async (root) => {
    await using handler = await createMcpHttpHandler({
      skills,
      conversationsRoot: root,
      allowedHosts: ["mcp.example.com"],
      jsonResponse: true,
    });
    const refused = await start(
      handler,
      "10.0.0.9",
      "http://10.0.0.9/mcp",
      { host: "evil.example" },
    );
    assertEquals(refused.status, 403);
    const byIp = await start(handler, "10.0.0.9", "http://10.0.0.9/mcp", {
      host: "10.0.0.9",
    });
    assertEquals(byIp.status, 403, "a listed host replaces the default");
    const ok = await start(
      handler,
      "10.0.0.9",
      "http://mcp.example.com/mcp",
      { host: "mcp.example.com", origin: "https://mcp.example.com" },
    );
    assertEquals(ok.status, 200);
    assertEquals(handler.sessionIds(), [ok.id]);
  },
);

publicTest(
  "security: mcp public: one client cannot lock others out of the session cap, idle or busy",
  async (root) => {
    await using handler = await createMcpHttpHandler({
      skills,
      conversationsRoot: root,
      maxSessions: 4,
      maxSessionsPerClient: 2,
      jsonResponse: true,
    });
    // Attack 1: a flood of sessions from one client keeps at most 2.
    const flood: string[] = [];
    for (let i = 0; i < 10; i++) {
      const started = await start(handler, "10.6.6.6");
      assertEquals(started.status, 200);
      flood.push(started.id!);
    }
    assertEquals(handler.sessionIds().sort(), flood.slice(-2).sort());
    // Attack 2: both of its sessions busy: its next one is refused.
    const busy = handler.sessionIds().map((id) =>
      call(handler, "10.6.6.6", id, "sleep 3; echo done")
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const refused = await start(handler, "10.6.6.6");
    assertEquals(refused.status, 503);
    // Control: other clients still get sessions, and run commands.
    const a = await start(handler, "10.1.1.1");
    const b = await start(handler, "10.2.2.2");
    assertEquals([a.status, b.status], [200, 200]);
    assert(
      (await call(handler, "10.1.1.1", a.id!, "echo mine")).includes("mine"),
    );
    for (const answer of await Promise.all(busy)) {
      assert(answer.includes("done"), answer);
    }
    assertEquals(handler.sessionIds().length, 4);
  },
);

publicTest(
  "security: mcp retention: a session's workspace is deleted when it ends, kept on request, and old leftovers are swept",
  async (root) => {
    // Leftovers of a crash: an old session folder, an old named
    // conversation (never a session's), and a fresh session folder.
    const old = crypto.randomUUID();
    const fresh = crypto.randomUUID();
    for (const name of [old, "thread-1", fresh]) {
      await Deno.mkdir(`${root}/${name}`);
      await Deno.writeTextFile(`${root}/${name}/notes.txt`, "x");
    }
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 3600 * 1000);
    await Deno.utime(`${root}/${old}`, twoDaysAgo, twoDaysAgo);
    await Deno.utime(`${root}/thread-1`, twoDaysAgo, twoDaysAgo);
    {
      await using handler = await createMcpHttpHandler({
        skills,
        conversationsRoot: root,
        jsonResponse: true,
      });
      assertEquals(await listing(root), [fresh, "thread-1"].sort());
      const started = await start(handler, "127.0.0.1");
      await call(handler, "127.0.0.1", started.id!, "echo x > kept.txt");
      assert((await listing(root)).includes(started.id!));
      const ended = await handler(
        new Request("http://127.0.0.1/mcp", {
          method: "DELETE",
          headers: {
            "mcp-session-id": started.id!,
            "mcp-protocol-version": "2025-06-18",
          },
        }),
        from("127.0.0.1"),
      );
      await ended.body?.cancel();
      for (let i = 0; i < 50 && (await listing(root)).length > 2; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assertEquals(await listing(root), [fresh, "thread-1"].sort());
    }
    // Kept on request.
    await using keeping = await createMcpHttpHandler({
      skills,
      conversationsRoot: root,
      keepWorkspaces: true,
      jsonResponse: true,
    });
    const kept = await start(keeping, "127.0.0.1");
    await call(keeping, "127.0.0.1", kept.id!, "echo x > kept.txt");
    await keeping.close();
    assertEquals(
      await Deno.readTextFile(`${root}/${kept.id}/kept.txt`),
      "x\n",
    );
  },
);

publicTest(
  "security: mcp public: the CLI refuses a public address without a token unless --allow-public-without-token",
  async (root) => {
    const run = (extra: string[], signal?: AbortSignal) =>
      mcpHttpCommand({
        root,
        http: "0.0.0.0:0",
        allowNet: "",
        clearEnv: true,
        extra,
        ...(signal ? { signal } : {}),
      });
    // (Killed after 30 s if it serves instead.)
    const refused = await run([], AbortSignal.timeout(30_000)).output();
    assertEquals(refused.code, 1);
    const message = new TextDecoder().decode(refused.stderr);
    assert(
      message.includes("--allow-public-without-token"),
      `refusal: ${message}`,
    );
    assertEquals(refused.stdout.length, 0);
    // Control: told explicitly, it serves (and warns).
    const child = run(["--allow-public-without-token"]).spawn();
    let stderr = "";
    const errors = child.stderr.pipeThrough(new TextDecoderStream())
      .pipeTo(new WritableStream({ write: (c) => void (stderr += c) }));
    const reader = child.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    let first = "";
    while (!first.includes("\n")) {
      const { done, value } = await reader.read();
      if (done) break;
      first += value;
    }
    for (let i = 0; i < 200 && !stderr.includes("without a token"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    child.kill("SIGTERM");
    await reader.cancel();
    await child.status;
    await errors.catch(() => {});
    assert(/^http:\/\/0\.0\.0\.0:\d+\/mcp\n/.test(first), first + stderr);
    assert(stderr.includes("without a token"), `stderr: ${stderr}`);
  },
);
