// The README and the docs/ pages, checked as a newcomer would use them.
//
// - Every command in every README and docs page works verbatim on a fresh clone
//   with only Node: Deno is called as `npx -y deno@2.9.6` (or after the line
//   that puts it on PATH), the files a command names exist, and the quick
//   command lines run; a command documented with narrowed `--allow-*` flags
//   runs under exactly those flags.
// - The README's quick start is pasted into a fresh folder as a JSR user would:
//   its shell block makes the skill, its `agent.ts` imports
//   `jsr:@skillrun/skillrun` (which Deno resolves to this package's `.`, the
//   module JSR serves, under whichever configuration runs this test: the
//   development one or the official std's), and it is type-checked and run
//   under the flags the README gives.
// - The TypeScript blocks of README.md and docs/*.md run in `deno test --doc`
//   (the `test` and `test:official` tasks), like every JSDoc example.
// - Every relative link and anchor resolves; every docs page is in the
//   README's contents; the CLI reference lists every command; the
//   architecture picture names only parts that exist.
import {
  assert,
  assertEquals,
  assertMatch,
  assertStringIncludes,
} from "./helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import {
  BubblewrapLauncher,
  IsolationUnavailableError,
} from "../runtimes/local/isolated.ts";

const ROOT = hostPath.fromFileUrl(new URL("../", import.meta.url));
const DENO = "npx -y deno@2.9.6";

/**
 * Whether this test runs under `deno.official.json` (`task test:official`):
 * there `@std/assert` is the official package (a `jsr:` specifier, or its
 * linked source), in development `npm:deno-std`.
 */
const OFFICIAL = !import.meta.resolve("@std/assert").includes("/deno-std/");

async function git(...args: string[]): Promise<string[]> {
  const out = await new Deno.Command("git", {
    args,
    cwd: ROOT,
    stdout: "piped",
  }).output();
  return new TextDecoder().decode(out.stdout).split("\n").filter((p) => p);
}

/** Every README.md of the project and every page under docs/. */
async function docFiles(): Promise<string[]> {
  const files = await git(
    "ls-files",
    "--cached",
    "--others",
    "--exclude-standard",
    "*.md",
  );
  return files.filter((p) =>
    p.endsWith("README.md") || /^docs\/[\w-]+\.md$/.test(p)
  );
}

/** The README and the docs pages (what the front page links to). */
async function frontAndPages(): Promise<string[]> {
  return (await docFiles()).filter((p) =>
    p === "README.md" || p.startsWith("docs/")
  );
}

function read(file: string): Promise<string> {
  return Deno.readTextFile(hostPath.join(ROOT, file));
}

/** The fenced blocks of a Markdown file with their info string. */
function blocks(markdown: string): { info: string; text: string }[] {
  return [...markdown.matchAll(/^```([^\n]*)\n([\s\S]*?)^```/gm)].map((m) => ({
    info: m[1]!.trim(),
    text: m[2]!,
  }));
}

/** The command lines of the `sh` blocks of a Markdown file (continuations joined). */
function commands(markdown: string): string[] {
  const lines: string[] = [];
  for (const block of blocks(markdown)) {
    if (block.info !== "sh") continue;
    const text = block.text.replace(/\\\n\s*/g, " ");
    for (const raw of text.split("\n")) {
      const line = raw.replace(/\s+#.*$/, "").trim();
      if (line && !line.startsWith("#")) lines.push(line);
    }
  }
  return lines;
}

/** Runs a documented line with bash from `cwd`, `npx -y deno@2.9.6` being this Deno. */
function runLine(
  line: string,
  cwd: string,
  extraDenoArgs: readonly string[] = [],
): Promise<Deno.CommandOutput> {
  assert(line.startsWith(`${DENO} `), line);
  const rest = line.slice(DENO.length + 1);
  const [sub, ...more] = rest.split(" ");
  const quoted = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const script = [quoted(Deno.execPath()), sub!, ...extraDenoArgs.map(quoted)]
    .join(" ") + " " + more.join(" ");
  return new Deno.Command("bash", {
    args: ["-c", "--", script],
    cwd,
    env: { NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

Deno.test("README and docs commands call Deno as a fresh clone with only Node can, and name files that exist", async () => {
  const files = await docFiles();
  assert(files.includes("README.md") && files.includes("examples/README.md"));
  assert(files.includes("docs/cli.md"), files.join(", "));
  let checked = 0;
  for (const file of files) {
    const markdown = await read(file);
    let denoOnPath = false;
    for (const line of commands(markdown)) {
      if (/npm install -g deno@2\.9\.6/.test(line)) denoOnPath = true;
      const words = line.split(/\s+/).filter((w) => !/^[A-Z_]+=/.test(w));
      if (words[0] === "deno") {
        assert(denoOnPath, `${file}: "${line}" needs Deno on PATH`);
      }
      if (words[0] === "npx") {
        assertEquals(words.slice(0, 3).join(" "), DENO, line);
      }
      // Paths a command names exist (commands run from the repository root); a template
      // line with <placeholders> names none.
      if (line.includes("<")) continue;
      for (const word of words) {
        const path = word.replace(/^--[a-z-]+=/, "").split(",")[0]!;
        if (
          /^(examples|bench|tests|tools|runtimes|search|cli)\/[\w./-]*$/
            .test(path) || /^[\w-]+\.(ts|json)$/.test(path)
        ) {
          if (path.startsWith(".skillrun") || path === "agent.ts") continue;
          const exists = await Deno.stat(hostPath.join(ROOT, path)).then(
            () => true,
            () => false,
          );
          assert(
            exists,
            `${file}: "${line}" names "${path}", which is missing`,
          );
          checked++;
        }
      }
    }
  }
  assert(checked > 10, `only ${checked} paths checked`);
});

Deno.test("the quick command lines of the README and docs run verbatim from the repository root", async () => {
  const quick: string[] = [];
  for (const file of await frontAndPages()) {
    quick.push(
      ...commands(await read(file)).filter((line) =>
        line.startsWith(`${DENO} run -A cli.ts `) && !line.includes(" mcp ")
      ),
    );
  }
  assert(quick.length >= 5, quick.join("\n"));
  for (const line of quick) {
    const output = await runLine(line.replace(" [--json] ", " --json "), ROOT);
    assertEquals(output.code, 0, `${line}\n${text(output.stderr)}`);
  }
});

const NO_SANDBOX: string | null = await BubblewrapLauncher.create().then(
  () => null,
  (error) =>
    error instanceof IsolationUnavailableError
      ? error.message
      : Promise.reject(error),
);

Deno.test("commands documented with narrowed flags run under exactly those flags", async () => {
  const narrowed: string[] = [];
  for (const file of await frontAndPages()) {
    narrowed.push(
      ...commands(await read(file)).filter((line) =>
        line.startsWith(`${DENO} run --allow-`) && / cli\.ts /.test(line) &&
        !line.includes("<")
      ),
    );
  }
  assert(narrowed.length >= 2, narrowed.join("\n"));
  assert(narrowed.every((line) => !/ (-A|--allow-all)\b/.test(line)));
  for (const line of narrowed) {
    if (line.includes("--isolate") && NO_SANDBOX !== null) {
      // Said loudly: CI installs bubblewrap (.ci/run), so this is a machine without it.
      console.error(`NOT RUN (no sandbox here: ${NO_SANDBOX}): ${line}`);
      continue;
    }
    const output = await runLine(line, ROOT);
    assertEquals(
      output.code,
      0,
      `${line}\n${text(output.stdout)}\n${text(output.stderr)}`,
    );
  }
});

/** The README's quick start: its setup lines, its `agent.ts`, its run command. */
async function quickStart(): Promise<
  { setup: string; agent: string; run: string }
> {
  const readme = await read("README.md");
  const start = readme.indexOf("\n## Quick start\n");
  assert(start >= 0, "README.md has a Quick start section");
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const found = blocks(section);
  const sh = found.filter((b) => b.info === "sh");
  const ts = found.filter((b) => b.info.startsWith("ts"));
  assertEquals(ts.length, 1, "one TypeScript block: agent.ts");
  assertEquals(sh.length, 2, "a setup block and a run block");
  const run = commands(`\`\`\`sh\n${sh[1]!.text}\`\`\``);
  assertEquals(run.length, 1, sh[1]!.text);
  return { setup: sh[0]!.text, agent: ts[0]!.text, run: run[0]! };
}

Deno.test("the README's quick start is what a JSR user can paste: jsr:@skillrun/skillrun only, nothing from the clone", async () => {
  const { setup, agent, run } = await quickStart();
  const specifiers = [...agent.matchAll(/\bfrom\s+"([^"]+)"/g)].map((m) =>
    m[1]!
  );
  assertEquals(specifiers, ["jsr:@skillrun/skillrun"]);
  assert(!/import\s*\(/.test(agent), "no dynamic import");
  for (const part of [setup, agent, run]) {
    assert(!part.includes("examples/"), part);
    assert(!/\.\.\//.test(part), part);
  }
  // The names it uses are the core of `.` (what an agent author needs).
  for (
    const name of [
      "loadSkills",
      "buildSkillTools",
      "LocalSkillRuntime",
      "dispatchToolCall",
    ]
  ) {
    assertStringIncludes(agent, name);
  }
  assertMatch(run, /^npx -y deno@2\.9\.6 run (--allow-[a-z]+=\S+ )+agent\.ts$/);
});

Deno.test("the README's quick start runs in a fresh folder under its documented flags, against the module as JSR serves it", async () => {
  const { setup, agent, run } = await quickStart();
  // A fresh folder inside the clone (.skillrun/ is ignored by git and by the
  // tools' checks), so that jsr:@skillrun/skillrun resolves to this package.
  const scratch = hostPath.join(ROOT, ".skillrun");
  await Deno.mkdir(scratch, { recursive: true });
  const dir = await Deno.makeTempDir({ dir: scratch, prefix: "quickstart-" });
  try {
    const made = await new Deno.Command("bash", {
      args: ["-euc", setup],
      cwd: dir,
      stdin: "null",
      stderr: "piped",
    }).output();
    assertEquals(made.code, 0, text(made.stderr));
    await Deno.writeTextFile(hostPath.join(dir, "agent.ts"), agent);
    // Type-checked (--check) and resolved under the configuration this test
    // runs with: the official std's under `task test:official`.
    const config = OFFICIAL
      ? ["--config", hostPath.join(ROOT, "deno.official.json")]
      : [];
    const output = await runLine(run, dir, ["--check", ...config]);
    const stdout = text(output.stdout);
    assertEquals(output.code, 0, `${run}\n${stdout}\n${text(output.stderr)}`);
    assertStringIncludes(
      stdout,
      "skill bash bash_output kill_bash read write edit ls glob grep",
    );
    assertStringIncludes(stdout, "Hello, Ada, from [redacted].");
    // The configured value reached the script, never the output.
    assert(!/from skillrun/.test(stdout), stdout);

    // One flag fewer: the runtime check in the quick start stops the
    // application with the flag to add, before any tool reaches a model.
    const without = await runLine(
      run.replace(/ --allow-run=\S+/, ""),
      dir,
      config,
    );
    assert(without.code !== 0, text(without.stdout));
    assertStringIncludes(text(without.stderr), "RuntimePermissionError");
    assertStringIncludes(text(without.stderr), "--allow-run=bash");
    assert(!text(without.stdout).includes("Hello"), text(without.stdout));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the test tasks run the README's and docs pages' TypeScript blocks (deno test --doc over the whole project)", async () => {
  const config = JSON.parse(await read("deno.json")) as {
    tasks: Record<string, string>;
    exclude?: string[];
  };
  for (const task of ["test", "test:official"]) {
    const line = config.tasks[task]!;
    // scripts/test.ts runs `deno test` with the flags that follow it.
    const test = line.slice(line.indexOf("scripts/test.ts"));
    assertMatch(test, / --doc\b/, `${task}: ${line}`);
    // No file list after the flags: every module and Markdown file is included.
    const words = test.split(/\s+/).slice(1);
    for (let i = 0; i < words.length; i++) {
      if (words[i] === "--config") i++;
      else assert(words[i]!.startsWith("-"), `${task}: ${line}`);
    }
  }
  for (const excluded of config.exclude ?? []) {
    assert(!/^(docs|README)/.test(excluded), excluded);
  }
  let blocksSeen = 0;
  for (const file of await frontAndPages()) {
    blocksSeen += blocks(await read(file)).filter((b) =>
      /^(ts|typescript)$/.test(b.info)
    ).length;
  }
  assert(blocksSeen >= 7, `${blocksSeen} TypeScript blocks`);
});

/** GitHub's anchor of a heading. */
function slug(heading: string): string {
  return heading.trim().toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  const withoutCode = markdown.replace(/^```[\s\S]*?^```/gm, "");
  for (const m of withoutCode.matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

Deno.test("every relative link and anchor of the READMEs and docs pages resolves", async () => {
  let checked = 0;
  for (const file of await docFiles()) {
    const markdown = (await read(file)).replace(/^```[\s\S]*?^```/gm, "");
    for (const m of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/.test(target)) continue;
      const [path, anchor] = target.split("#") as [string, string | undefined];
      const resolved = path
        ? hostPath.normalize(hostPath.join(hostPath.dirname(file), path))
        : file;
      const stat = await Deno.stat(hostPath.join(ROOT, resolved)).catch(
        () => null,
      );
      assert(stat, `${file}: link "${target}" names a missing ${resolved}`);
      if (anchor) {
        assert(resolved.endsWith(".md"), `${file}: ${target}`);
        const names = anchors(await read(resolved));
        assert(
          names.has(anchor),
          `${file}: link "${target}": no heading #${anchor} in ${resolved}`,
        );
      }
      checked++;
    }
  }
  assert(checked > 50, `only ${checked} links checked`);
});

Deno.test("the README's contents link every docs page, and the front page has what a newcomer starts from", async () => {
  const readme = await read("README.md");
  const contents = readme.slice(
    readme.indexOf("\n## Contents\n"),
    readme.indexOf("\n## Quick start\n"),
  );
  assert(contents.length > 100, "README.md has a Contents section");
  const pages = (await docFiles()).filter((p) => p.startsWith("docs/"));
  assert(pages.length >= 8, pages.join(", "));
  for (const page of pages) {
    assertStringIncludes(contents, `](${page})`, `${page} in the contents`);
  }
  // The two commands come first, before any other block.
  const first = blocks(readme)[0]!;
  assertEquals(first.info, "sh");
  assertEquals(commands(`\`\`\`sh\n${first.text}\`\`\``), [
    `${DENO} task demo`,
    `${DENO} task test`,
  ]);
  assertStringIncludes(readme, "](docs/architecture.svg)");
  // How an application checks its runtime first, and how MCP clients get the token.
  assertStringIncludes(readme, "runtime.connect()");
  const mcp = await read("docs/mcp.md");
  assertStringIncludes(mcp, "## Giving MCP clients the token");
  assertStringIncludes(mcp, '"Authorization": "Bearer <token>"');
  assertStringIncludes(mcp, '--header "Authorization: Bearer');
});

Deno.test("the CLI reference lists every command of the CLI's --help", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "cli.ts", "--help"],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(output.code, 0, text(output.stderr));
  const help = text(output.stdout);
  const section = help.slice(
    help.indexOf("Commands:"),
    help.indexOf("\n\n", help.indexOf("Commands:")),
  );
  const names = [...section.matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]!);
  assert(names.length >= 5, help);
  const reference = await read("docs/cli.md");
  for (const name of names) {
    assertMatch(reference, new RegExp(`^\\| \`${name}\` +\\|`, "m"), name);
  }
});

Deno.test("the architecture picture is a plain SVG naming only parts that exist", async () => {
  const svg = await read("docs/architecture.svg");
  assertMatch(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  assert(svg.trimEnd().endsWith("</svg>"));
  for (
    const banned of [
      "<script",
      "<image",
      "@import",
      "@font-face",
      'href="http',
      "<foreignObject",
    ]
  ) {
    assert(!svg.includes(banned), banned);
  }
  // Each bold monospace label is a folder or file of the project.
  const labels = [...svg.matchAll(
    /font-family="monospace"[^>]*font-weight="bold"[^>]*>([^<]+)</g,
  )].flatMap((m) => m[1]!.split(",").map((s) => s.trim()));
  assert(labels.length >= 12, labels.join(" "));
  for (const label of labels) {
    // A remote kind's folder is drawn inside runtimes/remote/'s box.
    const exists = await Promise.all(
      [label, `runtimes/${label}`].map((p) =>
        Deno.stat(hostPath.join(ROOT, p)).then(() => true, () => false)
      ),
    );
    assert(
      exists.some(Boolean),
      `the picture names "${label}", which is missing`,
    );
  }
  // The type names it shows exist in the code.
  for (
    const name of [...svg.matchAll(/\b([A-Z][A-Za-z]+(?:Runtime|Launcher))\b/g)]
      .map((m) => m[1]!)
  ) {
    const found = await new Deno.Command("git", {
      args: [
        "grep",
        "-q",
        "-w",
        `class ${name}\\|interface ${name}`,
        "--",
        "*.ts",
      ],
      cwd: ROOT,
    }).output();
    assertEquals(
      found.code,
      0,
      `the picture names ${name}, which no code defines`,
    );
  }
});
