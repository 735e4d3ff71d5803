import {
  assert,
  assertEquals,
  assertFalse,
  assertGreater,
  assertInstanceOf,
  assertLess,
  assertNotEquals,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import { liveGroupMembers } from "../../tests/helpers/testing.ts";
import { posix } from "../../_internal/std.ts";
import { SkillRuntimeConfig } from "../config.ts";
import { SkillPreparationError, WorkspaceEscapeError } from "../errors.ts";
import { RemoteHttpError } from "../remote/errors.ts";
import { MemoryConversationStore } from "../stores/conversation_store.ts";
import { startAioTestServer, TEST_TOKEN } from "../../tests/helpers/aio.ts";
import { AioSkillRuntime } from "./runtime.ts";
import {
  countingFetch,
  makeSkill,
  waitFor,
} from "../../tests/helpers/remote.ts";
import { skillCorpus } from "../../tests/helpers/skill_fixture.ts";

// Real fonts when ../shared is beside the clone, else generated ones.
const corpus = await skillCorpus();

Deno.test("aio execute() keeps stdout and stderr apart with the exit code, env and cwd", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime({ env: { BASE: "b" } });
  await Deno.mkdir(`${aio.dir}/sub`);
  const result = await runtime.execute({
    command: 'printf "%s" "$BASE$EXTRA"; pwd >&2; exit 4',
    cwd: "sub",
    env: { EXTRA: "x" },
  });
  assertEquals(result.stdout, "bx");
  assertEquals(result.stderr, `${aio.dir}/sub\n`);
  assertEquals(result.exitCode, 4);
  assertFalse(result.timedOut || result.aborted);
  assertEquals([result.stdoutBytes, result.stderrBytes], [
    2,
    aio.dir.length + 5,
  ]);
  // Each command is a new process: cd and export do not persist.
  await runtime.execute({ command: "cd /; export GONE=1" });
  const after = await runtime.execute({ command: 'pwd; echo "[$GONE]"' });
  assertEquals(after.stdout, `${aio.dir}\n[]\n`);
});

Deno.test("aio execute(): a \\r ends a line (\\r\\n once), the last one too, as on every remote kind", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime();
  const result = await runtime.execute({
    command:
      "printf 'progress 50%%\\rprogress 100%%\\r'; printf 'x\\r\\ny\\r' >&2",
  });
  assertEquals(
    [result.stdout, result.stderr, result.exitCode],
    ["progress 50%\nprogress 100%\n", "x\ny\n", 0],
  );
});

Deno.test("aio execute() stops the remote command at our deadline, through the soft timeout, and everything it started", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime({ pollSeconds: 0.2 });
  const started = performance.now();
  const pending = runtime.execute({
    command: "sleep 30 & echo started; sleep 30",
    timeoutMs: 1_500,
  });
  assert(await waitFor(() => aio.server.runningPids().length === 1));
  const [pid] = aio.server.runningPids();
  const result = await pending;
  assert(result.timedOut);
  assertFalse(result.aborted);
  assertEquals(result.exitCode, -1);
  assertEquals(result.stdout, "started\n");
  assertLess(performance.now() - started, 4_000);
  // The soft timeout answered "running" and we polled; then we killed.
  assertGreater(aio.server.requestCount("/v1/bash/output"), 1);
  assertEquals(aio.server.requestCount("/v1/bash/kill"), 1);
  assertEquals(liveGroupMembers(pid!), []);
  // A command longer than one soft timeout still completes with all output.
  const slow = await runtime.execute({
    command: "printf 'ä'; sleep 0.5; printf 'ö'; sleep 0.5; echo end",
  });
  assertEquals(slow.stdout, "äöend\n");
  assertEquals(slow.stdoutBytes, 8);
  assertEquals(slow.exitCode, 0);
});

Deno.test("aio execute() kills the remote command when the caller aborts", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime();
  const controller = new AbortController();
  const pending = runtime.execute({
    command: "trap '' TERM; sleep 30",
    signal: controller.signal,
  });
  assert(await waitFor(() => aio.server.runningPids().length === 1));
  const [pid] = aio.server.runningPids();
  controller.abort();
  const result = await pending;
  assert(result.aborted);
  assertFalse(result.timedOut);
  assertEquals(result.exitCode, -1);
  assertEquals(liveGroupMembers(pid!), []);
  assertEquals(aio.server.requestCount("/v1/bash/exec"), 1);
});

Deno.test("aio execute() keeps the start and the end of long output and counts every byte", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime({ maxOutputBytes: 1000 });
  const result = await runtime.execute({
    command:
      "printf 'HEAD'; head -c 200000 /dev/zero | tr '\\0' x; printf 'TAIL'",
  });
  assert(result.stdoutTruncated);
  assertEquals(result.stdoutBytes, 200_008);
  assert(result.stdout.startsWith("HEADxxx"));
  assert(result.stdout.endsWith("xxxTAIL"));
  assertLess(result.stdout.length, 1_200);
});

Deno.test("aio: no request before real use, none for a refused path, none for a second preparation", async () => {
  await using aio = await startAioTestServer();
  const store = new MemoryConversationStore();
  const runtime = aio.runtime({
    conversationId: "quiet",
    conversationsRoot: `${aio.dir}/conversations`,
    store,
  });
  assertEquals(runtime.environment(), {});
  await assertRejects(
    () => runtime.fs.stat("/etc/passwd"),
    WorkspaceEscapeError,
  );
  await assertRejects(
    () => runtime.execute({ command: "true", cwd: "../.." }),
    WorkspaceEscapeError,
  );
  assertEquals(aio.server.requestCount(), 0);
  const skill = await makeSkill(`${aio.dir}/src`, "once", { "a.txt": "a" });
  const config = new SkillRuntimeConfig({
    bootstrap: ["echo boot >> ../boot.log"],
  });
  await runtime.prepare({ skills: [{ skill, config }] });
  const count = aio.server.requestCount();
  assertGreater(count, 0);
  await runtime.prepare({ skills: [{ skill, config }] });
  assertEquals(aio.server.requestCount(), count);
  // Another runtime of the same conversation reads the record: no upload.
  const again = aio.runtime({
    conversationId: "quiet",
    conversationsRoot: `${aio.dir}/conversations`,
    store,
  });
  await again.prepare({ skills: [{ skill, config }] });
  assertEquals(aio.server.requestCount("/v1/file/upload"), 2);
  assertEquals(
    await Deno.readTextFile(`${aio.dir}/conversations/quiet/skills/boot.log`),
    "boot\n",
  );
  const unused = aio.runtime();
  await unused.close();
  await unused.close();
  assertEquals(aio.server.requestCount("/v1/bash/sessions/x/close"), 0);
});

Deno.test("aio prepare() uploads several skills in order, bootstraps after the upload only, with config env", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime();
  const src = `${aio.dir}/src`;
  const skills = await Promise.all(
    ["one", "two", "three"].map((name) =>
      makeSkill(src, name, { "scripts/run.sh": `echo ${name}\n` })
    ),
  );
  const request = {
    skills: skills.map((skill) => ({
      skill,
      config: new SkillRuntimeConfig({
        env: { WHO: skill.name },
        bootstrap: [`echo "$WHO" >> ../bootstrap.log`],
      }),
    })),
  };
  const prepared = await runtime.prepare(request);
  assertEquals(prepared.map((p) => p.name), ["one", "two", "three"]);
  for (const p of prepared) {
    assert(p.basePath.startsWith(`${aio.dir}/.skills/${p.name}-`));
    assertEquals(
      await Deno.readTextFile(`${p.basePath}/scripts/run.sh`),
      `echo ${p.name}\n`,
    );
  }
  assertEquals(aio.server.requestCount("/v1/file/upload"), 6);
  await runtime.prepare(request);
  assertEquals(aio.server.requestCount("/v1/file/upload"), 6);
  assertEquals(
    await Deno.readTextFile(`${aio.dir}/.skills/bootstrap.log`),
    "one\ntwo\nthree\n",
  );
  assertEquals(
    (await runtime.execute({ command: "echo $WHO" })).stdout,
    "three\n",
  );
});

Deno.test("aio: a failed or timed-out bootstrap is not cached", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime();
  const skill = await makeSkill(`${aio.dir}/src`, "flaky");
  const flag = `${aio.dir}/ready`;
  const config = new SkillRuntimeConfig({
    bootstrap: [
      { command: `test -e '${flag}' || exit 7`, timeoutMs: 10_000 },
      { command: `test -e '${flag}.slow' || sleep 30`, timeoutMs: 400 },
    ],
  });
  const failed = await assertRejects(
    () => runtime.prepare({ skills: [{ skill, config }] }),
    SkillPreparationError,
  );
  assertEquals(failed.exitCode, 7);
  await Deno.writeTextFile(flag, "");
  const timedOut = await assertRejects(
    () => runtime.prepare({ skills: [{ skill, config }] }),
    SkillPreparationError,
  );
  assert(timedOut.timedOut);
  await Deno.writeTextFile(`${flag}.slow`, "");
  const [prepared] = await runtime.prepare({ skills: [{ skill, config }] });
  assert(prepared!.basePath.startsWith(`${aio.dir}/.skills/flaky-`));
  assertEquals(aio.server.runningPids(), []);
});

Deno.test("aio: binary files go up and come back byte-identical", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime();
  const canvas = `${corpus.skill("canvas-design")}/`;
  const fonts = `${canvas}canvas-fonts`;
  const names: string[] = [];
  for await (const entry of Deno.readDir(fonts)) {
    if (entry.name.endsWith(".ttf")) names.push(entry.name);
  }
  names.sort();
  const files: Record<string, Uint8Array> = {};
  for (const name of names.slice(0, 4)) {
    files[`fonts/${name}`] = await Deno.readFile(`${fonts}/${name}`);
  }
  const all = new Uint8Array(256 * 64);
  for (let i = 0; i < all.length; i++) all[i] = i % 256;
  files["data/all-bytes.bin"] = all;
  const skill = await makeSkill(`${aio.dir}/src`, "binary", files);
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  for (const [path, bytes] of Object.entries(files)) {
    const remote = `${prepared!.basePath}/${path}`;
    assertEquals(await Deno.readFile(remote), bytes, path);
    assertEquals(await runtime.fs.readBytes(remote), bytes, path);
    const local = `${aio.dir}/back/${path}`;
    const result = await runtime.fs.download(remote, local);
    assertEquals(result.bytes, bytes.length);
    assertEquals(await Deno.readFile(local), bytes);
  }
});

Deno.test("aio: uploads leave secrets out, skip symlinks and keep the executable bit", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime();
  const outside = `${aio.dir}/outside.txt`;
  await Deno.writeTextFile(outside, "outside the skill");
  const skill = await makeSkill(`${aio.dir}/src`, "secretive", {
    ".env": "TOKEN=abc",
    "id_rsa": "KEY",
    "run.sh": "echo run\n",
  });
  await Deno.chmod(`${skill.basePath}/run.sh`, 0o755);
  await Deno.symlink(outside, `${skill.basePath}/link.txt`);
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  const base = prepared!.basePath;
  for (const name of [".env", "id_rsa", "link.txt"]) {
    assertEquals(await runtime.fs.stat(`${base}/${name}`), null, name);
  }
  assertEquals((await runtime.fs.stat(`${base}/run.sh`))?.executable, true);
  assertEquals(
    (await runtime.execute({ command: "./run.sh", cwd: base }))
      .stdout,
    "run\n",
  );
  // A symlink in the container is reported as one, not followed.
  await Deno.symlink(outside, `${aio.dir}/made-link`);
  assertEquals((await runtime.fs.stat("made-link"))?.type, "symlink");
  const { entries } = await runtime.fs.list(".");
  assertEquals(entries.find((e) => e.name === "made-link")?.type, "symlink");
});

Deno.test("aio: paths with spaces, quotes, $() and backticks mean themselves", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime();
  const name = `we'ird "dir" $(touch pwned) \`touch pwned2\``;
  await runtime.fs.writeText(`${name}/file $(x).txt`, "content é");
  assertEquals(
    await Deno.readTextFile(`${aio.dir}/${name}/file $(x).txt`),
    "content é",
  );
  assertEquals(
    await runtime.fs.readText(`${name}/file $(x).txt`, { maxBytes: 100 }),
    "content é",
  );
  assertEquals((await runtime.fs.stat(`${name}/file $(x).txt`))?.size, 10);
  const result = await runtime.execute({
    command: "ls",
    cwd: name,
  });
  assertEquals(result.stdout, "file $(x).txt\n");
  const skill = await makeSkill(`${aio.dir}/src dir's $(x)`, "odd", {
    "a b/c 'd'.txt": "x",
  });
  await Deno.chmod(`${skill.basePath}/a b/c 'd'.txt`, 0o700);
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  assertEquals(
    await runtime.fs.readText(`${prepared!.basePath}/a b/c 'd'.txt`, {
      maxBytes: 10,
    }),
    "x",
  );
  assertEquals(
    (await Deno.stat(`${prepared!.basePath}/a b/c 'd'.txt`)).mode! & 0o777,
    0o700,
  );
  for (const pwned of ["pwned", "pwned2"]) {
    assertEquals(await runtime.fs.stat(pwned), null);
  }
  for (const pwned of ["pwned", "pwned2"]) {
    assertEquals(await Deno.lstat(`/${pwned}`).catch(() => null), null);
  }
});

Deno.test("aio: remote paths are POSIX", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime();
  const skill = await makeSkill(`${aio.dir}/src`, "posix", {
    "deep/er/file.txt": "x",
  });
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  const base = prepared!.basePath;
  assertEquals(posix.normalize(base), base);
  assertFalse(base.includes("\\"));
  const { entries } = await runtime.fs.list(base, { depth: 3 });
  assert(entries.some((e) => e.path === `${base}/deep/er/file.txt`));
  await runtime.fs.writeText("a\\b.txt", "one file");
  assertEquals(await Deno.readTextFile(`${aio.dir}/a\\b.txt`), "one file");
});

Deno.test("aio readText() refuses a file over the limit while streaming", async () => {
  await using aio = await startAioTestServer();
  const counted = countingFetch();
  const runtime = aio.runtime({ fetch: counted.fetch });
  await runtime.execute({ command: "head -c 64000000 /dev/zero > big.bin" });
  const before = counted.bytesRead();
  await assertRejects(
    () => runtime.fs.readText("big.bin", { maxBytes: 1024 }),
    Error,
    "1 KiB",
  );
  assertLess(counted.bytesRead() - before, 16 * 1024 * 1024);
});

Deno.test("aio: the token goes as a bearer header and never into an error", async () => {
  await using aio = await startAioTestServer();
  const counted = countingFetch();
  const runtime = aio.runtime({ fetch: counted.fetch });
  await runtime.execute({ command: "true" });
  assertEquals(
    counted.requests[0]!.headers.get("authorization"),
    `Bearer ${TEST_TOKEN}`,
  );
  const wrong = aio.runtime({ apiKey: "wrong-token-value" });
  const error = await assertRejects(
    () => wrong.execute({ command: "true" }),
    RemoteHttpError,
  );
  assertEquals(error.status, 401);
  assertFalse(error.message.includes("wrong-token-value"));
  assertFalse(String(error.stack).includes("wrong-token-value"));
});

Deno.test("aio: network failure and error statuses are clear errors; a command is never retried", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime({ requestTimeoutMs: 2_000 });
  aio.server.faults.add({
    method: "POST",
    path: "/v1/bash/exec",
    fault: { kind: "status", status: 503 },
    times: 1,
  });
  const unavailable = await assertRejects(
    () => runtime.execute({ command: "echo once >> once.log" }),
    RemoteHttpError,
  );
  assertEquals(unavailable.status, 503);
  assertStringIncludes(unavailable.message, "/v1/bash/exec");
  assertEquals(aio.server.requestCount("/v1/bash/exec"), 1);
  aio.server.faults.add({
    method: "POST",
    path: "/v1/bash/exec",
    fault: { kind: "status", status: 500 },
    times: 1,
  });
  await assertRejects(
    () => runtime.execute({ command: "true" }),
    RemoteHttpError,
  );
  assertEquals(aio.server.requestCount("/v1/bash/exec"), 2);
  // A read is idempotent: one 503 is retried and the answer comes.
  await Deno.writeTextFile(`${aio.dir}/r.txt`, "read me");
  aio.server.faults.add({
    path: "/v1/file/download",
    fault: { kind: "status", status: 503 },
    times: 1,
  });
  assertEquals(
    await runtime.fs.readText("r.txt", { maxBytes: 100 }),
    "read me",
  );
  // 404: a missing file is a missing file.
  await assertRejects(() => runtime.fs.readText("none.txt", { maxBytes: 10 }));
  assertEquals(await runtime.fs.stat("none.txt"), null);
  await assertRejects(() => runtime.fs.list("none"), Deno.errors.NotFound);
  // Network failure.
  await aio.server.refuseConnections();
  const refused = await assertRejects(
    () => runtime.execute({ command: "true" }),
    RemoteHttpError,
  );
  assertEquals(refused.status, 0);
  assertStringIncludes(refused.message, aio.server.baseUrl);
  await aio.server.acceptConnections();
  assertEquals(
    (await runtime.execute({ command: "echo back" })).stdout,
    "back\n",
  );
});

Deno.test("aio: the envelope's success false, a 422 and a non-JSON 200 are errors carrying the server's words", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime();
  await Deno.writeTextFile(`${aio.dir}/file`, "x");
  // success: false from /v1/file/list (a file is not a folder).
  const notFolder = await assertRejects(() => runtime.fs.list("file"));
  assertInstanceOf(notFolder, Deno.errors.NotADirectory);
  // success: false from /v1/file/upload (a parent is a file).
  const upload = await assertRejects(
    () => runtime.fs.writeText("file/child.txt", "x"),
  );
  assertStringIncludes(String(upload), "file/child.txt");
  // A non-JSON 200.
  aio.server.faults.add({
    path: "/v1/bash/exec",
    fault: { kind: "invalid-json" },
    times: 1,
  });
  const notJson = await assertRejects(
    () => runtime.execute({ command: "true" }),
    RemoteHttpError,
  );
  assertStringIncludes(notJson.message, "not JSON");
  aio.server.faults.add({
    path: "/v1/file/list",
    fault: { kind: "invalid-json" },
    times: 1,
  });
  await assertRejects(() => runtime.fs.list("."), RemoteHttpError, "not JSON");
});

Deno.test("aio downloads leave nothing partial on every fault, and resume with Range when the server honours it", async () => {
  // Without and with Range, each on its own server, at once (most of the
  // time is spent waiting on the slow faults); both must pass.
  const runs = await Promise.allSettled(
    [false, true].map(async (range) => {
      await using aio = await startAioTestServer({ range });
      const runtime = aio.runtime({ requestTimeoutMs: 1_500 });
      const bytes = new Uint8Array(3 * 1024 * 1024);
      for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31) % 251;
      await Deno.writeFile(`${aio.dir}/big.bin`, bytes);
      const target = `${aio.dir}/local/big.bin`;
      await Deno.mkdir(`${aio.dir}/local`);
      const leftovers = async () => {
        const names: string[] = [];
        for await (const e of Deno.readDir(`${aio.dir}/local`)) {
          names.push(e.name);
        }
        return names;
      };
      for (
        const fault of [
          { kind: "status", status: 404 },
          { kind: "status", status: 500 },
          { kind: "slow", delayMs: 4_000 },
        ] as const
      ) {
        aio.server.faults.add({ path: "/v1/file/download", fault });
        await assertRejects(() => runtime.fs.download("big.bin", target));
        assertEquals(await leftovers(), [], `${fault.kind} left files`);
        aio.server.faults.clear();
      }
      // A connection that drops or a short body: resumed (Range) or restarted.
      for (
        const fault of [
          { kind: "reset", afterBytes: 1_000_000 },
          { kind: "truncate", keepBytes: 2_000_000 },
        ] as const
      ) {
        aio.server.faults.add({ path: "/v1/file/download", fault, times: 1 });
        const result = await runtime.fs.download("big.bin", target);
        assertEquals(result.bytes, bytes.length);
        assertEquals(await Deno.readFile(target), bytes);
        assertEquals(await leftovers(), ["big.bin"]);
        await Deno.remove(target);
      }
      // A drop on every attempt: an error, and nothing left.
      aio.server.faults.add({
        path: "/v1/file/download",
        fault: { kind: "reset", afterBytes: 1000 },
      });
      await assertRejects(() => runtime.fs.download("big.bin", target));
      assertEquals(await leftovers(), []);
      aio.server.faults.clear();
      // An abort in the middle leaves nothing either.
      const controller = new AbortController();
      aio.server.faults.add({
        path: "/v1/file/download",
        fault: { kind: "slow", delayMs: 1_000 },
      });
      setTimeout(() => controller.abort(), 100);
      await assertRejects(() =>
        runtime.fs.download("big.bin", target, { signal: controller.signal })
      );
      assertEquals(await leftovers(), []);
    }),
  );
  for (const run of runs) if (run.status === "rejected") throw run.reason;
});

Deno.test("aio: faults on the command path (reset, slow, ignore-sigterm) still end with the process gone", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime({ pollSeconds: 0.2, requestTimeoutMs: 3_000 });
  // The long poll drops: it is a read, retried; the command completes.
  aio.server.faults.add({
    path: "/v1/bash/output",
    fault: { kind: "reset", afterBytes: 10 },
    times: 1,
  });
  const polled = await runtime.execute({ command: "sleep 0.6; echo done" });
  assertEquals(polled.stdout, "done\n");
  // A command that ignores SIGTERM is still stopped at our deadline.
  aio.server.faults.add({
    path: "/v1/bash/exec",
    fault: { kind: "ignore-sigterm" },
    times: 1,
  });
  const stubborn = runtime.execute({ command: "sleep 30", timeoutMs: 800 });
  assert(await waitFor(() => aio.server.runningPids().length === 1));
  const [pid] = aio.server.runningPids();
  assert((await stubborn).timedOut);
  assertEquals(liveGroupMembers(pid!), []);
  // The exec answer never comes in time: our deadline aborts it and kills.
  aio.server.faults.add({
    path: "/v1/bash/exec",
    fault: { kind: "slow", delayMs: 5_000 },
    times: 1,
  });
  const slow = await runtime.execute({ command: "true", timeoutMs: 500 });
  assert(slow.timedOut);
  assertEquals(aio.server.runningPids(), []);
});

Deno.test("aio: eight conversations at once on one container never cross", async () => {
  await using aio = await startAioTestServer();
  const store = new MemoryConversationStore();
  const root = `${aio.dir}/conversations`;
  const skill = await makeSkill(`${aio.dir}/src`, "shared", {
    "scripts/who.sh": 'echo "$WHO"\n',
  });
  const ids = Array.from({ length: 8 }, (_, i) => `conv-${i}`);
  const results = await Promise.all(ids.map(async (id) => {
    const runtime = aio.runtime({
      conversationId: id,
      conversationsRoot: root,
      store,
    });
    const [prepared] = await runtime.prepare({
      skills: [{ skill, config: new SkillRuntimeConfig({ env: { WHO: id } }) }],
    });
    await runtime.fs.writeText("mine.txt", id);
    const run = await runtime.execute({
      command: `sleep 0.2; cat mine.txt; echo; bash ${
        prepared!.basePath
      }/scripts/who.sh; ls`,
    });
    const escape = await runtime.fs.readText(
      `../${ids[(ids.indexOf(id) + 1) % 8]}/mine.txt`,
      {
        maxBytes: 100,
      },
    ).then(() => "read", (e) => e);
    return { id, run, escape, workspace: runtime.workspace };
  }));
  for (const { id, run, escape, workspace } of results) {
    assertEquals(workspace, `${root}/${id}`);
    assertEquals(run.stdout, `${id}\n${id}\nmine.txt\nskills\n`);
    assertInstanceOf(escape, WorkspaceEscapeError);
    assertEquals(await Deno.readTextFile(`${root}/${id}/mine.txt`), id);
  }
  for (const id of ids) {
    const record = await store.get({
      serverUrl: aio.server.baseUrl,
      conversationId: id,
    });
    assertEquals(Object.keys(record!.skills), ["shared"]);
  }
});

Deno.test("aio: a conversation whose folder was wiped is noticed and prepared again; destroy removes it", async () => {
  await using aio = await startAioTestServer();
  const store = new MemoryConversationStore();
  const options = {
    conversationId: "wiped",
    conversationsRoot: `${aio.dir}/conversations`,
    store,
  };
  const skill = await makeSkill(`${aio.dir}/src`, "s", { "a.txt": "a" });
  const first = aio.runtime(options);
  await first.prepare({ skills: [{ skill }] });
  await first.close();
  await Deno.remove(`${aio.dir}/conversations`, { recursive: true });
  const second = aio.runtime(options);
  const [prepared] = await second.prepare({ skills: [{ skill }] });
  assertEquals(await Deno.readTextFile(`${prepared!.basePath}/a.txt`), "a");
  assertEquals(aio.server.requestCount("/v1/file/upload"), 4);
  await second.destroy();
  assertEquals(
    await store.get({ serverUrl: aio.server.baseUrl, conversationId: "wiped" }),
    null,
  );
  assertEquals(
    await Deno.lstat(`${aio.dir}/conversations/wiped`).catch(() => null),
    null,
  );
  const plain = aio.runtime();
  await assertRejects(
    () => plain.destroy(),
    Error,
    "never deletes its container",
  );
});

Deno.test("aio close() is idempotent and closes only the sessions it opened", async () => {
  await using aio = await startAioTestServer();
  const runtime = aio.runtime();
  await Promise.all(
    [1, 2, 3].map(() => runtime.execute({ command: "sleep 0.1" })),
  );
  const sessions = runtime.sessionCount;
  assert(sessions >= 1 && sessions <= 3);
  await runtime.execute({ command: "true" });
  assertEquals(runtime.sessionCount, sessions);
  await runtime.close();
  await runtime.close();
  const closes = aio.server.requests.filter((r) => r.path.endsWith("/close"));
  assertEquals(closes.length, sessions);
  await assertRejects(
    () => runtime.execute({ command: "true" }),
    Error,
    "closed",
  );
  assertNotEquals(aio.server.requestCount(), 0);
});

Deno.test("aio refuses skillsRoot / (any spelling) as it refuses conversationsRoot /", () => {
  for (const skillsRoot of ["/", "//", "/./", "/tmp/.."]) {
    assertThrows(
      () => new AioSkillRuntime({ baseUrl: "http://127.0.0.1:9", skillsRoot }),
      TypeError,
      "it must be an absolute POSIX path other than /",
    );
  }
  // A real folder is still fine (no request is made to build a runtime).
  new AioSkillRuntime({ baseUrl: "http://127.0.0.1:9", skillsRoot: "/s" });
});
