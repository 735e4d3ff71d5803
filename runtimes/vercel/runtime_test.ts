import {
  assert,
  assertEquals,
  assertFalse,
  assertNotEquals,
  assertRejects,
} from "../../tests/helpers/assert.ts";
import { runDenoScript } from "../../tests/helpers/testing.ts";
import { SkillRuntimeConfig } from "../config.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import { MemoryConversationStore } from "../stores/conversation_store.ts";
import { VercelApiClient } from "./api.ts";
import {
  startVercelTestServer,
  TEST_TOKEN,
} from "../../tests/helpers/vercel.ts";
import {
  countingFetch,
  makeSkill,
  processAlive,
  waitFor,
} from "../../tests/helpers/remote.ts";

Deno.test("execute() runs bash -c through the command API: exact output, stderr apart, the exit code", async () => {
  await using server = await startVercelTestServer();
  const counted = countingFetch();
  const runtime = server.runtime({ fetch: counted.fetch });
  const ok = await runtime.execute({ command: "echo hello; printf 'no end'" });
  assertEquals([ok.stdout, ok.stderr, ok.exitCode], ["hello\nno end", "", 0]);
  const failed = await runtime.execute({
    command: "printf 'a\\n\\nb\\r\\n'; echo oops >&2; exit 3",
  });
  assertEquals(
    [failed.stdout, failed.stderr, failed.exitCode],
    ["a\n\nb\n", "oops\n", 3], // \r\n is one line end on every remote kind
  );
  assertEquals(
    (await runtime.execute({ command: "pwd" })).stdout,
    `${server.dir}\n`,
  );
  const cmd = counted.requests.find((r) => r.path.endsWith("/cmd"))!;
  assertEquals(cmd.headers.get("authorization"), `Bearer ${TEST_TOKEN}`);
});

Deno.test("a sandbox is created with runtime, resources, timeout, network policy, environment and tags; the token never shows", async () => {
  await using server = await startVercelTestServer();
  const counted = countingFetch();
  const runtime = server.runtime({
    fetch: counted.fetch,
    sandbox: {
      runtime: "node24",
      vcpus: 4,
      timeoutSeconds: 120,
      networkPolicy: { mode: "deny-all" },
      env: { FROM_CREATE: "1" },
      tags: { app: "tests" },
    },
  });
  assertEquals(
    (await runtime.execute({ command: 'echo "$FROM_CREATE"' })).stdout,
    "1\n",
  );
  const create = counted.requests.find((r) => r.method === "POST")!;
  assertEquals(create.path, "/v2/sandboxes"); // a runtime is named
  const sandbox = server.server.sandboxes.get(runtime.sandboxId!)!;
  assertEquals(sandbox.body.projectId, "prj_test");
  assertEquals(sandbox.body.timeout, 120_000);
  assertEquals(sandbox.body.resources, { vcpus: 4 });
  assertEquals(sandbox.body.networkPolicy, { mode: "deny-all" });
  assertEquals(sandbox.body.tags, { app: "tests" });
  assertEquals(sandbox.persistent, false);
  for (const request of counted.requests) {
    assertEquals(new URL(`http://x${request.path}`).pathname, request.path);
  }
  await runtime.close();
  assertFalse(server.server.sandboxes.has(sandbox.name));
  const wrong = server.runtime({ apiKey: "wrong-token-abcdef" });
  const error = await assertRejects(
    () => wrong.execute({ command: "true" }),
    RemoteHttpError,
  );
  assertEquals(error.status, 403);
  assertFalse(JSON.stringify([error.message, error]).includes("wrong-token"));
});

Deno.test("a conversation's session is stopped on close and resumed from its snapshot on attach: files kept, nothing uploaded again", async () => {
  await using server = await startVercelTestServer();
  const store = new MemoryConversationStore();
  const options = {
    conversationId: "thread-1",
    conversationsRoot: `${server.dir}/conversations`,
    store,
  };
  const skill = await makeSkill(`${server.dir}/src`, "resumed");
  const config = new SkillRuntimeConfig({
    env: { MODE: "conversation" },
    bootstrap: ['echo "$MODE" >> bootstrap.log'],
  });
  const first = server.runtime(options);
  const [a] = await first.prepare({ skills: [{ skill, config }] });
  await first.fs.writeText("notes.txt", "kept");
  const name = first.sandboxId!;
  const firstSession = server.server.sandboxes.get(name)!.currentSessionId;
  await first.close();
  assertEquals(server.server.sessions.get(firstSession)?.status, "stopped");
  assert(server.server.sandboxes.get(name)!.persistent);

  const counted = countingFetch();
  const second = server.runtime({ ...options, fetch: counted.fetch });
  const [b] = await second.prepare({ skills: [{ skill, config }] });
  assertEquals([second.sandboxId, b!.basePath], [name, a!.basePath]);
  assertNotEquals(
    server.server.sandboxes.get(name)!.currentSessionId,
    firstSession,
  );
  assertFalse(counted.requests.some((r) => r.path.endsWith("/fs/write")));
  assertEquals(await second.fs.readText("notes.txt", { maxBytes: 10 }), "kept");
  assertEquals(
    (await second.execute({ command: "echo $MODE" })).stdout,
    "conversation\n",
  );
  await second.destroy();
  assertFalse(server.server.sandboxes.has(name));
});

Deno.test("a conversation resumes across processes through Deno KV (stopped between them)", async () => {
  await using server = await startVercelTestServer();
  const kvPath = `${server.dir}/conversations.kv`;
  const skill = await makeSkill(`${server.dir}/src`, "shared");
  const script = new URL(
    "../../tests/testdata/remote_conversation_process.ts",
    import.meta.url,
  )
    .pathname;
  const args = [
    "vercel",
    server.url,
    TEST_TOKEN,
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
  assertEquals(JSON.parse(second.stdout), JSON.parse(first.stdout));
  const a = JSON.parse(first.stdout);
  assertEquals(
    await Deno.readTextFile(`${a.basePath}/bootstrap.log`),
    "bootstrapped\n",
  );
  assertEquals(
    server.server.calls.filter((c) => c.endsWith("/fs/write")).length,
    1,
  );
  assertEquals(server.server.sandboxes.size, 1);
});

Deno.test("a conversation whose sandbox was deleted starts anew", async () => {
  await using server = await startVercelTestServer();
  const options = {
    conversationId: "expired",
    conversationsRoot: `${server.dir}/conversations`,
    store: new MemoryConversationStore(),
  };
  const first = server.runtime(options);
  await first.execute({ command: "true" });
  const gone = first.sandboxId!;
  await new VercelApiClient({
    baseUrl: server.url,
    apiKey: TEST_TOKEN,
    projectId: "prj_test",
  }).delete(gone);
  const second = server.runtime(options);
  await second.execute({ command: "true" });
  assertNotEquals(second.sandboxId, gone);
});

Deno.test("a missing file is NotFound", async () => {
  await using server = await startVercelTestServer();
  const runtime = server.runtime();
  assertEquals(await runtime.fs.stat("none.txt"), null);
  await assertRejects(
    () => runtime.fs.readText("none.txt", { maxBytes: 10 }),
    Deno.errors.NotFound,
  );
});

Deno.test("fault: a reset in the middle of the log stream is an error, and the command is killed", async () => {
  await using server = await startVercelTestServer();
  const runtime = server.runtime();
  await runtime.execute({ command: "true" });
  const pidFile = `${server.dir}/pid`;
  server.server.faults.add({
    fault: { kind: "reset", afterBytes: 2000 }, // past the first line (the id)
    path: "/v2/sandboxes/sessions/{sid}/cmd",
    times: 1,
  });
  await assertRejects(
    () =>
      runtime.execute({
        command:
          `echo $$ > '${pidFile}'; for i in $(seq 1 100); do echo line-$i; sleep 0.05; done`,
      }),
    Error,
    "it was killed",
  );
  const pid = Number(await Deno.readTextFile(pidFile));
  assert(await waitFor(() => !processAlive(pid)), "the command still runs");
  assertEquals((await runtime.execute({ command: "echo ok" })).stdout, "ok\n");
});

Deno.test("a conversation whose session stopped behind its back (timeout) resumes the sandbox and goes on, files kept", async () => {
  await using server = await startVercelTestServer();
  const runtime = server.runtime({
    conversationId: "idle",
    conversationsRoot: `${server.dir}/conversations`,
    store: new MemoryConversationStore(),
  });
  await runtime.fs.writeText("kept.txt", "still here");
  const sandbox = server.server.sandboxes.get(runtime.sandboxId!)!;
  const first = sandbox.currentSessionId;
  // The service stops the session (as its timeout does).
  const stopped = await fetch(
    `${server.url}/v2/sandboxes/sessions/${first}/stop`,
    { method: "POST", headers: { authorization: `Bearer ${TEST_TOKEN}` } },
  );
  await stopped.body?.cancel();
  const result = await runtime.execute({ command: "cat kept.txt" });
  assertEquals(result.stdout, "still here");
  assertNotEquals(sandbox.currentSessionId, first);
});
