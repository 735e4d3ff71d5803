import {
  assert,
  assertEquals,
  assertFalse,
  assertInstanceOf,
  assertNotEquals,
  assertRejects,
  assertStringIncludes,
} from "../../tests/helpers/assert.ts";
import { hostPath } from "../../_internal/std.ts";
import type { Skill } from "../../skill/types.ts";
import type { ExecuteResult } from "../types.ts";
import {
  BubblewrapLauncher,
  type BubblewrapLauncherOptions,
  IsolationUnavailableError,
} from "./isolated.ts";
import { LocalSkillRuntime } from "./runtime.ts";
import { runDenoScript } from "../../tests/helpers/testing.ts";

/** Why the sandbox cannot run here, or `null` when it can. */
const UNAVAILABLE: string | null = await BubblewrapLauncher.create().then(
  () => null,
  (error) =>
    error instanceof IsolationUnavailableError
      ? error.message
      : Promise.reject(error),
);

/** A test that needs bubblewrap: ignored, saying why, when it cannot run. */
function sandboxTest(name: string, fn: () => Promise<void>): void {
  if (UNAVAILABLE !== null) console.error(`Ignoring "${name}": ${UNAVAILABLE}`);
  Deno.test({ name, ignore: UNAVAILABLE !== null, fn });
}

interface Fixture extends AsyncDisposable {
  /** A folder outside every fence, with a secret file. */
  readonly outside: string;
  /** The secret file's path and content. */
  readonly secretPath: string;
  readonly secret: string;
  /** The conversation runtime. */
  readonly runtime: LocalSkillRuntime;
  /** Its workspace. */
  readonly workspace: string;
  /** The prepared skill's folder (inside the workspace). */
  readonly skillPath: string;
  /** Runs a command in the skill's folder. */
  run(command: string, timeoutMs?: number): Promise<ExecuteResult>;
}

async function makeSkill(parent: string, name: string): Promise<Skill> {
  const basePath = hostPath.join(parent, name);
  await Deno.mkdir(basePath, { recursive: true });
  await Deno.writeTextFile(
    hostPath.join(basePath, "SKILL.md"),
    `---\nname: ${name}\ndescription: The ${name} skill\n---\nDo it.\n`,
  );
  await Deno.writeTextFile(hostPath.join(basePath, "run.sh"), "echo ran\n");
  return {
    name,
    description: `The ${name} skill`,
    basePath,
    location: hostPath.join(basePath, "SKILL.md"),
    instructions: "Do it.\n",
    frontMatter: { name, description: `The ${name} skill` },
    warnings: [],
  };
}

/** A conversation runtime in isolated mode with one prepared skill. */
async function fixture(
  isolate: BubblewrapLauncherOptions = {},
  options: { env?: Record<string, string> } = {},
): Promise<Fixture> {
  const root = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-iso-" }),
  );
  const outside = hostPath.join(root, "outside");
  await Deno.mkdir(outside);
  const secret = `secret-${crypto.randomUUID()}`;
  const secretPath = hostPath.join(outside, "secret.txt");
  await Deno.writeTextFile(secretPath, secret);
  const skill = await makeSkill(hostPath.join(root, "skills"), "probe");
  const runtime = await LocalSkillRuntime.create({
    conversationsRoot: hostPath.join(root, "conversations"),
    conversationId: "c1",
    isolate,
    ...(options.env ? { env: options.env } : {}),
  });
  const [prepared] = await runtime.prepare({ skills: [{ skill }] });
  const skillPath = prepared!.basePath;
  return {
    outside,
    secretPath,
    secret,
    runtime,
    workspace: runtime.workspace!,
    skillPath,
    run: (command, timeoutMs = 20_000) =>
      runtime.execute({ command, cwd: skillPath, timeoutMs }),
    async [Symbol.asyncDispose]() {
      await runtime.close();
      await Deno.remove(root, { recursive: true });
    },
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Live host processes whose command line contains (or starts with) `marker`. */
function processesWith(marker: string, startsWith = false): number[] {
  const found: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`)
        .replaceAll("\0", " ");
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const state = stat.slice(
        stat.lastIndexOf(")") + 2,
        stat.lastIndexOf(")") + 3,
      );
      const matches = startsWith
        ? cmdline.startsWith(marker)
        : cmdline.includes(marker);
      if (matches && state !== "Z") found.push(Number(entry.name));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** Waits up to `ms` for no live process to contain `marker`. */
async function noneLeft(marker: string, ms = 3000): Promise<number[]> {
  const until = performance.now() + ms;
  let left = processesWith(marker);
  while (left.length > 0 && performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    left = processesWith(marker);
  }
  return left;
}

sandboxTest(
  "isolated: a command cannot read a host file outside the fence",
  async () => {
    await using f = await fixture();
    const ownSource = hostPath.fromFileUrl(import.meta.url);
    const result = await f.run(
      [
        `cat ${f.secretPath}`,
        `ls ${f.outside}`,
        `cat /proc/self/root${f.secretPath}`,
        `cat ${ownSource}`,
        `ls -A ${hostPath.dirname(f.workspace)}`,
        "cat /etc/shadow",
        "echo done",
      ].join("; "),
    );
    assertEquals(result.exitCode, 0);
    assertFalse(result.stdout.includes(f.secret), result.stdout);
    assertFalse(result.stdout.includes("sandboxTest"), "the test's own source");
    assertFalse(result.stdout.includes("root:"), "the shadow file");
    // The conversations root shows only the workspace (bound at its own path).
    assertEquals(result.stdout, "c1\ndone\n");
    assertStringIncludes(result.stderr, "No such file or directory");
    // Control: the same read works on the host.
    assertEquals(await Deno.readTextFile(f.secretPath), f.secret);
  },
);

sandboxTest(
  "isolated: a command cannot write outside the fence, even through /proc/self/root or a planted link",
  async () => {
    await using f = await fixture();
    // A link planted in the workspace (e.g. by an earlier step) to a host folder.
    await Deno.symlink(f.outside, hostPath.join(f.workspace, "planted"));
    const result = await f.run(
      [
        `echo x > ${f.outside}/direct`,
        `echo x > /proc/self/root${f.outside}/via-proc`,
        "echo x > /proc/self/root/etc/via-proc-etc",
        "echo x > /proc/1/root/usr/via-init",
        "echo x > /etc/pwned",
        "echo x > /usr/pwned",
        "echo x > /etc/ssh/pwned; test -e /etc/ssh/pwned && echo masked-writable",
        "echo x > /newdir-at-root; test -e /newdir-at-root && echo root-writable",
        `echo x > ${f.workspace}/planted/via-planted`,
        `ln -s ${f.outside} made-link && echo x > made-link/via-made-link`,
        `mkdir -p /tmp/x && echo x > /tmp/x/private`,
        "echo inside > inside.txt",
        "echo done",
      ].join("; "),
    );
    assertEquals(result.stdout, "done\n", result.stderr);
    for (
      const name of [
        "direct",
        "via-proc",
        "via-planted",
        "via-made-link",
      ]
    ) {
      assertFalse(await exists(hostPath.join(f.outside, name)), name);
    }
    assertFalse(await exists("/etc/via-proc-etc"));
    assertFalse(await exists("/etc/pwned"));
    assertFalse(await exists("/usr/pwned"));
    assertFalse(await exists("/usr/via-init"));
    assertFalse(await exists("/tmp/x/private"));
    assertEquals([...Deno.readDirSync(f.outside)].map((e) => e.name), [
      "secret.txt",
    ]);
    // Control: the workspace is writable, at the same path inside and out.
    assertEquals(
      await f.runtime.fs.readText(hostPath.join(f.skillPath, "inside.txt"), {
        maxBytes: 100,
      }),
      "inside\n",
    );
  },
);

async function withServer(
  fn: (port: number, hits: () => number) => Promise<void>,
): Promise<void> {
  let count = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => {
      count++;
      return new Response("hello from the host");
    },
  );
  try {
    await fn(server.addr.port, () => count);
  } finally {
    await server.shutdown();
  }
}

const FETCH = (port: number) =>
  `exec 3<>/dev/tcp/127.0.0.1/${port} && printf 'GET / HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n' >&3 && cat <&3`;

sandboxTest(
  "isolated: no network unless allowed, loopback included",
  async () => {
    await using f = await fixture();
    await withServer(async (port, hits) => {
      const result = await f.run(
        `${
          FETCH(port)
        }; getent hosts example.com; ip -o link 2>/dev/null | cut -d: -f2`,
      );
      assertFalse(result.stdout.includes("hello from the host"), result.stdout);
      assertEquals(hits(), 0);
      assertStringIncludes(result.stderr, "Connection refused");
    });
  },
);

sandboxTest("isolated: allowNet reaches the host's network", async () => {
  await using f = await fixture({ allowNet: true });
  await withServer(async (port, hits) => {
    const result = await f.run(FETCH(port));
    assertEquals(result.exitCode, 0, result.stderr);
    assertStringIncludes(result.stdout, "hello from the host");
    assertEquals(hits(), 1);
  });
});

sandboxTest(
  "isolated: a command cannot see or signal host processes",
  async () => {
    await using f = await fixture();
    const marker = `${60 + Math.random()}`;
    const host = new Deno.Command("sleep", { args: [marker] }).spawn();
    try {
      const result = await f.run(
        [
          `kill -0 ${host.pid} 2>&1`,
          `kill -9 ${host.pid} 2>&1`,
          `kill -9 -1 2>&1`,
          `grep -l -- ${marker} /proc/[0-9]*/cmdline 2>/dev/null`,
          "ls /proc | grep -c '^[0-9]'",
          "echo $$",
        ].join("; "),
      );
      // Only the sandbox's own few processes exist: its init, bash, ls/grep.
      const lines = result.stdout.trim().split("\n");
      const visible = Number(lines.at(-2));
      assert(visible > 0 && visible <= 5, result.stdout);
      assertFalse(result.stdout.includes(`/proc/${host.pid}/`), result.stdout);
      assertStringIncludes(result.stdout, "No such process");
      // The host process lives on.
      assertEquals(processesWith(marker), [host.pid]);
    } finally {
      host.kill("SIGKILL");
      await host.status;
    }
  },
);

sandboxTest(
  "isolated: a command sees none of the host's environment",
  async () => {
    const name = "SKILLRUN_HOST_SECRET_TEST";
    const value = `host-${crypto.randomUUID()}`;
    Deno.env.set(name, value);
    try {
      await using f = await fixture({}, {
        env: { APP_VAR: "from-the-runtime" },
      });
      const result = await f.run("env; cat /proc/1/environ | tr '\\0' '\\n'");
      assertFalse(result.stdout.includes(value), result.stdout);
      const names = new Set(
        result.stdout.trim().split("\n").map((line) =>
          line.slice(0, line.indexOf("="))
        ),
      );
      // The runtime's variables, the fixed PATH, HOME and LANG, and what bash
      // itself sets (PWD, SHLVL, _): nothing else.
      const allowed = new Set([
        "APP_VAR",
        "DENO_EXEC_PATH",
        "HOME",
        "LANG",
        "PATH",
        "PWD",
        "SHLVL",
        "_",
      ]);
      for (const n of names) assert(allowed.has(n), `unexpected variable ${n}`);
      for (const n of ["APP_VAR", "DENO_EXEC_PATH", "HOME", "LANG", "PATH"]) {
        assert(names.has(n), `missing variable ${n}`);
      }
      assertStringIncludes(result.stdout, "APP_VAR=from-the-runtime");
      assertStringIncludes(result.stdout, "HOME=/tmp/home\n");
    } finally {
      Deno.env.delete(name);
    }
  },
);

/** Set once the process limit was seen to hold, before a real fork bomb runs. */
let processLimitHolds = false;

sandboxTest("isolated: the process limit holds", async () => {
  await using f = await fixture({ limits: { processes: 32 } });
  const report = (f.runtime.launcher as BubblewrapLauncher).report;
  if (report.limits.processes.mechanism === "none") {
    console.error(
      `Not checking the process limit: ${report.limits.processes.note}`,
    );
    return;
  }
  const marker = `${90 + Math.random()}`;
  const running = f.run(`for i in $(seq 100); do sleep ${marker} & done`, 4000);
  // Counted from the host while bash keeps retrying its forks.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const count = processesWith(`sleep ${marker}`, true).length;
  const result = await running;
  assert(count > 8 && count <= 32, `${count} processes: ${result.stderr}`);
  assertStringIncludes(result.stderr, "fork: retry");
  assert(result.timedOut);
  assertEquals(await noneLeft(marker), []);
  processLimitHolds = true;
});

sandboxTest(
  "isolated: a fork bomb is contained and the runtime answers the next call",
  async () => {
    await using f = await fixture({ limits: { processes: 64 } });
    const report = (f.runtime.launcher as BubblewrapLauncher).report;
    if (report.limits.processes.mechanism === "none") {
      // Running it would take the machine down: say so instead of passing.
      throw new Error(
        `Cannot contain a fork bomb here: ${report.limits.processes.note}`,
      );
    }
    // Never run the bomb unless the limit was seen to hold.
    assert(processLimitHolds, "the process limit test must pass first");
    const before = Deno.readDirSync("/proc").toArray().length;
    const started = performance.now();
    // The shell waits on the bomb, so it runs until the timeout.
    const running = f.run(":(){ :|:& :|: ; }; :", 3000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const during = Deno.readDirSync("/proc").toArray().length;
    const bomb = await running;
    assert(bomb.timedOut, `exit code ${bomb.exitCode}: ${bomb.stderr}`);
    assert(during <= before + 64 + 20, `${before} before, ${during} during`);
    assert(performance.now() - started < 15_000);
    const next = await f.run("echo alive");
    assertEquals(next.stdout, "alive\n");
    assertEquals(next.exitCode, 0);
    // Nothing of the bomb is left on the host.
    let after = Deno.readDirSync("/proc").toArray().length;
    for (let i = 0; i < 40 && after > before + 20; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      after = Deno.readDirSync("/proc").toArray().length;
    }
    assert(after <= before + 20, `${before} processes before, ${after} after`);
  },
);

sandboxTest(
  "isolated: a file cannot grow beyond the file-size limit",
  async () => {
    const limit = 1024 * 1024;
    await using f = await fixture({ limits: { fileSizeBytes: limit } });
    const result = await f.run(
      'ulimit -f unlimited 2>/dev/null; echo "raise $?"; head -c 3145728 /dev/zero > big.bin; echo "exit $?"; head -c 3145728 /dev/zero > /tmp/big.bin; echo "tmp $?"; stat -c %s /tmp/big.bin',
    );
    const size = (await Deno.stat(hostPath.join(f.skillPath, "big.bin"))).size;
    assertEquals(size, limit);
    assertStringIncludes(result.stdout, "raise 1"); // the command cannot lift it
    assertStringIncludes(result.stdout, "exit 153"); // 128 + SIGXFSZ
    assertStringIncludes(result.stdout, "tmp 153");
    assertStringIncludes(result.stdout, `\n${limit}\n`);
  },
);

sandboxTest("isolated: no process outlives its command", async () => {
  await using f = await fixture();
  const marker = `${70 + Math.random()}`;
  const result = await f.run(
    `sleep ${marker} & setsid sleep ${marker} & (nohup sleep ${marker} >/dev/null 2>&1 &); disown -a; echo started`,
  );
  assertEquals(result.stdout, "started\n");
  assert(result.durationMs < 10_000);
  assertEquals(await noneLeft(marker), []);
});

sandboxTest(
  "isolated: a timeout or an abort stops everything inside",
  async () => {
    await using f = await fixture();
    const marker = `${80 + Math.random()}`;
    const timedOut = await f.run(
      `sleep ${marker} & (setsid sleep ${marker} &); trap '' TERM; sleep ${marker}`,
      500,
    );
    assert(timedOut.timedOut);
    assertEquals(timedOut.exitCode, -1);
    assertEquals(await noneLeft(marker), []);

    const controller = new AbortController();
    const running = f.runtime.execute({
      command: `sleep ${marker} & sleep ${marker}`,
      signal: controller.signal,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    controller.abort();
    const aborted = await running;
    assert(aborted.aborted);
    assertEquals(await noneLeft(marker), []);
  },
);

sandboxTest(
  "isolated: Deno skills run inside with the deno that runs us",
  async () => {
    await using f = await fixture();
    await Deno.writeTextFile(
      hostPath.join(f.skillPath, "hello.ts"),
      "console.log(`sum ${1 + 2}`);\n",
    );
    const result = await f.run(
      'deno run hello.ts && "$DENO_EXEC_PATH" eval "console.log(40 + 2)"',
    );
    assertEquals(result.stdout, "sum 3\n42\n", result.stderr);
  },
);

sandboxTest(
  "isolated plain mode: the folder and prepared skills are writable, nothing else",
  async () => {
    const root = await Deno.realPath(
      await Deno.makeTempDir({ prefix: "skillrun-iso-" }),
    );
    try {
      const cwd = hostPath.join(root, "cwd");
      await Deno.mkdir(cwd);
      const skill = await makeSkill(hostPath.join(root, "skills"), "tool");
      await using runtime = await LocalSkillRuntime.create({
        cwd,
        isolate: true,
      });
      const before = await runtime.execute({ command: `ls ${skill.basePath}` });
      assertNotEquals(before.exitCode, 0);
      await runtime.prepare({ skills: [{ skill }] });
      const result = await runtime.execute({
        command:
          `echo a > here.txt; echo b > ${skill.basePath}/out.txt; echo c > ${root}/no.txt; cat here.txt ${skill.basePath}/out.txt`,
      });
      assertEquals(result.stdout, "a\nb\n");
      assertFalse(await exists(hostPath.join(root, "no.txt")));
      await assertRejects(
        () => runtime.execute({ command: "true", cwd: root }),
        RangeError,
        "the isolated shell sees only",
      );
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
);

Deno.test("isolated: a missing bwrap fails creation with what to install, never falling back", async () => {
  const error = await assertRejects(
    () =>
      LocalSkillRuntime.create({
        isolate: { bwrap: "/nonexistent/skillrun-bwrap" },
      }),
    IsolationUnavailableError,
    "install bubblewrap",
  );
  assertInstanceOf(error, IsolationUnavailableError);
  assertEquals(error.problem, "missing");
  assertStringIncludes(error.message, '"/nonexistent/skillrun-bwrap"');
});

Deno.test("isolated: the constructor refuses isolate; create refuses isolate with a launcher", async () => {
  let thrown: unknown;
  try {
    new LocalSkillRuntime({ isolate: true });
  } catch (error) {
    thrown = error;
  }
  assertInstanceOf(thrown, TypeError);
  assertStringIncludes(String(thrown), "use await LocalSkillRuntime.create");
  await assertRejects(
    () =>
      LocalSkillRuntime.create({
        isolate: true,
        launcher: { name: "x", launch: () => Promise.reject(new Error()) },
      }),
    TypeError,
    "not both",
  );
  await assertRejects(
    () => BubblewrapLauncher.create({ limits: { processes: 0 } }),
    RangeError,
    'processes "0"',
  );
});

sandboxTest(
  "isolated: user namespaces off fails creation with what to enable",
  async () => {
    // A sandbox in which no further user namespace may be made stands for a
    // machine with user namespaces off.
    const script = hostPath.fromFileUrl(
      new URL("./testdata/create_isolated.ts", import.meta.url),
    );
    const config = hostPath.fromFileUrl(
      new URL("../../deno.json", import.meta.url),
    );
    const output = await new Deno.Command("bwrap", {
      args: [
        "--unshare-user",
        "--disable-userns",
        "--bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--",
        Deno.execPath(),
        "run",
        "-A",
        `--config=${config}`,
        script,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(output.stdout);
    assertEquals(
      output.code,
      1,
      stdout + new TextDecoder().decode(output.stderr),
    );
    assertStringIncludes(stdout, "problem=namespaces");
    assertStringIncludes(stdout, "enable them");
  },
);

sandboxTest(
  "isolated: works under --allow-run=bwrap,bash, and a timeout still stops everything",
  async () => {
    const root = await Deno.realPath(
      await Deno.makeTempDir({ prefix: "skillrun-iso-" }),
    );
    try {
      const marker = `${95 + Math.random()}`;
      const script = hostPath.fromFileUrl(
        new URL("./testdata/isolated_timeout.ts", import.meta.url),
      );
      const run = await runDenoScript(script, [
        `--allow-read=${root}`,
        `--allow-write=${root}`,
        "--allow-run=bwrap,bash",
      ], [root, marker]);
      assertEquals(run.code, 0, run.stderr);
      assertEquals(JSON.parse(run.stdout), {
        timedOut: true,
        exitCode: -1,
        pwd: hostPath.join(root, "narrowed"),
      });
      assertEquals(await noneLeft(marker), []);
      assertEquals(
        await Deno.readTextFile(hostPath.join(root, "narrowed", "made.txt")),
        "ok\n",
      );
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
);
