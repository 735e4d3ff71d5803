// The Deno Sandbox test server: its JSON-RPC against the SDK's own contract
// (rpc.schema.json, from @deno/sandbox 0.13.2's zod schemas) and its
// behaviour as the real service's (../shared/specs/README.md, Deno Sandbox).
import {
  assert,
  assertEquals,
  assertMatch,
  assertStringIncludes,
} from "../helpers/assert.ts";
import {
  type DenoSandboxServer,
  type DenoSandboxServerOptions,
  startDenoSandboxServer,
} from "./deno_sandbox.ts";
import { CertificateAuthority } from "../../network/ca.ts";

import { contract } from "./_deno_sandbox_contract.ts";

const TOKEN = "ddo_server_test_token";
const AUTH = { authorization: `Bearer ${TOKEN}` };
const encode64 = (value: unknown) =>
  btoa(String.fromCharCode(...new TextEncoder().encode(JSON.stringify(value))));

/** A raw JSON-RPC client: every message kept, calls answered by id. */
class Raw {
  readonly ws: WebSocket;
  readonly notes: { method: string; params: Record<string, unknown> }[] = [];
  readonly texts: string[] = [];
  readonly closed: Promise<CloseEvent>;
  #id = 0;
  readonly #waiting = new Map<number, (m: Record<string, unknown>) => void>();

  constructor(ws: WebSocket) {
    this.ws = ws;
    this.closed = new Promise((resolve) => ws.onclose = resolve);
    ws.onmessage = (event) => {
      const text = String(event.data);
      this.texts.push(text);
      if (text === "pong") return;
      const message = JSON.parse(text);
      if (message.id !== undefined) this.#waiting.get(message.id)?.(message);
      else this.notes.push(message);
    };
  }

  static async open(
    url: string,
    headers: Record<string, string> = AUTH,
  ): Promise<Raw> {
    const ws = new WebSocket(url.replace(/^http/, "ws"), { headers });
    await new Promise((resolve, reject) => {
      ws.onopen = resolve;
      ws.onerror = () => reject(new Error(`Cannot open ${url}`));
    });
    return new Raw(ws);
  }

  /** The whole answer message of a call. */
  send(method: string, params: unknown): Promise<Record<string, unknown>> {
    const id = this.#id++;
    const answer = new Promise<Record<string, unknown>>((resolve) =>
      this.#waiting.set(id, resolve)
    );
    this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    return answer;
  }

  /** A call's `result` (`{ok}` or `{error}`). */
  // deno-lint-ignore no-explicit-any -- answers of many shapes, read field by field
  async call(method: string, params: unknown): Promise<Record<string, any>> {
    // deno-lint-ignore no-explicit-any
    return (await this.send(method, params)).result as Record<string, any>;
  }
}

async function withSandbox(
  fn: (server: DenoSandboxServer, raw: Raw, id: string) => Promise<void>,
  config: Record<string, unknown> = { stop_at_ms: Date.now() + 60_000 },
  serverOptions: DenoSandboxServerOptions = {},
): Promise<void> {
  await using server = startDenoSandboxServer({
    token: TOKEN,
    ...serverOptions,
  });
  const raw = await Raw.open(`${server.url}/api/v3/sandboxes/create`, {
    ...AUTH,
    "x-deno-sandbox-config": encode64({
      memory_mb: 1280,
      volumes: [],
      ...config,
    }),
  });
  try {
    const id = [...server.sandboxes.keys()].at(-1)!;
    await fn(server, raw, id);
  } finally {
    raw.ws.close();
    await raw.closed;
  }
}

/** The 101 answer's headers of an upgrade (read off the wire). */
async function upgradeHeaders(
  url: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Headers; conn: Deno.Conn }> {
  const { hostname, port } = new URL(url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  const lines = [
    `GET ${path} HTTP/1.1`,
    `Host: ${hostname}:${port}`,
    "Upgrade: websocket",
    "Connection: Upgrade",
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version: 13",
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  await conn.write(new TextEncoder().encode(lines.join("\r\n") + "\r\n\r\n"));
  let text = "";
  const buffer = new Uint8Array(4096);
  while (!text.includes("\r\n\r\n")) {
    const n = await conn.read(buffer);
    if (n === null) break;
    text += new TextDecoder().decode(buffer.subarray(0, n));
  }
  const [status, ...rest] = text.split("\r\n\r\n")[0]!.split("\r\n");
  const parsed = new Headers();
  for (const line of rest) {
    const at = line.indexOf(":");
    parsed.append(line.slice(0, at).trim(), line.slice(at + 1).trim());
  }
  return { status: Number(status!.split(" ")[1]), headers: parsed, conn };
}

Deno.test("deno-sandbox server: the 101 names the sandbox (sbx_<region>_<20>), a session sandbox ends with its socket, the console lists by label, refusals are JSON {code, message}", async () => {
  await using server = startDenoSandboxServer({ token: TOKEN });
  const made = await upgradeHeaders(server.url, "/api/v3/sandboxes/create", {
    ...AUTH,
    "x-deno-sandbox-config": encode64({ labels: { who: "t1" }, volumes: [] }),
  });
  assertEquals(made.status, 101);
  const id = made.headers.get("x-deno-sandbox-id")!;
  assertMatch(id, /^sbx_ord_[0-9a-hjkmnp-z]{20}$/);
  assert(made.headers.get("x-deno-trace-id"));
  const list = await fetch(
    `${server.url}/api/v2/sandboxes?${encodeURIComponent("labels[who]")}=t1`,
    { headers: AUTH },
  );
  const listed = await list.json();
  assertEquals(listed.map((b: { id: string }) => b.id), [id]);
  assertEquals(
    Object.keys(listed[0]).sort(),
    ["createdAt", "id", "labels", "region", "status", "stoppedAt"],
  );
  assertEquals([listed[0].status, listed[0].stoppedAt], ["running", null]);
  // No stop_at_ms: the sandbox ends with the socket that made it.
  made.conn.close();
  for (
    let i = 0;
    i < 100 && server.sandboxes.get(id)!.status !== "stopped";
    i++
  ) {
    await new Promise((r) => setTimeout(r, 10));
  }
  assertEquals(server.sandboxes.get(id)!.status, "stopped");
  const connect = await fetch(`${server.url}/api/v3/sandbox/${id}/connect`, {
    headers: AUTH,
  });
  assertEquals(connect.status, 404);
  assertEquals((await connect.json()).code, "SANDBOX_NOT_FOUND");
  const bad = await fetch(`${server.url}/api/v3/sandboxes/create`, {
    headers: { authorization: "Bearer ddo_wrong" },
  });
  assertEquals([bad.status, (await bad.json()).code], [401, "INVALID_TOKEN"]);
  const config = await fetch(`${server.url}/api/v3/sandboxes/create`, {
    headers: {
      ...AUTH,
      "x-deno-sandbox-config": encode64({ memory_mb: 100 }),
    },
  });
  assertEquals([config.status, (await config.json()).code], [
    400,
    "INVALID_CONFIG",
  ]);
  // A token other than an organization's needs X-Deno-Org.
  await using other = startDenoSandboxServer();
  const org = await fetch(`${other.url}/api/v2/sandboxes`, {
    headers: { authorization: "Bearer user-token" },
  });
  assertEquals(org.status, 401);
  await org.body?.cancel();
  const withOrg = await fetch(`${other.url}/api/v2/sandboxes`, {
    headers: { authorization: "Bearer user-token", "x-deno-org": "acme" },
  });
  assertEquals(await withOrg.json(), []);
});

Deno.test("deno-sandbox server: spawn runs the program itself, its output as server streams (start first), processWait and processKill as Deno's", async () => {
  await withSandbox(async (server, raw) => {
    const spawned = await raw.call("spawn", {
      command: "bash",
      args: ["-c", 'echo "$1 $GREETING"; echo err >&2; exit 3', "bash", "a b"],
      env: { GREETING: "hi" },
      stdout: "piped",
      stderr: "piped",
    });
    const { pid, stdoutStreamId, stderrStreamId } = spawned.ok;
    const waited = await raw.call("processWait", { pid });
    assertEquals(waited, {
      ok: { success: false, code: 3, signal: null, oom: null },
    });
    for (let i = 0; i < 100 && raw.notes.length < 6; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const text = (id: number) =>
      raw.notes.filter((n) =>
        n.method === "$sandbox.stream.enqueue" && n.params.streamId === id
      ).map((n) => atob(String(n.params.data))).join("");
    assertEquals(text(stdoutStreamId), "a b hi\n");
    assertEquals(text(stderrStreamId), "err\n");
    for (const id of [stdoutStreamId, stderrStreamId]) {
      const kinds = raw.notes.filter((n) => n.params.streamId === id).map((
        n,
      ) => n.method);
      assertEquals(kinds[0], "$sandbox.stream.start");
      assertEquals(kinds.at(-1), "$sandbox.stream.end");
    }
    if (contract) {
      assertEquals(
        raw.notes.flatMap((n) => contract!.notification(n.method, n.params)),
        [],
      );
      assertEquals(contract.result("spawn", spawned), []);
    }
    // The pid is the program's: `kill -- -pid` reaches its group.
    const sleeper = await raw.call("spawn", {
      command: "sleep",
      args: ["30"],
      stdout: "null",
      stderr: "null",
    });
    assertEquals(
      await raw.call("processKill", { pid: sleeper.ok.pid }),
      { ok: null },
    );
    assertEquals((await raw.call("processWait", { pid: sleeper.ok.pid })).ok, {
      success: false,
      code: 143,
      signal: "SIGTERM",
      oom: null,
    });
    const missing = await raw.call("spawn", {
      command: "true",
      cwd: "/home/app/nowhere",
      stdout: "null",
      stderr: "null",
    });
    assertEquals(missing.error.constructorName, "NotFound");
    assertEquals(server.sandboxes.size, 1);
  });
});

Deno.test("deno-sandbox server: files are Deno's fs calls on the sandbox's own folders, seen by its commands; errors by constructor name", async () => {
  await withSandbox(async (server, raw) => {
    const write = await raw.call("writeFile", {
      path: "/home/app/x.txt",
      content: btoa("hello"),
      options: { mode: 0o755 },
    });
    assertEquals(write, { ok: null });
    const cat = await raw.call("spawn", {
      command: "bash",
      args: ["-c", "cat /home/app/x.txt; stat -c %a /home/app/x.txt"],
      stdout: "piped",
      stderr: "null",
    });
    await raw.call("processWait", { pid: cat.ok.pid });
    for (let i = 0; i < 100; i++) {
      if (raw.notes.some((n) => n.method === "$sandbox.stream.end")) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const out = raw.notes.filter((n) => n.method === "$sandbox.stream.enqueue")
      .map((n) => atob(String(n.params.data))).join("");
    assertEquals(out, "hello755\n");
    const stat = await raw.call("lstat", { path: "/home/app/x.txt" });
    assertEquals(Object.keys(stat.ok).length, 21);
    assertEquals([stat.ok.isFile, stat.ok.size], [true, 5]);
    const gone = await raw.call("readFile", { path: "/home/app/none" });
    assertEquals(
      [gone.error.constructorName, gone.error.code],
      ["NotFound", "ENOENT"],
    );
    const denied = await raw.call("writeFile", {
      path: "/etc/skillrun-test",
      content: "",
    });
    assertEquals(denied.error.constructorName, "PermissionDenied");
    await raw.call("mkdir", { path: "/home/app/d" });
    const again = await raw.call("mkdir", { path: "/home/app/d" });
    assertEquals(again.error.constructorName, "AlreadyExists");
    const opened = await raw.call("open", { path: "/home/app/x.txt" });
    const handle = opened.ok.fileHandleId;
    await raw.call("fileSeek", { fileHandleId: handle, offset: 2, whence: 0 });
    const piece = await raw.call("fileRead", {
      fileHandleId: handle,
      length: 10,
    });
    assertEquals(atob(piece.ok.data), "llo");
    const end = await raw.call("fileRead", {
      fileHandleId: handle,
      length: 10,
    });
    assertEquals(end.ok, { data: null });
    // A stream of the client: start (and data) before the request naming it.
    raw.ws.send(JSON.stringify({
      jsonrpc: "2.0",
      method: "$sandbox.stream.start",
      params: { streamId: 7 },
    }));
    raw.ws.send(JSON.stringify({
      jsonrpc: "2.0",
      method: "$sandbox.stream.enqueue",
      params: { streamId: 7, data: btoa("streamed") },
    }));
    const pending = raw.call("writeFile", {
      path: "/home/app/s.txt",
      contentStreamId: 7,
    });
    raw.ws.send(JSON.stringify({
      jsonrpc: "2.0",
      method: "$sandbox.stream.end",
      params: { streamId: 7 },
    }));
    assertEquals(await pending, { ok: null });
    const box = [...server.sandboxes.values()][0]!;
    assertEquals(await Deno.readTextFile(`${box.root}/home/s.txt`), "streamed");
    if (contract) {
      for (const [method, result] of [["lstat", stat], ["readFile", gone]]) {
        assertEquals(contract.result(method as string, result), []);
      }
    }
  });
});

Deno.test("deno-sandbox server: PATCH moves stop_at_ms (30 minutes at most, the answer authoritative), DELETE ends it and closes its sockets; ping, bad JSON and bad JSON-RPC", async () => {
  await withSandbox(async (server, raw, id) => {
    const far = Date.now() + 3 * 3600_000;
    const patched = await fetch(`${server.url}/api/v3/sandbox/${id}`, {
      method: "PATCH",
      headers: { ...AUTH, "content-type": "application/json" },
      body: JSON.stringify({ stop_at_ms: far }),
    });
    const { stop_at_ms } = await patched.json();
    assert(stop_at_ms < far && stop_at_ms <= Date.now() + 30 * 60_000);
    raw.ws.send("ping");
    for (let i = 0; i < 100 && !raw.texts.includes("pong"); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert(raw.texts.includes("pong"));
    const second = await Raw.open(`${server.url}/api/v3/sandbox/${id}/connect`);
    second.ws.send("{not json");
    assertEquals((await second.closed).code, 4000);
    const third = await Raw.open(`${server.url}/api/v3/sandbox/${id}/connect`);
    third.ws.send(JSON.stringify({ id: 1, method: "x" }));
    assertEquals((await third.closed).code, 4001);
    const deleted = await fetch(`${server.url}/api/v3/sandbox/${id}`, {
      method: "DELETE",
      headers: AUTH,
    });
    assert(deleted.ok);
    await deleted.body?.cancel();
    await raw.closed;
    assertEquals(server.sandboxes.get(id)!.status, "stopped");
    const gone = await fetch(`${server.url}/api/v3/sandbox/${id}`, {
      method: "DELETE",
      headers: AUTH,
    });
    assertEquals(gone.status, 404);
    await gone.body?.cancel();
  });
});

Deno.test("deno-sandbox server: allow_net is enforced by the sandbox's egress; a secret is a placeholder the egress replaces, never the value", async () => {
  await using upstream = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (request) => new Response(`seen ${request.headers.get("x-key") ?? ""}`),
  );
  const port = upstream.addr.port;
  await withSandbox(async (server, raw) => {
    const box = [...server.sandboxes.values()][0]!;
    assertStringIncludes(box.egressEnv.HTTP_PROXY!, "127.0.0.1");
    const value = box.placeholders.API_KEY!;
    assert(value && !value.includes("real-secret-value"));
    const run = async (line: string) => {
      raw.notes.length = 0;
      const spawned = await raw.call("spawn", {
        command: "bash",
        args: ["-c", line],
        stdout: "piped",
        stderr: "null",
      });
      await raw.call("processWait", { pid: spawned.ok.pid });
      for (let i = 0; i < 200; i++) {
        if (raw.notes.some((n) => n.method === "$sandbox.stream.end")) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      return raw.notes.filter((n) => n.method === "$sandbox.stream.enqueue")
        .map((n) => atob(String(n.params.data))).join("");
    };
    assertEquals(await run('printf %s "$API_KEY"'), value);
    // Allowed (the name resolves to the test's server), and refused.
    assertEquals(
      await run(`curl -s -H "x-key: $API_KEY" http://allowed.test:${port}/`),
      `seen ${value}`,
    );
    assertEquals(
      await run(
        `curl -s -o /dev/null -w '%{http_code}' http://denied.test:${port}/`,
      ),
      "403",
    );
  }, {
    stop_at_ms: Date.now() + 60_000,
    allow_net: ["allowed.test"],
    secrets: {
      API_KEY: { hosts: ["api.example.com"], value: "real-secret-value" },
    },
  }, { resolve: { "allowed.test": "127.0.0.1", "denied.test": "127.0.0.1" } });
});

Deno.test("deno-sandbox server: faults apply to JSON-RPC methods (POST /rpc/<method>): a status answers a JSON-RPC error, a dropped body closes the connection", async () => {
  await withSandbox(async (server, raw) => {
    server.faults.add({
      path: "/rpc/lstat",
      fault: { kind: "status", status: 500 },
      times: 1,
    });
    const failed = await raw.send("lstat", { path: "/home/app" });
    assertEquals((failed.error as { code: number }).code, -32000);
    if (contract) assertEquals(contract.envelope("errorResponse", failed), []);
    const ok = await raw.send("lstat", { path: "/home/app" });
    assert((ok.result as { ok?: unknown }).ok);
    server.faults.add({ path: "/rpc/readDir", fault: { kind: "reset" } });
    raw.send("readDir", { path: "/home/app" });
    assert((await raw.closed).code !== 1000);
  });
});

Deno.test("deno-sandbox server: a secret's value reaches only its host over HTTPS (the egress puts it in place of the placeholder)", async () => {
  const authority = await CertificateAuthority.create("test upstream CA");
  const issued = await authority.issue("api.secret.test");
  const seen: string[] = [];
  await using upstream = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: issued.cert,
    key: issued.key,
    onListen() {},
  }, (request) => {
    seen.push(request.headers.get("authorization") ?? "");
    return new Response("ok");
  });
  const port = upstream.addr.port;
  const value = `real-${crypto.randomUUID()}`;
  await withSandbox(async (_server, raw) => {
    const spawned = await raw.call("spawn", {
      command: "bash",
      args: [
        "-c",
        `curl -sS -H "authorization: Bearer $API_KEY" https://api.secret.test:${port}/; ` +
        'echo " $API_KEY"',
      ],
      stdout: "piped",
      stderr: "piped",
    });
    await raw.call("processWait", { pid: spawned.ok.pid });
    for (let i = 0; i < 200; i++) {
      const ends = raw.notes.filter((n) => n.method === "$sandbox.stream.end");
      if (ends.length === 2) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const out = raw.notes.filter((n) =>
      n.method === "$sandbox.stream.enqueue" &&
      n.params.streamId === spawned.ok.stdoutStreamId
    ).map((n) => atob(String(n.params.data))).join("");
    assert(out.startsWith("ok "), out);
    assert(!out.includes(value), out);
    assertEquals(seen, [`Bearer ${value}`]);
  }, {
    stop_at_ms: Date.now() + 60_000,
    allow_net: [`api.secret.test:${port}`],
    secrets: { API_KEY: { hosts: ["api.secret.test"], value } },
  }, {
    resolve: { "api.secret.test": "127.0.0.1" },
    upstreamCaCerts: [authority.certificate],
  });
});
