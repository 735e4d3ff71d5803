import {
  assertEquals,
  assertFalse,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import { PROJECT_CONFIG, runDenoScript } from "../../tests/helpers/testing.ts";
import {
  KvConversationStore,
  MemoryConversationStore,
  normalizeConversationKey,
} from "./conversation_store.ts";
import { KEY, storeSuite } from "../../tests/helpers/store_suite.ts";

const STORE_URL = new URL("./conversation_store.ts", import.meta.url).href;

storeSuite("MemoryConversationStore", () =>
  Promise.resolve({
    store: new MemoryConversationStore(),
    dispose: () => Promise.resolve(),
  }));

storeSuite("KvConversationStore", async () => {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-kv-" });
  return {
    store: await KvConversationStore.open(`${dir}/store.kv`),
    dispose: () => Deno.remove(dir, { recursive: true }),
  };
});

Deno.test("normalizeConversationKey drops credentials, default ports and trailing slashes", () => {
  assertEquals(
    normalizeConversationKey({
      serverUrl: "https://u:p@Example.COM:443/a/b//",
      conversationId: "c",
    }),
    { serverUrl: "https://example.com/a/b", conversationId: "c" },
  );
  const error = assertThrows(
    () =>
      normalizeConversationKey({
        serverUrl: "http//user:secret@host",
        conversationId: "c",
      }),
    TypeError,
  );
  assertFalse((error as Error).message.includes("secret"));
});

Deno.test("KvConversationStore: records persist in the KV file and two stores share them", async () => {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-kv-" });
  try {
    const path = `${dir}/store.kv`;
    const a = await KvConversationStore.open(path);
    const b = await KvConversationStore.open(path);
    try {
      const results = await Promise.all([
        a.create(KEY, { sandboxId: "sb-a", workspaceRoot: "/w" }),
        b.create(KEY, { sandboxId: "sb-b", workspaceRoot: "/w" }),
      ]);
      assertEquals(results.filter((r) => r.created).length, 1);
      assertEquals(results[0].record.sandboxId, results[1].record.sandboxId);
      await Promise.all([
        a.markPrepared(KEY, { name: "one", basePath: "/1", digest: "d1" }),
        b.markPrepared(KEY, { name: "two", basePath: "/2", digest: "d2" }),
      ]);
    } finally {
      a.close();
      b.close();
    }
    const reopened = await KvConversationStore.open(path);
    try {
      const record = await reopened.get(KEY);
      assertEquals(Object.keys(record?.skills ?? {}).sort(), ["one", "two"]);
    } finally {
      reopened.close();
    }
    await assertRejects(
      () => reopened.get(KEY),
      Error,
      "Cannot use the conversation store: it is closed",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("KvConversationStore: an open KV given by the caller stays open after close()", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new KvConversationStore(kv, { prefix: ["app", "conv"] });
    await store.create(KEY, { sandboxId: "sb-1", workspaceRoot: "/w" });
    store.close();
    const keys = [];
    for await (const entry of kv.list({ prefix: ["app", "conv"] })) {
      keys.push(entry.key);
    }
    assertEquals(keys, [[
      "app",
      "conv",
      "http://127.0.0.1:8080/lifecycle",
      "thread-1",
    ]]);
  } finally {
    kv.close();
  }
});

Deno.test("KvConversationStore: processes racing through one KV file share one sandbox", async () => {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-kv-race-" });
  try {
    const path = `${dir}/race.kv`;
    const script = `${dir}/racer.ts`;
    // Each racer waits for a start file so that all create at once.
    await Deno.writeTextFile(
      script,
      `import { KvConversationStore } from ${JSON.stringify(STORE_URL)};
const [path, start, name] = Deno.args;
const store = await KvConversationStore.open(path);
while (true) {
  try { await Deno.stat(start); break; } catch { await new Promise((r) => setTimeout(r, 2)); }
}
const key = ${JSON.stringify(KEY)};
const result = await store.create(key, { sandboxId: "sb-" + name, workspaceRoot: "/w" });
await store.markPrepared(key, { name, basePath: "/w/skills/" + name, digest: "d-" + name });
console.log(JSON.stringify({ created: result.created, sandboxId: result.record.sandboxId }));
store.close();
`,
    );
    const start = `${dir}/start`;
    const names = ["p1", "p2", "p3", "p4"];
    const runs = names.map((name) =>
      runDenoScript(script, [
        "--unstable-kv",
        `--allow-read=${dir}`,
        `--allow-write=${dir}`,
      ], [path, start, name])
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await Deno.writeTextFile(start, "");
    const outcomes = await Promise.all(runs);
    const answers = outcomes.map(({ code, stdout, stderr }) => {
      assertEquals(code, 0, stderr);
      return JSON.parse(stdout) as { created: boolean; sandboxId: string };
    });
    assertEquals(answers.filter((a) => a.created).length, 1);
    const winner = answers.find((a) => a.created)!.sandboxId;
    for (const answer of answers) assertEquals(answer.sandboxId, winner);
    const store = await KvConversationStore.open(path);
    try {
      const record = await store.get(KEY);
      assertEquals(record?.sandboxId, winner);
      assertEquals(Object.keys(record?.skills ?? {}).sort(), names);
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("KvConversationStore.open without --unstable-kv says which flag is missing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "skillrun-kv-flag-" });
  try {
    const config = JSON.parse(await Deno.readTextFile(PROJECT_CONFIG));
    delete config.unstable;
    await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify(config));
    await Deno.writeTextFile(
      `${dir}/open.ts`,
      `import { KvConversationStore } from ${JSON.stringify(STORE_URL)};
try { await KvConversationStore.open(); } catch (e) { console.log((e as Error).message); }
`,
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        "--no-lock",
        `--config=${dir}/deno.json`,
        `${dir}/open.ts`,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(output.stdout);
    assertEquals(output.code, 0, new TextDecoder().decode(output.stderr));
    assertStringIncludes(
      stdout,
      "Deno.openKv is unstable; run with --unstable-kv",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
