import {
  assert,
  assertEquals,
  assertRejects,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import { MemoryConversationStore } from "../stores/conversation_store.ts";
import { countingFetch, makeSkill } from "../../tests/helpers/remote.ts";
import {
  startDaytonaTestServer,
  TEST_API_KEY,
} from "../../tests/helpers/daytona.ts";
import { DaytonaSkillRuntime } from "./runtime.ts";
import type { SkillEvent } from "../../observe/events.ts";

Deno.test("daytona: execute() gives stdout and stderr apart, the exit code, cwd and env; the key never shows", async () => {
  await using server = await startDaytonaTestServer();
  const counted = countingFetch();
  const runtime = server.runtime({ fetch: counted.fetch, env: { BASE: "b" } });
  const ok = await runtime.execute({ command: "echo hello; printf 'no end'" });
  assertEquals([ok.stdout, ok.stderr, ok.exitCode], ["hello\nno end", "", 0]);
  const failed = await runtime.execute({
    command: 'echo "$BASE $X"; echo oops >&2; exit 3',
    env: { X: "x y" },
  });
  assertEquals([failed.stdout, failed.stderr, failed.exitCode], [
    "b x y\n",
    "oops\n",
    3,
  ]);
  assertEquals(
    (await runtime.execute({ command: "pwd" })).stdout,
    `${server.dir}\n`,
  );
  const created = counted.requests.find((r) =>
    r.method === "POST" && r.path.endsWith("/api/sandbox")
  )!;
  assertEquals(created.headers.get("authorization"), `Bearer ${TEST_API_KEY}`);
  const bad = await runtime.execute({
    command: "exit 0",
    cwd: `${server.dir}/none`,
  });
  assert(bad.exitCode !== 0);
  assert(
    !bad.stderr.includes(TEST_API_KEY) && !bad.stdout.includes(TEST_API_KEY),
  );
});

Deno.test("daytona: a timeout kills the command and everything it started; an abort too", async () => {
  await using server = await startDaytonaTestServer();
  const runtime = server.runtime();
  const started = Date.now();
  const slow = await runtime.execute({
    command: "sleep 30 & echo begun; sleep 30",
    timeoutMs: 1000,
  });
  assert(slow.timedOut);
  assert(Date.now() - started < 15_000);
  const box = [...server.server.sandboxes.values()][0]!;
  assertEquals(box.sessions.size, 0); // the session (and its group) is gone
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 500);
  const aborted = await runtime.execute({
    command: "sleep 30",
    signal: controller.signal,
  });
  assert(aborted.aborted);
});

Deno.test("daytona: skills are uploaded, files written, read, listed, stat'ed and downloaded in the sandbox", async () => {
  await using server = await startDaytonaTestServer();
  const runtime = server.runtime();
  const skill = await makeSkill(server.dir, "demo", {
    "scripts/run.sh": "echo ran",
    "data/big.bin": new Uint8Array(300_000).fill(7),
  });
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  const location = prepared!.basePath;
  const ran = await runtime.execute({
    command: `bash ${location}/scripts/run.sh`,
  });
  assertEquals(ran.stdout, "ran\n");
  await runtime.fs.writeText("notes/a.txt", "hello");
  assertEquals(
    await runtime.fs.readText("notes/a.txt", { maxBytes: 1024 }),
    "hello",
  );
  assertEquals((await runtime.fs.stat("notes/a.txt"))?.size, 5);
  assertEquals(await runtime.fs.stat("notes/none"), null);
  const cat = await runtime.execute({ command: "cat notes/a.txt" });
  assertEquals(cat.stdout, "hello");
  const listed = await runtime.fs.list("notes");
  assertEquals(listed.entries.map((e) => e.name), ["a.txt"]);
  const local = `${server.dir}/out.bin`;
  await runtime.fs.download(`${location}/data/big.bin`, local);
  assertEquals((await Deno.readFile(local)).length, 300_000);
  await assertRejects(() =>
    runtime.fs.readText("missing.txt", { maxBytes: 1024 })
  );
});

Deno.test("daytona: a conversation's sandbox carries its key in labels and is found again", async () => {
  await using server = await startDaytonaTestServer();
  const store = new MemoryConversationStore();
  const first = server.runtime({ conversationId: "thread-1", store });
  await first.execute({ command: "echo kept > f" });
  await first.close();
  const box = [...server.server.sandboxes.values()][0]!;
  assertEquals(box.labels["skillrun.conversation"], "thread-1");
  const second = server.runtime({ conversationId: "thread-1", store });
  assertEquals((await second.execute({ command: "cat f" })).stdout, "kept\n");
  assertEquals(server.server.sandboxes.size, 1);
});

Deno.test("daytona: network with nothing allowed blocks all; ports and secrets are refused", async () => {
  await using server = await startDaytonaTestServer();
  const runtime = server.runtime({ network: { allow: [] } });
  const port = new URL(server.server.url).port;
  const probe = await runtime.execute({
    command:
      `(echo > /dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo open || echo closed`,
  });
  assertEquals(probe.stdout, "closed\n");
  assertThrows(
    () =>
      new DaytonaSkillRuntime({
        apiKey: "k",
        network: { allow: ["a.com:8080"] },
      }),
    RangeError,
  );
  assertThrows(
    () =>
      new DaytonaSkillRuntime({
        apiKey: "k",
        secrets: { T: { hosts: ["a.com"], value: "v" } },
      }),
    TypeError,
  );
});

Deno.test("daytona: a wrong key is a clear error that does not show it", async () => {
  await using server = await startDaytonaTestServer();
  const runtime = server.runtime({ apiKey: "wrong-secret-key" });
  const error = await assertRejects(() => runtime.execute({ command: "true" }));
  assert(String(error).includes("401"), String(error));
  assert(!String(error).includes("wrong-secret-key"));
});

Deno.test("daytona: its HTTP calls reach onEvent (API and toolbox), without the key", async () => {
  await using server = await startDaytonaTestServer();
  const events: SkillEvent[] = [];
  const runtime = server.runtime({ onEvent: (event) => events.push(event) });
  await runtime.execute({ command: "true" });
  const calls = events.flatMap((e) =>
    e.type === "http_request" ? [`${e.method} ${e.status}`] : []
  );
  assert(calls.includes("POST 200"), calls.join(", ")); // the creation
  assert(calls.filter((c) => c.startsWith("POST")).length >= 3, calls.join());
  assert(!JSON.stringify(events).includes(TEST_API_KEY));
});
