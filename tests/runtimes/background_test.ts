import {
  assert,
  assertEquals,
  assertRejects,
  assertThrows,
} from "../helpers/assert.ts";
import {
  onHost,
  plainContext,
  tempDir,
  testEachRuntime,
} from "../helpers/tools.ts";
import {
  BackgroundCommands,
  backgroundCommands,
} from "../../runtimes/background.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean | Promise<boolean>, ms = 10_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await sleep(50);
  }
}

/** A start that answers within 30 s (it must not wait for the command). */
async function atOnce<T>(start: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error("start waited for the command's end")),
      30_000,
    );
  });
  try {
    return await Promise.race([start, late]);
  } finally {
    clearTimeout(timer);
  }
}

testEachRuntime(
  "background: starts at once, each read gives only new output, then the exit code",
  async () => {
    await using dir = await tempDir();
    const { runtime } = plainContext(dir.path);
    await using _ = runtime;
    const commands = new BackgroundCommands(runtime);
    // At once: the command cannot end before the test makes its flag, so a
    // start that waited for the end would never answer (no clock involved:
    // a loaded machine made a time limit fail).
    const flag = `.go-${crypto.randomUUID()}`;
    const { id, running } = await atOnce(commands.start({
      command:
        `echo one; echo e1 >&2; while [ ! -e ${flag} ]; do sleep 0.05; done; rm -f ${flag}; echo two; exit 7`,
    }));
    assert(running);
    // The server's own background facility names the command.
    const ids: Record<string, RegExp> = {
      opensandbox: /^[0-9a-f]{32}$/,
      "aio-sandbox": /^[0-9a-f-]{36}$/,
    };
    assert((ids[runtime.name] ?? /^bg\d+$/).test(id), id);
    let out = "";
    let err = "";
    await until(async () => {
      const read = await commands.read(id);
      out += read.stdout;
      err += read.stderr;
      return out.includes("one");
    });
    assertEquals(
      (await runtime.execute({ command: `touch ${flag}` })).exitCode,
      0,
    );
    await commands.wait(id);
    const second = await commands.read(id);
    // Only what came since: never "one" again.
    assert(!second.stdout.includes("one"), second.stdout);
    out += second.stdout;
    err += second.stderr;
    // execd keeps one log of both streams, in the order written.
    assertEquals(
      [out, err],
      runtime.name === "opensandbox"
        ? ["one\ne1\ntwo\n", ""]
        : ["one\ntwo\n", "e1\n"],
    );
    assertEquals([second.running, second.exitCode], [false, 7]);
    const third = await commands.read(id);
    assertEquals([third.stdout, third.stderr, third.exitCode], ["", "", 7]);
  },
);

/** A command whose process group writes a heartbeat file every 100 ms. */
function heartbeat(file: string): string {
  return `(while :; do date +%s%N > ${file}; sleep 0.1; done) & wait`;
}

/**
 * Whether the heartbeat file changes within 600 ms (looked at every 50 ms:
 * a beat ends the wait; no beat means the whole 600 ms passed without one).
 */
async function beating(file: string): Promise<boolean> {
  const before = await Deno.readTextFile(onHost(file)).catch(() => "");
  const end = Date.now() + 600;
  do {
    await sleep(50);
    const after = await Deno.readTextFile(onHost(file)).catch(() => "");
    if (after !== "" && after !== before) return true;
  } while (Date.now() < end);
  return false;
}

testEachRuntime(
  "background: kill stops the whole process group",
  async () => {
    await using dir = await tempDir();
    const { runtime } = plainContext(dir.path);
    await using _ = runtime;
    const commands = new BackgroundCommands(runtime);
    const beat = `${dir.path}/beat`;
    const { id } = await commands.start({ command: heartbeat(beat) });
    await until(() => beating(beat));
    const info = await commands.kill(id);
    assertEquals([info.running, info.exitCode], [false, -1]);
    assert((await commands.read(id)).killed);
    await until(async () => !(await beating(beat)));
  },
);

testEachRuntime(
  "background: at most maxCommands at once; close() stops every one",
  async () => {
    await using dir = await tempDir();
    const { runtime } = plainContext(dir.path);
    const commands = backgroundCommands(runtime, { maxCommands: 2 });
    const files = [`${dir.path}/a`, `${dir.path}/b`];
    for (const file of files) {
      await commands.start({ command: heartbeat(file) });
    }
    await assertRejects(
      () => commands.start({ command: "true" }),
      RangeError,
      "2 are running",
    );
    // The two files are watched at once.
    await Promise.all(files.map((file) => until(() => beating(file))));
    await runtime.close();
    assert(commands.list().every((c) => !c.running));
    await Promise.all(
      files.map((file) => until(async () => !(await beating(file)))),
    );
    await assertRejects(
      () => commands.start({ command: "true" }),
      Error,
      "closed",
    );
  },
);

testEachRuntime(
  "background: a command printing forever stays bounded in memory",
  async () => {
    await using dir = await tempDir();
    const { runtime } = plainContext(dir.path);
    await using _ = runtime;
    const maxOutputBytes = 4 * 1024;
    const commands = new BackgroundCommands(runtime, { maxOutputBytes });
    // About 200 KB/s, forever (a flood would measure the test server).
    const { id } = await commands.start({
      command:
        "while :; do head -c 2000 /dev/zero | tr '\\0' x; echo; sleep 0.01; done",
    });
    let total = 0;
    let cut = false;
    await until(async () => {
      await sleep(300);
      const read = await commands.read(id);
      // Each read holds at most the cap (its start and end) and a notice.
      assert(
        read.stdout.length <= maxOutputBytes + 200,
        `${read.stdout.length}`,
      );
      total += read.stdoutBytes;
      cut ||= read.truncated;
      return cut && total > 16 * maxOutputBytes;
    }, 40_000);
    await commands.kill(id);
  },
);

Deno.test("background: unknown ids and bad limits are refused clearly", async () => {
  await using dir = await tempDir();
  const { runtime } = plainContext(dir.path);
  await using _ = runtime;
  const commands = new BackgroundCommands(runtime);
  await assertRejects(
    () => commands.read("bg9"),
    RangeError,
    "none was started",
  );
  await assertRejects(() => commands.kill("nope"), RangeError, "No background");
  assertThrows(
    () => new BackgroundCommands(runtime, { maxCommands: 0 }),
    RangeError,
    "maxCommands",
  );
});

Deno.test("background: the doctor's report lists the runtime's background commands", async () => {
  const { fenceReport, formatFenceReport, LocalSkillRuntime } = await import(
    "../../runtimes/local/mod.ts"
  );
  await using dir = await tempDir();
  await using runtime = new LocalSkillRuntime({ cwd: dir.path });
  const before = await fenceReport(runtime);
  assertEquals(before.backgroundCommands, []);
  const { id } = await backgroundCommands(runtime).start({
    command: "sleep 30",
  });
  const report = await fenceReport(runtime);
  assertEquals(report.backgroundCommands?.map((c) => [c.id, c.running]), [
    [id, true],
  ]);
  assert(
    formatFenceReport(report).includes(`  ${id} running: sleep 30\n`),
  );
});
