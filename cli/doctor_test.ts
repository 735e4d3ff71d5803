import {
  assert,
  assertEquals,
  assertMatch,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import {
  BubblewrapLauncher,
  IsolationUnavailableError,
  MASKED_PATHS,
  SYSTEM_PATHS,
} from "../runtimes/local/isolated.ts";
import { PROJECT_CONFIG } from "../tests/helpers/testing.ts";

const cli = hostPath.fromFileUrl(new URL("../cli.ts", import.meta.url));

/** Why the isolated mode cannot run here, or `null`. */
const NO_SANDBOX: string | null = await BubblewrapLauncher.create().then(
  () => null,
  (error) =>
    error instanceof IsolationUnavailableError
      ? error.message
      : Promise.reject(error),
);

async function version(program: string): Promise<string | null> {
  try {
    const output = await new Deno.Command(program, {
      args: ["--version"],
      stdout: "piped",
      stderr: "null",
    }).output();
    return output.success
      ? new TextDecoder().decode(output.stdout).split("\n", 1)[0]!
      : null;
  } catch {
    return null;
  }
}

const RG = (await version("rg"))?.match(/ripgrep (\S+)/)?.[1] ?? null;
const BWRAP = await version("bwrap");
const ROOT = Deno.uid() === 0;

/** Whether a cgroup v1 controller is writable here (as the isolated mode finds it). */
async function cgroupWritable(controller: string): Promise<boolean> {
  const path = `/sys/fs/cgroup/${controller}/skillrun-doctor-test-${Deno.pid}`;
  try {
    await Deno.mkdir(path);
    await Deno.remove(path);
    return true;
  } catch {
    return false;
  }
}
const CGROUP_PIDS = await cgroupWritable("pids");
const CGROUP_MEMORY = await cgroupWritable("memory");

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

interface Paths {
  skills: string;
  work: string;
  root: string;
}

async function withPaths(fn: (paths: Paths) => Promise<void>): Promise<void> {
  const temp = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "skillrun-doctor-" }),
  );
  try {
    const paths = {
      skills: hostPath.join(temp, "skills"),
      work: hostPath.join(temp, "work"),
      root: hostPath.join(temp, "conversations"),
    };
    await Deno.mkdir(hostPath.join(paths.skills, "probe"), { recursive: true });
    await Deno.writeTextFile(
      hostPath.join(paths.skills, "probe", "SKILL.md"),
      "---\nname: probe\ndescription: A probe.\n---\nProbe.\n",
    );
    await Deno.mkdir(paths.work);
    await fn(paths);
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
}

async function doctor(
  flags: readonly string[],
  args: readonly string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      `--config=${PROJECT_CONFIG}`,
      ...flags,
      cli,
      "doctor",
      ...args,
    ],
    cwd,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

interface Case {
  mode: "plain" | "conversation";
  isolated: boolean;
  narrowed: boolean;
}

const NOT_ISOLATED =
  "The shell is not isolated: use the isolated mode (--isolate) for skills or code you do not trust";

/** The report's lines, built from the case and the machine's facts. */
function expected(c: Case, p: Paths): (string | RegExp)[] {
  const workspace = hostPath.join(p.root, "c1");
  const home = c.mode === "plain" ? p.work : p.root;
  const wd = c.mode === "plain" ? p.work : workspace;
  const run = c.isolated ? "bwrap, bash" : "bash";
  const runFlag = `--allow-run=${c.isolated ? "bwrap,bash" : "bash"},rg`;
  const denoDir = hostPath.dirname(Deno.execPath());
  const warnings: string[] = [];
  const lines: string[] = [
    `runtime: local, ${c.mode} mode, ${
      c.isolated ? `isolated (${BWRAP})` : "not isolated"
    }`,
    ...(c.mode === "conversation" ? [`workspace: ${workspace}`] : []),
    `working directory: ${wd}`,
    `skills: ${p.skills}`,
    "",
    "Deno permissions (this process):",
  ];
  // Warnings shown in a section above are counted, not listed again.
  const shown = new Set<string>();
  const permission = (word: string, name: string, note: string) => {
    lines.push(`  ${word.padEnd(5)} ${name.padEnd(5)} ${note}`);
    if (word === "warn") warnings.push(note);
    shown.add(note);
  };
  if (c.narrowed) {
    permission("ok", "read", `read of ${p.skills}, ${home}`);
    permission("ok", "write", `write of ${home}`);
    permission("ok", "run", `run of ${run}, rg`);
    permission("ok", "net", "net: none, as needed");
    permission("ok", "env", "env of PATH");
  } else {
    permission(
      "warn",
      "read",
      `read is granted for every path: broader than needed (--allow-read=${p.skills},${home})`,
    );
    permission(
      "warn",
      "write",
      `write is granted for every path: broader than needed (--allow-write=${home})`,
    );
    permission(
      "warn",
      "run",
      `run is granted for every program: broader than needed (${runFlag})`,
    );
    permission(
      "warn",
      "net",
      "net is granted for every host: the local runtime needs none",
    );
    permission(
      "warn",
      "env",
      "env is granted for every variable: broader than needed (--allow-env=PATH)",
    );
  }
  lines.push("");
  const readOnly = SYSTEM_PATHS.filter(exists);
  const writable = c.mode === "plain"
    ? [p.work, "the prepared skills' folders"]
    : [workspace];
  if (c.isolated) {
    lines.push(
      `shell: isolated with ${BWRAP}: namespaces user, pid, ipc, uts, cgroup, net; no network, loopback included; standard streams only; ${
        Deno.build.arch === "x86_64" || Deno.build.arch === "aarch64"
          ? "seccomp refuses setuid-setgid-modes, unix-sockets"
          : "no seccomp filter"
      }`,
      `  system, read-only: ${readOnly.join(", ")}`,
      `  hidden: ${MASKED_PATHS.filter(exists).join(", ")}`,
      `  deno, read-only: ${Deno.execPath()}`,
    );
    const pids = !c.narrowed && CGROUP_PIDS
      ? "cgroup"
      : ROOT
      ? "not enforced"
      : "rlimit";
    const memory = !c.narrowed && CGROUP_MEMORY ? "cgroup" : "rlimit";
    lines.push(
      `  limits: processes 1024 (${pids}), file size 1 GiB (rlimit), memory 4 GiB (${memory}), /tmp 512 MiB (tmpfs)`,
      `  environment: PATH=${denoDir}:/usr/local/bin:/usr/bin:/bin, HOME=/tmp/home, LANG=C.UTF-8 and the runtime's variables; nothing of the host's`,
      `  user: ${Deno.uid()}${
        ROOT ? " (root, without capabilities)" : ""
      }; new session; dies with its parent; no process outlives its command`,
      "",
      "commands can:",
      `  read: ${[...readOnly, ...writable].join(", ")}`,
      `  write: ${[...writable, "a private /tmp"].join(", ")}`,
      "  network: none (loopback included)",
    );
    if (pids === "not enforced") {
      warnings.push(
        "The processes limit is not enforced: root is not limited by RLIMIT_NPROC and no writable pids cgroup was found (allow --allow-read=/proc/self/cgroup,/sys/fs/cgroup and --allow-write=/sys/fs/cgroup, or run as another user)",
      );
    }
  } else {
    lines.push(
      "shell: not isolated: commands run as the user running Deno, with its environment, and reach whatever that user may, whatever Deno's permission flags say",
      "",
      "commands can:",
      "  read: everything the user running Deno may read",
      "  write: everything the user running Deno may write",
      "  network: whatever the user may reach",
    );
    warnings.push(NOT_ISOLATED);
  }
  lines.push(
    c.mode === "conversation"
      ? `file tools can reach: only ${workspace} (lexically and with symlinks resolved)`
      : `file tools can reach: whatever Deno's read and write permissions allow; relative paths resolve in ${p.work}`,
    "",
    "optional tools:",
  );
  const where = c.isolated ? "the sandbox's PATH" : "the commands' PATH";
  lines.push(
    `  ok      bash  ${where}: required: without it no command runs (the bash tool, bootstrap)`,
  );
  if (RG) {
    lines.push(
      `  ok      rg    this process (grep, glob): ripgrep ${RG} answers grep and glob`,
    );
  } else {
    const cost =
      "grep and glob use the TypeScript fallback: the same answers, slower on large folders (install ripgrep and allow --allow-run=rg)";
    lines.push(`  missing rg    this process (grep, glob): ${cost}`);
    warnings.push(`rg is not available: ${cost}`);
    shown.add(`rg is not available: ${cost}`);
  }
  const bwrapPermitted = c.isolated || !c.narrowed;
  if (BWRAP !== null && bwrapPermitted) {
    lines.push("  ok      bwrap this process: the isolated mode is available");
  } else if (bwrapPermitted) {
    const cost =
      "no isolated mode: the shell reaches whatever the user may (install bubblewrap and allow --allow-run=bwrap)";
    lines.push(`  missing bwrap this process: ${cost}`);
    warnings.push(`bwrap is not available: ${cost}`);
    shown.add(`bwrap is not available: ${cost}`);
  } else {
    const cost =
      "no isolated mode: the shell reaches whatever the user may (run with --allow-run=bwrap to use bubblewrap where it is installed)";
    lines.push(`  not permitted bwrap this process: ${cost}`);
    warnings.push(`bwrap is not permitted: ${cost}`);
    shown.add(`bwrap is not permitted: ${cost}`);
  }
  lines.push(
    `  ok      deno  ${where}: skills written for Deno can run deno`,
    "",
    ...warnings.filter((w) => !shown.has(w)).map((w) => `warning: ${w}`),
    `0 errors, ${warnings.length} warning${warnings.length === 1 ? "" : "s"}`,
  );
  return [
    ...lines,
    /^Catalog: [\d,]+ of the 8,000-character budget \(\d+%\); every skill is listed \(1\)\.$/,
  ];
}

function narrowedFlags(c: Case, p: Paths): string[] {
  const home = c.mode === "plain" ? p.work : p.root;
  return [
    `--allow-read=${p.skills},${home}`,
    `--allow-write=${home}`,
    `--allow-run=${c.isolated ? "bwrap,bash" : "bash"},rg`,
    "--allow-env=PATH",
  ];
}

function argsOf(c: Case, p: Paths): string[] {
  return [
    "--skills",
    p.skills,
    ...(c.mode === "conversation"
      ? ["--conversation", "c1", "--root", p.root]
      : []),
    ...(c.isolated ? ["--isolate"] : []),
  ];
}

function checkLines(
  actual: string,
  want: readonly (string | RegExp)[],
): void {
  const lines = actual.split("\n");
  assertEquals(lines.pop(), "", "the report ends with a newline");
  for (let i = 0; i < Math.max(lines.length, want.length); i++) {
    const line = want[i];
    if (line instanceof RegExp) assertMatch(lines[i] ?? "", line);
    else assertEquals(lines[i], line, `line ${i + 1}`);
  }
}

for (const mode of ["plain", "conversation"] as const) {
  for (const isolated of [false, true]) {
    for (const narrowed of [false, true]) {
      const c: Case = { mode, isolated, narrowed };
      const name = `doctor reports a ${mode}${
        isolated ? " isolated" : ""
      } runtime under ${narrowed ? "narrowed flags" : "-A"}, line by line`;
      const ignore = isolated && NO_SANDBOX !== null;
      if (ignore) console.error(`Ignoring "${name}": ${NO_SANDBOX}`);
      Deno.test({
        name,
        ignore,
        fn: () =>
          withPaths(async (p) => {
            const flags = narrowed ? narrowedFlags(c, p) : ["-A"];
            const result = await doctor(flags, argsOf(c, p), p.work);
            assertEquals(result.code, 0, result.stderr);
            assertEquals(result.stderr, "");
            checkLines(result.stdout, expected(c, p));
          }),
      });
    }
  }
}

Deno.test("doctor exits 1 and says which permission is missing", async () => {
  await withPaths(async (p) => {
    const result = await doctor(
      [`--allow-read=${p.skills},${p.work}`, "--allow-run=bash"],
      ["--skills", p.skills],
      p.work,
    );
    assertEquals(result.code, 1, result.stderr);
    const lines = result.stdout.split("\n");
    const note =
      `write of ${p.work} is not granted: run with --allow-write=${p.work}`;
    assert(lines.includes(`  error write ${note}`), result.stdout);
    assert(
      lines.includes(
        "  warn  env   env of PATH is not granted: commands keep the inherited PATH without the running deno's folder (--allow-env=PATH)",
      ),
      result.stdout,
    );
    assertStringIncludes(result.stdout, "\n1 error, ");
  });
});

Deno.test({
  name: "doctor --json gives the same report to programs",
  ignore: NO_SANDBOX !== null,
  fn: () =>
    withPaths(async (p) => {
      const c: Case = { mode: "conversation", isolated: true, narrowed: true };
      const result = await doctor(
        narrowedFlags(c, p),
        [...argsOf(c, p), "--json"],
        p.work,
      );
      assertEquals(result.code, 0, result.stderr);
      const report = JSON.parse(result.stdout);
      assertEquals(report.runtime, {
        name: "local",
        mode: "conversation",
        isolated: true,
        launcher: "bubblewrap",
        cwd: hostPath.join(p.root, "c1"),
        workspace: hostPath.join(p.root, "c1"),
        skillRoots: [p.skills],
      });
      assertEquals(
        report.permissions.map((x: { status: string }) => x.status),
        ["ok", "ok", "ok", "ok", "ok"],
      );
      assertEquals(report.permissions[2].needed, ["bwrap", "bash"]);
      assertEquals(report.commands.network, "none");
      assertEquals(report.commands.write, [
        hostPath.join(p.root, "c1"),
        "a private /tmp",
      ]);
      assertEquals(report.fileTools, {
        scope: "workspace",
        paths: [hostPath.join(p.root, "c1")],
      });
      assertEquals(report.shell.sandbox.allowNet, false);
      assertEquals(
        report.tools.map((t: { name: string }) => t.name),
        ["bash", "rg", "bwrap", "deno"],
      );
      assertEquals(report.errors, []);
    }),
});

Deno.test("doctor reports how much of the catalog budget the skills take and which fall outside", () =>
  withPaths(async (p) => {
    const { writeManySkills } = await import(
      "../tools/testdata/many_skills.ts"
    );
    await writeManySkills(p.skills, 40);
    const json = await doctor(
      ["-A"],
      ["--skills", p.skills, "--catalog-budget", "5000", "--json"],
      p.work,
    );
    assertEquals(json.code, 0, json.stderr);
    const { catalog } = JSON.parse(json.stdout);
    assertEquals(catalog.budget, 5_000);
    assertEquals(catalog.whole, false);
    assert(catalog.chars <= 5_000 && catalog.wholeChars > 5_000);
    // The probe skill and the 40 generated ones.
    assertEquals(catalog.listed.length + catalog.outside.length, 41);
    assert(catalog.listed.length > 3 && catalog.outside.length > 20);
    const text = await doctor(["-A"], ["--skills", p.skills], p.work);
    assertMatch(
      text.stdout,
      /^Catalog: over the 8,000-character budget \(all 41 skills would take [\d,]+, [\d.]+ times it\): \d+ listed, \d+ outside the listing/m,
    );
    assertMatch(
      text.stdout,
      /^Outside: .*, and \d+ more \(--json lists them all\)$/m,
    );
  }));

Deno.test("doctor refuses bad usage with exit code 2", async () => {
  await withPaths(async (p) => {
    const extra = await doctor(["-A"], ["extra"], p.work);
    assertEquals(extra.code, 2);
    assertStringIncludes(extra.stderr, 'Unexpected argument "extra"');
    const net = await doctor(["-A"], ["--allow-net"], p.work);
    assertEquals(net.code, 2);
    assertStringIncludes(net.stderr, 'Option "--allow-net" needs "--isolate"');
  });
});

Deno.test("doctor exits 1 for a skills folder that does not exist", async () => {
  await withPaths(async (p) => {
    const missing = hostPath.join(p.work, "nonexistent");
    const result = await doctor(["-A"], ["--skills", missing], p.work);
    assertEquals(result.code, 1, result.stdout);
    assertStringIncludes(
      result.stdout,
      `error: the skills folder "${missing}" does not exist`,
    );
  });
});

Deno.test("doctor says rg and bwrap are not permitted, not missing, without --allow-run for them; no warning or error is printed twice", async () => {
  await withPaths(async (p) => {
    const result = await doctor(
      [
        `--allow-read=${p.skills},${p.work}`,
        `--allow-write=${p.work}`,
        "--allow-run=bash",
        "--allow-env=PATH",
      ],
      ["--skills", p.skills],
      p.work,
    );
    assertEquals(result.code, 0, result.stdout);
    const lines = result.stdout.split("\n");
    for (const tool of ["rg", "bwrap"]) {
      const line = lines.find((l) =>
        l.includes(` ${tool.padEnd(5)} this process`)
      );
      assert(line?.trimStart().startsWith("not permitted"), result.stdout);
      assertStringIncludes(line!, `--allow-run=${tool}`);
      assert(!/install (ripgrep|bubblewrap)/.test(line!), line);
    }
    assert(!/\bmissing\b|not available/.test(result.stdout), result.stdout);
    // Each fact once: a warning shown in its section is not listed again.
    for (const line of lines) {
      const fact = /^(?:warning|error): (.*)$/.exec(line)?.[1];
      if (fact === undefined) continue;
      assertEquals(
        result.stdout.split(fact).length - 1,
        1,
        `printed twice: ${fact}\n${result.stdout}`,
      );
    }
  });
});

Deno.test("doctor --verbose (or SKILLRUN_LOG=debug) prints the probes' events on stderr, the report on stdout; without, none", async () => {
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", cli, "doctor", ...args],
      env: { ...Deno.env.toObject(), NO_COLOR: "1", SKILLRUN_LOG: "", ...env },
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      stdout: new TextDecoder().decode(output.stdout),
      stderr: new TextDecoder().decode(output.stderr),
    };
  };
  for (
    const [args, env] of [
      [["--verbose"], {}],
      [[], { SKILLRUN_LOG: "debug" }],
    ] as const
  ) {
    const { stdout, stderr } = await run([...args], env);
    assertMatch(stderr, /^\[skillrun\] stdout: ".*bash/m);
    assert(!stdout.includes("[skillrun]"), stdout);
    assertStringIncludes(stdout, "errors");
  }
  const quiet = await run([]);
  assert(!quiet.stderr.includes("[skillrun]"), quiet.stderr);
});

Deno.test("doctor --skills says what each skill's allowed-tools pre-approve and what it ignores (text and JSON)", async () => {
  await withPaths(async (p) => {
    await Deno.mkdir(hostPath.join(p.skills, "release"));
    await Deno.writeTextFile(
      hostPath.join(p.skills, "release", "SKILL.md"),
      "---\nname: release\ndescription: Releases.\nallowed-tools: Bash(git:*) Bash(npm run test) Read Read(./src/**)\n---\nRelease.\n",
    );
    const text = await doctor(["-A"], ["--skills", p.skills], p.work);
    assertEquals(text.code, 0, text.stderr);
    assertStringIncludes(
      text.stdout,
      "\nallowed-tools (pre-approve under an approval policy that asks, e.g. mcp --ask-for-approval, once the skill is loaded):\n" +
        "  release\n" +
        "    ok      bash: git with any arguments\n" +
        '    ok      bash: exactly "npm run test"\n' +
        "    ok      read: every call\n" +
        '    ignored "Read(./src/**)": only Bash takes a pattern',
    );
    const json = await doctor(["-A"], ["--skills", p.skills, "--json"], p.work);
    assertEquals(
      JSON.parse(json.stdout).allowedTools.release.preApproved.length,
      3,
    );
  });
});
