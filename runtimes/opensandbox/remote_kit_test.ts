/**
 * The shared remote runtime base (`../remote/runtime.ts`), exercised through
 * the OpenSandbox backend on the OpenSandbox test server (real HTTP, real
 * bash); here rather than in `remote/`, which may not reach a backend.
 *
 * @module
 */
import {
  assert,
  assertEquals,
  assertRejects,
} from "../../tests/helpers/assert.ts";
import { SkillRuntimeConfig } from "../config.ts";
import { SkillPreparationError } from "../errors.ts";
import { MemoryConversationStore } from "../stores/conversation_store.ts";
import { startTestServer } from "../../tests/helpers/opensandbox.ts";
import { countingFetch, makeSkill } from "../../tests/helpers/remote.ts";
import { RemoteSkillRuntime } from "../remote/runtime.ts";

Deno.test("RemoteSkillRuntime connects once for concurrent first calls", async () => {
  await using server = await startTestServer();
  const counted = countingFetch();
  const runtime = server.runtime({ fetch: counted.fetch });
  assert(runtime instanceof RemoteSkillRuntime);
  const results = await Promise.all([
    runtime.execute({ command: "echo 1" }),
    runtime.execute({ command: "echo 2" }),
    runtime.fs.writeText("x.txt", "x"),
    runtime.connect(),
  ]);
  assertEquals(results[0]?.stdout, "1\n");
  const creates = counted.requests.filter((r) =>
    r.method === "POST" && r.path.endsWith("/v1/sandboxes")
  );
  assertEquals(creates.length, 1);
  assertEquals(server.server.sandboxes.size, 1);
});

Deno.test("RemoteSkillRuntime does not cache a failed connection", async () => {
  await using server = await startTestServer();
  server.faults.add({
    fault: { kind: "status", status: 500 },
    method: "POST",
    path: "/v1/sandboxes",
    times: 1,
  });
  const runtime = server.runtime();
  await assertRejects(() => runtime.execute({ command: "true" }));
  assertEquals((await runtime.execute({ command: "echo up" })).stdout, "up\n");
});

Deno.test("RemoteSkillRuntime: a caller's signal stops its wait for the connection (an aborted result, as for a running command), not the connection", async () => {
  await using server = await startTestServer();
  server.faults.add({
    fault: { kind: "slow", delayMs: 600 },
    method: "POST",
    path: "/v1/sandboxes",
    times: 1,
  });
  const runtime = server.runtime();
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error("stop waiting")), 100);
  const started = performance.now();
  const stopped = await runtime.execute({
    command: "true",
    signal: controller.signal,
  });
  assertEquals(
    [stopped.aborted, stopped.timedOut, stopped.exitCode, stopped.stdout],
    [true, false, -1, ""],
  );
  assert(performance.now() - started < 550, "it waited for the connection");
  assertEquals((await runtime.execute({ command: "echo ok" })).stdout, "ok\n");
  assertEquals(server.server.sandboxes.size, 1);
});

Deno.test("RemoteSkillRuntime merges the environment: option, then skills (later wins), then the request", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime({
    env: { A: "option", B: "option", C: "option" },
  });
  const one = await makeSkill(`${server.dir}/src`, "one");
  const two = await makeSkill(`${server.dir}/src`, "two");
  await runtime.prepare({
    skills: [
      {
        skill: one,
        config: new SkillRuntimeConfig({ env: { B: "one", C: "one" } }),
      },
      { skill: two, config: new SkillRuntimeConfig({ env: { C: "two" } }) },
    ],
  });
  const result = await runtime.execute({
    command: 'echo "$A $B $C $D"',
    env: { D: "request" },
  });
  assertEquals(result.stdout, "option one two request\n");
  assertEquals(runtime.environment(), { A: "option", B: "one", C: "two" });
  await runtime.close();
  await assertRejects(
    () => runtime.prepare({ skills: [{ skill: one }] }),
    Error,
    "Cannot prepare skills: the opensandbox runtime is closed",
  );
});

Deno.test("RemoteSkillRuntime records a skill as prepared only after its bootstrap succeeded", async () => {
  await using server = await startTestServer();
  const store = new MemoryConversationStore();
  const runtime = server.runtime({
    conversationId: "records",
    conversationsRoot: `${server.dir}/conversations`,
    store,
  });
  const skill = await makeSkill(`${server.dir}/src`, "recorded");
  const key = {
    serverUrl: server.url,
    conversationId: "records",
  };
  await assertRejects(
    () =>
      runtime.prepare({
        skills: [{
          skill,
          config: new SkillRuntimeConfig({ bootstrap: ["exit 2"] }),
        }],
      }),
    SkillPreparationError,
  );
  assertEquals((await store.get(key))?.skills, {});
  await runtime.prepare({ skills: [{ skill }] });
  const record = await store.get(key);
  assert(record?.skills.recorded?.digest.startsWith("sha256:"));
});

Deno.test("RemoteSkillRuntime searches inside the sandbox without downloading files", async () => {
  await using server = await startTestServer();
  const counted = countingFetch();
  const runtime = server.runtime({ fetch: counted.fetch });
  for (let i = 0; i < 20; i++) {
    await Deno.writeTextFile(
      `${server.dir}/file-${i}.txt`,
      i === 7 ? "a needle here\n" : "hay\n",
    );
  }
  const result = await runtime.search.grep({
    pattern: "needle",
    outputMode: "files_with_matches",
  });
  assert(result.mode === "files_with_matches");
  assertEquals(result.files, [`${server.dir}/file-7.txt`]);
  assertEquals(
    counted.requests.filter((r) => r.path.endsWith("/files/download")).length,
    0,
  );
});
