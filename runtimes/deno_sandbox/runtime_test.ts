import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import { MemoryConversationStore } from "../stores/conversation_store.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import {
  startDenoSandboxTestServer,
  TEST_TOKEN,
} from "../../tests/helpers/deno_sandbox.ts";
import { DenoSandboxSkillRuntime } from "./mod.ts";
import type { SkillEvent } from "../../observe/events.ts";
import { startDenoSandboxServer } from "../../tests/servers/deno_sandbox.ts";
import { contract } from "../../tests/servers/_deno_sandbox_contract.ts";

Deno.test("deno-sandbox: a conversation's sandbox is labelled with its key, lives past close() with a lifetime the next runtime moves on, and destroy() ends it", async () => {
  await using server = await startDenoSandboxTestServer();
  const store = new MemoryConversationStore();
  const options = { conversationId: "conv-1", store };
  const first = server.runtime(options);
  await first.execute({ command: "echo kept > note.txt" });
  const id = first.sandboxId!;
  await first.close();
  const box = server.server.sandboxes.get(id)!;
  assertEquals(box.status, "running");
  assertEquals(box.labels["skillrun.conversation"], "conv-1");
  assert(typeof box.config.stop_at_ms === "number");
  const second = server.runtime(options);
  const read = await second.execute({ command: "cat note.txt" });
  assertEquals([read.stdout, second.sandboxId], ["kept\n", id]);
  assert(server.server.calls.includes(`PATCH /api/v3/sandbox/${id}`));
  await second.destroy();
  assertEquals(box.status, "stopped");
  await second.close();
});

Deno.test("deno-sandbox: attached by sandboxId, the sandbox is never deleted; a plain runtime's own one is", async () => {
  await using server = await startDenoSandboxTestServer();
  const owner = server.runtime();
  await owner.execute({ command: "true" });
  const id = owner.sandboxId!;
  const attached = server.runtime({ sandboxId: id });
  assertEquals((await attached.execute({ command: "echo hi" })).stdout, "hi\n");
  await attached.close();
  assertEquals(server.server.sandboxes.get(id)!.status, "running");
  await owner.close();
  assertEquals(server.server.sandboxes.get(id)!.status, "stopped");
  const unknown = server.runtime({ sandboxId: "sbx_ord_aaaaaaaaaaaaaaaaaaaa" });
  await assertRejects(
    () => unknown.execute({ command: "true" }),
    Error,
    "does not know it",
  );
  await unknown.close();
});

Deno.test("deno-sandbox: network becomes allow_net (ports 80 and 443 for a bare name), secrets the service's own, the value never in the sandbox", async () => {
  await using server = await startDenoSandboxTestServer();
  await using runtime = server.runtime({
    network: { allow: ["pypi.org", "*.example.com:8443", "10.0.0.1:*"] },
    secrets: {
      API_TOKEN: { hosts: ["api.example.com"], value: "tok-1234567890" },
    },
  });
  const seen = await runtime.execute({ command: 'printf %s "$API_TOKEN"' });
  assert(seen.stdout !== "" && !seen.stdout.includes("tok-1234567890"));
  const box = server.server.sandboxes.get(runtime.sandboxId!)!;
  assertEquals(box.config.allow_net, [
    "pypi.org:80",
    "pypi.org:443",
    "*.example.com:8443",
    "10.0.0.1",
    "api.example.com:443",
  ]);
  assertEquals(box.config.secrets, {
    API_TOKEN: { hosts: ["api.example.com"], value: "tok-1234567890" },
  });
  // Nothing allowed: an empty list; a deny inside an allowed name: refused.
  const none = server.runtime({ network: { allow: [], deny: ["*"] } });
  await none.execute({ command: "true" });
  assertEquals(
    server.server.sandboxes.get(none.sandboxId!)!.config.allow_net,
    [],
  );
  await none.close();
  assertThrows(
    () =>
      new DenoSandboxSkillRuntime({
        network: { allow: ["*.example.com"], deny: ["evil.example.com"] },
      }),
    RangeError,
    "evil.example.com",
  );
  assertThrows(
    () =>
      new DenoSandboxSkillRuntime({
        sandboxId: "sbx_ord_aaaaaaaaaaaaaaaaaaaa",
        network: { allow: [] },
      }),
    TypeError,
    "sandboxId",
  );
  assertThrows(
    () =>
      new DenoSandboxSkillRuntime({
        secrets: { "BAD NAME": { hosts: ["a.example"], value: "v" } },
      }),
    RangeError,
  );
});

Deno.test("deno-sandbox: a wrong token is the console's clear error (INVALID_TOKEN), without the token", async () => {
  await using server = await startDenoSandboxTestServer();
  await using runtime = server.runtime({ token: "ddo_wrong_token_value" });
  const error = await assertRejects(
    () => runtime.execute({ command: "true" }),
    RemoteHttpError,
  );
  assertEquals([error.status, error.code], [401, "INVALID_TOKEN"]);
  assert(!error.message.includes("ddo_wrong_token_value"));
  assertStringIncludes(error.message, "/api/v2/sandboxes");
  assertEquals(TEST_TOKEN.startsWith("ddo_"), true);
});

Deno.test("deno-sandbox: what the runtime sends and the test server answers fit the SDK's contract (params, results, errors)", async () => {
  await using server = startDenoSandboxServer({ token: TEST_TOKEN });
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/SKILL.md`, "---\nname: s\n---\n");
    await using runtime = new DenoSandboxSkillRuntime({
      token: TEST_TOKEN,
      baseUrl: server.url,
      consoleUrl: server.url,
      conversationId: "contract",
      store: new MemoryConversationStore(),
    });
    const run = await runtime.execute({
      command: "echo out; echo err >&2; exit 4",
      env: { X_VALUE: "1" },
    });
    assertEquals([run.stdout, run.stderr, run.exitCode], ["out\n", "err\n", 4]);
    await runtime.fs.writeText("a/b.txt", "hello");
    assertEquals(
      await runtime.fs.readText("a/b.txt", { maxBytes: 10 }),
      "hello",
    );
    assertEquals(await runtime.fs.stat("missing.txt"), null);
    await runtime.fs.download("a/b.txt", `${dir}/back.txt`);
    assertEquals(await Deno.readTextFile(`${dir}/back.txt`), "hello");
    await runtime.prepare({
      skills: [{
        skill: {
          name: "s",
          description: "d",
          basePath: dir,
          location: `${dir}/SKILL.md`,
          instructions: "",
          frontMatter: {},
          warnings: [],
        },
      }],
    });
    const methods = new Set(server.rpc.map((r) => r.method));
    for (const m of ["spawn", "processWait", "lstat", "open", "fileRead"]) {
      assert(methods.has(m), `the runtime never called ${m}`);
    }
    assert(server.rpc.some((r) => (r.result as { error?: unknown }).error));
    const checked = contract;
    if (!checked) return;
    // (The contract is not empty: a spawn without its fields fails it.)
    assertEquals(checked.params("spawn", { command: 1 }).length, 3);
    const problems = server.rpc.flatMap((r) => [
      ...checked.params(r.method, r.params),
      ...checked.result(r.method, r.result),
    ]);
    assertEquals(problems, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno-sandbox: background commands are the kit's: started, polled for their output and exit, killed with what they started", async () => {
  await using server = await startDenoSandboxTestServer();
  await using runtime = server.runtime();
  const chunks: string[] = [];
  const done = await runtime.startBackground({
    command: "echo one; sleep 0.2; echo two; exit 5",
    onStdout: (chunk) => chunks.push(new TextDecoder().decode(chunk)),
  });
  let state = await done!.poll();
  for (let i = 0; i < 100 && state.running; i++) {
    await new Promise((r) => setTimeout(r, 50));
    state = await done!.poll();
  }
  assertEquals([state.running, state.exitCode], [false, 5]);
  assertEquals(chunks.join(""), "one\ntwo\n");
  const pidFile = `${server.dir}/bg.pid`;
  const long = await runtime.startBackground({
    command: `sleep 30 & echo $! > '${pidFile}'; wait`,
  });
  let pid = 0;
  for (let i = 0; i < 100 && !pid; i++) {
    await new Promise((r) => setTimeout(r, 20));
    pid = Number(await Deno.readTextFile(pidFile).catch(() => "0"));
  }
  assert(pid > 0, "the background command never started");
  await long!.kill();
  const alive = () => {
    try {
      Deno.kill(pid, "SIGCONT");
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 100 && alive(); i++) {
    await new Promise((r) => setTimeout(r, 20));
  }
  assertEquals(alive(), false);
});

Deno.test("deno-sandbox: its HTTP calls (the console's list, the deletion) reach onEvent, without the token", async () => {
  await using server = await startDenoSandboxTestServer();
  const events: SkillEvent[] = [];
  const runtime = server.runtime({ onEvent: (event) => events.push(event) });
  await runtime.execute({ command: "true" });
  await runtime.close();
  const calls = events.flatMap((e) =>
    e.type === "http_request" ? [`${e.method} ${new URL(e.url).pathname}`] : []
  );
  assert(calls.includes("GET /api/v2/sandboxes"), calls.join(", "));
  assert(calls.some((c) => c.startsWith("DELETE /api/v3/sandbox/")));
  assert(!JSON.stringify(events).includes(TEST_TOKEN));
});
