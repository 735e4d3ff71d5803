import {
  assert,
  assertEquals,
  assertFalse,
  assertGreater,
  assertNotEquals,
  assertRejects,
} from "../../tests/helpers/assert.ts";
import { runDenoScript } from "../../tests/helpers/testing.ts";
import { SkillRuntimeConfig } from "../config.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import { MemoryConversationStore } from "../stores/conversation_store.ts";
import { E2BApiClient } from "./api.ts";
import { EnvdError } from "./envd.ts";
import { startE2BTestServer, TEST_API_KEY } from "../../tests/helpers/e2b.ts";
import {
  countingFetch,
  makeSkill,
  processAlive,
  waitFor,
} from "../../tests/helpers/remote.ts";

const ENVD_PATHS = /^\/(files|health|process\.|filesystem\.)/;

Deno.test("execute() runs bash through envd with exact output, stderr apart and the exit code", async () => {
  await using server = await startE2BTestServer();
  const runtime = server.runtime();
  const ok = await runtime.execute({ command: "echo hello; printf 'no end'" });
  assertEquals([ok.stdout, ok.stderr, ok.exitCode], ["hello\nno end", "", 0]);
  const failed = await runtime.execute({
    command: "printf 'a\\n\\nb\\r\\n'; echo oops >&2; exit 3",
  });
  assertEquals(
    [failed.stdout, failed.stderr, failed.exitCode],
    ["a\n\nb\n", "oops\n", 3], // \r\n is one line end on every remote kind
  );
  assertFalse(failed.timedOut || failed.aborted);
  assertEquals(
    (await runtime.execute({ command: "pwd" })).stdout,
    `${server.dir}\n`,
  );
  const binary = await runtime.execute({ command: "printf '\\377\\000x'" });
  assertEquals(binary.stdoutBytes, 3);
});

Deno.test("execute() reports a folder envd refuses (invalid_argument) before anything runs", async () => {
  await using server = await startE2BTestServer();
  const runtime = server.runtime();
  const error = await assertRejects(
    () => runtime.execute({ command: "touch ran", cwd: "nope" }),
    EnvdError,
    `Cannot run the command in "${server.dir}/nope"`,
  );
  assertEquals(error.code, "invalid_argument");
  assertEquals(await runtime.fs.stat("ran"), null);
});

Deno.test("the API key goes in X-API-Key, envd's token and routing headers on every envd call, neither in an error", async () => {
  await using server = await startE2BTestServer();
  const counted = countingFetch();
  const runtime = server.runtime({ fetch: counted.fetch });
  await runtime.execute({ command: "true" });
  await runtime.fs.writeText("a.txt", "x");
  await runtime.fs.readText("a.txt", { maxBytes: 10 });
  const sandbox = server.server.sandboxes.get(runtime.sandboxId!)!;
  const envd = counted.requests.filter((r) => ENVD_PATHS.test(r.path));
  assertGreater(envd.length, 3);
  for (const request of envd) {
    if (request.path !== "/health") {
      assertEquals(request.headers.get("x-access-token"), sandbox.token);
    }
    assertEquals(request.headers.get("e2b-sandbox-id"), sandbox.id);
    assertEquals(request.headers.get("e2b-sandbox-port"), "49983");
    assertEquals(request.headers.get("x-api-key"), null);
  }
  const create = counted.requests.find((r) => r.path === "/sandboxes")!;
  assertEquals(create.headers.get("x-api-key"), TEST_API_KEY);

  const wrong = server.runtime({ apiKey: "wrong-key-abcdef" });
  const error = await assertRejects(
    () => wrong.execute({ command: "true" }),
    RemoteHttpError,
  );
  assertEquals(error.status, 401);
  assertFalse(JSON.stringify([error.message, error]).includes("wrong-key"));
});

Deno.test("a sandbox is created from the template with timeout, metadata, environment and network; close() kills only what it created", async () => {
  await using server = await startE2BTestServer();
  const owner = server.runtime({
    env: { LATER: "yes" },
    sandbox: {
      template: "code-interpreter",
      timeoutSeconds: 120,
      metadata: { app: "tests" },
      envVars: { FROM_CREATE: "1" },
      allowInternetAccess: false,
      network: { denyOut: ["0.0.0.0/0"] },
    },
  });
  const result = await owner.execute({ command: 'echo "$FROM_CREATE $LATER"' });
  assertEquals(result.stdout, "1 yes\n");
  const sandbox = server.server.sandboxes.get(owner.sandboxId!)!;
  assertEquals(sandbox.templateID, "code-interpreter");
  assertEquals(sandbox.metadata, { app: "tests" });
  assertEquals(sandbox.allowInternetAccess, false);
  assertEquals(sandbox.network, { denyOut: ["0.0.0.0/0"] });
  const left = sandbox.endAt - Date.now();
  assert(left > 100_000 && left <= 120_000, String(left));
  // Attached by id: never killed.
  const attached = server.runtime({ sandboxId: owner.sandboxId! });
  assertEquals((await attached.execute({ command: "echo hi" })).stdout, "hi\n");
  assertFalse(attached.ownsSandbox);
  await attached.close();
  assert(server.server.sandboxes.has(owner.sandboxId!));
  await owner.close();
  assertFalse(server.server.sandboxes.has(owner.sandboxId!));
  await assertRejects(
    () => server.runtime({ sandboxId: "nope" }).execute({ command: "true" }),
    Error,
    'Cannot attach to sandbox "nope": the server does not know it',
  );
});

Deno.test("a conversation's sandbox is paused on close and resumed on attach: files and running processes kept, nothing uploaded again", async () => {
  await using server = await startE2BTestServer();
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
  await first.execute({
    command: "nohup sleep 300 >/dev/null 2>&1 & echo $! > bg.pid",
  });
  const id = first.sandboxId!;
  await first.close();
  assertEquals(server.server.sandboxes.get(id)?.state, "paused");

  const counted = countingFetch();
  const second = server.runtime({ ...options, fetch: counted.fetch });
  const [b] = await second.prepare({ skills: [{ skill, config }] });
  assertEquals([second.sandboxId, b!.basePath], [id, a!.basePath]);
  assertEquals(server.server.sandboxes.get(id)?.state, "running");
  assert(counted.requests.some((r) => r.path === `/sandboxes/${id}/connect`));
  assertFalse(counted.requests.some((r) => r.path === "/files"));
  assertEquals(await second.fs.readText("notes.txt", { maxBytes: 10 }), "kept");
  assertEquals(
    (await second.execute({ command: "echo $MODE" })).stdout,
    "conversation\n",
  );
  const pid = Number(await second.fs.readText("bg.pid", { maxBytes: 20 }));
  assert(processAlive(pid), "the process started before the pause is gone");
  assertEquals(
    (await Deno.readTextFile(`${b!.basePath}/bootstrap.log`)).trim(),
    "conversation",
  );
  // destroy() removes the record and kills the sandbox.
  await second.destroy();
  assertFalse(server.server.sandboxes.has(id));
  assertEquals(
    await store.get({ serverUrl: server.url, conversationId: "thread-1" }),
    null,
  );
  Deno.kill(pid, "SIGKILL");
});

Deno.test("pauseOnClose: false leaves a conversation's sandbox running", async () => {
  await using server = await startE2BTestServer();
  const runtime = server.runtime({
    conversationId: "kept-running",
    conversationsRoot: `${server.dir}/conversations`,
    store: new MemoryConversationStore(),
    pauseOnClose: false,
  });
  await runtime.execute({ command: "true" });
  await runtime.close();
  assertEquals(
    server.server.sandboxes.get(runtime.sandboxId!)?.state,
    "running",
  );
});

Deno.test("a conversation resumes across processes through Deno KV (paused between them)", async () => {
  await using server = await startE2BTestServer();
  const kvPath = `${server.dir}/conversations.kv`;
  const skill = await makeSkill(`${server.dir}/src`, "shared");
  const script = new URL(
    "../../tests/testdata/remote_conversation_process.ts",
    import.meta.url,
  )
    .pathname;
  const args = [
    "e2b",
    server.url,
    TEST_API_KEY,
    kvPath,
    `${server.dir}/conversations`,
    "across",
    skill.basePath,
    skill.name,
  ];
  const flags = ["--allow-all", "--unstable-kv"];
  const first = await runDenoScript(script, flags, args);
  assertEquals(first.code, 0, first.stderr);
  const a = JSON.parse(first.stdout);
  assertEquals(server.server.sandboxes.get(a.sandboxId)?.state, "paused");
  const second = await runDenoScript(script, flags, args);
  assertEquals(second.code, 0, second.stderr);
  assertEquals(JSON.parse(second.stdout), a);
  const log = await Deno.readTextFile(`${a.basePath}/bootstrap.log`);
  assertEquals(log, "bootstrapped\n");
  assertEquals(
    server.server.calls.filter((c) => c === "POST /files").length,
    1,
  );
  assertEquals(server.server.sandboxes.size, 1);
});

Deno.test("a conversation whose sandbox was killed starts anew in a new sandbox", async () => {
  await using server = await startE2BTestServer();
  const store = new MemoryConversationStore();
  const options = {
    conversationId: "expired",
    conversationsRoot: `${server.dir}/conversations`,
    store,
  };
  const first = server.runtime(options);
  await first.execute({ command: "true" });
  const gone = first.sandboxId!;
  await new E2BApiClient({ baseUrl: server.url, apiKey: TEST_API_KEY }).kill(
    gone,
  );
  const second = server.runtime(options);
  await second.execute({ command: "true" });
  assertNotEquals(second.sandboxId, gone);
});

Deno.test("odd names (quotes, %, backslash, newline, $, unicode) are uploaded, read and listed as themselves", async () => {
  await using server = await startE2BTestServer();
  const runtime = server.runtime();
  const names = [
    "a b.txt",
    'q"uote.txt',
    "per%20cent.txt",
    "back\\slash.txt",
    "new\nline.txt",
    "$HOME.txt",
    "$(id).txt",
    "ünï €.txt",
  ];
  const files = Object.fromEntries(names.map((name) => [name, `is ${name}`]));
  const skill = await makeSkill(`${server.dir}/src`, "odd", files);
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  for (const name of names) {
    assertEquals(
      await Deno.readTextFile(`${prepared!.basePath}/${name}`),
      `is ${name}`,
    );
    assertEquals(
      await runtime.fs.readText(`${prepared!.basePath}/${name}`, {
        maxBytes: 100,
      }),
      `is ${name}`,
    );
  }
  const listed = await runtime.fs.list(prepared!.basePath);
  for (const name of names) {
    assert(listed.entries.some((e) => e.name === name), name);
  }
});

Deno.test("readText() refuses a file over the limit", async () => {
  await using server = await startE2BTestServer();
  const runtime = server.runtime();
  await Deno.writeFile(`${server.dir}/big.bin`, new Uint8Array(5_000_000));
  await assertRejects(() => runtime.fs.readText("big.bin", { maxBytes: 1000 }));
});

Deno.test("fault: a reset in the middle of the process stream is an error, and the command is stopped", async () => {
  await using server = await startE2BTestServer();
  const runtime = server.runtime();
  await runtime.execute({ command: "true" });
  const pidFile = `${server.dir}/pid`;
  server.server.faults.add({
    fault: { kind: "reset", afterBytes: 40 },
    path: "/process.Process/Start",
    times: 1,
  });
  await assertRejects(
    () =>
      runtime.execute({
        command:
          `echo $$ > '${pidFile}'; for i in $(seq 1 100); do echo line-$i; sleep 0.05; done`,
      }),
    EnvdError,
    "it was stopped",
  );
  const pid = Number(await Deno.readTextFile(pidFile));
  assert(await waitFor(() => !processAlive(pid)), "the command still runs");
  // The runtime goes on.
  assertEquals((await runtime.execute({ command: "echo ok" })).stdout, "ok\n");
});

Deno.test("fault: 500 on create names the call; 503 on a file call is retried", async () => {
  await using server = await startE2BTestServer();
  server.server.faults.add({
    fault: { kind: "status", status: 500 },
    method: "POST",
    path: "/sandboxes",
    times: 1,
  });
  const runtime = server.runtime();
  const error = await assertRejects(
    () => runtime.execute({ command: "true" }),
    RemoteHttpError,
  );
  assertEquals(error.status, 500);
  assertEquals(server.server.sandboxes.size, 0);
  await runtime.execute({ command: "true" });
  await Deno.writeTextFile(`${server.dir}/f.txt`, "x");
  server.server.faults.add({
    fault: { kind: "status", status: 503 },
    path: "/filesystem.Filesystem/Stat",
    times: 1,
  });
  assertEquals((await runtime.fs.stat("f.txt"))?.size, 1);
});

Deno.test("fault: a download cut short is resumed or fails leaving no file", async () => {
  await using server = await startE2BTestServer();
  const runtime = server.runtime();
  const data = crypto.getRandomValues(new Uint8Array(60_000));
  await Deno.writeFile(`${server.dir}/data.bin`, data);
  for (
    const fault of [
      { kind: "reset", afterBytes: 1000 },
      { kind: "truncate", keepBytes: 1000 },
      { kind: "ignore-range" },
    ] as const
  ) {
    server.server.faults.add({
      fault,
      path: "/files",
      method: "GET",
      times: 1,
    });
    const target = `${server.dir}/out/${fault.kind}.bin`;
    try {
      await runtime.fs.download("data.bin", target);
      assertEquals(await Deno.readFile(target), data);
    } catch {
      await assertRejects(() => Deno.stat(target));
    }
    server.server.faults.clear();
  }
});

Deno.test("a sandbox paused behind the runtime's back (auto-pause, another runtime's close) is resumed and the call goes on", async () => {
  await using server = await startE2BTestServer();
  const runtime = server.runtime({
    conversationId: "paused-behind",
    conversationsRoot: `${server.dir}/conversations`,
    store: new MemoryConversationStore(),
  });
  await runtime.fs.writeText("kept.txt", "still here");
  const api = new E2BApiClient({ baseUrl: server.url, apiKey: TEST_API_KEY });
  await api.pause(runtime.sandboxId!);
  assertEquals(
    (await runtime.execute({ command: "cat kept.txt" })).stdout,
    "still here",
  );
  await api.pause(runtime.sandboxId!);
  assertEquals(
    await runtime.fs.readText("kept.txt", { maxBytes: 20 }),
    "still here",
  );
  assertEquals(
    server.server.sandboxes.get(runtime.sandboxId!)?.state,
    "running",
  );
});
