// `cli.ts mcp --http --store`: three replicas (separate processes) behind a
// round-robin proxy on loopback written here, one store shared (a KV file,
// a real PostgreSQL), driven by the official MCP SDK client.
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
} from "../_internal/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { postgresOrSkip } from "../runtimes/stores/_postgres_testing.ts";

const repo = hostPath.fromFileUrl(new URL("../", import.meta.url));
const cli = hostPath.join(repo, "cli.ts");
const TOKEN = "replica-t0ken-4242";

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

interface Replica {
  child: Deno.ChildProcess;
  port: number;
  stderr: Promise<string>;
}

/** One `cli.ts mcp --http` process; its URL read from its first line. */
async function startReplica(
  root: string,
  store: string,
  port = 0,
): Promise<Replica> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      "--unstable-kv",
      `--allow-read=${repo},${root}`,
      `--allow-write=${root}`,
      "--allow-run",
      "--allow-env",
      "--allow-net=127.0.0.1",
      cli,
      "mcp",
      "--skills",
      "examples/skills",
      "--root",
      `${root}/conversations`,
      "--http",
      `127.0.0.1:${port}`,
      "--max-sessions-per-client",
      "100",
    ],
    cwd: repo,
    env: {
      ...Deno.env.toObject(),
      NO_COLOR: "1",
      SKILLRUN_MCP_TOKEN: TOKEN,
      SKILLRUN_STORE: store,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream())
    .getReader();
  let first = "";
  while (!first.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) break;
    first += value;
  }
  reader.releaseLock();
  const match = /^http:\/\/127\.0\.0\.1:(\d+)\/mcp\n/.exec(first);
  if (!match) {
    child.kill("SIGKILL");
    throw new Error(`No URL on stdout: "${first}"\n${await stderr}`);
  }
  return { child, port: Number(match[1]), stderr };
}

/** A round-robin reverse proxy on loopback over the live replicas. */
function roundRobin(replicas: (Replica | undefined)[]) {
  let next = 0;
  const methods = new Map<string, number>();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const live = replicas.flatMap((r, i) => (r ? [i] : []));
      const i = live[next++ % live.length]!;
      const body = request.body ? await request.arrayBuffer() : undefined;
      if (body && body.byteLength < 10_000) {
        try {
          const method = JSON.parse(new TextDecoder().decode(body)).method;
          if (typeof method === "string") methods.set(method, i);
        } catch {
          // not JSON
        }
      }
      const url = new URL(request.url);
      url.host = `127.0.0.1:${replicas[i]!.port}`;
      try {
        return await fetch(url, {
          method: request.method,
          headers: request.headers,
          ...(body ? { body } : {}),
        });
      } catch {
        return new Response("replica unreachable", { status: 502 });
      }
    },
  );
  return { server, methods, url: `http://127.0.0.1:${server.addr.port}/mcp` };
}

function replicaSuite(label: string, store: () => string | undefined) {
  Deno.test({
    name:
      `mcp --http --store (${label}): three replicas behind a round-robin proxy serve one session; one killed and restarted; DELETE through another`,
    ignore: store() === undefined,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const root = await Deno.realPath(
        await Deno.makeTempDir({ prefix: "skillrun-replicas-" }),
      );
      const where = store()!.replace("{root}", root);
      const replicas: (Replica | undefined)[] = [];
      for (let i = 0; i < 3; i++) replicas[i] = await startReplica(root, where);
      const proxy = roundRobin(replicas);
      const transport = new StreamableHTTPClientTransport(new URL(proxy.url), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      });
      const client = new Client({ name: "replicas", version: "1.0.0" });
      try {
        await client.connect(transport);
        const id = transport.sessionId!;
        const workspace = `${root}/conversations/${id}`;
        const skill = await client.callTool({
          name: "skill",
          arguments: { name: "csv-report" },
        });
        assertFalse(skill.isError, text(skill));
        const wrote = await client.callTool({
          name: "write",
          arguments: {
            file_path: "notes.txt",
            content: "kept across replicas",
          },
        });
        assertFalse(wrote.isError, text(wrote));
        // One replica dies (SIGKILL) and comes back on the same port.
        const killed = replicas[1]!;
        killed.child.kill("SIGKILL");
        await killed.child.status;
        replicas[1] = undefined;
        const read = await client.callTool({
          name: "read",
          arguments: { file_path: "notes.txt" },
        });
        assertStringIncludes(text(read), "kept across replicas");
        replicas[1] = await startReplica(root, where, killed.port);
        for (let i = 0; i < 4; i++) {
          const ran = await client.callTool({
            name: "bash",
            arguments: { command: "cat notes.txt" },
          });
          assertStringIncludes(text(ran), "kept across replicas");
        }
        assert(await exists(workspace));
        await transport.terminateSession();
        assertFalse(await exists(workspace));
        // Every replica now says 404.
        for (const replica of replicas) {
          const answer = await fetch(
            `http://127.0.0.1:${replica!.port}/mcp`,
            {
              method: "DELETE",
              headers: {
                authorization: `Bearer ${TOKEN}`,
                "mcp-session-id": id,
              },
            },
          );
          await answer.body?.cancel();
          assertEquals(answer.status, 404);
        }
      } finally {
        // The replicas first: a client's GET stream through the proxy to a
        // replica that still holds the session would keep the proxy open.
        for (const replica of replicas) {
          if (!replica) continue;
          replica.child.kill("SIGTERM");
          await replica.child.status;
          await replica.stderr;
        }
        await client.close().catch(() => {});
        await proxy.server.shutdown();
        await Deno.remove(root, { recursive: true }).catch(() => {});
      }
    },
  });
}

replicaSuite("a KV file", () => "{root}/store.kv");
const pg = await postgresOrSkip("the replica tests on PostgreSQL");
replicaSuite(
  "PostgreSQL through a transaction-mode pooler",
  () => pg ? (pg.poolerUrl ?? pg.url) : undefined,
);
Deno.test({
  name: "replica tests: the PostgreSQL cluster stops",
  ignore: !pg,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () => pg!.stop(),
});
