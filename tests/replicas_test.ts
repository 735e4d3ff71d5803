// Issue 27's multi-instance suite: three instances (separate processes) of
// the edge function (`examples/edge/main.ts`, under exactly its documented
// flags) and of `cli.ts mcp --http --runtime <kind> --store <store>`, behind
// a round-robin proxy on loopback written here, one store shared (a Deno KV
// file the processes share, or a real PostgreSQL through pgbouncer in
// transaction mode), against the OpenSandbox test server (sandboxes counted
// through its list API) and the AIO test server (conversation folders),
// driven by the official MCP SDK client.
//
// Each scenario starts its instances once and runs the whole flow as steps:
// skill → write → read → background command → its output → kill, requests
// on different instances; one instance SIGKILLed and restarted between two
// calls; a 20-second call with the stream limit at 5 s, resumed through the
// proxy on another instance, while a cancellation goes through another
// instance, forged ids, another token and an unreachable store are tried;
// DELETE through another instance (the sandbox deleted once); every instance
// SIGKILLed mid-session, then two fresh instances with a short idle timeout
// sweeping at once delete the orphaned sandbox exactly once.
//
// The matrix {edge, cli} × {KV, PostgreSQL} × {OpenSandbox, AIO} is covered
// pairwise (each surface with both stores and both kinds: 4 scenarios, for
// CI time), two scenarios at a time; SKILLRUN_REPLICAS_FULL=1 runs all 8.
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
import {
  assert,
  assertEquals,
  assertFalse,
  assertNotEquals,
  assertStringIncludes,
} from "./helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { startOpenSandboxServer } from "./servers/opensandbox.ts";
import { startAioServer } from "./servers/aio.ts";
import { postgresOrSkip } from "./helpers/postgres.ts";
import { processAlive, waitFor } from "./helpers/remote.ts";

const REPO = hostPath.fromFileUrl(new URL("../", import.meta.url));
const TOKEN = "replicas-t0ken-2727";
const OTHER_TOKEN = "rotated-t0ken-7272";
const SECRETS = ["os-key-2727", "aio-token-2727", "db-pa55-77", TOKEN];

type Surface = "edge" | "cli";
type StoreKind = "KV" | "PostgreSQL";
type SandboxKind = "OpenSandbox" | "AIO";

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

// ---------------------------------------------------------------------------
// The sandbox test servers, as what the instances need and what is counted.

interface Sandboxes extends AsyncDisposable {
  /** The kind, as `--runtime` names it. */
  readonly runtime: "opensandbox" | "aio";
  /** The variables that name the service (edge and CLI alike). */
  readonly env: Record<string, string>;
  /** Sandboxes (OpenSandbox, by its list API) or conversation folders (AIO). */
  count(): Promise<number>;
  /** Records the sandboxes there are now as this session's (OpenSandbox). */
  mark(sessionId: string): void;
  /** Deletion requests of one session's sandbox (or folder) so far. */
  deletes(sessionId: string): number;
  /** Upload requests so far. */
  uploads(): number;
}

async function openSandboxServer(root: string): Promise<Sandboxes> {
  const server = await startOpenSandboxServer({
    apiKey: "os-key-2727",
    cwd: root,
    streamLingerMs: 20,
  });
  const headers = { "OPEN-SANDBOX-API-KEY": "os-key-2727" };
  return {
    runtime: "opensandbox",
    env: {
      OPEN_SANDBOX_URL: server.origin,
      OPEN_SANDBOX_API_KEY: "os-key-2727",
    },
    async count() {
      const answer = await fetch(`${server.url}/sandboxes?pageSize=100`, {
        headers,
      });
      const listed = await answer.json() as { items: unknown[] };
      return listed.items.length;
    },
    mark(sessionId) {
      for (const id of server.sandboxes.keys()) sandboxOf.set(id, sessionId);
    },
    deletes: (sessionId) =>
      server.requests.filter((r) => {
        const found = /\/v1\/sandboxes\/([^/?]+)$/.exec(r.path);
        return r.method === "DELETE" && found &&
          sandboxOf.get(found[1]!) === sessionId;
      }).length,
    uploads: () =>
      server.requests.filter((r) => r.path.includes("upload")).length,
    [Symbol.asyncDispose]: () => server.close(),
  };
}

/** OpenSandbox sandbox id → the session it was made for. */
const sandboxOf = new Map<string, string>();

/**
 * The AIO test server behind a counting pass-through proxy: a folder's
 * deletion is an `rm -rf` the runtime sends through the shell API.
 */
function aioServer(root: string): Promise<Sandboxes> {
  const server = startAioServer({ token: "aio-token-2727", home: root });
  const removed: string[] = [];
  const proxy = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const url = new URL(request.url);
      const target = new URL(server.baseUrl);
      url.protocol = target.protocol;
      url.host = target.host;
      const body = request.body ? await request.arrayBuffer() : undefined;
      if (body) {
        const sent = new TextDecoder().decode(body);
        if (sent.includes("rm -rf -- ")) removed.push(sent);
      }
      return await fetch(url, {
        method: request.method,
        headers: request.headers,
        ...(body ? { body } : {}),
      }).catch(() => new Response("unreachable", { status: 502 }));
    },
  );
  return Promise.resolve({
    runtime: "aio",
    env: {
      AIO_SANDBOX_URL: `http://127.0.0.1:${proxy.addr.port}`,
      AIO_SANDBOX_TOKEN: "aio-token-2727",
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
    mark() {},
    deletes: (sessionId) => {
      // `rm -rf -- <root>/conversations/<id> <marker>` (not a path below it).
      const folder = new RegExp(
        `rm -rf -- [^"]*conversations/${sessionId}(?:[ '"\\\\]|$)`,
      );
      return removed.filter((sent) => folder.test(sent)).length;
    },
    uploads: () =>
      server.requests.filter((r) => r.path.includes("upload")).length,
    [Symbol.asyncDispose]: async () => {
      await proxy.shutdown();
      await server[Symbol.asyncDispose]();
    },
  });
}

// ---------------------------------------------------------------------------
// The instances.

interface Instance {
  readonly child: Deno.ChildProcess;
  readonly port: number;
  readonly stderr: () => string;
}

interface Deployment {
  /** Starts one instance (port 0: a free one), with variables of its own. */
  start(extra?: Record<string, string>, port?: number): Promise<Instance>;
}

async function spawn(command: Deno.Command): Promise<Instance> {
  const child = command.spawn();
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
  const found = /^http:\/\/127\.0\.0\.1:(\d+)\//.exec(first);
  if (!found) {
    child.kill("SIGKILL");
    await child.status;
    throw new Error(`The instance did not start: ${first}${errors}`);
  }
  return { child, port: Number(found[1]), stderr: () => errors };
}

/** The edge function's variables, from the CLI's options (one table). */
const EDGE_VARIABLES: Record<string, string> = {
  idle: "SKILLRUN_IDLE_TIMEOUT_S",
  sweep: "SKILLRUN_SWEEP_INTERVAL_S",
  store: "DATABASE_URL",
  token: "MCP_TOKEN",
};
const CLI_OPTIONS: Record<string, string> = {
  idle: "--idle-timeout",
  sweep: "--sweep-interval",
};

function edgeDeployment(
  root: string,
  sandboxes: Sandboxes,
  store: { url?: string; location?: string },
): Deployment {
  return {
    start(extra = {}, port = 0) {
      const env: Record<string, string> = {
        NO_COLOR: "1",
        PORT: String(port),
        HOSTNAME: "127.0.0.1",
        MCP_TOKEN: TOKEN,
        ...sandboxes.env,
        SKILLRUN_CONVERSATIONS_ROOT: `${root}/conversations`,
        SKILLRUN_STREAM_LIMIT_S: "5",
        SKILLRUN_MAX_SESSIONS_PER_CLIENT: "100",
        ...(store.url ? { DATABASE_URL: store.url } : {}),
      };
      for (const [key, value] of Object.entries(extra)) {
        env[EDGE_VARIABLES[key] ?? key] = value;
      }
      return spawn(
        new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "--allow-net",
            "--allow-env",
            "--allow-read=examples/edge/skills",
            // Locally, a KV file that the processes of one origin share.
            ...(store.location
              ? ["--unstable-kv", `--location=${store.location}`]
              : []),
            "examples/edge/main.ts",
          ],
          cwd: REPO,
          clearEnv: true,
          env,
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
        }),
      );
    },
  };
}

/** `cli.ts mcp --http`: on a sandbox, or (none given) the local runtime. */
function cliDeployment(
  root: string,
  sandboxes: Sandboxes | undefined,
  store: string,
): Deployment {
  return {
    start(extra = {}, port = 0) {
      const options: string[] = [];
      const env: Record<string, string> = {
        ...Deno.env.toObject(),
        NO_COLOR: "1",
        SKILLRUN_MCP_TOKEN: TOKEN,
        SKILLRUN_STORE: store,
        ...sandboxes?.env,
      };
      for (const [key, value] of Object.entries(extra)) {
        if (key === "store") env.SKILLRUN_STORE = value;
        else if (key === "token") env.SKILLRUN_MCP_TOKEN = value;
        else options.push(CLI_OPTIONS[key]!, value);
      }
      return spawn(
        new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "--quiet",
            "--no-prompt",
            "--unstable-kv",
            `--allow-read=${REPO},${root}`,
            `--allow-write=${root}`,
            "--allow-env",
            "--allow-net=127.0.0.1",
            // The local runtime runs bash here.
            ...(sandboxes ? [] : ["--allow-run"]),
            "cli.ts",
            "mcp",
            "--skills",
            "examples/edge/skills",
            ...(sandboxes ? ["--runtime", sandboxes.runtime] : []),
            "--root",
            `${root}/conversations`,
            "--http",
            `127.0.0.1:${port}`,
            "--max-sessions-per-client",
            "100",
            "--stream-limit",
            "5",
            ...options,
          ],
          cwd: REPO,
          env,
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
        }),
      );
    },
  };
}

async function stop(instance: Instance | undefined, signal: Deno.Signal) {
  if (!instance) return;
  try {
    instance.child.kill(signal);
  } catch {
    // gone already
  }
  await instance.child.status;
}

// ---------------------------------------------------------------------------
// The round-robin proxy.

interface Proxy {
  readonly url: string;
  /** The instance each JSON-RPC request id (and notification) went to. */
  readonly calls: Map<string, number>;
  /** The instances the resumptions (GET with Last-Event-ID) went to. */
  readonly resumed: number[];
  /** Where the long call's POST went. */
  longCallOn: number | undefined;
  shutdown(): Promise<void>;
}

function roundRobin(instances: (Instance | undefined)[]): Proxy {
  let next = 0;
  const calls = new Map<string, number>();
  const resumed: number[] = [];
  const state: Proxy = {
    url: "",
    calls,
    resumed,
    longCallOn: undefined,
    shutdown: () => server.shutdown(),
  };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const live = instances.flatMap((r, i) => (r ? [i] : []));
      if (live.length === 0) {
        await request.body?.cancel();
        return new Response("no instance", { status: 502 });
      }
      let i: number;
      const body = request.body ? await request.arrayBuffer() : undefined;
      if (request.headers.get("last-event-id")) {
        // A resumption goes to an instance other than the long call's.
        const others = live.filter((n) => n !== state.longCallOn);
        i = others[resumed.length % others.length]!;
        resumed.push(i);
      } else {
        i = live[next++ % live.length]!;
      }
      if (body && body.byteLength < 100_000) {
        try {
          const sent = new TextDecoder().decode(body);
          const message = JSON.parse(sent) as {
            id?: unknown;
            method?: string;
            params?: { requestId?: unknown };
          };
          if (message.method === "notifications/cancelled") {
            calls.set(`cancel:${message.params?.requestId}`, i);
          } else if (message.id !== undefined) {
            calls.set(String(message.id), i);
          }
          if (sent.includes("finished-late")) state.longCallOn = i;
        } catch {
          // not JSON
        }
      }
      const url = new URL(request.url);
      url.host = `127.0.0.1:${instances[i]!.port}`;
      try {
        return await fetch(url, {
          method: request.method,
          headers: request.headers,
          signal: request.signal,
          ...(body ? { body } : {}),
        });
      } catch {
        return new Response("instance unreachable", { status: 502 });
      }
    },
  );
  Object.assign(state, { url: `http://127.0.0.1:${server.addr.port}/mcp` });
  return state;
}

function connectClient(url: string, token = TOKEN) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    reconnectionOptions: {
      initialReconnectionDelay: 200,
      maxReconnectionDelay: 1000,
      reconnectionDelayGrowFactor: 1.5,
      maxRetries: 30,
    },
  });
  const client = new Client({ name: "replicas", version: "1.0.0" });
  return { client, transport };
}

/** A raw MCP POST (for what the SDK client would not send). */
async function rawPost(
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<{ status: number; text: string }> {
  const answer = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      ...headers,
    },
    body: JSON.stringify(body),
  });
  return { status: answer.status, text: await answer.text() };
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "raw", version: "1" },
  },
};

// ---------------------------------------------------------------------------
// The scenario.

const pg = await postgresOrSkip("the multi-instance suite on PostgreSQL");
const originStorage = (JSON.parse(
  new TextDecoder().decode(
    (await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json"],
      stdout: "piped",
      stderr: "null",
    }).output()).stdout,
  ),
) as { originStorage: string }).originStorage;

async function sha256Hex(value: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(value),
  );
  return Array.from(
    new Uint8Array(digest),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}

const ALL: readonly [Surface, StoreKind, SandboxKind][] = [
  ["edge", "PostgreSQL", "OpenSandbox"],
  ["edge", "KV", "AIO"],
  ["cli", "KV", "OpenSandbox"],
  ["cli", "PostgreSQL", "AIO"],
  ["edge", "KV", "OpenSandbox"],
  ["edge", "PostgreSQL", "AIO"],
  ["cli", "PostgreSQL", "OpenSandbox"],
  ["cli", "KV", "AIO"],
];
const FULL = /^(1|true|yes)$/i.test(
  Deno.env.get("SKILLRUN_REPLICAS_FULL") ?? "",
);

const name = ([surface, storeKind, sandboxKind]: readonly [
  Surface,
  StoreKind,
  SandboxKind,
]) =>
  `three ${
    surface === "edge" ? "edge function" : "cli.ts mcp --http"
  } instances behind a round-robin proxy, ${storeKind} store, ${sandboxKind}: the whole flow across instances`;

// Two scenarios at a time (each mostly waits for its 20-second call): two
// lanes, each running its scenarios one after the other, as steps.
Deno.test({
  name: `the multi-instance matrix (${
    FULL ? "all 8 combinations" : "pairwise: 4 combinations"
  }, two at a time)`,
  sanitizeResources: false,
  sanitizeOps: false,
  sanitizeExit: false,
  async fn(t) {
    const chosen = (FULL ? ALL : ALL.slice(0, 4)).filter(([, store]) =>
      store !== "PostgreSQL" || pg
    );
    const lanes = [0, 1].map((lane) => chosen.filter((_, i) => i % 2 === lane));
    const results = await Promise.allSettled(lanes.map(async (lane) => {
      let ok = true;
      for (const combination of lane) {
        ok = await t.step({
          name: name(combination),
          sanitizeResources: false,
          sanitizeOps: false,
          sanitizeExit: false,
          fn: (step) => scenario(step, ...combination),
        }) && ok;
      }
      return ok;
    }));
    assert(
      results.every((r) => r.status === "fulfilled" && r.value),
      "a scenario failed (see its steps)",
    );
  },
});

async function scenario(
  t: Deno.TestContext,
  surface: Surface,
  storeKind: StoreKind,
  sandboxKind: SandboxKind,
): Promise<void> {
  const started = Date.now();
  // Without sanitizers: the other lane's steps run meanwhile.
  const step = (name: string, fn: () => Promise<void>) =>
    t.step({
      name,
      fn,
      sanitizeResources: false,
      sanitizeOps: false,
      sanitizeExit: false,
    });
  const root = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-replicas-" }),
  );
  await using sandboxes = sandboxKind === "OpenSandbox"
    ? await openSandboxServer(root)
    : await aioServer(root);
  const location = storeKind === "KV" && surface === "edge"
    ? `http://replicas-${crypto.randomUUID().slice(0, 8)}.test`
    : undefined;
  const storeUrl = storeKind === "PostgreSQL"
    ? pg!.poolerUrl ?? pg!.url
    : `${root}/store.kv`;
  const deployment = surface === "edge"
    ? edgeDeployment(
      root,
      sandboxes,
      storeKind === "PostgreSQL" ? { url: storeUrl } : { location: location! },
    )
    : cliDeployment(root, sandboxes, storeUrl);
  const instances: (Instance | undefined)[] = await Promise.all(
    [0, 1, 2].map(() => deployment.start()),
  );
  const extras: Instance[] = [];
  const proxy = roundRobin(instances);
  const { client, transport } = connectClient(proxy.url);
  const call = async (name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args });
    assertFalse(result.isError, `${name}: ${text(result)}`);
    return text(result);
  };
  const workspaceOf = (id: string) => `${root}/conversations/${id}`;
  try {
    await client.connect(transport);
    const id = transport.sessionId!;
    const workspace = workspaceOf(id);
    let base = "";
    let uploaded = 0;

    // The long call streams first (its stream closed every 5 s, resumed
    // through the proxy on other instances) while the other steps run
    // beside it, racing it to make the conversation's sandbox.
    // Its output comes as progress notifications, the later ones after its
    // first stream was closed: they reach the client through the resumed
    // streams, on other instances.
    const ticks: string[] = [];
    const long = client.callTool(
      {
        name: "bash",
        arguments: {
          command:
            "echo tick-1; sleep 8; echo tick-2; sleep 7; echo tick-3; sleep 5; echo finished-late",
        },
      },
      undefined,
      {
        timeout: 60_000,
        onprogress: (progress) => ticks.push(progress.message ?? ""),
      },
    );
    const longStarted = Date.now();
    assert(await waitFor(() => proxy.longCallOn !== undefined));

    await step(
      "skill → write → read, each request on another instance",
      async () => {
        const loaded = await call("skill", { name: "word-count" });
        base = /Base directory: (.+)/.exec(loaded)?.[1]?.trim() ?? "";
        assert(base.startsWith(`${workspace}/skills/word-count-`), loaded);
        uploaded = sandboxes.uploads();
        assert(uploaded > 0);
        await call("write", {
          file_path: "notes.txt",
          content: "edge beta beta\nalpha beta\n",
        });
        assertStringIncludes(
          await call("read", { file_path: "notes.txt" }),
          "edge beta beta",
        );
      },
    );

    await step(
      "background command → its output → kill, on three instances",
      async () => {
        const before = proxy.calls.size;
        const started = await call("bash", {
          command: "echo tick-1; sleep 300 & echo $! > bg.pid; wait",
          run_in_background: true,
        });
        const bg = /id "([^"]+)"/.exec(started)?.[1];
        assert(bg, started);
        let out = "";
        assert(
          await waitFor(async () => {
            out += await call("bash_output", { id: bg });
            return out.includes("tick-1");
          }, 15_000),
          out,
        );
        const pid = Number(
          (await Deno.readTextFile(`${workspace}/bg.pid`)).trim(),
        );
        assert(processAlive(pid), `${pid}`);
        assertStringIncludes(await call("kill_bash", { id: bg }), bg);
        assert(await waitFor(() => !processAlive(pid), 5_000));
        assertStringIncludes(await call("bash_output", { id: bg }), "exit");
        // Consecutive calls, consecutive instances of the round robin.
        const served = [...proxy.calls.values()].slice(before);
        assertEquals(new Set(served).size, 3, `${served}`);
      },
    );

    await step(
      "one instance SIGKILLed between two calls, then restarted",
      async () => {
        // Not the one running the long call (which would die with it).
        const victim = (proxy.longCallOn! + 1) % 3;
        const killed = instances[victim]!;
        await stop(killed, "SIGKILL");
        instances[victim] = undefined;
        assertStringIncludes(
          await call("bash", {
            command: `bash ${base}/scripts/count.sh notes.txt`,
          }),
          "words: 5",
        );
        instances[victim] = await deployment.start({}, killed.port);
        for (let i = 0; i < 3; i++) {
          assertStringIncludes(
            await call("read", { file_path: "notes.txt" }),
            "edge beta beta",
          );
        }
        assertStringIncludes(await call("skill", { name: "word-count" }), base);
        // One sandbox, and the skill not uploaded again by the instances that
        // resumed the session.
        assertEquals(await sandboxes.count(), 1);
        sandboxes.mark(id);
        assertEquals(sandboxes.uploads(), uploaded);
      },
    );

    await step(
      "a cancellation through another instance stops the command in the sandbox within 2 s",
      async () => {
        const controller = new AbortController();
        const pending = client.callTool(
          {
            name: "bash",
            arguments: {
              command: "sleep 30 & echo $! > cancel.pid; wait; touch late",
            },
          },
          undefined,
          { signal: controller.signal, timeout: 60_000 },
        ).catch((error: Error) => error);
        assert(await waitFor(() => exists(`${workspace}/cancel.pid`), 15_000));
        let pid = NaN;
        assert(
          await waitFor(async () => {
            pid = Number(
              (await Deno.readTextFile(`${workspace}/cancel.pid`)).trim(),
            );
            return pid > 0;
          }),
        );
        assert(processAlive(pid));
        const callId = [...proxy.calls.keys()].filter((k) => /^\d+$/.test(k))
          .at(-1)!;
        controller.abort("enough");
        const cancelled = Date.now();
        assert(await pending instanceof Error);
        assert(
          await waitFor(() => !processAlive(pid), 2_000),
          `still running ${Date.now() - cancelled} ms after the cancellation`,
        );
        // The cancellation went through another instance than the call.
        assert(await waitFor(() => proxy.calls.has(`cancel:${callId}`)));
        assertNotEquals(
          proxy.calls.get(`cancel:${callId}`),
          proxy.calls.get(callId),
        );
        assertFalse(await exists(`${workspace}/late`));
      },
    );

    await step(
      "a forged session id gets 404 and nothing is created",
      async () => {
        const sandboxesBefore = await sandboxes.count();
        for (
          const forged of [
            "0".repeat(40),
            id.slice(0, 39) + (id.endsWith("0") ? "1" : "0"),
            "../../etc",
            "x".repeat(5000),
          ]
        ) {
          const answer = await rawPost(proxy.url, {
            authorization: `Bearer ${TOKEN}`,
            "mcp-session-id": forged,
          }, { jsonrpc: "2.0", id: 1, method: "tools/list" });
          assertEquals(answer.status, 404, answer.text);
        }
        assertEquals(await sandboxes.count(), sandboxesBefore);
        const folders = await Array.fromAsync(
          Deno.readDir(`${root}/conversations`),
        );
        assertEquals(folders.filter((f) => f.isDirectory).map((f) => f.name), [
          id,
        ]);
      },
    );

    await step(
      "the right session id with another token: 404 (or 401 on a one-token instance), nothing revealed",
      async () => {
        // An instance of a rotated token on the same store.
        const rotated = await deployment.start({ token: OTHER_TOKEN });
        extras.push(rotated);
        const other = await rawPost(`http://127.0.0.1:${rotated.port}/mcp`, {
          authorization: `Bearer ${OTHER_TOKEN}`,
          "mcp-session-id": id,
        }, { jsonrpc: "2.0", id: 1, method: "tools/list" });
        assert([403, 404].includes(other.status), `${other.status}`);
        assertFalse(other.text.includes(id));
        assertFalse(other.text.includes("word-count"));
        // And the usual instances with the other token: refused before anything.
        const refused = await rawPost(proxy.url, {
          authorization: `Bearer ${OTHER_TOKEN}`,
          "mcp-session-id": id,
        }, { jsonrpc: "2.0", id: 1, method: "tools/list" });
        assertEquals(refused.status, 401);
        assertFalse(refused.text.includes(id));
        await stop(rotated, "SIGTERM");
      },
    );

    await step(
      "an unreachable store: a clear 503, no crash, nothing created",
      async () => {
        const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
        const closed = (listener.addr as Deno.NetAddr).port;
        listener.close();
        const sandboxesBefore = await sandboxes.count();
        const down = await deployment.start({
          store: `postgres://app:db-pa55-77@127.0.0.1:${closed}/db`,
        });
        extras.push(down);
        const answer = await rawPost(
          `http://127.0.0.1:${down.port}/mcp`,
          { authorization: `Bearer ${TOKEN}` },
          INITIALIZE,
        );
        assertEquals(answer.status, 503, answer.text);
        const message = (JSON.parse(answer.text) as {
          error: { message: string };
        }).error.message;
        assertStringIncludes(message, "PostgreSQL store");
        assertFalse(message.includes("\n"));
        assertFalse(message.includes("db-pa55-77"));
        // Still serving (no crash): a second request gets the same answer.
        const again = await rawPost(
          `http://127.0.0.1:${down.port}/mcp`,
          { authorization: `Bearer ${TOKEN}` },
          INITIALIZE,
        );
        assertEquals(again.status, 503);
        assertEquals(await sandboxes.count(), sandboxesBefore);
        await stop(down, "SIGTERM");
        assertFalse(down.stderr().includes("db-pa55-77"), down.stderr());
      },
    );

    await step(
      "a 20-second call, stream limit 5 s: resumed through the proxy on other instances, its progress and its result arrive",
      async () => {
        const result = await long;
        assertFalse(result.isError, text(result as Record<string, unknown>));
        assertStringIncludes(
          text(result as Record<string, unknown>),
          "finished-late",
        );
        assert(Date.now() - longStarted >= 19_000);
        // The POST stream was closed at 5 s and resumed (GET with
        // Last-Event-ID) on instances other than the one running the call.
        assert(proxy.longCallOn !== undefined);
        assert(proxy.resumed.length >= 2, `${proxy.resumed}`);
        assertFalse(proxy.resumed.includes(proxy.longCallOn));
        // Output printed at 8 s and 15 s, after the first stream's close at
        // 5 s, came as progress through the resumed streams.
        const said = ticks.join("");
        for (const tick of ["tick-1", "tick-2", "tick-3"]) {
          assertStringIncludes(said, tick);
        }
      },
    );

    await step(
      "DELETE through another instance deletes the sandbox once; every instance then says 404",
      async () => {
        await transport.terminateSession();
        assertEquals(await sandboxes.count(), 0);
        assertEquals(sandboxes.deletes(id), 1);
        for (const instance of instances) {
          const answer = await fetch(`http://127.0.0.1:${instance!.port}/mcp`, {
            method: "DELETE",
            headers: { authorization: `Bearer ${TOKEN}`, "mcp-session-id": id },
          });
          await answer.body?.cancel();
          assertEquals(answer.status, 404);
        }
      },
    );

    await step(
      "every instance SIGKILLed mid-session; two fresh instances with a short idle timeout, sweeping at once, delete the orphan exactly once",
      async () => {
        const second = connectClient(proxy.url);
        await second.client.connect(second.transport);
        const orphan = second.transport.sessionId!;
        const ran = await second.client.callTool({
          name: "bash",
          arguments: { command: "echo orphaned > o.txt" },
        });
        assertFalse(ran.isError, text(ran));
        assertEquals(await sandboxes.count(), 1);
        sandboxes.mark(orphan);
        await second.client.close();
        for (let i = 0; i < 3; i++) {
          await stop(instances[i], "SIGKILL");
          instances[i] = undefined;
        }
        // Nothing deleted by the instances dying: the sandbox is orphaned.
        assertEquals(await sandboxes.count(), 1);
        const fresh = await Promise.all(
          [0, 1].map(() => deployment.start({ idle: "1", sweep: "1" })),
        );
        extras.push(...fresh);
        // Both sweep on their timers every second, and on requests (sent to
        // both at once here).
        await Promise.all(
          fresh.map((f) =>
            rawPost(`http://127.0.0.1:${f.port}/mcp`, {
              authorization: `Bearer ${TOKEN}`,
              "mcp-session-id": "0".repeat(40),
            }, { jsonrpc: "2.0", id: 1, method: "tools/list" })
          ),
        );
        assert(
          await waitFor(async () => (await sandboxes.count()) === 0, 15_000),
          "the orphaned sandbox was not swept",
        );
        // One more sweep interval: still one deletion.
        await new Promise((resolve) => setTimeout(resolve, 1_200));
        assertEquals(sandboxes.deletes(orphan), 1);
        const gone = await rawPost(`http://127.0.0.1:${fresh[0]!.port}/mcp`, {
          authorization: `Bearer ${TOKEN}`,
          "mcp-session-id": orphan,
        }, { jsonrpc: "2.0", id: 1, method: "tools/list" });
        assertEquals(gone.status, 404);
        for (const f of fresh) await stop(f, "SIGTERM");
      },
    );

    for (const instance of [...instances, ...extras]) {
      if (!instance) continue;
      for (const secret of SECRETS) {
        assertFalse(instance.stderr().includes(secret), instance.stderr());
      }
    }
  } finally {
    // The instances first: a client's GET stream through the proxy to an
    // instance that still holds the session would keep the proxy open.
    for (const instance of [...instances, ...extras]) {
      await stop(instance, "SIGTERM");
    }
    await client.close().catch(() => {});
    await proxy.shutdown();
    await Deno.remove(root, { recursive: true }).catch(() => {});
    if (location) {
      await Deno.remove(`${originStorage}/${await sha256Hex(location)}`, {
        recursive: true,
      }).catch(() => {});
    }
    console.error(
      `${surface}/${storeKind}/${sandboxKind}: ${
        ((Date.now() - started) / 1000).toFixed(1)
      } s`,
    );
  }
}

// `cli.ts mcp --http --store` with the local runtime: the session's
// workspace is a folder on this machine that every replica reaches.
for (const storeKind of ["KV", "PostgreSQL"] as const) {
  Deno.test({
    name:
      `three cli.ts mcp --http replicas on the local runtime, ${storeKind} store: one session served by all, one killed and restarted, DELETE through another`,
    ignore: storeKind === "PostgreSQL" && !pg,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const root = await Deno.realPath(
        await Deno.makeTempDir({ prefix: "skillrun-replicas-local-" }),
      );
      const deployment = cliDeployment(
        root,
        undefined,
        storeKind === "KV" ? `${root}/store.kv` : pg!.poolerUrl ?? pg!.url,
      );
      const instances: (Instance | undefined)[] = await Promise.all(
        [0, 1, 2].map(() => deployment.start()),
      );
      const proxy = roundRobin(instances);
      const { client, transport } = connectClient(proxy.url);
      try {
        await client.connect(transport);
        const id = transport.sessionId!;
        const workspace = `${root}/conversations/${id}`;
        const call = async (name: string, args: Record<string, unknown>) => {
          const result = await client.callTool({ name, arguments: args });
          assertFalse(result.isError, text(result));
          return text(result);
        };
        await call("skill", { name: "word-count" });
        await call("write", { file_path: "notes.txt", content: "kept" });
        const killed = instances[1]!;
        await stop(killed, "SIGKILL");
        instances[1] = undefined;
        assertStringIncludes(
          await call("read", { file_path: "notes.txt" }),
          "kept",
        );
        instances[1] = await deployment.start({}, killed.port);
        const served = new Set<number>();
        for (let i = 0; i < 4; i++) {
          assertStringIncludes(
            await call("bash", { command: "cat notes.txt && pwd" }),
            workspace,
          );
          served.add([...proxy.calls.values()].at(-1)!);
        }
        assertEquals(served.size, 3);
        assert(await exists(workspace));
        await transport.terminateSession();
        assertFalse(await exists(workspace));
        for (const instance of instances) {
          const answer = await fetch(
            `http://127.0.0.1:${instance!.port}/mcp`,
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
        for (const instance of instances) await stop(instance, "SIGTERM");
        await client.close().catch(() => {});
        await proxy.shutdown();
        await Deno.remove(root, { recursive: true }).catch(() => {});
      }
    },
  });
}

Deno.test({
  name: "multi-instance suite: the PostgreSQL cluster stops",
  ignore: !pg,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () => pg!.stop(),
});
