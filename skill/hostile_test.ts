/**
 * Hostile SKILL.md files: a YAML alias bomb, a FIFO, a link to /dev/zero, a
 * huge file. Each runs `loadSkills` in a child process with a deadline, so
 * code that hangs fails the test instead of hanging the suite.
 */
import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { parseSkillMd } from "./parse.ts";
import { validateSkill } from "./validate.ts";
import { SKILL_MD_MAX_BYTES } from "./_read.ts";

const LOAD = hostPath.fromFileUrl(new URL("./load.ts", import.meta.url));

/** Ten levels of nine aliases: 9^10 "lol"s once expanded, some 600 bytes. */
function aliasBomb(): string {
  const lines = [`  a0: &a0 [${Array(9).fill('"lol"').join(",")}]`];
  for (let level = 1; level <= 10; level++) {
    lines.push(
      `  a${level}: &a${level} [${Array(9).fill(`*a${level - 1}`).join(",")}]`,
    );
  }
  return `---\nname: bomb\ndescription: Expands.\nmetadata:\n${
    lines.join("\n")
  }\n---\nBody\n`;
}

interface Loaded {
  names: string[];
  warnings: string[];
  ms: number;
}

/** `loadSkills(root)` in a child process; `undefined` when it outlives `deadlineMs`. */
async function loadInChild(
  root: string,
  deadlineMs = 20_000,
): Promise<Loaded | undefined> {
  const code = `
    import { loadSkills } from ${JSON.stringify(hostPath.toFileUrl(LOAD).href)};
    const started = performance.now();
    const { skills, warnings } = await loadSkills(${JSON.stringify(root)});
    console.log(JSON.stringify({
      names: skills.map((s) => s.name), warnings, ms: performance.now() - started,
    }));
    Deno.exit(0);
  `;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", "--v8-flags=--max-old-space-size=512", code],
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), deadlineMs);
  try {
    const output = await child.output();
    if (!output.success) return undefined;
    return JSON.parse(new TextDecoder().decode(output.stdout));
  } finally {
    clearTimeout(timer);
  }
}

async function withSkills(
  fn: (root: string) => Promise<void>,
): Promise<void> {
  const root = await Deno.realPath(await Deno.makeTempDir());
  try {
    await Deno.mkdir(`${root}/good`);
    await Deno.writeTextFile(
      `${root}/good/SKILL.md`,
      "---\nname: good\ndescription: Loads.\n---\n",
    );
    await fn(root);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("parseSkillMd() refuses a YAML alias bomb at once", () => {
  const text = aliasBomb();
  assert(text.length < 700, `${text.length} bytes`);
  const started = performance.now();
  assertThrows(
    () => parseSkillMd(text),
    SyntaxError,
    "uses a YAML alias of a map or list",
  );
  assert(performance.now() - started < 1000);
  // An alias of a scalar expands nothing: still read.
  const scalar = parseSkillMd(
    "---\nname: s\ndescription: &d Same text\nmetadata:\n  again: *d\n---\n",
  );
  assertEquals(scalar.metadata?.again, "Same text");
});

Deno.test("loadSkills() leaves out a skill whose front matter is an alias bomb, naming its file, and loads the rest", async () => {
  await withSkills(async (root) => {
    await Deno.mkdir(`${root}/bomb`);
    await Deno.writeTextFile(`${root}/bomb/SKILL.md`, aliasBomb());
    const loaded = await loadInChild(root);
    assert(loaded, "loadSkills did not finish");
    assertEquals(loaded.names, ["good"]);
    assertEquals(loaded.warnings.length, 1);
    assertStringIncludes(loaded.warnings[0]!, `${root}/bomb/SKILL.md`);
    assertStringIncludes(loaded.warnings[0]!, "YAML alias");
  });
});

Deno.test("validateSkill() calls an alias bomb invalid at once", async () => {
  await withSkills(async (root) => {
    await Deno.mkdir(`${root}/bomb`);
    await Deno.writeTextFile(`${root}/bomb/SKILL.md`, aliasBomb());
    const problems = await validateSkill(`${root}/bomb`);
    assert(problems.some((p) => p.message.includes("YAML alias")));
  });
});

Deno.test({
  name:
    "loadSkills() skips a SKILL.md that is a FIFO or a link to /dev/zero, naming it, and loads the rest",
  ignore: Deno.build.os === "windows",
  fn: async () => {
    await withSkills(async (root) => {
      await Deno.mkdir(`${root}/fifo`);
      const mkfifo = await new Deno.Command("mkfifo", {
        args: [`${root}/fifo/SKILL.md`],
      }).output();
      assert(mkfifo.success);
      await Deno.mkdir(`${root}/zero`);
      await Deno.symlink("/dev/zero", `${root}/zero/SKILL.md`);
      const loaded = await loadInChild(root);
      assert(loaded, "loadSkills did not finish");
      assertEquals(loaded.names, ["good"]);
      const warnings = loaded.warnings.join("\n");
      assertStringIncludes(
        warnings,
        `Skipped "${root}/fifo/SKILL.md": it is a FIFO, not a regular file`,
      );
      assertStringIncludes(
        warnings,
        `Skipped "${root}/zero/SKILL.md": it is a character device, not a regular file`,
      );
      assert(loaded.ms < 5000, `${loaded.ms} ms`);
      // validate says the same, and never blocks.
      assertEquals(
        (await validateSkill(`${root}/fifo`)).map((p) => p.message),
        ["SKILL.md: it is a FIFO, not a regular file"],
      );
    });
  },
});

Deno.test("loadSkills() skips a SKILL.md over the bound without reading it whole, and loads the rest", async () => {
  await withSkills(async (root) => {
    await Deno.mkdir(`${root}/huge`);
    // Sparse: 200 MB that cost no disk.
    const file = await Deno.open(`${root}/huge/SKILL.md`, {
      write: true,
      create: true,
    });
    await file.write(
      new TextEncoder().encode("---\nname: huge\ndescription: Big.\n---\n"),
    );
    await file.truncate(200 * 1024 * 1024);
    file.close();
    const loaded = await loadInChild(root);
    assert(loaded, "loadSkills did not finish");
    assertEquals(loaded.names, ["good"]);
    assertStringIncludes(
      loaded.warnings.join("\n"),
      `Skipped "${root}/huge/SKILL.md": it is larger than the 4 MiB limit of a SKILL.md`,
    );
    assert(loaded.ms < 2000, `${loaded.ms} ms`);
    assertEquals(SKILL_MD_MAX_BYTES, 4 * 1024 * 1024);
  });
});

Deno.test("readSkillMdBytes() refuses a file over its bound, stating the bound", async () => {
  const { readSkillMdBytes } = await import("./_read.ts");
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/SKILL.md`, "x".repeat(100));
    await assertRejects(
      () => readSkillMdBytes(`${dir}/SKILL.md`, undefined, 10),
      Error,
      "larger than the 10 bytes limit",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
