import {
  assert,
  assertEquals,
  assertFalse,
  assertRejects,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import { ConversationStoreUnavailableError } from "./conversation_store.ts";
import { PostgresConversationStore } from "./postgres.ts";
import { postgresOrSkip } from "../../tests/helpers/postgres.ts";
import {
  KEY,
  newSession,
  storeSuite,
} from "../../tests/helpers/store_suite.ts";

// One private cluster for this file (initdb/pg_ctl in a temporary folder).
const cluster = await postgresOrSkip("the PostgreSQL store tests");
let tables = 0;

if (cluster) {
  storeSuite("PostgresConversationStore", () => {
    const store = new PostgresConversationStore(cluster.url, {
      tablePrefix: `t${++tables}_`,
    });
    return Promise.resolve({ store, dispose: () => Promise.resolve() });
  });
  if (cluster.poolerUrl) {
    const pooler = cluster.poolerUrl;
    // Through pgbouncer in transaction mode, as Supabase's pooler is used.
    storeSuite(
      "PostgresConversationStore through a transaction-mode pooler",
      () => {
        const store = new PostgresConversationStore(pooler, {
          tablePrefix: `p${++tables}_`,
        });
        return Promise.resolve({ store, dispose: () => Promise.resolve() });
      },
    );
  } else {
    console.error(
      "\n!!! pgbouncer is not installed: the PostgreSQL store is not tested through a transaction-mode pooler\n",
    );
  }
}

Deno.test({
  name:
    "PostgresConversationStore: instances racing create one schema and one conversation",
  ignore: !cluster,
  async fn() {
    const stores = Array.from(
      { length: 5 },
      () =>
        new PostgresConversationStore(cluster!.poolerUrl ?? cluster!.url, {
          tablePrefix: "race_",
        }),
    );
    try {
      const results = await Promise.all(
        stores.map((store, i) =>
          store.create(KEY, { sandboxId: `sb-${i}`, workspaceRoot: "/w" })
        ),
      );
      assertEquals(results.filter((r) => r.created).length, 1);
      const winner = results.find((r) => r.created)!.record.sandboxId;
      for (const r of results) assertEquals(r.record.sandboxId, winner);
      await Promise.all(stores.map((store, i) =>
        store.markPrepared(KEY, {
          name: `s${i}`,
          basePath: `/w/s${i}`,
          digest: `d${i}`,
        })
      ));
      assertEquals(
        Object.keys((await stores[0]!.get(KEY))?.skills ?? {}).length,
        5,
      );
    } finally {
      for (const store of stores) store.close();
    }
  },
});

Deno.test({
  name: "PostgresConversationStore: no secret in what it stores or says",
  ignore: !cluster,
  async fn() {
    const store = new PostgresConversationStore(cluster!.url, {
      tablePrefix: "secret_",
    });
    try {
      await store.create(
        { ...KEY, serverUrl: "http://user:api-key-9@127.0.0.1:8080/x" },
        { sandboxId: "sb", workspaceRoot: "/w" },
      );
      await store.createSession(newSession("session-secret-check-000"));
    } finally {
      store.close();
    }
    // Read every row as text, straight from the tables.
    const postgres = (await import("postgres")).default;
    const sql = postgres(cluster!.url, { prepare: false, onnotice: () => {} });
    try {
      const rows = await sql.unsafe(
        `select record::text as t from secret_conversations
         union all select record::text from secret_sessions`,
      );
      assertEquals(rows.length, 2);
      for (const row of rows) assertFalse(String(row.t).includes("api-key-9"));
    } finally {
      await sql.end();
    }
  },
});

Deno.test("PostgresConversationStore: an unreachable database is a one-line unavailable error without the password", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const store = new PostgresConversationStore(
    `postgres://app:pa55word-x@127.0.0.1:${port}/db`,
    { connectTimeoutS: 2 },
  );
  try {
    const error = await assertRejects(
      () => store.getSession("session-0123456789abcdef"),
      ConversationStoreUnavailableError,
      "Cannot reach the PostgreSQL store",
    );
    assertFalse(error.message.includes("pa55word-x"));
    assertFalse(error.message.includes("\n"));
    // Nothing half-written: a second call fails the same way.
    await assertRejects(
      () => store.createSession(newSession("session-0123456789abcdef")),
      ConversationStoreUnavailableError,
    );
  } finally {
    store.close();
  }
});

Deno.test({
  name:
    "PostgresConversationStore: a database that stops and comes back is unavailable, then served again",
  ignore: !cluster,
  async fn() {
    const store = new PostgresConversationStore(cluster!.url, {
      tablePrefix: "restart_",
      connectTimeoutS: 2,
    });
    try {
      await store.createSession(newSession("session-restart-0000001"));
      await cluster!.pause();
      await assertRejects(
        () => store.getSession("session-restart-0000001"),
        ConversationStoreUnavailableError,
      );
      await cluster!.resume();
      assert((await store.getSession("session-restart-0000001")) !== null);
    } finally {
      store.close();
    }
  },
});

Deno.test("PostgresConversationStore: bad URLs and prefixes are refused before connecting", () => {
  assertThrows(
    () => new PostgresConversationStore("mysql://u:secret@h/db"),
    TypeError,
    "Invalid PostgreSQL URL",
  );
  const error = assertThrows(
    () => new PostgresConversationStore("http://u:secret@h/db"),
    TypeError,
  );
  assertFalse(error.message.includes("secret"));
  assertThrows(
    () => new PostgresConversationStore(undefined, { tablePrefix: "x; drop" }),
    TypeError,
    "Invalid table prefix",
  );
});

Deno.test({
  name: "PostgreSQL test cluster stops",
  ignore: !cluster,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await cluster!.stop();
  },
});
