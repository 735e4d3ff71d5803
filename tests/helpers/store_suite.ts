/**
 * The conformance suite of the `ConversationStore` contract: every store
 * (memory, Deno KV, PostgreSQL) runs the same tests, on conversations,
 * sessions (create once, touch, claims of sweeps, exactly-once delete,
 * counts) and the events of resumable streams.
 *
 * @module
 */
import {
  assert,
  assertEquals,
  assertFalse,
  assertRejects,
  assertThrows,
} from "./assert.ts";
import type {
  ConversationKey,
  ConversationStore,
  NewSession,
} from "../../runtimes/stores/conversation_store.ts";

/** The conversation the suite uses. */
export const KEY: ConversationKey = {
  serverUrl: "http://127.0.0.1:8080/lifecycle",
  conversationId: "thread-1",
};

/** A session of the suite. */
export function newSession(id: string, client = "client-a"): NewSession {
  return {
    id,
    conversationId: id,
    runtime: { kind: "opensandbox", options: { image: "ubuntu:24.04" } },
    protocolVersion: "2025-11-25",
    clientCapabilities: { elicitation: {} },
    clientInfo: { name: "suite", version: "1.0.0" },
    tokenDigest: "ab".repeat(32),
    client,
  };
}

const SID = "session-0123456789abcdef";

/** Registers the tests every store passes; `make` gives a fresh store. */
export function storeSuite(
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

  test("sessions: created once, read, touched, deleted exactly once", async (store) => {
    assertEquals(await store.getSession(SID), null);
    const created = await store.createSession(newSession(SID));
    assertEquals(created.id, SID);
    assertEquals(created.runtime, {
      kind: "opensandbox",
      options: { image: "ubuntu:24.04" },
    });
    assertEquals(created.clientCapabilities, { elicitation: {} });
    assertEquals(created.claimedUntil, null);
    assertEquals(created.createdAt, created.lastUsedAt);
    await assertRejects(
      () => store.createSession(newSession(SID)),
      Deno.errors.AlreadyExists,
      `Cannot create session "${SID}"`,
    );
    assertEquals(await store.getSession(SID), created);
    const touched = await store.touchSession(SID, created.lastUsedAt + 1000);
    assertEquals(touched?.lastUsedAt, created.lastUsedAt + 1000);
    // A use never moves the time back.
    const older = await store.touchSession(SID, created.lastUsedAt);
    assertEquals(older?.lastUsedAt, created.lastUsedAt + 1000);
    assertEquals(await store.touchSession("session-unknown-0000000"), null);
    const deletions = await Promise.all(
      Array.from({ length: 8 }, () => store.deleteSession(SID)),
    );
    assertEquals(deletions.filter((d) => d !== null).length, 1);
    assertEquals(await store.getSession(SID), null);
    assertEquals(await store.touchSession(SID), null);
  });

  test("sessions: bad ids and records are refused", async (store) => {
    await assertRejects(
      () => store.createSession(newSession("short")),
      TypeError,
      "Invalid session id",
    );
    await assertRejects(
      () => store.createSession({ ...newSession(SID), conversationId: "" }),
      TypeError,
      "Invalid session conversationId",
    );
    await assertRejects(
      () =>
        store.createSession({
          ...newSession(SID),
          clientCapabilities: { huge: "x".repeat(40_000) },
        }),
      TypeError,
      "more than 32768",
    );
    assertEquals(await store.getSession(SID), null);
  });

  test("sessions: two sweeps racing claim each idle session once", async (store) => {
    const ids = Array.from({ length: 6 }, (_, i) => `${SID}-${i}`);
    for (const id of ids) await store.createSession(newSession(id));
    const fresh = `${SID}-fresh`;
    await new Promise((resolve) => setTimeout(resolve, 20));
    const idleBefore = Date.now();
    await store.createSession(newSession(fresh));
    await store.touchSession(fresh, idleBefore + 60_000);
    const [a, b] = await Promise.all([
      store.claimIdleSessions(idleBefore, 60_000),
      store.claimIdleSessions(idleBefore, 60_000),
    ]);
    const claimed = [...a, ...b].map((s) => s.id).sort();
    assertEquals(claimed, [...ids].sort());
    for (const s of [...a, ...b]) assert(s.claimedUntil! > Date.now());
    // Claimed: neither claimed again nor touched nor counted.
    assertEquals(await store.claimIdleSessions(idleBefore, 60_000), []);
    assertEquals(await store.touchSession(ids[0]!), null);
    assertEquals(await store.countSessions("client-a"), {
      total: 1,
      client: 1,
    });
    // A claim whose sweeper died can be claimed again once it has lapsed.
    await store.createSession(newSession(`${SID}-late`));
    const short = await store.claimIdleSessions(Date.now() + 1, 1);
    assertEquals(short.map((s) => s.id), [`${SID}-late`]);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const again = await store.claimIdleSessions(Date.now() + 1, 60_000);
    assert(again.some((s) => s.id === `${SID}-late`));
    await assertRejects(
      () => store.claimIdleSessions(Date.now(), 0),
      TypeError,
      "Invalid claim duration",
    );
  });

  test("sessions: counted in all and per client", async (store) => {
    assertEquals(await store.countSessions("x"), { total: 0, client: 0 });
    await store.createSession(newSession(`${SID}-1`, "a"));
    await store.createSession(newSession(`${SID}-2`, "a"));
    await store.createSession(newSession(`${SID}-3`, "b"));
    assertEquals(await store.countSessions("a"), { total: 3, client: 2 });
    assertEquals(await store.countSessions(), { total: 3, client: 0 });
    await store.deleteSession(`${SID}-1`);
    assertEquals(await store.countSessions("a"), { total: 2, client: 1 });
  });

  test("events: appended in order, replayed after an id, scoped to their session", async (store) => {
    await assertRejects(
      () => store.appendEvent(SID, "stream-1", {}),
      Deno.errors.NotFound,
    );
    await store.createSession(newSession(SID));
    await store.createSession(newSession(`${SID}-other`));
    const priming = await store.appendEvent(SID, "stream-1", {});
    const ids = [priming];
    for (let i = 0; i < 12; i++) {
      ids.push(
        await store.appendEvent(SID, "stream-1", {
          jsonrpc: "2.0",
          method: "notifications/progress",
          params: { progress: i },
        }),
      );
    }
    await store.appendEvent(SID, "stream-2", { other: true });
    assertEquals([...ids].sort(), ids);
    const after = await store.eventsAfter(SID, priming);
    assertEquals(after?.streamId, "stream-1");
    assertEquals(after?.events.map((e) => e.id), ids.slice(1));
    assertEquals(
      (after?.events[11]?.message as { params: { progress: number } }).params
        .progress,
      11,
    );
    assertEquals((await store.eventsAfter(SID, ids.at(-1)!))?.events, []);
    // Another session cannot read them; a forged id finds nothing.
    assertEquals(await store.eventsAfter(`${SID}-other`, priming), null);
    assertEquals(await store.eventsAfter(SID, "stream-1.999999999999"), null);
    assertEquals(await store.eventsAfter(SID, "not an id"), null);
    // Sequence 0: the stream from its start; an empty one for a session's
    // stream with no event yet.
    assertEquals(
      (await store.eventsAfter(SID, "stream-1.000000000000"))?.events.length,
      13,
    );
    assertEquals(
      (await store.eventsAfter(SID, "stream-9.000000000000"))?.events,
      [],
    );
    assertEquals(
      await store.eventsAfter("session-none-000000000", "s.000000000000"),
      null,
    );
    await assertRejects(
      () => store.appendEvent(SID, "bad.stream", {}),
      TypeError,
      "Invalid stream id",
    );
    // Deleting the session deletes its events.
    await store.deleteSession(SID);
    assertEquals(await store.eventsAfter(SID, priming), null);
  });

  test("events: concurrent appends to one stream keep every event", async (store) => {
    await store.createSession(newSession(SID));
    const ids = await Promise.all(
      Array.from(
        { length: 20 },
        (_, i) => store.appendEvent(SID, "s", { i }),
      ),
    );
    assertEquals(new Set(ids).size, 20);
    const first = [...ids].sort()[0]!;
    const rest = await store.eventsAfter(SID, first);
    assertEquals(rest?.events.length, 19);
  });
}
