import {
  assert,
  assertEquals,
  assertFalse,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../../_internal/assert.ts";
import { PROJECT_CONFIG, runDenoScript } from "../../_internal/testing.ts";
import {
  type ConversationKey,
  type ConversationStore,
  KvConversationStore,
  MemoryConversationStore,
  normalizeConversationKey,
} from "./conversation_store.ts";

const KEY: ConversationKey = {
  serverUrl: "http://127.0.0.1:8080/lifecycle",
  conversationId: "thread-1",
};
const STORE_URL = new URL("./conversation_store.ts", import.meta.url).href;

/** Registers the tests every store passes; `make` gives a fresh store. */
function storeSuite(
  label: string,
  make: () => Promise<{ store: ConversationStore; dispose(): Promise<void> }>,
): void {
  const test = (
    name: string,
    fn: (store: ConversationStore) => Promise<void>,
  ): void => {
    Deno.test(`${label}: ${name}`, async () => {
      const { store, dispose } = await make();
      try {
        await fn(store);
      } finally {
        store.close();
        await dispose();
      }
    });
  };

  test("create inserts once; the second caller gets the first record", async (store) => {
    assertEquals(await store.get(KEY), null);
    const first = await store.create(KEY, {
      sandboxId: "sb-1",
      workspaceRoot: "/workspace/thread-1",
      expiresAt: 5000,
    });
    assert(first.created);
    assertEquals(first.record.sandboxId, "sb-1");
    assertEquals(first.record.workspaceRoot, "/workspace/thread-1");
    assertEquals(first.record.skills, {});
    assertEquals(first.record.expiresAt, 5000);
    assertEquals(first.record.createdAt, first.record.renewedAt);
    const second = await store.create(KEY, {
      sandboxId: "sb-2",
      workspaceRoot: "/elsewhere",
    });
    assertFalse(second.created);
    assertEquals(second.record, first.record);
    assertEquals(await store.get(KEY), first.record);
  });

  test("a conversation is keyed by server URL and id, never by credentials", async (store) => {
    await store.create(KEY, { sandboxId: "sb-1", workspaceRoot: "/w" });
    const sameServer = {
      serverUrl: "HTTP://user:api-key-1@127.0.0.1:8080/lifecycle/",
      conversationId: "thread-1",
    };
    assertEquals((await store.get(sameServer))?.sandboxId, "sb-1");
    const stored = JSON.stringify(await store.get(sameServer));
    assertFalse(stored.includes("api-key-1"));
    assertEquals(
      await store.get({ ...KEY, serverUrl: "http://127.0.0.1:8081/lifecycle" }),
      null,
    );
    assertEquals(await store.get({ ...KEY, conversationId: "thread-2" }), null);
    const other = await store.create(
      { ...KEY, serverUrl: "http://other:8080/lifecycle" },
      { sandboxId: "sb-9", workspaceRoot: "/w" },
    );
    assert(other.created);
    assertEquals((await store.get(KEY))?.sandboxId, "sb-1");
  });

  test("markPrepared records skills; forgetPrepared drops one", async (store) => {
    await assertRejects(
      () =>
        store.markPrepared(KEY, {
          name: "pdf",
          basePath: "/w/skills/pdf",
          digest: "sha256:1",
        }),
      Deno.errors.NotFound,
      'Cannot update conversation "thread-1"',
    );
    await store.create(KEY, { sandboxId: "sb-1", workspaceRoot: "/w" });
    await store.markPrepared(KEY, {
      name: "pdf",
      basePath: "/w/skills/pdf",
      digest: "sha256:1",
      preparedAt: 42,
    });
    const record = await store.markPrepared(KEY, {
      name: "docx",
      basePath: "/w/skills/docx",
      digest: "sha256:2",
    });
    assertEquals(Object.keys(record.skills).sort(), ["docx", "pdf"]);
    assertEquals(record.skills.pdf, {
      name: "pdf",
      basePath: "/w/skills/pdf",
      digest: "sha256:1",
      preparedAt: 42,
    });
    const changed = await store.markPrepared(KEY, {
      name: "pdf",
      basePath: "/w/skills/pdf",
      digest: "sha256:3",
    });
    assertEquals(changed.skills.pdf?.digest, "sha256:3");
    const forgotten = await store.forgetPrepared(KEY, "pdf");
    assertEquals(Object.keys(forgotten?.skills ?? {}), ["docx"]);
    assertEquals(Object.keys((await store.get(KEY))?.skills ?? {}), ["docx"]);
    assertEquals(
      await store.forgetPrepared({ ...KEY, conversationId: "none" }, "x"),
      null,
    );
  });

  test("renew moves the renewal time and the expiry", async (store) => {
    assertEquals(await store.renew(KEY, 1), null);
    const { record } = await store.create(KEY, {
      sandboxId: "sb-1",
      workspaceRoot: "/w",
    });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const renewed = await store.renew(KEY, 9_000);
    assert(renewed !== null);
    assert(renewed.renewedAt > record.renewedAt);
    assertEquals(renewed.expiresAt, 9_000);
    assertEquals(renewed.createdAt, record.createdAt);
    const kept = await store.renew(KEY);
    assertEquals(kept?.expiresAt, 9_000);
  });

  test("delete removes a record, only the named sandbox's when asked", async (store) => {
    assertFalse(await store.delete(KEY));
    await store.create(KEY, { sandboxId: "sb-1", workspaceRoot: "/w" });
    assertFalse(await store.delete(KEY, { sandboxId: "sb-2" }));
    assertEquals((await store.get(KEY))?.sandboxId, "sb-1");
    assert(await store.delete(KEY, { sandboxId: "sb-1" }));
    assertEquals(await store.get(KEY), null);
    await store.create(KEY, { sandboxId: "sb-3", workspaceRoot: "/w" });
    assert(await store.delete(KEY));
    const again = await store.create(KEY, {
      sandboxId: "sb-4",
      workspaceRoot: "/w",
    });
    assert(again.created);
  });

  test("records handed out are frozen copies", async (store) => {
    const { record } = await store.create(KEY, {
      sandboxId: "sb-1",
      workspaceRoot: "/w",
    });
    assertThrows(() => {
      (record as { sandboxId: string }).sandboxId = "changed";
    }, TypeError);
    assertEquals((await store.get(KEY))?.sandboxId, "sb-1");
  });

  test("concurrent creates in one process: exactly one wins", async (store) => {
    const results = await Promise.all(
      Array.from(
        { length: 25 },
        (_, i) =>
          store.create(KEY, { sandboxId: `sb-${i}`, workspaceRoot: "/w" }),
      ),
    );
    const winners = results.filter((r) => r.created);
    assertEquals(winners.length, 1);
    const winner = winners[0]!.record.sandboxId;
    for (const result of results) {
      assertEquals(result.record.sandboxId, winner);
    }
    assertEquals((await store.get(KEY))?.sandboxId, winner);
  });

  test("concurrent updates lose nothing", async (store) => {
    await store.create(KEY, { sandboxId: "sb-1", workspaceRoot: "/w" });
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.markPrepared(KEY, {
          name: `skill-${i}`,
          basePath: `/w/skills/${i}`,
          digest: `sha256:${i}`,
        })),
    );
    const record = await store.get(KEY);
    assertEquals(Object.keys(record?.skills ?? {}).length, 20);
  });

  test("bad keys and values are refused with clear messages", async (store) => {
    await assertRejects(
      () => store.get({ serverUrl: "not a url", conversationId: "c" }),
      TypeError,
      'Invalid server URL "not a url": not a URL',
    );
    await assertRejects(
      () => store.get({ serverUrl: "ftp://h/", conversationId: "c" }),
      TypeError,
      "expected an http or https URL",
    );
    await assertRejects(
      () =>
        store.get({ serverUrl: "http://h/?key=secret", conversationId: "c" }),
      TypeError,
      "no query or fragment",
    );
    await assertRejects(
      () => store.get({ serverUrl: "http://h", conversationId: "../x" }),
      TypeError,
      "Cannot use conversation id",
    );
    await assertRejects(
      () => store.create(KEY, { sandboxId: "", workspaceRoot: "/w" }),
      TypeError,
      "Invalid conversation sandboxId",
    );
    await store.create(KEY, { sandboxId: "sb", workspaceRoot: "/w" });
    await assertRejects(
      () => store.markPrepared(KEY, { name: "x", basePath: "/b", digest: "" }),
      TypeError,
      "Invalid prepared skill digest",
    );
    assertEquals(Object.keys((await store.get(KEY))?.skills ?? {}), []);
  });
}

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
