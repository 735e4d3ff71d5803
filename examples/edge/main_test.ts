// The edge example runs under exactly its documented flags against the
// OpenSandbox, AIO, E2B and Vercel test servers, driven by the MCP SDK's own client over
// HTTP: a skill is loaded, a command runs in the sandbox, a file is written
// and read back.
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp"
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { hostPath } from "../../_internal/std.ts";
import { startOpenSandboxServer } from "../../tests/servers/opensandbox.ts";
import { startAioServer } from "../../tests/servers/aio.ts";
import { startE2BServer } from "../../tests/servers/e2b.ts";
import { startVercelServer } from "../../tests/servers/vercel.ts";
import { startDaytonaServer } from "../../tests/servers/daytona.ts";
import { startDenoSandboxServer } from "../../tests/servers/deno_sandbox.ts";
import { loadSkills } from "../../skill/load.ts";
import {
  manySkillName,
  manySkillQuery,
  writeManySkills,
} from "../../tools/testdata/many_skills.ts";
import { configFromEnv } from "./main.ts";

const REPO = hostPath.fromFileUrl(new URL("../../", import.meta.url));

/** The documented flags, exactly (README and the module's doc). */
const FLAGS = [
  "--allow-net",
  "--allow-env",
  "--allow-read=examples/edge/skills",
];

interface Started extends AsyncDisposable {
  readonly url: string;
  /** The line the function printed when it started. */
  readonly banner: string;
  readonly stderr: () => string;
}

/** Starts the function as a process under the documented flags. */
async function startFunction(
  env: Record<string, string>,
  extraFlags: string[] = [],
): Promise<Started> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...FLAGS, ...extraFlags, "examples/edge/main.ts"],
    cwd: REPO,
    clearEnv: true,
    env: { NO_COLOR: "1", PORT: "0", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let errors = "";
  const errorsDone = child.stderr.pipeThrough(new TextDecoderStream())
    .pipeTo(
      new WritableStream({
        write(chunk) {
          errors += chunk;
        },
      }),
    ).catch(() => {});
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let first = "";
  const deadline = Date.now() + 60_000;
  while (!first.includes("\n") && Date.now() < deadline) {
    const { value, done } = await lines.read();
    if (done) break;
    first += value;
  }
  const url = /^(http:\/\/\S+)/.exec(first)?.[1]?.replace(
    "0.0.0.0",
    "127.0.0.1",
  );
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
    await child.status;
    await lines.cancel().catch(() => {});
    await errorsDone;
  };
  if (!url) {
    await stop();
    throw new Error(`The function did not start: ${first}${errors}`);
  }
  return {
    url,
    banner: first.trim(),
    stderr: () => errors,
    [Symbol.asyncDispose]: stop,
  };
}

/** One MCP session: skill, command, write, read; returns the texts. */
async function session(url: string, token: string) {
  const client = new Client({ name: "edge-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  const text = async (name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args });
    const content = result.content as { type: string; text: string }[];
    assert(!result.isError, `${name} failed: ${content[0]?.text}`);
    return content.map((c) => c.text).join("");
  };
  try {
    const { tools } = await client.listTools();
    const loaded = await text("skill", { name: "word-count" });
    const base = /Base directory: (.+)/.exec(loaded)?.[1]?.trim();
    assert(base, loaded);
    const wrote = await text("write", {
      file_path: "notes.txt",
      content: "edge beta beta\nalpha beta\n",
    });
    const counted = await text("bash", {
      command: `bash ${base}/scripts/count.sh notes.txt && pwd`,
    });
    const read = await text("read", { file_path: "notes.txt" });
    return {
      sessionId: transport.sessionId!,
      tools: tools.map((t) => t.name),
      base,
      wrote,
      counted,
      read,
    };
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
}

Deno.test("the edge function reads its sandbox from the environment, with clear errors", () => {
  const config = configFromEnv((name) =>
    ({ AIO_SANDBOX_URL: "http://aio:8080", MCP_TOKEN: "t" })[name]
  );
  assertEquals(config.sandbox, { kind: "aio", url: "http://aio:8080" });
  assertEquals(config.token, "t");
  assertEquals(config.askForApproval, undefined);
  assertEquals(
    configFromEnv((name) =>
      ({ AIO_SANDBOX_URL: "http://aio:8080", SKILLRUN_ASK_FOR_APPROVAL: "1" })[
        name
      ]
    ).askForApproval,
    true,
  );
  let message = "";
  try {
    configFromEnv(() => undefined);
  } catch (error) {
    message = (error as Error).message;
  }
  assertEquals(
    message,
    "Cannot start the edge function: set OPEN_SANDBOX_URL (OpenSandbox) or AIO_SANDBOX_URL (AIO Sandbox)",
  );
});

Deno.test("the edge function drives OpenSandbox over MCP HTTP under exactly its documented flags", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir());
  try {
    await using server = await startOpenSandboxServer({
      apiKey: "os-key",
      cwd: root,
      streamLingerMs: 20,
    });
    await using edge = await startFunction({
      OPEN_SANDBOX_URL: server.origin,
      OPEN_SANDBOX_API_KEY: "os-key",
      SKILLRUN_CONVERSATIONS_ROOT: `${root}/conversations`,
      MCP_TOKEN: "edge-token",
    });
    assertStringIncludes(edge.banner, "(opensandbox, memory store, 2 skills)");
    const done = await session(edge.url, "edge-token");
    assertEquals(done.tools.includes("skill"), true);
    const workspace = `${root}/conversations/${done.sessionId}`;
    assert(done.base.startsWith(`${workspace}/skills/word-count-`), done.base);
    assertStringIncludes(done.wrote, `${workspace}/notes.txt`);
    assertStringIncludes(done.counted, "words: 5");
    assertStringIncludes(done.counted, "3 beta");
    assertStringIncludes(done.counted, workspace);
    assertStringIncludes(done.read, "edge beta beta");
    // The command ran in the sandbox the session's conversation made, and
    // the session's end deleted that sandbox (the default retention).
    assertEquals(server.sandboxes.size, 0);
    // A wrong token gets 401 before anything is made.
    const refused = await fetch(edge.url, {
      method: "POST",
      headers: {
        authorization: "Bearer wrong",
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: "{}",
    });
    await refused.body?.cancel();
    assertEquals(refused.status, 401);
    assertEquals(edge.stderr().includes("os-key"), false, edge.stderr());
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("the edge function drives AIO Sandbox over MCP HTTP under exactly its documented flags (with --unstable-kv and --unstable-cron)", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir());
  try {
    await using server = startAioServer({ token: "aio-token", home: root });
    await using edge = await startFunction({
      AIO_SANDBOX_URL: server.baseUrl,
      AIO_SANDBOX_TOKEN: "aio-token",
      SKILLRUN_CONVERSATIONS_ROOT: `${root}/conversations`,
      MCP_TOKEN: "edge-token",
    }, ["--unstable-kv", "--unstable-cron"]);
    assertStringIncludes(edge.banner, "(aio, kv store, 2 skills)");
    const done = await session(edge.url, "edge-token");
    const workspace = `${root}/conversations/${done.sessionId}`;
    assert(done.base.startsWith(`${workspace}/skills/word-count-`), done.base);
    assertStringIncludes(done.counted, "words: 5");
    assertStringIncludes(done.counted, workspace);
    assertStringIncludes(done.read, "alpha beta");
    // The session's end removed its workspace (the default retention).
    assertEquals(await Deno.stat(workspace).catch(() => null), null);
    // Where Deno.cron exists (Deno Deploy; here --unstable-cron), the sweep
    // is scheduled there too.
    assertStringIncludes(edge.stderr(), "swept every minute by Deno.cron");
    assertEquals(edge.stderr().includes("aio-token"), false, edge.stderr());
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

for (const kind of ["e2b", "vercel", "daytona", "deno-sandbox"] as const) {
  Deno.test(`the edge function drives ${kind} (SANDBOX=${kind}) over MCP HTTP under exactly its documented flags`, async () => {
    const root = await Deno.realPath(await Deno.makeTempDir());
    try {
      await using server = kind === "e2b"
        ? startE2BServer({ apiKey: "e2b-key" })
        : kind === "daytona"
        // Daytona sandboxes have file systems of their own: `root` is a volume.
        ? startDaytonaServer({ apiKey: "daytona-key", volumes: [root] })
        : kind === "deno-sandbox"
        // So do Deno Sandbox's.
        ? startDenoSandboxServer({ token: "ddo_edge_token", volumes: [root] })
        : startVercelServer({ token: "vercel-token" });
      const env: Record<string, string> = kind === "e2b"
        ? {
          E2B_API_KEY: "e2b-key",
          E2B_API_URL: server.url,
          E2B_SANDBOX_URL: server.url,
        }
        : kind === "daytona"
        ? { DAYTONA_API_KEY: "daytona-key", DAYTONA_API_URL: server.url }
        : kind === "deno-sandbox"
        ? {
          DENO_DEPLOY_TOKEN: "ddo_edge_token",
          DENO_SANDBOX_ENDPOINT: server.url,
          DENO_DEPLOY_ENDPOINT: server.url,
        }
        : {
          VERCEL_TOKEN: "vercel-token",
          VERCEL_TEAM_ID: "team_edge",
          VERCEL_PROJECT_ID: "prj_edge",
          VERCEL_API_URL: server.url,
        };
      await using edge = await startFunction({
        ...env,
        SANDBOX: kind,
        SKILLRUN_KEEP_WORKSPACES: "1",
        SKILLRUN_CONVERSATIONS_ROOT: `${root}/conversations`,
        MCP_TOKEN: "edge-token",
      });
      assertStringIncludes(edge.banner, `(${kind}, memory store, 2 skills)`);
      const done = await session(edge.url, "edge-token");
      const workspace = `${root}/conversations/${done.sessionId}`;
      assert(
        done.base.startsWith(`${workspace}/skills/word-count-`),
        done.base,
      );
      assertStringIncludes(done.counted, "words: 5");
      assertStringIncludes(done.read, "alpha beta");
      assertEquals(
        await Deno.readTextFile(`${workspace}/notes.txt`),
        "edge beta beta\nalpha beta\n",
      );
      const secret = kind === "e2b"
        ? "e2b-key"
        : kind === "daytona"
        ? "daytona-key"
        : kind === "deno-sandbox"
        ? "ddo_edge_token"
        : "vercel-token";
      assertEquals(edge.stderr().includes(secret), false, edge.stderr());
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  });
}
Deno.test("the edge function keeps workspaces on request, and without a token listens on loopback only", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir());
  try {
    await using server = startAioServer({ home: root });
    await using edge = await startFunction({
      AIO_SANDBOX_URL: server.baseUrl,
      SKILLRUN_CONVERSATIONS_ROOT: `${root}/conversations`,
      SKILLRUN_KEEP_WORKSPACES: "1",
    });
    assert(edge.banner.startsWith("http://127.0.0.1:"), edge.banner);
    const done = await session(edge.url, "");
    assertEquals(
      await Deno.readTextFile(
        `${root}/conversations/${done.sessionId}/notes.txt`,
      ),
      "edge beta beta\nalpha beta\n",
    );
    assertStringIncludes(edge.stderr(), "listening on loopback only");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
  const config = configFromEnv((name) =>
    ({
      AIO_SANDBOX_URL: "http://aio:8080",
      HOSTNAME: "0.0.0.0",
    })[name]
  );
  assertEquals(config.hostname, "127.0.0.1");
  const told = configFromEnv((name) =>
    ({
      AIO_SANDBOX_URL: "http://aio:8080",
      MCP_ALLOW_PUBLIC_WITHOUT_TOKEN: "1",
      MCP_ALLOWED_HOSTS: "mcp.example.com, other.example",
    })[name]
  );
  assertEquals(told.hostname, "0.0.0.0");
  assertEquals(told.allowedHosts, ["mcp.example.com", "other.example"]);
});

Deno.test("the edge function reads its catalog budget from SKILLRUN_CATALOG_BUDGET", () => {
  const env = (budget?: string) => (name: string) =>
    ({
      AIO_SANDBOX_URL: "http://aio:8080",
      ...(budget === undefined ? {} : { SKILLRUN_CATALOG_BUDGET: budget }),
    } as Record<string, string>)[name];
  assertEquals(configFromEnv(env()).catalogBudget, undefined);
  assertEquals(configFromEnv(env("4000")).catalogBudget, 4_000);
  let message = "";
  try {
    configFromEnv(env("lots"));
  } catch (error) {
    message = (error as Error).message;
  }
  assertEquals(
    message,
    'Cannot use SKILLRUN_CATALOG_BUDGET "lots": it must be a positive number of characters',
  );
});

Deno.test("a session whose sandbox vanished at the provider is told so once, then goes on in a new sandbox", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir());
  try {
    await using server = await startOpenSandboxServer({
      apiKey: "os-key",
      cwd: root,
      streamLingerMs: 20,
    });
    await using edge = await startFunction({
      OPEN_SANDBOX_URL: server.origin,
      OPEN_SANDBOX_API_KEY: "os-key",
      SKILLRUN_CONVERSATIONS_ROOT: `${root}/conversations`,
      MCP_TOKEN: "edge-token",
    });
    const client = new Client({ name: "edge-test", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(edge.url), {
      requestInit: { headers: { authorization: "Bearer edge-token" } },
    });
    await client.connect(transport);
    const bash = async (command: string) => {
      const result = await client.callTool({
        name: "bash",
        arguments: { command },
      });
      const text = (result.content as { text: string }[]).map((c) => c.text)
        .join("");
      return { isError: result.isError === true, text };
    };
    try {
      assertEquals((await bash("echo first")).isError, false);
      const [gone] = [...server.sandboxes.keys()];
      assert(gone);
      // The provider deletes it behind the session's back (an expiry).
      const deleted = await fetch(`${server.url}/sandboxes/${gone}`, {
        method: "DELETE",
        headers: { "OPEN-SANDBOX-API-KEY": "os-key" },
      });
      await deleted.body?.cancel();
      assertEquals(deleted.status, 204);
      assertEquals(server.sandboxes.size, 0);
      const told = await bash("echo second");
      assertEquals(told.isError, true);
      assertStringIncludes(
        told.text,
        "The sandbox of this conversation is gone (expired or deleted at the provider)",
      );
      // The next call runs in a new sandbox of the conversation.
      const again = await bash("echo third");
      assertEquals(again, { isError: false, text: again.text });
      assertStringIncludes(again.text, "third");
      assertEquals(server.sandboxes.size, 1);
      assert(!server.sandboxes.has(gone));
      assertEquals((await bash("echo fourth")).isError, false);
      await transport.terminateSession();
      assertEquals(server.sandboxes.size, 0);
      assertEquals(edge.stderr().includes("os-key"), false, edge.stderr());
    } finally {
      await client.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

/**
 * The function as a user deploys it with a catalog of their own: `main.ts`
 * unchanged in a folder of its own beside `skills/` (here generated), with a
 * `deno.json` mapping the package to this clone.
 */
/**
 * What a child `deno` needs to reach the npm registry as this one does (a
 * folder with a copy of the lock may fetch package information): the cache,
 * the certificates and the proxy, when this process has them.
 */
function registryEnv(): Record<string, string> {
  const names = [
    "DENO_DIR",
    "DENO_CERT",
    "DENO_TLS_CA_STORE",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "NPM_CONFIG_REGISTRY",
  ];
  return Object.fromEntries(
    names.flatMap((name) => {
      const value = Deno.env.get(name);
      return value === undefined ? [] : [[name, value]];
    }),
  );
}

async function functionFolder(
  skills: number,
): Promise<string & AsyncDisposable> {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const config = JSON.parse(await Deno.readTextFile(`${REPO}/deno.json`)) as {
    name: string;
    exports: Record<string, string>;
    imports: Record<string, string>;
  };
  const imports: Record<string, string> = { ...config.imports };
  for (const [path, file] of Object.entries(config.exports)) {
    imports[`${config.name}${path.slice(1)}`] =
      hostPath.toFileUrl(hostPath.join(REPO, file)).href;
  }
  await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify({ imports }));
  // A copy of the lock: the packages come from the cache, as the clone's.
  await Deno.copyFile(`${REPO}/deno.lock`, `${dir}/deno.lock`);
  await Deno.copyFile(`${REPO}/examples/edge/main.ts`, `${dir}/main.ts`);
  await writeManySkills(`${dir}/skills`, skills);
  return Object.assign(dir, {
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  }) as string & AsyncDisposable;
}

Deno.test("the edge function keeps its skill tool within SKILLRUN_CATALOG_BUDGET with 300 skills, lists the recently used first, then catalog order, and refuses a bad budget clearly", async () => {
  await using folder = await functionFolder(300);
  const dir = `${folder}`;
  const run = (env: Record<string, string>, signal?: AbortSignal) =>
    new Deno.Command(Deno.execPath(), {
      ...(signal ? { signal } : {}),
      args: [
        "run",
        `--config=${dir}/deno.json`,
        `--lock=${dir}/deno.lock`,
        "--allow-net",
        "--allow-env",
        `--allow-read=${dir}/skills`,
        `${dir}/main.ts`,
      ],
      cwd: dir,
      clearEnv: true,
      env: { NO_COLOR: "1", PORT: "0", ...registryEnv(), ...env },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    });
  await using server = startAioServer({ token: "aio-token", home: dir });
  const base = {
    AIO_SANDBOX_URL: server.baseUrl,
    AIO_SANDBOX_TOKEN: "aio-token",
    SKILLRUN_CONVERSATIONS_ROOT: `${dir}/conversations`,
    MCP_TOKEN: "edge-token",
  };
  // A bad budget: the function does not start, and says why in one line.
  for (
    const [budget, reason] of [
      ["lots", "it must be a positive number of characters"],
      ["12", "the tool's own text takes"],
    ] as const
  ) {
    // (Killed after 30 s: a function that started would otherwise hang here.)
    const refused = await run(
      { ...base, SKILLRUN_CATALOG_BUDGET: budget },
      AbortSignal.timeout(30_000),
    ).output();
    const stderr = new TextDecoder().decode(refused.stderr);
    assertEquals(refused.code, 1, stderr);
    assertEquals(new TextDecoder().decode(refused.stdout), "");
    // One line (Deno's own notes about the package cache aside), no stack.
    const errors = stderr.split("\n").filter((l) => l.startsWith("error"));
    assertEquals(errors.length, 1, stderr);
    assert(
      errors[0]!.startsWith(
        `error: Cannot ${
          budget === "lots"
            ? `use SKILLRUN_CATALOG_BUDGET "${budget}"`
            : `build the skill tool with catalogBudget "${budget}"`
        }`,
      ),
      stderr,
    );
    assertStringIncludes(errors[0]!, reason);
    assertEquals(/^\s+at /m.test(stderr), false, stderr);
    assertEquals(stderr.includes("aio-token"), false);
  }
  const child = run({ ...base, SKILLRUN_CATALOG_BUDGET: "3000" }).spawn();
  const stderr = new Response(child.stderr).text();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let first = "";
  while (!first.includes("\n")) {
    const { value, done } = await lines.read();
    if (done) break;
    first += value;
  }
  const client = new Client({ name: "edge-catalog", version: "1.0.0" });
  try {
    assertStringIncludes(first, "(aio, memory store, 300 skills)");
    const url = /^(http:\/\/\S+)/.exec(first)![1]!;
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: "Bearer edge-token" } },
      }),
    );
    const listed = async () => {
      const { tools } = await client.listTools();
      const skill = tools.find((t) => t.name === "skill")!;
      const chars = skill.description!.length +
        JSON.stringify(skill.inputSchema).length;
      assert(chars <= 3_000, `${chars} characters`);
      return {
        tools: tools.map((t) => t.name),
        names: [...skill.description!.matchAll(/<name>([^<]+)<\/name>/g)]
          .map((m) => m[1]!),
        description: skill.description!,
        schema: skill.inputSchema,
      };
    };
    const before = await listed();
    assert(before.tools.includes("skill_search"), before.tools.join());
    const { skills: catalog } = await loadSkills(`${dir}/skills`);
    const order = catalog.map((s) => s.name);
    // As many as fit, in catalog order; the rest said and searchable.
    assert(before.names.length >= 3 && before.names.length < 300);
    assertEquals(before.names, order.slice(0, before.names.length).sort());
    assertStringIncludes(
      before.description,
      `${
        300 - before.names.length
      } more skills are not listed here: find them with the skill_search tool`,
    );
    const name = before.schema.properties!.name as Record<string, unknown>;
    assertEquals(name.enum, undefined);
    // A skill outside the listing, found by search, loads by name and comes
    // first in the listing from then on (the recently used lead).
    const wanted = manySkillName(250);
    assert(!before.names.includes(wanted));
    const found = await client.callTool({
      name: "skill_search",
      arguments: { query: manySkillQuery(250), limit: 3 },
    });
    assertStringIncludes(
      (found.content as { text: string }[])[0]!.text,
      wanted,
    );
    const loaded = await client.callTool({
      name: "skill",
      arguments: { name: wanted },
    });
    assertEquals(loaded.isError, false);
    const after = await listed();
    // (The listing shows its entries sorted by name.)
    assertEquals(
      after.names,
      [wanted, ...order.slice(0, after.names.length - 1)].sort(),
    );
  } finally {
    await client.close().catch(() => {});
    child.kill("SIGTERM");
    await child.status;
    await lines.cancel().catch(() => {});
    assertEquals((await stderr).includes("aio-token"), false);
  }
});
