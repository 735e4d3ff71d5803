import {
  assert,
  assertEquals,
  assertLess,
  assertMatch,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { runCommand } from "./run.ts";
import {
  BubblewrapLauncher,
  IsolationUnavailableError,
} from "../runtimes/local/isolated.ts";

/** Why the isolated mode cannot run here, or `null`. */
const NO_SANDBOX: string | null = await BubblewrapLauncher.create().then(
  () => null,
  (error) =>
    error instanceof IsolationUnavailableError
      ? error.message
      : Promise.reject(error),
);

const repo = hostPath.fromFileUrl(new URL("../", import.meta.url));
const cli = hostPath.join(repo, "cli.ts");

interface Output {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

async function skillrun(args: string[], cwd = repo): Promise<Output> {
  const started = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "-A", cli, ...args],
    cwd,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
    ms: performance.now() - started,
  };
}

async function withSkills(
  fn: (skills: string, temp: string) => Promise<void>,
): Promise<void> {
  const temp = await Deno.realPath(await Deno.makeTempDir());
  try {
    const skills = hostPath.join(temp, "skills");
    await Deno.mkdir(hostPath.join(skills, "probe"), { recursive: true });
    await Deno.writeTextFile(
      hostPath.join(skills, "probe", "SKILL.md"),
      "---\nname: probe\ndescription: A skill for the CLI tests.\n---\nRun things.\n",
    );
    await Deno.writeTextFile(
      hostPath.join(skills, "probe", "data.txt"),
      "from the skill\n",
    );
    await fn(skills, temp);
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
}

Deno.test("run passes the command's exit code through", async () => {
  await withSkills(async (skills) => {
    const result = await skillrun(["run", skills, "probe", "--", "exit 7"]);
    assertEquals(result.code, 7, result.stderr);
    assertEquals(result.stdout, "");
    const ok = await skillrun(["run", skills, "probe", "--", "true"]);
    assertEquals(ok.code, 0, ok.stderr);
  });
});

Deno.test("run keeps the command's stdout and stderr on their own streams", async () => {
  await withSkills(async (skills) => {
    const result = await skillrun([
      "run",
      skills,
      "probe",
      "--",
      "echo to-out; echo to-err >&2; echo more-out",
    ]);
    assertEquals(result.code, 0, result.stderr);
    assertEquals(result.stdout, "to-out\nmore-out\n");
    assertEquals(result.stderr, "to-err\n");
  });
});

Deno.test("run runs the command in the skill's folder", async () => {
  await withSkills(async (skills) => {
    const result = await skillrun([
      "run",
      skills,
      "probe",
      "--",
      "pwd; cat data.txt",
    ]);
    assertEquals(result.code, 0, result.stderr);
    assertEquals(
      result.stdout,
      `${hostPath.join(skills, "probe")}\nfrom the skill\n`,
    );
  });
});

Deno.test("run works from the repository root with the example skills", async () => {
  const result = await skillrun([
    "run",
    "examples/skills",
    "csv-report",
    "--",
    "ls",
  ]);
  assertEquals(result.code, 0, result.stderr);
  const names = result.stdout.split("\n");
  for (const name of ["SKILL.md", "scripts", "data"]) {
    assert(names.includes(name), `expected ${name} in ${result.stdout}`);
  }
});

Deno.test("run quotes several words after -- one by one", async () => {
  await withSkills(async (skills) => {
    const result = await skillrun([
      "run",
      skills,
      "probe",
      "--",
      "printf",
      "[%s]",
      "a b",
      "it's",
      "$HOME",
    ]);
    assertEquals(result.code, 0, result.stderr);
    assertEquals(result.stdout, "[a b][it's][$HOME]");
  });
});

Deno.test("run runs a command that starts with a dash as the command", async () => {
  await withSkills(async (skills) => {
    for (const word of ["--help", "-x"]) {
      const result = await skillrun(["run", skills, "probe", "--", word]);
      assertEquals(result.code, 127, result.stderr);
      assertStringIncludes(result.stderr, `${word}: command not found`);
    }
  });
});

Deno.test("run --timeout stops the command, exits with 124 and says so", async () => {
  await withSkills(async (skills) => {
    const result = await skillrun([
      "run",
      skills,
      "probe",
      "--timeout",
      "300",
      "--",
      "echo started; sleep 30",
    ]);
    assertEquals(result.code, 124, result.stderr);
    assertEquals(result.stdout, "started\n");
    assertStringIncludes(result.stderr, "command timed out after 300 ms");
    assertLess(result.ms, 15_000);
  });
});

Deno.test("run refuses an unknown skill with exit code 1 and names the available ones", async () => {
  await withSkills(async (skills) => {
    const result = await skillrun(["run", skills, "nope", "--", "true"]);
    assertEquals(result.code, 1);
    assertStringIncludes(result.stderr, 'Cannot select skill "nope"');
    assertStringIncludes(result.stderr, "probe");
    assertEquals(result.stdout, "");
  });
});

Deno.test("run reports a missing skills folder with exit code 1", async () => {
  await withSkills(async (_skills, temp) => {
    const missing = hostPath.join(temp, "missing");
    const result = await skillrun(["run", missing, "probe", "--", "true"]);
    assertEquals(result.code, 1);
    assertMatch(result.stderr, /^skillrun run: /);
    assertStringIncludes(result.stderr, "missing");
  });
});

Deno.test("run --help prints its usage on stdout", async () => {
  for (
    const args of [["run", "--help"], ["run", "-h"], ["help", "run"], [
      "run",
      "x",
      "--help",
    ]]
  ) {
    const result = await skillrun(args);
    assertEquals(result.code, 0, result.stderr);
    assertMatch(result.stdout, /^Usage: skillrun run <skills-dir> <skill>/);
    assertStringIncludes(result.stdout, "--timeout <ms>");
    assertStringIncludes(result.stdout, "--conversation <id>");
  }
  const main = await skillrun(["--help"]);
  assertMatch(main.stdout, /\n {2}run +Prepare a skill/);
  assertMatch(main.stdout, /\n {2}mcp +Serve the skill tools/);
});

Deno.test("run refuses bad usage with exit code 2 and its help", async () => {
  await withSkills(async (skills) => {
    const cases: [string[], string][] = [
      [["run", skills, "probe"], 'No command given: put it after "--"'],
      [["run", skills, "--", "ls"], "Expected <skills-dir> and <skill>"],
      [["run", skills, "probe", "--", ""], 'No command given after "--"'],
      [
        ["run", skills, "probe", "--timeout", "soon", "--", "ls"],
        'Option "--timeout" needs a positive whole number of ms, got "soon"',
      ],
      [
        ["run", skills, "probe", "--timeout", "0", "--", "ls"],
        'Option "--timeout" needs a positive whole number of ms, got "0"',
      ],
      [
        ["run", skills, "probe", "--root", "/tmp/x", "--", "ls"],
        'Option "--root" needs "--conversation"',
      ],
      [
        ["run", skills, "probe", "--bogus", "--", "ls"],
        'Unknown option "--bogus"',
      ],
    ];
    for (const [args, message] of cases) {
      const result = await skillrun(args);
      assertEquals(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
      assertStringIncludes(result.stderr, message);
      assertStringIncludes(result.stderr, "Usage: skillrun run");
    }
  });
});

Deno.test("run --conversation works on a copy of the skill in the workspace", async () => {
  await withSkills(async (skills, temp) => {
    const root = hostPath.join(temp, "conversations");
    const result = await skillrun([
      "run",
      skills,
      "probe",
      "--conversation",
      "thread.1",
      "--root",
      root,
      "--",
      "pwd; echo made > made.txt",
    ]);
    assertEquals(result.code, 0, result.stderr);
    const base = result.stdout.trim();
    assert(
      base.startsWith(hostPath.join(root, "thread.1", "skills") + "/"),
      base,
    );
    assertEquals(
      await Deno.readTextFile(hostPath.join(base, "made.txt")),
      "made\n",
    );
    assertEquals(
      await Deno.readTextFile(hostPath.join(base, "data.txt")),
      "from the skill\n",
    );
    const source = [...Deno.readDirSync(hostPath.join(skills, "probe"))]
      .map((e) => e.name).sort();
    assertEquals(source, ["SKILL.md", "data.txt"]);
  });
});

Deno.test("run refuses an invalid conversation id with exit code 1", async () => {
  await withSkills(async (skills, temp) => {
    const result = await skillrun([
      "run",
      skills,
      "probe",
      "--conversation",
      "../escape",
      "--root",
      hostPath.join(temp, "c"),
      "--",
      "true",
    ]);
    assertEquals(result.code, 1);
    assertStringIncludes(result.stderr, "../escape");
  });
});

Deno.test("run exits with 130 and stops the command on Ctrl-C", async () => {
  await withSkills(async (skills, temp) => {
    const started = hostPath.join(temp, "started");
    const after = hostPath.join(temp, "after-sleep");
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "-A",
        cli,
        "run",
        skills,
        "probe",
        "--",
        `touch '${started}'; sleep 3; touch '${after}'`,
      ],
      stdout: "piped",
      stderr: "piped",
      stdin: "null",
    }).spawn();
    const exists = (path: string) =>
      Deno.stat(path).then(() => true, () => false);
    const deadline = Date.now() + 20_000;
    while (!(await exists(started))) {
      assertLess(Date.now(), deadline, "the command never started");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    child.kill("SIGINT");
    const output = await child.output();
    const stderr = new TextDecoder().decode(output.stderr);
    assertEquals(output.code, 130, stderr);
    assertStringIncludes(stderr, "interrupted");
    await new Promise((resolve) => setTimeout(resolve, 4000));
    assertEquals(
      await exists(after),
      false,
      "the command went on after Ctrl-C",
    );
  });
});

Deno.test("run --config gives the skill its environment and bootstraps it once before the command", async () => {
  await withSkills(async (skills, temp) => {
    const config = hostPath.join(temp, "config.json");
    await Deno.writeTextFile(
      config,
      JSON.stringify({
        probe: {
          env: { PROBE_TITLE: "from config" },
          bootstrap: ["echo booted >> boot.log"],
        },
      }),
    );
    const result = await skillrun([
      "run",
      skills,
      "probe",
      "--config",
      config,
      "--",
      'echo "$PROBE_TITLE"; cat boot.log',
    ]);
    assertEquals(result.code, 0, result.stderr);
    assertEquals(result.stdout, "from config\nbooted\n");
    assertEquals(result.stderr, "", "a quick preparation shows no progress");
  });
});

Deno.test("run --conversation resumed does not bootstrap an unchanged skill again, and does a changed one", async () => {
  await withSkills(async (skills, temp) => {
    const root = hostPath.join(temp, "conversations");
    const config = hostPath.join(temp, "config.json");
    // The log lives in the workspace, beside skills/: a new copy keeps it.
    await Deno.writeTextFile(
      config,
      JSON.stringify({
        probe: { bootstrap: ["echo booted >> ../../boot.log"] },
      }),
    );
    const run = () =>
      skillrun([
        "run",
        skills,
        "probe",
        "--conversation",
        "c1",
        "--root",
        root,
        "--config",
        config,
        "--",
        "cat ../../boot.log",
      ]);
    const first = await run();
    assertEquals(first.code, 0, first.stderr);
    assertEquals(first.stdout, "booted\n");
    const second = await run();
    assertEquals(second.code, 0, second.stderr);
    assertEquals(
      second.stdout,
      "booted\n",
      "an unchanged skill was bootstrapped again",
    );
    await Deno.writeTextFile(
      hostPath.join(skills, "probe", "data.txt"),
      "changed\n",
    );
    const third = await run();
    assertEquals(third.code, 0, third.stderr);
    assertEquals(third.stdout, "booted\nbooted\n");
    const fourth = await run();
    assertEquals(fourth.stdout, "booted\nbooted\n");
  });
});

Deno.test("run shows the progress of a long preparation on stderr", async () => {
  await withSkills(async (skills, temp) => {
    const config = hostPath.join(temp, "config.json");
    await Deno.writeTextFile(
      config,
      JSON.stringify({
        probe: { bootstrap: ["sleep 2.5", "true"] },
      }),
    );
    const result = await skillrun([
      "run",
      skills,
      "probe",
      "--config",
      config,
      "--",
      "echo done",
    ]);
    assertEquals(result.code, 0, result.stderr);
    assertEquals(result.stdout, "done\n");
    assertMatch(
      result.stderr,
      /^skillrun: preparing "probe" \(bootstrap[^)]*\) \[\d+\.\d s\]$/m,
    );
  });
});

Deno.test("run reports a failing bootstrap with exit code 1, without configured values", async () => {
  await withSkills(async (skills, temp) => {
    const config = hostPath.join(temp, "config.json");
    await Deno.writeTextFile(
      config,
      JSON.stringify({
        probe: {
          env: { TOKEN: "s3cret-value" },
          bootstrap: ['echo "token is $TOKEN" >&2; exit 9'],
        },
      }),
    );
    const result = await skillrun([
      "run",
      skills,
      "probe",
      "--config",
      config,
      "--",
      "echo never",
    ]);
    assertEquals(result.code, 1);
    assertEquals(result.stdout, "");
    assertStringIncludes(result.stderr, "probe");
    assert(!result.stderr.includes("s3cret-value"), result.stderr);
  });
});

Deno.test("run refuses a --config entry for a skill that does not exist", async () => {
  await withSkills(async (skills, temp) => {
    const config = hostPath.join(temp, "config.json");
    await Deno.writeTextFile(
      config,
      JSON.stringify({ prboe: { env: { TOKEN: "s3cret-value" } } }),
    );
    const result = await skillrun([
      "run",
      skills,
      "probe",
      "--config",
      config,
      "--",
      "echo ran",
    ]);
    assertEquals(result.code, 1, result.stderr);
    assertEquals(result.stdout, "");
    assertStringIncludes(
      result.stderr,
      'Cannot use the --config entry "prboe": no such skill (available: "probe")',
    );
    assertStringIncludes(result.stderr, '"probe"');
    assert(!result.stderr.includes("s3cret-value"), result.stderr);
  });
});

Deno.test("run refuses an unusable --config file with exit code 2", async () => {
  await withSkills(async (skills, temp) => {
    const config = hostPath.join(temp, "config.json");
    await Deno.writeTextFile(config, '{"probe": {"env": {"A": 1}}}');
    const result = await skillrun([
      "run",
      skills,
      "probe",
      "--config",
      config,
      "--",
      "true",
    ]);
    assertEquals(result.code, 2);
    assertStringIncludes(
      result.stderr,
      `Cannot read config "${config}": skill "probe"`,
    );
  });
});

Deno.test("runCommand() writes to the given streams", async () => {
  await withSkills(async (skills) => {
    const out: string[] = [];
    const err: string[] = [];
    const sink = (into: string[]) => ({
      write: (bytes: Uint8Array) => {
        into.push(new TextDecoder().decode(bytes));
        return Promise.resolve(bytes.length);
      },
    });
    const code = await runCommand(
      [skills, "probe", "--", "echo a; echo b >&2; exit 3"],
      { streams: { stdout: sink(out), stderr: sink(err) }, stdin: null },
    );
    assertEquals(code, 3);
    assertEquals(out.join(""), "a\n");
    assertEquals(err.join(""), "b\n");
  });
});

Deno.test({
  name:
    "run --isolate runs the command in a sandbox: skill writable, nothing else of the host",
  ignore: NO_SANDBOX !== null,
  fn: async () => {
    await withSkills(async (skills, temp) => {
      await Deno.writeTextFile(hostPath.join(temp, "outside.txt"), "host\n");
      // The working folder (writable in plain isolated mode) is a sibling.
      const work = hostPath.join(temp, "work");
      await Deno.mkdir(work);
      const result = await skillrun([
        "run",
        "--isolate",
        skills,
        "probe",
        "--",
        `cat data.txt; echo made > made.txt; echo x > ${temp}/escape.txt; echo $HOME; cat ${temp}/outside.txt; echo end`,
      ], work);
      assertEquals(result.code, 0, result.stderr);
      assertEquals(result.stdout, "from the skill\n/tmp/home\nend\n");
      // The write to escape.txt landed in the private /tmp, not on the host.
      assertStringIncludes(result.stderr, "outside.txt: No such file");
      assertEquals(
        await Deno.readTextFile(hostPath.join(skills, "probe", "made.txt")),
        "made\n",
      );
      assertEquals(
        [...Deno.readDirSync(temp)].map((e) => e.name).sort(),
        ["outside.txt", "skills", "work"],
      );
    });
  },
});
if (NO_SANDBOX !== null) {
  console.error(`Ignoring "run --isolate ...": ${NO_SANDBOX}`);
}

Deno.test({
  name:
    "run --isolate --allow-net reaches a loopback server; without it nothing",
  ignore: NO_SANDBOX !== null,
  fn: async () => {
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () => new Response("pong"),
    );
    try {
      await withSkills(async (skills, temp) => {
        const fetch =
          `exec 3<>/dev/tcp/127.0.0.1/${server.addr.port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && tail -n 1 <&3`;
        const allowed = await skillrun(
          ["run", "--isolate", "--allow-net", skills, "probe", "--", fetch],
          temp,
        );
        assertEquals(allowed.stdout, "pong");
        const denied = await skillrun(
          ["run", "--isolate", skills, "probe", "--", fetch],
          temp,
        );
        assertEquals(denied.stdout, "");
        assertStringIncludes(denied.stderr, "Connection refused");
      });
    } finally {
      await server.shutdown();
    }
  },
});

Deno.test("run --allow-net without --isolate is a usage error", async () => {
  await withSkills(async (skills) => {
    const result = await skillrun([
      "run",
      "--allow-net",
      skills,
      "probe",
      "--",
      "true",
    ]);
    assertEquals(result.code, 2);
    assertStringIncludes(
      result.stderr,
      'Option "--allow-net" needs "--isolate"',
    );
  });
});

Deno.test("run streams output live, keeps stdout and stderr interleaved, and passes stdin through", async () => {
  await withSkills(async (skills) => {
    const events: string[] = [];
    let started = 0;
    const sink = (name: string) => ({
      write: (bytes: Uint8Array) => {
        events.push(
          `${name}:${new TextDecoder().decode(bytes)}@${
            Math.round(performance.now() - started)
          }`,
        );
        return Promise.resolve(bytes.length);
      },
    });
    started = performance.now();
    const code = await runCommand(
      [
        skills,
        "probe",
        "--",
        // Reads a line from stdin, then writes out, err, out with pauses.
        'read line; echo "got $line"; sleep 0.6; echo e1 >&2; sleep 0.6; echo o2',
      ],
      {
        streams: { stdout: sink("out"), stderr: sink("err") },
        stdin: ReadableStream.from([new TextEncoder().encode("hello\n")]),
      },
    );
    assertEquals(code, 0);
    const order = events.map((e) => e.replace(/@\d+$/, ""));
    assertEquals(order, ["out:got hello\n", "err:e1\n", "out:o2\n"]);
    // The first line arrived long before the command ended (live, not at the end).
    const at = events.map((e) => Number(/@(\d+)$/.exec(e)![1]));
    assertLess(at[0]!, at[2]! - 800, events.join(" "));
  });
});

Deno.test("run passes this process's stdin to the command", async () => {
  await withSkills(async (skills) => {
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "-A",
        cli,
        "run",
        skills,
        "probe",
        "--",
        "wc -l",
      ],
      cwd: repo,
      env: { NO_COLOR: "1" },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode("a\nb\nc\n"));
    await writer.close();
    const output = await child.output();
    assertEquals(output.code, 0, new TextDecoder().decode(output.stderr));
    assertEquals(new TextDecoder().decode(output.stdout).trim(), "3");
  });
});

Deno.test("run --verbose prints the preparation's events on stderr, the configured value removed", async () => {
  await withSkills(async (skills, temp) => {
    const config = hostPath.join(temp, "config.json");
    const secret = "verbose-s3cr3t-value-9";
    await Deno.writeTextFile(
      config,
      JSON.stringify({
        probe: { env: { PROBE_KEY: secret }, bootstrap: [`echo ${secret}`] },
      }),
    );
    const result = await skillrun([
      "run",
      skills,
      "probe",
      "--verbose",
      "--config",
      config,
      "--",
      "echo ok",
    ]);
    assertEquals(result.code, 0, result.stderr);
    assertEquals(result.stdout, "ok\n");
    assertMatch(
      result.stderr,
      /^\[skillrun\] prepare probe: bootstrap \(command 1 of 1\)$/m,
    );
    assertMatch(result.stderr, /^\[skillrun\] prepare probe: done$/m);
    assert(!result.stderr.includes(secret), result.stderr);
  });
});

Deno.test("on a terminal a long preparation shows one progress line, rewritten in place and cleared", async () => {
  await withSkills(async (skills, temp) => {
    const config = hostPath.join(temp, "config.json");
    await Deno.writeTextFile(
      config,
      JSON.stringify({ probe: { bootstrap: ["sleep 2", "true"] } }),
    );
    const out: string[] = [];
    const err: string[] = [];
    const sink = (into: string[], terminal: boolean) => ({
      write: (bytes: Uint8Array) => {
        into.push(new TextDecoder().decode(bytes));
        return Promise.resolve(bytes.length);
      },
      isTerminal: () => terminal,
    });
    const code = await runCommand(
      [skills, "probe", "--config", config, "--", "echo done"],
      {
        streams: { stdout: sink(out, false), stderr: sink(err, true) },
        stdin: null,
      },
    );
    assertEquals(code, 0, err.join(""));
    assertEquals(out.join(""), "done\n");
    const text = err.join("");
    // Rewritten (more than one update), never a new line, cleared at the end.
    assert(
      // deno-lint-ignore no-control-regex
      (text.match(/\r\x1b\[Kskillrun: preparing "probe" \(bootstrap/g) ?? [])
        .length >= 2,
      JSON.stringify(text),
    );
    assert(!text.includes("\n"), JSON.stringify(text));
    assert(text.endsWith("\r\x1b[K"), JSON.stringify(text));
  });
});
