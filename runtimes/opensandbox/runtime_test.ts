import {
  assert,
  assertEquals,
  assertFalse,
  assertGreater,
  assertInstanceOf,
  assertLess,
  assertRejects,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import { posix } from "../../_internal/std.ts";
import { SkillRuntimeConfig } from "../config.ts";
import { SkillPreparationError } from "../errors.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import { MemoryConversationStore } from "../stores/conversation_store.ts";
import { LifecycleClient } from "./lifecycle.ts";
import { SandboxCommandError } from "./execd.ts";
import {
  startTestServer,
  TEST_API_KEY,
} from "../../tests/helpers/opensandbox.ts";
import { OpenSandboxSkillRuntime } from "./runtime.ts";
import {
  countingFetch,
  makeSkill,
  waitFor,
} from "../../tests/helpers/remote.ts";

Deno.test("execute() runs bash in the sandbox with exact output, stderr and the exit code", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const ok = await runtime.execute({ command: "echo hello; printf 'no end'" });
  assertEquals([ok.stdout, ok.stderr, ok.exitCode], ["hello\nno end", "", 0]);
  const failed = await runtime.execute({
    command: "printf 'a\\n\\nb\\n'; echo oops >&2; exit 3",
  });
  assertEquals(
    [failed.stdout, failed.stderr, failed.exitCode],
    ["a\n\nb\n", "oops\n", 3],
  );
  assertFalse(failed.timedOut || failed.aborted);
  const pwd = await runtime.execute({ command: "pwd" });
  assertEquals(pwd.stdout, `${server.dir}\n`);
});

Deno.test("execute() keeps the start and the end of long output and counts every byte", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime({ maxOutputBytes: 1000 });
  const result = await runtime.execute({
    command: "for i in $(seq 1 5000); do echo line-$i; done",
  });
  assert(result.stdoutTruncated);
  assert(result.stdout.startsWith("line-1\nline-2\n"));
  assert(result.stdout.endsWith("line-4999\nline-5000\n"));
  const expected = Array.from({ length: 5000 }, (_, i) => `line-${i + 1}\n`)
    .join("").length;
  assertEquals(result.stdoutBytes, expected);
});

Deno.test("execute() reports a folder the sandbox refuses, before anything runs", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const error = await assertRejects(
    () => runtime.execute({ command: "touch ran", cwd: "nope" }),
    SandboxCommandError,
    `Cannot run the command in "${server.dir}/nope": the sandbox refused it`,
  );
  assertEquals(error.reason, "refused");
  assertEquals(await runtime.fs.stat("ran"), null);
});

Deno.test("the API key goes in OPEN-SANDBOX-API-KEY to the lifecycle server and never into an error", async () => {
  await using server = await startTestServer();
  const counted = countingFetch();
  const runtime = server.runtime({ fetch: counted.fetch });
  await runtime.execute({ command: "true" });
  const create = counted.requests.find((r) =>
    r.method === "POST" && r.path.endsWith("/v1/sandboxes")
  );
  assertEquals(create?.headers.get("OPEN-SANDBOX-API-KEY"), TEST_API_KEY);

  const wrong = server.runtime({ apiKey: "wrong-key-abcdef" });
  const error = await assertRejects(
    () => wrong.execute({ command: "true" }),
    RemoteHttpError,
  );
  assertEquals(error.status, 401);
  assertFalse(error.message.includes("wrong-key-abcdef"));
  assertFalse(JSON.stringify(error).includes("wrong-key-abcdef"));
});

Deno.test("attaching to an unknown sandbox is a clear error; the runtime never deletes an attached sandbox", async () => {
  await using server = await startTestServer();
  await assertRejects(
    () =>
      server.runtime({ sandboxId: "no-such-sandbox" }).execute({
        command: "true",
      }),
    Error,
    'Cannot attach to sandbox "no-such-sandbox": the server does not know it',
  );
  const owner = server.runtime();
  await owner.execute({ command: "true" });
  const id = owner.sandboxId!;
  assert(owner.ownsSandbox);
  const attached = server.runtime({ sandboxId: id });
  assertEquals((await attached.execute({ command: "echo hi" })).stdout, "hi\n");
  assertFalse(attached.ownsSandbox);
  await attached.close();
  await attached.close();
  const lifecycle = new LifecycleClient({
    baseUrl: server.url,
    apiKey: TEST_API_KEY,
  });
  assertEquals((await lifecycle.get(id))?.state, "Running");
  await owner.close();
  await owner.close();
  assertEquals(await lifecycle.get(id), null);
  await assertRejects(
    () => owner.execute({ command: "true" }),
    Error,
    "Cannot run a command: the opensandbox runtime is closed",
  );
});

Deno.test("prepare() uploads several skills in order, bootstraps after the upload only, and is idempotent", async () => {
  await using server = await startTestServer();
  const counted = countingFetch();
  const runtime = server.runtime({ fetch: counted.fetch });
  const src = `${server.dir}/src`;
  const skills = await Promise.all(
    ["one", "two", "three"].map((name) =>
      makeSkill(src, name, { "scripts/run.sh": `echo ${name}\n` })
    ),
  );
  const config = (name: string) =>
    new SkillRuntimeConfig({
      env: { WHO: name },
      bootstrap: [`echo "$WHO" >> ../bootstrap.log`],
    });
  const request = {
    skills: skills.map((skill) => ({ skill, config: config(skill.name) })),
  };
  const prepared = await runtime.prepare(request);
  assertEquals(prepared.map((p) => p.name), ["one", "two", "three"]);
  for (const p of prepared) {
    assert(p.basePath.startsWith(`${server.dir}/.skills/${p.name}-`));
    assertEquals(
      await Deno.readTextFile(`${p.basePath}/scripts/run.sh`),
      `echo ${p.name}\n`,
    );
  }
  const uploads = () =>
    counted.requests.filter((r) => r.path.endsWith("/files/upload")).length;
  assertEquals(uploads(), 3);
  await runtime.prepare(request);
  assertEquals(uploads(), 3);
  assertEquals(
    await Deno.readTextFile(`${server.dir}/.skills/bootstrap.log`),
    "one\ntwo\nthree\n",
  );
  // The skill prepared last wins, in every later command.
  assertEquals(
    (await runtime.execute({ command: "echo $WHO" })).stdout,
    "three\n",
  );
});

Deno.test("a failed or timed-out bootstrap is not cached: a later call uploads and runs it again", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const skill = await makeSkill(`${server.dir}/src`, "flaky");
  const flag = `${server.dir}/ready`;
  const config = new SkillRuntimeConfig({
    bootstrap: [
      { command: `test -e '${flag}' || exit 7`, timeoutMs: 10_000 },
      // Room for a loaded machine's process start (300 ms was not).
      { command: `test -e '${flag}.slow' || sleep 30`, timeoutMs: 1500 },
    ],
  });
  const failed = await assertRejects(
    () => runtime.prepare({ skills: [{ skill, config }] }),
    SkillPreparationError,
    "bootstrap command 1 of 2 exited with code 7",
  );
  assertEquals(failed.exitCode, 7);
  await Deno.writeTextFile(flag, "");
  const timedOut = await assertRejects(
    () => runtime.prepare({ skills: [{ skill, config }] }),
    SkillPreparationError,
    "bootstrap command 2 of 2 timed out after 1500 ms",
  );
  assert(timedOut.timedOut);
  await Deno.writeTextFile(`${flag}.slow`, "");
  const [prepared] = await runtime.prepare({ skills: [{ skill, config }] });
  assert(prepared!.basePath.startsWith(`${server.dir}/.skills/flaky-`));
});

Deno.test("uploads leave secrets out, skip symlinks and keep the executable bit", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const outside = `${server.dir}/outside.txt`;
  await Deno.writeTextFile(outside, "outside the skill");
  const skill = await makeSkill(`${server.dir}/src`, "secretive", {
    ".env": "TOKEN=abc",
    "id_rsa": "KEY",
    "keys/server.pem": "PEM",
    "run.sh": "echo run\n",
  });
  await Deno.chmod(`${skill.basePath}/run.sh`, 0o755);
  await Deno.symlink(outside, `${skill.basePath}/link.txt`);
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  const base = prepared!.basePath;
  for (const name of [".env", "id_rsa", "keys/server.pem", "link.txt"]) {
    assertEquals(await runtime.fs.stat(`${base}/${name}`), null, name);
  }
  assertEquals((await runtime.fs.stat(`${base}/run.sh`))?.executable, true);
  assertEquals(
    (await runtime.execute({ command: "./run.sh", cwd: base }))
      .stdout,
    "run\n",
  );
});

Deno.test("paths with spaces, quotes, $() and backticks mean themselves", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const name = `we'ird "dir" $(touch pwned) \`touch pwned2\``;
  await runtime.fs.writeText(`${name}/file $(x).txt`, "content é");
  assertEquals(
    await Deno.readTextFile(`${server.dir}/${name}/file $(x).txt`),
    "content é",
  );
  assertEquals(
    await runtime.fs.readText(`${name}/file $(x).txt`, { maxBytes: 100 }),
    "content é",
  );
  const result = await runtime.execute({
    command: "ls",
    cwd: name,
  });
  assertEquals(result.stdout, "file $(x).txt\n");
  const skill = await makeSkill(`${server.dir}/src dir's $(x)`, "odd", {
    "a b/c 'd'.txt": "x",
  });
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  assertEquals(
    await runtime.fs.readText(`${prepared!.basePath}/a b/c 'd'.txt`, {
      maxBytes: 10,
    }),
    "x",
  );
  for (const pwned of ["pwned", "pwned2"]) {
    assertEquals(await runtime.fs.stat(pwned), null);
  }
});

Deno.test("remote paths are POSIX: skill folders and uploaded files use / whatever the host writes", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const skill = await makeSkill(`${server.dir}/src`, "posix", {
    "deep/er/file.txt": "x",
  });
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  const base = prepared!.basePath;
  assertEquals(posix.normalize(base), base);
  assertFalse(base.includes("\\"));
  const { entries } = await runtime.fs.list(base, { depth: 3 });
  assert(entries.some((e) => e.path === `${base}/deep/er/file.txt`));
  // A backslash is a character of a POSIX name, never a separator.
  await runtime.fs.writeText("a\\b.txt", "one file");
  assertEquals(await Deno.readTextFile(`${server.dir}/a\\b.txt`), "one file");
});

Deno.test("readText() refuses a file over the limit while streaming, without reading it all", async () => {
  await using server = await startTestServer();
  const counted = countingFetch();
  const runtime = server.runtime({ fetch: counted.fetch });
  await runtime.execute({ command: "head -c 64000000 /dev/zero > big.bin" });
  const before = counted.bytesRead();
  await assertRejects(
    () => runtime.fs.readText("big.bin", { maxBytes: 1024 }),
    Error,
    "1 KiB",
  );
  assertLess(counted.bytesRead() - before, 16 * 1024 * 1024);
});

Deno.test("close() deletes only the sandbox this runtime created; destroy() removes a conversation", async () => {
  await using server = await startTestServer();
  const lifecycle = new LifecycleClient({
    baseUrl: server.url,
    apiKey: TEST_API_KEY,
  });
  const store = new MemoryConversationStore();
  const options = {
    conversationId: "kept",
    conversationsRoot: `${server.dir}/conversations`,
    store,
  };
  const conversation = server.runtime(options);
  await conversation.execute({ command: "true" });
  const id = conversation.sandboxId!;
  assertFalse(conversation.ownsSandbox);
  await conversation.close();
  assertEquals((await lifecycle.get(id))?.state, "Running");
  const again = server.runtime(options);
  await again.execute({ command: "true" });
  assertEquals(again.sandboxId, id);
  await again.destroy();
  assertEquals(await lifecycle.get(id), null);
  assertEquals(
    await store.get({ serverUrl: lifecycle.baseUrl, conversationId: "kept" }),
    null,
  );
});

Deno.test("a runtime of a server that stopped reports the refused connection", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime({ requestTimeoutMs: 2_000 });
  await runtime.execute({ command: "true" });
  await server.stop();
  const error = await assertRejects(
    () => runtime.fs.stat("x"),
    RemoteHttpError,
  );
  assertEquals(error.status, 0);
  assertInstanceOf(error, Error);
});

Deno.test("a Pending sandbox is waited for; an endpoint with a path and headers is used on every execd call", async () => {
  await using server = await startTestServer({
    provisioning: "kubernetes",
    pendingMs: 400,
    endpointPath: "/proxy/{port}",
    endpointHeaders: { "X-Sandbox-Route": "route-token-123" },
  });
  const counted = countingFetch();
  const runtime = server.runtime({ fetch: counted.fetch });
  const result = await runtime.execute({ command: "echo ready" });
  assertEquals(result.stdout, "ready\n");
  const execd = counted.requests.filter((r) => r.path.startsWith("/proxy/"));
  assert(execd.length >= 2);
  for (const request of execd) {
    assertEquals(request.headers.get("X-Sandbox-Route"), "route-token-123");
  }
  // The lifecycle key does not travel to execd.
  assert(execd.every((r) => !r.headers.has("OPEN-SANDBOX-API-KEY")));
});

Deno.test("the sandbox's expiry is renewed while the runtime is in use", async () => {
  await using server = await startTestServer();
  const counted = countingFetch();
  const runtime = server.runtime({
    fetch: counted.fetch,
    renewIntervalMs: 100,
  });
  await runtime.execute({ command: "true" });
  const before = server.server.sandboxes.get(runtime.sandboxId!)!.expiresAt!;
  await new Promise((resolve) => setTimeout(resolve, 250));
  await runtime.execute({ command: "true" });
  const expiry = () =>
    server.server.sandboxes.get(runtime.sandboxId!)!.expiresAt!.getTime();
  assert(await waitFor(() => expiry() > before.getTime()));
  assert(counted.requests.some((r) => r.path.endsWith("/renew-expiration")));
  const after = new Date(expiry());
  assertGreater(after.getTime(), before.getTime());
});

Deno.test("execute() reports a process the sandbox could not start as such", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  // With no usable PATH, the sandbox cannot even start bash.
  const error = await assertRejects(
    () => runtime.execute({ command: "true", env: { PATH: "/nonexistent" } }),
    SandboxCommandError,
    "Cannot run the command: the sandbox could not start it: fork/exec",
  );
  assertEquals(error.reason, "start");
});

Deno.test("execute() streams output to onStdout/onStderr as it arrives and refuses stdin", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const decoder = new TextDecoder();
  let out = "";
  let err = "";
  let seenBeforeEnd = "";
  const result = await runtime.execute({
    command: "echo one; sleep 0.3; echo two >&2; printf three",
    onStdout: (chunk) => {
      out += decoder.decode(chunk);
      if (out === "one") seenBeforeEnd = out;
    },
    onStderr: (chunk) => err += decoder.decode(chunk),
  });
  assertEquals(seenBeforeEnd, "one");
  assertEquals([out, err], [result.stdout, result.stderr]);
  assertEquals([out, err], ["one\nthree", "two\n"]);
  await assertRejects(
    () =>
      runtime.execute({
        command: "cat",
        stdin: ReadableStream.from([new Uint8Array([1])]),
      }),
    TypeError,
    "Cannot run a command with stdin: the opensandbox runtime cannot pipe standard input",
  );
});

Deno.test("opensandbox refuses skillsRoot / (any spelling) as it refuses conversationsRoot /", () => {
  for (const skillsRoot of ["/", "//", "/./", "/tmp/.."]) {
    assertThrows(
      () =>
        new OpenSandboxSkillRuntime({
          baseUrl: "http://127.0.0.1:9",
          apiKey: TEST_API_KEY,
          skillsRoot,
        }),
      TypeError,
      "it must be an absolute POSIX path other than /",
    );
  }
  new OpenSandboxSkillRuntime({
    baseUrl: "http://127.0.0.1:9",
    apiKey: TEST_API_KEY,
    skillsRoot: "/s",
  });
});

Deno.test("opensandbox refuses a base URL that is not http(s) or carries credentials, never showing them", () => {
  for (
    const baseUrl of ["ftp://user:s3cret@h/", "http://user:s3cret@h/", "nope"]
  ) {
    const error = assertThrows(
      () => new OpenSandboxSkillRuntime({ baseUrl, apiKey: TEST_API_KEY }),
      TypeError,
      "Cannot use base URL",
    );
    assert(!error.message.includes("s3cret"), error.message);
  }
});
