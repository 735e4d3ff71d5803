import {
  assert,
  assertEquals,
  assertNotEquals,
  assertRejects,
} from "../../tests/helpers/assert.ts";
import { runDenoScript } from "../../tests/helpers/testing.ts";
import { SkillRuntimeConfig } from "../config.ts";
import { WorkspaceEscapeError } from "../errors.ts";
import {
  KvConversationStore,
  MemoryConversationStore,
} from "../stores/conversation_store.ts";
import type { Skill } from "../../skill/types.ts";
import { LifecycleClient } from "./lifecycle.ts";
import {
  startTestServer,
  TEST_API_KEY,
} from "../../tests/helpers/opensandbox.ts";
import { countingFetch, makeSkill } from "../../tests/helpers/remote.ts";

const BOOTSTRAP = new SkillRuntimeConfig({
  env: { MODE: "conversation" },
  bootstrap: ['echo "$MODE" >> bootstrap.log'],
});

function uploads(requests: { path: string }[]): number {
  return requests.filter((r) => r.path.endsWith("/files/upload")).length;
}

async function bootstrapRuns(basePath: string): Promise<number> {
  const log = await Deno.readTextFile(`${basePath}/bootstrap.log`).catch(
    () => "",
  );
  return log.split("\n").filter(Boolean).length;
}

Deno.test("a new runtime object resumes a conversation: same sandbox, renewed, nothing uploaded or bootstrapped again", async () => {
  await using server = await startTestServer();
  const store = new MemoryConversationStore();
  const skill = await makeSkill(`${server.dir}/src`, "resumed", {
    "data.txt": "1",
  });
  const options = {
    conversationId: "thread-1",
    conversationsRoot: `${server.dir}/conversations`,
    store,
  };
  const first = server.runtime(options);
  const [a] = await first.prepare({ skills: [{ skill, config: BOOTSTRAP }] });
  await first.fs.writeText("notes.txt", "kept");
  await first.close();

  const counted = countingFetch();
  const second = server.runtime({ ...options, fetch: counted.fetch });
  const [b] = await second.prepare({ skills: [{ skill, config: BOOTSTRAP }] });
  assertEquals(b!.basePath, a!.basePath);
  assertEquals(second.sandboxId, first.sandboxId);
  assertEquals(uploads(counted.requests), 0);
  assertEquals(await bootstrapRuns(b!.basePath), 1);
  assert(
    counted.requests.some((r) => r.path.endsWith("/renew-expiration")),
    "the sandbox was not renewed on attach",
  );
  assertEquals(
    await second.fs.readText("notes.txt", { maxBytes: 10 }),
    "kept",
  );
  // The configuration's environment reaches every later command.
  assertEquals(
    (await second.execute({ command: "echo $MODE" })).stdout,
    "conversation\n",
  );
  assertEquals(server.server.sandboxes.size, 1);
});

Deno.test("a changed skill is uploaded and bootstrapped again in a resumed conversation", async () => {
  await using server = await startTestServer();
  const store = new MemoryConversationStore();
  const skill = await makeSkill(`${server.dir}/src`, "changing", {
    "data.txt": "version 1",
  });
  const options = {
    conversationId: "thread-2",
    conversationsRoot: `${server.dir}/conversations`,
    store,
  };
  const first = server.runtime(options);
  const [a] = await first.prepare({ skills: [{ skill, config: BOOTSTRAP }] });
  await first.close();
  await Deno.writeTextFile(`${skill.basePath}/data.txt`, "version 2");
  const counted = countingFetch();
  const second = server.runtime({ ...options, fetch: counted.fetch });
  const [b] = await second.prepare({ skills: [{ skill, config: BOOTSTRAP }] });
  assertEquals(b!.basePath, a!.basePath);
  assertEquals(uploads(counted.requests), 1);
  assertEquals(await bootstrapRuns(b!.basePath), 2);
  assertEquals(
    await Deno.readTextFile(`${b!.basePath}/data.txt`),
    "version 2",
  );
  // A changed configuration is a changed skill too.
  const third = server.runtime({ ...options, fetch: counted.fetch });
  await third.prepare({
    skills: [{
      skill,
      config: new SkillRuntimeConfig({
        env: { MODE: "other" },
        bootstrap: ['echo "$MODE" >> bootstrap.log'],
      }),
    }],
  });
  assertEquals(uploads(counted.requests), 2);
  assertEquals(await bootstrapRuns(b!.basePath), 3);
});

Deno.test("conversations are isolated: their own sandbox and workspace, fenced from each other", async () => {
  await using server = await startTestServer();
  const store = new MemoryConversationStore();
  const root = `${server.dir}/conversations`;
  const a = server.runtime({
    conversationId: "a",
    conversationsRoot: root,
    store,
  });
  const b = server.runtime({
    conversationId: "b",
    conversationsRoot: root,
    store,
  });
  await a.fs.writeText("secret.txt", "only a");
  await b.execute({ command: "true" });
  assertNotEquals(a.sandboxId, b.sandboxId);
  assertEquals(a.cwd, `${root}/a`);
  assertEquals(b.cwd, `${root}/b`);
  await assertRejects(
    () => b.fs.readText(`${root}/a/secret.txt`, { maxBytes: 100 }),
    WorkspaceEscapeError,
  );
  await assertRejects(
    () => b.fs.readText("../a/secret.txt", { maxBytes: 100 }),
    WorkspaceEscapeError,
  );
  assertEquals(await b.fs.stat("secret.txt"), null);
});

Deno.test("a conversation resumes across processes through Deno KV", async () => {
  await using server = await startTestServer();
  const kvPath = `${server.dir}/conversations.kv`;
  const skill: Skill = await makeSkill(`${server.dir}/src`, "shared");
  const script = new URL(
    "../../tests/testdata/remote_conversation_process.ts",
    import.meta.url,
  )
    .pathname;
  const args = [
    "opensandbox",
    server.url,
    server.server.apiKey!,
    kvPath,
    `${server.dir}/conversations`,
    "across",
    skill.basePath,
    skill.name,
  ];
  const flags = ["--allow-all", "--unstable-kv"];
  const first = await runDenoScript(script, flags, args);
  assertEquals(first.code, 0, first.stderr);
  const second = await runDenoScript(script, flags, args);
  assertEquals(second.code, 0, second.stderr);
  const a = JSON.parse(first.stdout);
  const b = JSON.parse(second.stdout);
  assertEquals(b, a);
  // The second process neither uploaded nor bootstrapped.
  assertEquals(await bootstrapRuns(a.basePath), 1);
  assertEquals(server.server.count("POST", "*/files/upload"), 1);
  assertEquals(server.server.sandboxes.size, 1);

  // This process sees the record too.
  const store = await KvConversationStore.open(kvPath);
  try {
    const runtime = server.runtime({
      conversationId: "across",
      conversationsRoot: `${server.dir}/conversations`,
      store,
    });
    await runtime.execute({ command: "true" });
    assertEquals(runtime.sandboxId, a.sandboxId);
  } finally {
    store.close();
  }
});

Deno.test("a conversation whose sandbox is gone starts anew in a new sandbox", async () => {
  await using server = await startTestServer();
  const store = new MemoryConversationStore();
  const options = {
    conversationId: "expired",
    conversationsRoot: `${server.dir}/conversations`,
    store,
  };
  const first = server.runtime(options);
  await first.execute({ command: "true" });
  const gone = first.sandboxId!;
  // The record stays; the sandbox is removed behind its back (as an expiry does).
  await new LifecycleClient({ baseUrl: server.url, apiKey: TEST_API_KEY })
    .delete(gone);
  const counted = countingFetch();
  const skill = await makeSkill(`${server.dir}/src`, "again");
  const second = server.runtime({ ...options, fetch: counted.fetch });
  await second.prepare({ skills: [{ skill }] });
  assertNotEquals(second.sandboxId, gone);
  assertEquals(uploads(counted.requests), 1);
});

Deno.test("a conversation's file calls: a write is one command, a read one /files/info (every step at once) and the download", async () => {
  await using server = await startTestServer();
  const counted = countingFetch();
  const runtime = server.runtime({
    conversationId: "counted",
    conversationsRoot: `${server.dir}/conversations`,
    store: new MemoryConversationStore(),
    fetch: counted.fetch,
  });
  await runtime.execute({ command: "mkdir -p a/b" });
  const execd = (from: number) =>
    counted.requests.slice(from).filter((r) => !r.path.startsWith("/v1/"))
      .map((r) => `${r.method} ${r.path.replace(/^.*\/port\/\d+/, "")}`);
  let from = counted.requests.length;
  await runtime.fs.writeText("a/b/c.txt", "content\n");
  assertEquals(execd(from), ["POST /command"]);
  from = counted.requests.length;
  assertEquals(
    await runtime.fs.readText("a/b/c.txt", { maxBytes: 100 }),
    "content\n",
  );
  assertEquals(execd(from), ["GET /files/info", "GET /files/download"]);
  // A missing file: the 404 of the whole call asks again, step by step.
  from = counted.requests.length;
  await assertRejects(
    () => runtime.fs.readText("a/b/none.txt", { maxBytes: 100 }),
    Deno.errors.NotFound,
  );
  assertEquals(execd(from), [
    ...Array(5).fill("GET /files/info"), // all 4 steps, then each
    "GET /files/download",
  ]);
  // Content over 32 KiB: a check, the upload to a temporary name, the rename.
  from = counted.requests.length;
  await runtime.fs.writeText("a/b/c.txt", "z".repeat(40_000));
  assertEquals(execd(from), [
    "POST /command",
    "POST /files/upload",
    "POST /command",
  ]);
  assertEquals(
    (await Deno.stat(`${server.dir}/conversations/counted/a/b/c.txt`)).size,
    40_000,
  );
});
