import {
  assert,
  assertEquals,
  assertMatch,
  assertStringIncludes,
} from "./tests/helpers/assert.ts";
import { hostPath } from "./_internal/std.ts";
import {
  anthropicsCollection,
  sharedTest,
} from "./tests/helpers/shared_data.ts";

const REPO = hostPath.fromFileUrl(new URL(".", import.meta.url));
const CLI = hostPath.join(REPO, "cli.ts");
const CORPUS_DATA = anthropicsCollection();
const CORPUS = CORPUS_DATA.path;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `deno run -A cli.ts ...args` as a real process from the repo root. */
async function cli(...args: string[]): Promise<Run> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, ...args],
    cwd: REPO,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("cli list prints the example skills from the repo root", async () => {
  const run = await cli("list", "examples/skills");
  assertEquals(run.code, 0, run.stderr);
  assertMatch(
    run.stdout,
    /^csv-report {2}\/.*\/examples\/skills\/csv-report\/SKILL\.md$/m,
  );
  assertStringIncludes(run.stdout, "json-to-table  ");
  assertMatch(run.stdout, /^\d+ skills\n$/m);
});

Deno.test("cli list prints per-skill warnings and skipped files", async () => {
  await withTempDir(async (root) => {
    await Deno.mkdir(`${root}/Bad_Name`);
    await Deno.writeTextFile(
      `${root}/Bad_Name/SKILL.md`,
      "---\nname: Bad_Name\ndescription: Breaks rules.\nversion: 2\n---\n",
    );
    await Deno.mkdir(`${root}/broken`);
    await Deno.writeTextFile(`${root}/broken/SKILL.md`, "no front matter\n");
    const run = await cli("list", root);
    assertEquals(run.code, 0, run.stderr);
    assertStringIncludes(run.stdout, `Bad_Name  ${root}/Bad_Name/SKILL.md`);
    assertStringIncludes(
      run.stdout,
      '    warning: name: must be lowercase, got "Bad_Name"',
    );
    assertStringIncludes(run.stdout, "    warning: version: unknown field");
    assertStringIncludes(run.stdout, "1 skill\n");
    assertStringIncludes(
      run.stderr,
      `warning: Skipped "${root}/broken/SKILL.md": it has no "---" front matter`,
    );
  });
});

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "cli list --json prints an array of skills with their warnings",
  ),
  async fn() {
    const run = await cli("list", "--json", CORPUS);
    assertEquals(run.code, 0, run.stderr);
    const skills = JSON.parse(run.stdout) as {
      name: string;
      description: string;
      location: string;
      warnings: string[];
    }[];
    assertEquals(skills.length, 13);
    const template = skills.find((s) => s.name === "template-skill")!;
    assertEquals(template.location, `${CORPUS}template/SKILL.md`);
    assertEquals(template.warnings, [
      'name: must equal the folder name "template", got "template-skill"',
    ]);
    assert(skills.every((s) => typeof s.description === "string"));
  },
});

Deno.test("cli list fails with a clear message for a missing folder", async () => {
  const run = await cli("list", "no/such/folder");
  assertEquals(run.code, 1);
  assertStringIncludes(
    run.stderr,
    'skillrun list: Cannot load skills from "no/such/folder": no such file or folder',
  );
});

Deno.test("cli validate exits 0 for valid skills", async () => {
  const run = await cli("validate", "examples/skills");
  assertEquals(run.code, 0, run.stdout + run.stderr);
  assertMatch(run.stdout, /^ok {6}csv-report \(/m);
  assertMatch(run.stdout, /^\d+ valid, 0 invalid$/m);
});

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "cli validate exits 1 and prints each problem for invalid skills",
  ),
  async fn() {
    const run = await cli("validate", CORPUS);
    assertEquals(run.code, 1);
    assertStringIncludes(
      run.stdout,
      `invalid template-skill (${CORPUS}template)\n  - name: must equal the folder name "template", got "template-skill"\n`,
    );
    assertMatch(
      run.stdout,
      /invalid claude-api \(.*\)\n {2}- description: must be at most 1024 characters, got \d+\n/,
    );
    assertStringIncludes(run.stdout, "11 valid, 2 invalid\n");
  },
});

Deno.test("cli validate --json reports problems by field", async () => {
  await withTempDir(async (root) => {
    await Deno.mkdir(`${root}/tool`);
    await Deno.writeTextFile(
      `${root}/tool/SKILL.md`,
      `---\nname: tool\ndescription: ${"x".repeat(1342)}\n---\n`,
    );
    const run = await cli("validate", "--json", `${root}/tool`, `${root}/gone`);
    assertEquals(run.code, 1);
    assertEquals(JSON.parse(run.stdout), [
      {
        path: `${root}/tool`,
        name: "tool",
        valid: false,
        problems: [{
          field: "description",
          message: "description: must be at most 1024 characters, got 1342",
        }],
      },
      {
        path: `${root}/gone`,
        valid: false,
        problems: [{
          field: "path",
          message: `path: no such file or folder "${root}/gone"`,
        }],
      },
    ]);
  });
});

Deno.test("cli validate reports unusable skill files as problems, never a crash", async () => {
  await withTempDir(async (root) => {
    await Deno.mkdir(`${root}/good`);
    await Deno.writeTextFile(
      `${root}/good/SKILL.md`,
      "---\nname: good\ndescription: Fine.\n---\n",
    );
    await Deno.mkdir(`${root}/odd/SKILL.md`, { recursive: true });
    const direct = await cli("validate", `${root}/odd`);
    assertEquals(direct.code, 1, direct.stderr);
    assertEquals(
      direct.stdout,
      `invalid ${root}/odd\n  - SKILL.md: must be a file, got a folder\n0 valid, 1 invalid\n`,
    );
    assertEquals(direct.stderr, "");
    const all = await cli("validate", root);
    assertEquals(all.code, 0, all.stderr);
    assertStringIncludes(all.stdout, `ok      good (${root}/good)`);
    assertStringIncludes(
      all.stderr,
      `warning: Skipped "${root}/odd/SKILL.md": it is not a file`,
    );
    // A SKILL.md that cannot be read is a problem of its path.
    await Deno.mkdir(`${root}/loop`);
    await Deno.symlink("SKILL.md", `${root}/loop/SKILL.md`);
    const loop = await cli("validate", `${root}/loop`);
    assertEquals(loop.code, 1, loop.stderr);
    assertMatch(
      loop.stdout,
      /^invalid .*\/loop\n {2}- path: cannot read ".*\/loop": .*symbolic links/m,
    );
    // So is a path the process may not read.
    const denied = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        `--allow-read=${root}/good`,
        CLI,
        "validate",
        `${root}/odd`,
      ],
      cwd: REPO,
      stdin: "null",
      env: { NO_COLOR: "1" },
    }).output();
    const stdout = new TextDecoder().decode(denied.stdout);
    assertEquals(denied.code, 1, new TextDecoder().decode(denied.stderr));
    assertStringIncludes(stdout, `invalid ${root}/odd\n  - path: cannot read`);
  });
});

Deno.test("cli --help lists the commands and each command has --help", async () => {
  const top = await cli("--help");
  assertEquals(top.code, 0);
  assertMatch(top.stdout, /^ {2}list +List the skills/m);
  assertMatch(top.stdout, /^ {2}validate +Check skills strictly/m);
  for (const command of ["list", "validate"]) {
    const run = await cli(command, "--help");
    assertEquals(run.code, 0, command);
    assertStringIncludes(run.stdout, `Usage: skillrun ${command} [--json`);
    assertEquals((await cli("help", command)).stdout, run.stdout);
  }
});

Deno.test("cli refuses an unknown command, an unknown option and missing arguments with exit 2", async () => {
  const unknown = await cli("frobnicate");
  assertEquals(unknown.code, 2);
  assertStringIncludes(
    unknown.stderr,
    'skillrun: unknown command "frobnicate"',
  );
  assertStringIncludes(unknown.stderr, "Commands:");
  const option = await cli("list", "--verbose", "examples/skills");
  assertEquals(option.code, 2);
  assertStringIncludes(
    option.stderr,
    'skillrun list: Unknown option "--verbose"',
  );
  const missing = await cli("validate");
  assertEquals(missing.code, 2);
  assertStringIncludes(missing.stderr, "Missing argument");
  const topic = await cli("help", "frobnicate");
  assertEquals(topic.code, 2);
  assertStringIncludes(topic.stderr, 'skillrun: unknown command "frobnicate"');
  assertEquals(topic.stdout, "");
  const none = await cli();
  assertEquals(none.code, 2);
  assertStringIncludes(none.stderr, "Usage: skillrun <command>");
});

Deno.test("cli --version prints the version of deno.json", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(hostPath.join(REPO, "deno.json")),
  ) as { version: string };
  const run = await cli("--version");
  assertEquals(run.code, 0, run.stderr);
  assertEquals(run.stdout, `skillrun ${config.version}\n`);
});

Deno.test("cli list --catalog prints the catalog a system prompt carries", async () => {
  const run = await cli("list", "--catalog", "examples/skills");
  assertEquals(run.code, 0, run.stderr);
  assert(run.stdout.startsWith("<available_skills>"), run.stdout);
  assertStringIncludes(run.stdout, "<name>csv-report</name>");
  assertStringIncludes(run.stdout, "<name>json-to-table</name>");
  assert(run.stdout.trimEnd().endsWith("</available_skills>"), run.stdout);
  const both = await cli("list", "--catalog", "--json", "examples/skills");
  assertEquals(both.code, 2);
  assertStringIncludes(
    both.stderr,
    'Options "--json" and "--catalog" exclude each other',
  );
});

Deno.test("cli installs from a clone as the README says, and the installed command runs", async () => {
  await withTempDir(async (root) => {
    const install = await new Deno.Command(Deno.execPath(), {
      args: [
        "install",
        "-g",
        "-A",
        "-n",
        "skillrun",
        "--root",
        root,
        "--config",
        "deno.json",
        "cli.ts",
      ],
      cwd: REPO,
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(
      install.code,
      0,
      new TextDecoder().decode(install.stderr),
    );
    const installed = await new Deno.Command(`${root}/bin/skillrun`, {
      args: ["--version"],
      // The shim runs `deno`: on PATH once `npm install -g deno@2.9.6` ran.
      env: {
        PATH: `${hostPath.dirname(Deno.execPath())}:${
          Deno.env.get("PATH") ?? ""
        }`,
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(installed.stdout);
    assertEquals(installed.code, 0, new TextDecoder().decode(installed.stderr));
    assertMatch(stdout, /^skillrun \d+\.\d+\.\d+\n$/);
  });
});

Deno.test("cli: several skill folders follow one rule on every command (repeated --skills, comma lists), shown in every --help", async () => {
  const a = "examples/skills";
  const b = "examples/edge/skills";
  for (
    const args of [["--skills", a, "--skills", b], ["--skills", `${a},${b}`], [
      `${a},${b}`,
    ], [a, b]]
  ) {
    const listed = await cli("list", "--json", ...args);
    assertEquals(listed.code, 0, listed.stderr);
    assertEquals(
      (JSON.parse(listed.stdout) as { name: string }[]).map((s) => s.name),
      ["csv-report", "json-to-table", "sandbox-facts", "word-count"],
      args.join(" "),
    );
  }
  for (
    const args of [["--skills", a, "--skills", b], ["--skills", `${a},${b}`]]
  ) {
    const doctor = await cli("doctor", "--json", ...args);
    const report = JSON.parse(doctor.stdout) as { skillRoots?: string[] };
    assertStringIncludes(
      JSON.stringify(report),
      "examples/edge/skills",
      args.join(" "),
    );
    assertStringIncludes(
      JSON.stringify(report),
      "examples/skills",
      args.join(" "),
    );
  }
  for (
    const args of [
      ["--skills", a, "--skills", b, "word-count"],
      ["--skills", `${a},${b}`, "word-count"],
      [`${a},${b}`, "word-count"],
    ]
  ) {
    const ran = await cli("run", ...args, "--", "basename $PWD");
    assertEquals(ran.code, 0, `${args.join(" ")}: ${ran.stderr}`);
    assertEquals(ran.stdout, "word-count\n");
  }
  for (const command of ["list", "doctor", "run", "mcp"]) {
    const help = await cli(command, "--help");
    assertEquals(help.code, 0);
    assertStringIncludes(
      help.stdout.replace(/\s+/g, " "),
      "several: repeat --skills or separate folders with commas",
      command,
    );
  }
});

Deno.test("cli --help says mcp serves over stdio or HTTP, and list's usage names --catalog", async () => {
  const top = await cli("--help");
  const mcpLine = top.stdout.split("\n").find((l) =>
    l.trim().startsWith("mcp ")
  );
  assert(mcpLine, top.stdout);
  assert(!/over stdio$/.test(mcpLine), mcpLine);
  assertStringIncludes(mcpLine, "HTTP");
  const list = await cli("list", "--help");
  const usage = list.stdout.split("\n", 1)[0]!;
  assertStringIncludes(usage, "--catalog");
  assertStringIncludes(usage, "--json");
});

/** A raw control character (tab and newline aside), DEL or bidi override. */
// deno-lint-ignore no-control-regex
const RAW_HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f\u202e]/;

Deno.test("cli list, --catalog and validate show a skill's control characters escaped; validate refuses control, tag and bidi characters", async () => {
  await withTempDir(async (root) => {
    const hostile =
      "Clears\u001b[2J the screen\u001b]0;owned\u0007 and\u001b[8m hides";
    await Deno.mkdir(`${root}/escapes`);
    await Deno.writeTextFile(
      `${root}/escapes/SKILL.md`,
      `---\nname: escapes\ndescription: ${JSON.stringify(hostile)}\n---\n`,
    );
    await Deno.mkdir(`${root}/tags`);
    await Deno.writeTextFile(
      `${root}/tags/SKILL.md`,
      "---\nname: tags\ndescription: Looks plain\u{e0049}\u{e0067}\u{e006e}\n---\n",
    );
    await Deno.mkdir(`${root}/bidi`);
    await Deno.writeTextFile(
      `${root}/bidi/SKILL.md`,
      "---\nname: bidi\ndescription: Reads txt.\u202eexe\n---\n",
    );
    const list = await cli("list", root);
    assertEquals(list.code, 0, list.stderr);
    for (const output of [list.stdout, list.stderr]) {
      assert(!RAW_HIDDEN.test(output));
      assert(!/[\u{e0000}-\u{e007f}]/u.test(output));
    }
    assertStringIncludes(
      list.stdout,
      "Clears\\u001b[2J the screen\\u001b]0;owned\\u0007",
    );
    assertStringIncludes(list.stdout, "Reads txt.\\u202eexe");
    assertStringIncludes(list.stdout, "Looks plain\\udb40\\udc49");
    // The lenient loader warns, naming the class.
    assertStringIncludes(
      list.stdout,
      "description: must not contain control characters (found U+001B)",
    );
    assertStringIncludes(
      list.stdout,
      "description: must not contain Unicode tag characters (found U+E0049)",
    );
    assertStringIncludes(
      list.stdout,
      "description: must not contain bidi control characters (found U+202E)",
    );

    const catalog = await cli("list", "--catalog", root);
    assertEquals(catalog.code, 0, catalog.stderr);
    assert(!RAW_HIDDEN.test(catalog.stdout));
    assertStringIncludes(catalog.stdout, "Reads txt.\\u202eexe");

    for (
      const [name, kind] of [
        ["escapes", "control characters"],
        ["tags", "Unicode tag characters"],
        ["bidi", "bidi control characters"],
      ]
    ) {
      const run = await cli("validate", `${root}/${name}`);
      assertEquals(run.code, 1, run.stdout);
      assertStringIncludes(run.stdout, `description: must not contain ${kind}`);
      assert(!RAW_HIDDEN.test(run.stdout));
    }
    // A name with a control character is refused by validate, naming the class.
    await Deno.mkdir(`${root}/ctl`);
    await Deno.writeTextFile(
      `${root}/ctl/SKILL.md`,
      '---\nname: "ctl\\u0007"\ndescription: Rings.\n---\n',
    );
    const bell = await cli("validate", `${root}/ctl`);
    assertEquals(bell.code, 1);
    assertStringIncludes(
      bell.stdout,
      "name: must not contain control characters (found U+0007)",
    );
    assert(!bell.stdout.includes("\u0007"));
  });
});

Deno.test("cli list reports how much of the catalog budget the skills take, and which fall outside", async () => {
  await withTempDir(async (root) => {
    const { writeManySkills } = await import(
      "./tools/testdata/many_skills.ts"
    );
    await writeManySkills(root, 60);
    const over = await cli("list", root);
    assertEquals(over.code, 0, over.stderr);
    const line =
      /^Catalog: over the 8,000-character budget \(all 60 skills would take ([\d,]+), .*\): (\d+) listed, (\d+) outside the listing/m
        .exec(over.stdout);
    assert(line, over.stdout);
    assertEquals(Number(line[2]) + Number(line[3]), 60);
    assertMatch(
      over.stdout,
      /^Outside: [a-z-]+(, [a-z-]+){19}, and \d+ more \(--json lists them all\)$/m,
    );
    assertMatch(over.stdout, /^60 skills$/m);
    const json = await cli("list", "--json", root);
    const skills = JSON.parse(json.stdout) as { inCatalog: boolean }[];
    assertEquals(
      skills.filter((s) => !s.inCatalog).length,
      Number(line[3]),
    );
    const whole = await cli("list", "--catalog-budget", "100000", root);
    assertMatch(
      whole.stdout,
      /^Catalog: [\d,]+ of the 100,000-character budget \(\d+%\); every skill is listed \(60\)\.$/m,
    );
    const bad = await cli("list", "--catalog-budget", "lots", root);
    assertEquals(bad.code, 2);
    assertStringIncludes(
      bad.stderr,
      'Option "--catalog-budget" must be a positive number of characters, got "lots"',
    );
    const small = await cli("list", "--catalog-budget", "100", root);
    assertEquals(small.code, 1);
    assertStringIncludes(
      small.stderr,
      'skillrun list: Cannot build the skill tool with catalogBudget "100"',
    );
  });
});
