/**
 * The checklist every sandbox runtime with a lifecycle (OpenSandbox, E2B,
 * Vercel) passes on its test server, as one parameterised block: nothing is
 * sent before real use, and uploads are byte-identical. Each kind's own
 * behaviour (pausing, snapshots, faults) stays in its `runtime_test.ts`.
 *
 * @module
 */
import {
  assert,
  assertEquals,
  assertFalse,
  assertGreater,
  assertLess,
  assertRejects,
  assertStringIncludes,
} from "./helpers/assert.ts";
import { RemoteHttpError } from "../runtimes/remote/errors.ts";
import { OpenSandboxSkillRuntime } from "../runtimes/opensandbox/mod.ts";
import { E2BSkillRuntime } from "../runtimes/e2b/mod.ts";
import { VercelSandboxSkillRuntime } from "../runtimes/vercel/mod.ts";
import { WorkspaceEscapeError } from "../runtimes/errors.ts";
import type { SkillRuntime } from "../runtimes/types.ts";
import {
  countingFetch,
  makeSkill,
  processAlive,
  type RemoteTestServer,
  waitFor,
} from "./helpers/remote.ts";
import {
  KvConversationStore,
  MemoryConversationStore,
} from "../runtimes/stores/conversation_store.ts";
import type { OpenSandboxServer } from "./servers/opensandbox.ts";
import type { E2BServer } from "./servers/e2b.ts";
import type { VercelServer } from "./servers/vercel.ts";
import { buildSkillTools } from "../tools/builder.ts";
import { startTestServer } from "./helpers/opensandbox.ts";
import { startE2BTestServer } from "./helpers/e2b.ts";
import { startVercelTestServer } from "./helpers/vercel.ts";
import { startDaytonaTestServer } from "./helpers/daytona.ts";
import { DaytonaSkillRuntime } from "../runtimes/daytona/mod.ts";
import type { DaytonaServer } from "./servers/daytona.ts";
import { startDenoSandboxTestServer } from "./helpers/deno_sandbox.ts";
import { DenoSandboxSkillRuntime } from "../runtimes/deno_sandbox/mod.ts";
import type { DenoSandboxServer } from "./servers/deno_sandbox.ts";
import { skillCorpus } from "./helpers/skill_fixture.ts";

// The real skills when ../shared is beside the clone, else generated ones
// (fonts, a gzip archive, nested folders).
const corpus = await skillCorpus();

/** The options every kind's test runtime takes here. */
interface CommonOptions {
  readonly fetch: typeof fetch;
  readonly conversationId: string;
  readonly conversationsRoot: string;
  readonly store: MemoryConversationStore | KvConversationStore;
}

/** One kind of runtime on its test server. */
interface Kind {
  readonly name: string;
  start(): Promise<
    RemoteTestServer<unknown, CommonOptions, SkillRuntime & SandboxId>
  >;
  /** The path of the one request an upload makes, when it makes one. */
  readonly uploadPath?: string;
  /** The request that creates a sandbox (method and path). */
  readonly create: string;
  /** How many sandboxes the server was asked to create. */
  creates(server: unknown): number;
  /** The sandboxes the server holds. */
  sandboxes(server: unknown): ReadonlyMap<string, unknown>;
  /** Further options of a conversation runtime. */
  readonly conversation?: Record<string, unknown>;
  /** Whether a request is the one that stops a command, when it has one. */
  stops?(path: string): boolean;
  /** A runtime of a server at `url`, with `secret` as its credential. */
  offline(url: string, secret: string): SkillRuntime;
}

/** The sandbox a remote runtime uses, once it has one. */
interface SandboxId {
  readonly sandboxId?: string | undefined;
}

const KINDS: readonly Kind[] = [
  {
    name: "OpenSandbox",
    start: startTestServer,
    create: "POST /v1/sandboxes",
    creates: (s) => (s as OpenSandboxServer).count("POST", "/v1/sandboxes"),
    offline: (baseUrl, apiKey) =>
      new OpenSandboxSkillRuntime({ baseUrl, apiKey, requestTimeoutMs: 2_000 }),
    sandboxes: (s) => (s as OpenSandboxServer).sandboxes,
  },
  {
    name: "E2B",
    start: startE2BTestServer,
    create: "POST /sandboxes",
    creates: (s) =>
      (s as E2BServer).calls.filter((c) => c === "POST /sandboxes").length,
    sandboxes: (s) => (s as E2BServer).sandboxes,
    conversation: { pauseOnClose: false },
    stops: (path) => path === "/process.Process/SendSignal",
    offline: (baseUrl, apiKey) =>
      new E2BSkillRuntime({ baseUrl, apiKey, requestTimeoutMs: 2_000 }),
  },
  {
    name: "Vercel",
    start: startVercelTestServer,
    uploadPath: "/fs/write",
    create: "POST /v3/sandboxes",
    creates: (s) =>
      (s as VercelServer).calls.filter((c) => c === "POST /v3/sandboxes")
        .length,
    sandboxes: (s) => (s as VercelServer).sandboxes,
    stops: (path) => path.endsWith("/kill"),
    offline: (baseUrl, apiKey) =>
      new VercelSandboxSkillRuntime({
        baseUrl,
        apiKey,
        requestTimeoutMs: 2_000,
      }),
  },
  {
    name: "Daytona",
    start: startDaytonaTestServer,
    uploadPath: "/files/bulk-upload",
    create: "POST /api/sandbox",
    creates: (s) =>
      (s as DaytonaServer).calls.filter((c) => c === "POST /api/sandbox")
        .length,
    sandboxes: (s) => (s as DaytonaServer).sandboxes,
    stops: (path) => /\/process\/session\/[^/]+$/.test(path),
    offline: (baseUrl, apiKey) =>
      new DaytonaSkillRuntime({ baseUrl, apiKey, requestTimeoutMs: 2_000 }),
  },
  {
    name: "Deno Sandbox",
    start: startDenoSandboxTestServer,
    // The sandbox is made over a WebSocket (not `fetch`); the console's
    // list that finds the new sandbox's id is the creation's fetch.
    create: "GET /api/v2/sandboxes",
    creates: (s) =>
      (s as DenoSandboxServer).calls.filter((c) =>
        c === "GET /api/v3/sandboxes/create"
      ).length,
    sandboxes: (s) =>
      new Map(
        [...(s as DenoSandboxServer).sandboxes].filter(([, box]) =>
          box.status === "running"
        ),
      ),
    offline: (baseUrl, token) =>
      new DenoSandboxSkillRuntime({
        baseUrl,
        consoleUrl: baseUrl,
        token,
        requestTimeoutMs: 2_000,
      }),
  },
];

for (const kind of KINDS) {
  Deno.test(`${kind.name}: no request is made before real use, nor for a refused path`, async () => {
    await using server = await kind.start();
    const counted = countingFetch();
    const skill = await makeSkill(`${server.dir}/src`, "idle");
    const runtime = server.runtime({
      fetch: counted.fetch,
      conversationId: "idle-1",
      conversationsRoot: `${server.dir}/conversations`,
      store: new MemoryConversationStore(),
    });
    await using tools = await buildSkillTools({ skills: [skill], runtime });
    assert(tools.tools.length > 0);
    await assertRejects(
      () => runtime.fs.readText("/etc/passwd", { maxBytes: 100 }),
      WorkspaceEscapeError,
    );
    await assertRejects(
      () => runtime.execute({ command: "pwd", cwd: "../other" }),
      WorkspaceEscapeError,
    );
    await runtime.close();
    await runtime.close();
    assertEquals(counted.requests.length, 0);
  });

  Deno.test(`${kind.name}: uploads are binary-safe: the corpus fonts and a .tar.gz come back byte-identical`, async () => {
    await using server = await kind.start();
    const counted = countingFetch();
    const runtime = server.runtime({ fetch: counted.fetch });
    const canvas = `${corpus.skill("canvas-design")}/`;
    const [prepared] = await runtime.prepare({
      skills: [{
        skill: {
          name: corpus.name("canvas-design"),
          description: "Fonts",
          basePath: canvas.replace(/\/$/, ""),
          location: `${canvas}SKILL.md`,
          instructions: "",
          frontMatter: {},
          warnings: [],
        },
      }],
    });
    if (kind.uploadPath !== undefined) {
      const path = kind.uploadPath;
      assertEquals(
        counted.requests.filter((r) => r.path.endsWith(path)).length,
        1,
      );
    }
    let fonts = 0;
    for await (const entry of Deno.readDir(`${canvas}canvas-fonts`)) {
      if (!entry.name.endsWith(".ttf")) continue;
      fonts++;
      const remote = `${prepared!.basePath}/canvas-fonts/${entry.name}`;
      const original = await Deno.readFile(
        `${canvas}canvas-fonts/${entry.name}`,
      );
      assertEquals(await runtime.fs.readBytes(remote), original);
    }
    assertGreater(fonts, corpus.real ? 5 : 1);
    const tarball = corpus.real
      ? `${
        corpus.skill("web-artifacts-builder")
      }/scripts/shadcn-components.tar.gz`
      : `${corpus.skill("canvas-design")}/assets/bundle.tar.gz`;
    const deep = `${"deep/".repeat(40)}long-name.txt`;
    const skill = await makeSkill(`${server.dir}/src`, "archive", {
      "data/components.tar.gz": await Deno.readFile(tarball),
      [deep]: "long",
    });
    const [archive] = await runtime.prepare({ skills: [{ skill }] });
    const local = `${server.dir}/back/components.tar.gz`;
    const { bytes } = await runtime.fs.download(
      `${archive!.basePath}/data/components.tar.gz`,
      local,
    );
    assertEquals(await Deno.readFile(local), await Deno.readFile(tarball));
    assertEquals(bytes, (await Deno.stat(tarball)).size);
    assertEquals(
      await runtime.fs.readText(`${archive!.basePath}/${deep}`, {
        maxBytes: 100,
      }),
      "long",
    );
    const listed = await runtime.execute({
      command: "tar -tzf data/components.tar.gz | head -n 1",
      cwd: archive!.basePath,
    });
    assertEquals(listed.exitCode, 0);
  });

  Deno.test(`${kind.name}: two runtimes racing to start a conversation share one sandbox; the loser's is removed`, async () => {
    await using server = await kind.start();
    const kvPath = `${server.dir}/race.kv`;
    // Two KV connections on one file: as two processes would be.
    const stores = [
      await KvConversationStore.open(kvPath),
      await KvConversationStore.open(kvPath),
    ];
    // Each create is held until both runtimes have sent theirs, so that
    // both race whatever the machine's load (one could otherwise find the
    // other's sandbox already recorded and create none).
    let sent = 0;
    const both = Promise.withResolvers<void>();
    const held: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      if (
        `${request.method} ${new URL(request.url).pathname}` === kind.create
      ) {
        if (++sent === 2) both.resolve();
        await both.promise;
      }
      return await fetch(input, init);
    };
    try {
      const runtimes = stores.map((store) =>
        server.runtime({
          conversationId: "raced",
          conversationsRoot: `${server.dir}/conversations`,
          store,
          fetch: held,
          ...kind.conversation,
        })
      );
      await Promise.all(
        runtimes.map((runtime) => runtime.execute({ command: "true" })),
      );
      assertEquals(runtimes[0]!.sandboxId, runtimes[1]!.sandboxId);
      assertEquals(kind.creates(server.server), 2);
      const sandboxes = kind.sandboxes(server.server);
      assertEquals(sandboxes.size, 1);
      assert(sandboxes.has(runtimes[0]!.sandboxId!));
    } finally {
      for (const store of stores) store.close();
    }
  });

  Deno.test(`${kind.name}: execute() stops the command and everything it started at the timeout and when the caller aborts`, async () => {
    await using server = await kind.start();
    const counted = countingFetch();
    const runtime = server.runtime({ fetch: counted.fetch });
    const pidFile = `${server.dir}/pid`;
    const started = Date.now();
    const result = await runtime.execute({
      command: `sleep 30 & echo $! > '${pidFile}'; echo begun; wait`,
      // Long enough for a sandbox's first command to print under load (a
      // bare clone's run at load ~10 saw Daytona's start take over 500 ms).
      timeoutMs: 1_500,
    });
    assertLess(Date.now() - started, 10_000);
    assertEquals(
      [result.timedOut, result.aborted, result.exitCode, result.stdout],
      [true, false, -1, "begun\n"],
    );
    const pid = Number(await Deno.readTextFile(pidFile));
    assert(await waitFor(() => !processAlive(pid)), "sleep still runs");
    if (kind.stops) {
      assert(counted.requests.some((r) => kind.stops!(r.path)));
    }
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const aborted = await runtime.execute({
      command: `sleep 30 & echo $! > '${pidFile}'; wait`,
      signal: controller.signal,
    });
    assertEquals(
      [aborted.aborted, aborted.timedOut, aborted.exitCode],
      [true, false, -1],
    );
    const second = Number(await Deno.readTextFile(pidFile));
    assert(await waitFor(() => !processAlive(second)), "sleep still runs");
  });

  Deno.test(`${kind.name}: a \\r ends a line ("\\r\\n" once), the last one too, on both streams and in the streamed chunks`, async () => {
    await using server = await kind.start();
    const runtime = server.runtime();
    const chunks: string[] = [];
    const decoder = new TextDecoder();
    const result = await runtime.execute({
      command:
        "printf 'progress 50%%\\rprogress 100%%\\r'; printf 'x\\r\\ny\\r' >&2",
      onStdout: (chunk) => chunks.push(decoder.decode(chunk)),
    });
    assertEquals(
      [result.stdout, result.stderr, result.exitCode],
      ["progress 50%\nprogress 100%\n", "x\ny\n", 0],
    );
    assertEquals(chunks.join(""), result.stdout);
  });

  Deno.test(`${kind.name}: a server that cannot be reached is a network error naming the URL, without the credential`, async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    const secret = "secret-value-123456";
    await using runtime = kind.offline(`http://127.0.0.1:${port}`, secret);
    const error = await assertRejects(
      () => runtime.execute({ command: "true" }),
      RemoteHttpError,
    );
    assertEquals(error.status, 0);
    assertStringIncludes(error.message, `127.0.0.1:${port}`);
    assertFalse(error.message.includes(secret));
    // Nothing was created: close() has nothing to delete and does not throw.
    await runtime.close();
  });
}
