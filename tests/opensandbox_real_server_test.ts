/**
 * The OpenSandbox runtime against what the real execd binary does (facts in
 * `../shared/specs/README.md`, "Measured on the real execd binary"), on the
 * test server that now answers as it does.
 *
 * @module
 */
import { assertEquals, assertLess, assertRejects } from "./helpers/assert.ts";
import { startTestServer } from "./helpers/opensandbox.ts";
import { makeSkill } from "./helpers/remote.ts";
import { SandboxCommandError } from "../runtimes/opensandbox/execd.ts";
import { startAioTestServer } from "./helpers/aio.ts";
import { LocalSkillRuntime } from "../runtimes/local/runtime.ts";
import type { SkillRuntime } from "../runtimes/types.ts";

Deno.test("prepare() uploads a skill of more than 500 files in requests of at most 500 files (the real part limit), byte-identical", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const files: Record<string, string | Uint8Array> = {};
  for (let i = 0; i < 1200; i++) {
    files[`data/d${i % 7}/f${i}.txt`] = `file ${i}\n`;
  }
  files["bin/blob.bin"] = new Uint8Array(300_000).map((_, i) =>
    (i * 31) & 0xff
  );
  const skill = await makeSkill(`${server.dir}/src`, "many", files);
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  const uploads = server.server.requests.filter((r) =>
    r.route === "/files/upload"
  );
  // 1202 files (SKILL.md included): 500 + 500 + 202.
  assertEquals(uploads.map((r) => r.status), [200, 200, 200]);
  assertEquals(
    await Deno.readTextFile(`${prepared!.basePath}/data/d2/f1199.txt`),
    "file 1199\n",
  );
  assertEquals(
    await Deno.readFile(`${prepared!.basePath}/bin/blob.bin`),
    files["bin/blob.bin"],
  );
  const count = await runtime.execute({
    command: "find . -type f | wc -l",
    cwd: prepared!.basePath,
  });
  assertEquals(count.stdout.trim(), "1202");
});

Deno.test("fs.writeText() makes a 0644 file, as on every runtime, and keeps the mode of a file it replaces", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  await runtime.fs.writeText("notes/new.txt", "hello\n");
  assertEquals(
    (await Deno.stat(`${server.dir}/notes/new.txt`)).mode! & 0o777,
    0o644,
  );
  assertEquals((await runtime.fs.stat("notes/new.txt"))?.executable, false);
  await Deno.writeTextFile(`${server.dir}/run.sh`, "echo old\n", {
    mode: 0o750,
  });
  await Deno.chmod(`${server.dir}/run.sh`, 0o750);
  await runtime.fs.writeText("run.sh", "echo new\n");
  assertEquals((await Deno.stat(`${server.dir}/run.sh`)).mode! & 0o777, 0o750);
  assertEquals(await Deno.readTextFile(`${server.dir}/run.sh`), "echo new\n");
});

const DOLLAR_NAMES = [
  "Outer$Inner.class",
  "cost $5.txt",
  "f$1.txt",
  "$HOME.txt",
  "$$.txt",
  "${PATH}x.txt",
];

Deno.test("paths holding $ are never expanded by the server: every file call and the working directory use the exact path", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  // writeText (upload), readText/readBytes (download), stat (info), list
  for (const name of DOLLAR_NAMES) {
    await runtime.fs.writeText(`a$1/${name}`, `content of ${name}`);
    assertEquals(
      await Deno.readTextFile(`${server.dir}/a$1/${name}`),
      `content of ${name}`,
      name,
    );
    assertEquals(
      await runtime.fs.readText(`a$1/${name}`, { maxBytes: 100 }),
      `content of ${name}`,
    );
    const info = await runtime.fs.stat(`a$1/${name}`);
    assertEquals([info?.type, info?.size, info?.executable], [
      "file",
      `content of ${name}`.length,
      false,
    ]);
    assertEquals(
      (await Deno.stat(`${server.dir}/a$1/${name}`)).mode! & 0o777,
      0o644,
    );
  }
  assertEquals(await runtime.fs.stat("a$1/missing$2"), null);
  const listed = await runtime.fs.list("a$1");
  assertEquals(
    listed.entries.map((e) => e.name),
    [...DOLLAR_NAMES].sort(),
  );
  assertEquals(
    listed.entries[0]!.path,
    `${server.dir}/a$1/${listed.entries[0]!.name}`,
  );
  // Nothing was written where the server's expansion would have put it.
  for (const wrong of ["a", "Outer.class", "cost .txt", "f.txt"]) {
    let exists = true;
    try {
      await Deno.lstat(`${server.dir}/${wrong}`);
    } catch {
      exists = false;
    }
    assertEquals(exists, false, wrong);
  }
  // download to a local file
  const local = `${server.dir}/local copy`;
  await runtime.fs.download("a$1/Outer$Inner.class", local);
  assertEquals(await Deno.readTextFile(local), "content of Outer$Inner.class");
  // the working directory
  const pwd = await runtime.execute({
    command: "pwd",
    cwd: "a$1",
  });
  assertEquals([pwd.stdout, pwd.exitCode], [`${server.dir}/a$1\n`, 0]);
  // a skill whose files hold $
  const skill = await makeSkill(`${server.dir}/src`, "dollars", {
    "classes/Outer$Inner.class": new Uint8Array([0xca, 0xfe, 0xba, 0xbe, 0]),
    "cost $5.txt": "five",
    "run$1.sh": "echo ran\n",
  });
  await Deno.chmod(`${skill.basePath}/run$1.sh`, 0o755);
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  assertEquals(
    await Deno.readFile(`${prepared!.basePath}/classes/Outer$Inner.class`),
    new Uint8Array([0xca, 0xfe, 0xba, 0xbe, 0]),
  );
  assertEquals(
    await Deno.readTextFile(`${prepared!.basePath}/cost $5.txt`),
    "five",
  );
  const ran = await runtime.execute({
    command: "./'run$1.sh'",
    cwd: prepared!.basePath,
  });
  assertEquals(ran.stdout, "ran\n");
});

Deno.test("a conversation whose workspace holds $ makes its folders at the exact path", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime({
    conversationId: "c1",
    conversationsRoot: `${server.dir}/conv$1`,
  });
  const pwd = await runtime.execute({ command: "pwd" });
  assertEquals(pwd.stdout, `${server.dir}/conv$1/c1\n`);
  assertEquals(
    (await Deno.stat(`${server.dir}/conv$1/c1/skills`)).isDirectory,
    true,
  );
});

Deno.test("the interrupt of `sleep 30 & wait` at a 1 s timeout returns at once: the wrapper leaves no zombie to pid 1", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  await runtime.execute({ command: "true" }); // connected
  for (
    const command of [
      "sleep 30 & wait",
      "sleep 30 & sleep 31 & wait",
      "sleep 30",
    ]
  ) {
    const started = performance.now();
    const result = await runtime.execute({ command, timeoutMs: 1000 });
    const elapsed = performance.now() - started;
    assertEquals([result.timedOut, result.exitCode], [true, -1]);
    assertEquals(result.stderr, "", `${command}: nothing of the wrapper shows`);
    assertLess(elapsed, 1500, `${command}: ${Math.round(elapsed)} ms`);
  }
});

Deno.test("execute(): a \\r ends a line as on the real execd, a trailing one too, on both streams; other endings as before", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  const cases: [string, string][] = [
    [
      "printf 'progress 50%%\\rprogress 100%%\\r'",
      "progress 50%\nprogress 100%\n",
    ],
    ["printf 'abc\\r'", "abc\n"],
    ["printf '\\r'", "\n"],
    ["printf 'a\\n\\r'", "a\n\n"],
    ["printf 'abc'", "abc"],
    ["printf 'abc\\n'", "abc\n"],
    ["printf 'abc\\r\\n'", "abc\n"],
    ["printf 'a\\0'", "a\0"], // a last NUL byte, read back without a warning
    // The wrapper's mark as the command's own line is kept as it is.
    [
      "printf '\\0skillrun:trailing-cr\\0\\nmore'",
      "\0skillrun:trailing-cr\0\nmore",
    ],
    [
      "printf 'a\\n\\0skillrun:trailing-cr\\0\\n'",
      "a\n\0skillrun:trailing-cr\0\n",
    ],
  ];
  for (const [command, expected] of cases) {
    const out = await runtime.execute({ command });
    assertEquals([out.stdout, out.stderr], [expected, ""], command);
    const err = await runtime.execute({ command: `{ ${command}; } >&2` });
    assertEquals([err.stdout, err.stderr], ["", expected], `${command} >&2`);
  }
});

Deno.test("every runtime: writeText makes 0644 and keeps a replaced file's mode; download to a target named with quotes, *, ?, : and 250 bytes", async () => {
  await using os = await startTestServer();
  await using aio = await startAioTestServer();
  const localDir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-local-" }),
  );
  const local = await LocalSkillRuntime.create({ cwd: localDir });
  const targets = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-targets-" }),
  );
  try {
    const runtimes: [string, SkillRuntime, string][] = [
      ["opensandbox", os.runtime(), os.dir],
      ["aio", aio.runtime(), aio.dir],
      ["local", local, localDir],
    ];
    for (const [name, runtime, dir] of runtimes) {
      await runtime.fs.writeText("new.txt", "new\n");
      assertEquals(
        (await Deno.stat(`${dir}/new.txt`)).mode! & 0o777,
        0o644,
        name,
      );
      await Deno.writeTextFile(`${dir}/run.sh`, "old\n");
      await Deno.chmod(`${dir}/run.sh`, 0o750);
      await runtime.fs.writeText("run.sh", "echo new\n");
      assertEquals(
        (await Deno.stat(`${dir}/run.sh`)).mode! & 0o777,
        0o750,
        name,
      );
      for (
        const target of [
          `${name} report "final" v2: a*b?.txt`,
          `${name}-${"x".repeat(236)}.txt`,
        ]
      ) {
        const result = await runtime.fs.download(
          "new.txt",
          `${targets}/${target}`,
        );
        assertEquals(result.bytes, 4, name);
        assertEquals(await Deno.readTextFile(`${targets}/${target}`), "new\n");
      }
    }
    for await (const entry of Deno.readDir(targets)) {
      assertEquals(entry.name.endsWith(".part"), false, entry.name);
    }
  } finally {
    await local.close();
    await Deno.remove(localDir, { recursive: true });
    await Deno.remove(targets, { recursive: true });
  }
});

Deno.test("a missing working directory holding $ is refused as any missing one is, before the command runs", async () => {
  await using server = await startTestServer();
  const runtime = server.runtime();
  await Deno.writeTextFile(`${server.dir}/file$1`, "");
  for (const cwd of ["missing$1", "file$1", "missing"]) {
    const error = await assertRejects(
      () => runtime.execute({ command: "touch ran", cwd: cwd }),
      SandboxCommandError,
    );
    assertEquals(error.reason, "refused", cwd);
  }
  assertEquals(await runtime.fs.stat("ran"), null);
  // A command of its own that prints the same and fails is not refused.
  const own = await runtime.execute({
    command: "printf '\\000skillrun:no-folder\\000' >&2; exit 1",
    cwd: ".",
  });
  assertEquals([own.exitCode, own.stderr], [1, "\0skillrun:no-folder\0"]);
});
