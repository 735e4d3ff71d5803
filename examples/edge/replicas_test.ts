// The edge function as three instances (processes, under exactly their
// documented flags) behind a round-robin proxy written here, sessions in a
// real PostgreSQL (DATABASE_URL, through pgbouncer in transaction mode when
// installed), against the OpenSandbox test server (sandboxes counted there)
// and the AIO test server (conversation folders counted).
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
import {
  assert,
  assertEquals,
  assertFalse,
  assertStringIncludes,
} from "../../_internal/assert.ts";
import { hostPath } from "../../_internal/std.ts";
import { startOpenSandboxServer } from "../../tests/servers/opensandbox.ts";
import { startAioServer } from "../../tests/servers/aio.ts";
import { postgresOrSkip } from "../../runtimes/stores/_postgres_testing.ts";

const REPO = hostPath.fromFileUrl(new URL("../../", import.meta.url));
const FLAGS = [
  "--allow-net",
  "--allow-env",
  "--allow-read=examples/edge/skills",
];
const TOKEN = "edge-replica-t0ken";

interface Instance {
  child: Deno.ChildProcess;
  port: number;
  stderr: () => string;
}

async function startInstance(
  env: Record<string, string>,
  port = 0,
): Promise<Instance> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...FLAGS, "examples/edge/main.ts"],
    cwd: REPO,
    clearEnv: true,
    env: { NO_COLOR: "1", PORT: String(port), ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let errors = "";
  void child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({
      write(chunk) {
        errors += chunk;
      },
    }),
  ).catch(() => {});
  const reader = child.stdout.pipeThrough(new TextDecoderStream())
    .getReader();
  let first = "";
  while (!first.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    first += value;
  }
  reader.releaseLock();
  const found = /^http:\/\/[^:]+:(\d+)\//.exec(first);
  if (!found) {
    child.kill("SIGKILL");
    throw new Error(`The function did not start: ${first}${errors}`);
  }
  assertStringIncludes(first, "postgres store");
  return { child, port: Number(found[1]), stderr: () => errors };
}

const pg = await postgresOrSkip("the edge function's replica tests");

/** A sandbox test server, as the function's variables and its counts. */
interface Sandboxes extends AsyncDisposable {
  env: Record<string, string>;
  /** Sandboxes (OpenSandbox) or conversation folders (AIO) now. */
  count(): Promise<number>;
  /** Upload requests so far. */
  uploads(): number;
}

async function openSandbox(root: string): Promise<Sandboxes> {
  const server = await startOpenSandboxServer({
    apiKey: "os-key",
    cwd: root,
    streamLingerMs: 20,
  });
  return {
    env: {
      OPEN_SANDBOX_URL: server.origin,
      OPEN_SANDBOX_API_KEY: "os-key",
      SKILLRUN_CONVERSATIONS_ROOT: `${root}/conversations`,
    },
    count: () => Promise.resolve(server.sandboxes.size),
    uploads: () =>
      server.requests.filter((r) => r.path.includes("upload")).length,
    [Symbol.asyncDispose]: () => server.close(),
  };
}

function aio(root: string): Promise<Sandboxes> {
  const server = startAioServer({ token: "aio-token", home: root });
  return Promise.resolve({
    env: {
      AIO_SANDBOX_URL: server.baseUrl,
      AIO_SANDBOX_TOKEN: "aio-token",
      SKILLRUN_CONVERSATIONS_ROOT: `${root}/conversations`,
    },
    count: async () => {
      let folders = 0;
      try {
        for await (const entry of Deno.readDir(`${root}/conversations`)) {
          // Beside each folder, the runtime's marker file (`.skillrun-<id>.id`).
          if (entry.isDirectory) folders++;
        }
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      }
      return folders;
    },
    uploads: () =>
      server.requests.filter((r) => r.path.includes("upload")).length,
    [Symbol.asyncDispose]: async () => await server[Symbol.asyncDispose](),
  });
}

for (
  const [kind, start] of [
    ["OpenSandbox", openSandbox],
    ["AIO", aio],
  ] as const
) {
  Deno.test({
    name:
      `the edge function as three instances behind a round-robin proxy, sessions in PostgreSQL, on ${kind}: one sandbox, skills uploaded once, killed instance, DELETE through another`,
    ignore: !pg,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: () => replicas(start),
  });
}

async function replicas(
  start: (root: string) => Promise<Sandboxes>,
): Promise<void> {
  {
    const root = await Deno.realPath(await Deno.makeTempDir());
    await using server = await start(root);
    const env = {
      ...server.env,
      MCP_TOKEN: TOKEN,
      DATABASE_URL: pg!.poolerUrl ?? pg!.url,
    };
    const instances: (Instance | undefined)[] = [];
    for (let i = 0; i < 3; i++) instances[i] = await startInstance(env);
    let next = 0;
    const proxy = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      async (request) => {
        const live = instances.flatMap((r, i) => (r ? [i] : []));
        const i = live[next++ % live.length]!;
        const url = new URL(request.url);
        url.host = `127.0.0.1:${instances[i]!.port}`;
        const body = request.body ? await request.arrayBuffer() : undefined;
        return await fetch(url, {
          method: request.method,
          headers: request.headers,
          ...(body ? { body } : {}),
        }).catch(() => new Response("unreachable", { status: 502 }));
      },
    );
    const client = new Client({ name: "edge-replicas", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(
      new URL(`http://127.0.0.1:${proxy.addr.port}/mcp`),
      { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } },
    );
    const call = async (name: string, args: Record<string, unknown>) => {
      const result = await client.callTool({ name, arguments: args });
      const text = (result.content as { text: string }[]).map((c) => c.text)
        .join("");
      assertFalse(result.isError, `${name}: ${text}`);
      return text;
    };
    const uploads = () => server.uploads();
    try {
      await client.connect(transport);
      const loaded = await call("skill", { name: "word-count" });
      const base = /Base directory: (.+)/.exec(loaded)?.[1]?.trim();
      assert(base, loaded);
      const uploaded = uploads();
      assert(uploaded > 0);
      await call("write", {
        file_path: "notes.txt",
        content: "edge beta beta\nalpha beta\n",
      });
      // An instance dies between two calls; the others go on.
      instances[0]!.child.kill("SIGKILL");
      await instances[0]!.child.status;
      const port = instances[0]!.port;
      instances[0] = undefined;
      const counted = await call("bash", {
        command: `bash ${base}/scripts/count.sh notes.txt`,
      });
      assertStringIncludes(counted, "words: 5");
      instances[0] = await startInstance(env, port);
      for (let i = 0; i < 3; i++) {
        assertStringIncludes(
          await call("read", { file_path: "notes.txt" }),
          "edge beta beta",
        );
        assertStringIncludes(
          await call("skill", { name: "word-count" }),
          base,
        );
      }
      // One sandbox for the session, whichever instance served it, and the
      // skill was not uploaded again by the instances that resumed it.
      assertEquals(await server.count(), 1);
      assertEquals(uploads(), uploaded);
      await transport.terminateSession();
      assertEquals(await server.count(), 0);
      for (const instance of instances) {
        assertFalse(instance!.stderr().includes("os-key"));
        assertFalse(instance!.stderr().includes("aio-token"));
      }
    } finally {
      // The instances first: a client's GET stream through the proxy to an
      // instance that still holds the session would keep the proxy open.
      for (const instance of instances) {
        if (!instance) continue;
        instance.child.kill("SIGTERM");
        await instance.child.status;
      }
      await client.close().catch(() => {});
      await proxy.shutdown();
      await Deno.remove(root, { recursive: true });
    }
  }
}

Deno.test({
  name: "edge replica tests: the PostgreSQL cluster stops",
  ignore: !pg,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () => pg!.stop(),
});
