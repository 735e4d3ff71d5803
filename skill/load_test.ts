import {
  assert,
  assertEquals,
  assertMatch,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { findSkillFolders, loadSkills, selectSkills } from "./load.ts";
import type { Skill } from "./types.ts";
import {
  anthropicsCollection,
  sharedTest,
} from "../tests/helpers/shared_data.ts";

const CORPUS_DATA = anthropicsCollection();
const CORPUS = CORPUS_DATA.path;

const CORPUS_SKILLS = [
  "algorithmic-art",
  "brand-guidelines",
  "canvas-design",
  "claude-api",
  "frontend-design",
  "internal-comms",
  "mcp-builder",
  "skill-creator",
  "slack-gif-creator",
  "theme-factory",
  "web-artifacts-builder",
  "webapp-testing",
];

/** A temp folder (real path), removed after `fn`. */
async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Writes `<root>/<folder>/SKILL.md`, creating the folders. */
async function writeSkill(
  root: string,
  folder: string,
  text: string,
): Promise<string> {
  const dir = hostPath.join(root, folder);
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(hostPath.join(dir, "SKILL.md"), text);
  return dir;
}

function simple(name: string, description = `The ${name} skill.`): string {
  return `---\nname: ${name}\ndescription: ${description}\n---\nUse ${name}.\n`;
}

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "loadSkills() loads every skill of the anthropics corpus",
  ),
  async fn() {
    const { skills, warnings } = await loadSkills(CORPUS);
    assertEquals(warnings, []);
    assertEquals(
      skills.map((s) => s.name),
      [...CORPUS_SKILLS, "template-skill"].sort(),
    );
    for (const skill of skills) {
      assert(skill.instructions.length > 0, `${skill.name} has instructions`);
      assertEquals(skill.location, hostPath.join(skill.basePath, "SKILL.md"));
    }
    const byName = new Map(skills.map((s) => [s.name, s]));
    assertEquals(byName.get("template-skill")!.warnings, [
      'name: must equal the folder name "template", got "template-skill"',
    ]);
    const claudeApi = byName.get("claude-api")!;
    assertEquals(claudeApi.warnings.length, 1);
    assertMatch(
      claudeApi.warnings[0]!,
      /^description: must be at most 1024 characters, got \d{4}$/,
    );
    assertEquals(byName.get("pdf"), undefined);
    assertEquals(
      byName.get("mcp-builder")!.license,
      "Complete terms in LICENSE.txt",
    );
    for (const name of CORPUS_SKILLS.filter((n) => n !== "claude-api")) {
      assertEquals(byName.get(name)!.warnings, [], name);
    }
  },
});

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "loadSkills() accepts a skill folder or its SKILL.md as the root",
  ),
  async fn() {
    const folder = hostPath.join(CORPUS, "skills", "mcp-builder");
    const fromFolder = await loadSkills(folder);
    assertEquals(fromFolder.skills.map((s) => s.name), ["mcp-builder"]);
    const fromFile = await loadSkills(hostPath.join(folder, "SKILL.md"));
    assertEquals(fromFile.skills.map((s) => s.basePath), [folder]);
  },
});

Deno.test("loadSkills() loads skills with a BOM, CRLF, an unquoted ': ' and tools as string or list", async () => {
  await withTempDir(async (root) => {
    await writeSkill(root, "bom", "\uFEFF" + simple("bom"));
    await writeSkill(
      root,
      "crlf",
      "---\r\nname: crlf\r\ndescription: Windows\r\n  file\r\n---\r\nBody\r\n",
    );
    await writeSkill(
      root,
      "colon",
      "---\nname: colon\ndescription: Use when: a colon appears\n---\n",
    );
    await writeSkill(
      root,
      "tools-string",
      "---\nname: tools-string\ndescription: d\nallowed-tools: Read Bash(git:*)\n---\n",
    );
    await writeSkill(
      root,
      "tools-list",
      "---\nname: tools-list\ndescription: d\nallowed-tools:\n  - Read\n  - Write\n---\n",
    );
    await writeSkill(
      root,
      "meta",
      "---\nname: meta\ndescription: d\nmetadata:\n  version: 1.0\n  author: me\n---\n",
    );
    const { skills, warnings } = await loadSkills(root);
    assertEquals(warnings, []);
    const byName = new Map(skills.map((s) => [s.name, s]));
    assertEquals(byName.get("bom")!.warnings, []);
    assertEquals(byName.get("crlf")!.description, "Windows file");
    assertEquals(byName.get("crlf")!.instructions, "Body\n");
    assertEquals(byName.get("colon")!.description, "Use when: a colon appears");
    assertEquals(byName.get("colon")!.warnings, [
      'description: the unquoted value containing ": " was read as a quoted string',
    ]);
    assertEquals(byName.get("tools-string")!.allowedTools, [
      "Read",
      "Bash(git:*)",
    ]);
    assertEquals(byName.get("tools-list")!.allowedTools, ["Read", "Write"]);
    assertEquals(byName.get("meta")!.metadata, {
      version: "1.0",
      author: "me",
    });
  });
});

Deno.test("loadSkills() accepts unknown fields and broken rules with per-skill warnings", async () => {
  await withTempDir(async (root) => {
    await writeSkill(
      root,
      "extra",
      "---\nname: extra\ndescription: d\nversion: 1.2\nargument-hint: <file>\nhooks:\n  pre: x\n---\n",
    );
    await writeSkill(root, "My_Skill", simple("My_Skill"));
    await writeSkill(root, "long", simple("long", "x".repeat(1342)));
    const { skills, warnings } = await loadSkills(root);
    assertEquals(warnings, []);
    const byName = new Map(skills.map((s) => [s.name, s]));
    const extra = byName.get("extra")!;
    assertEquals(extra.frontMatter["version"], "1.2");
    assertEquals(
      extra.warnings.map((w) => w.slice(0, w.indexOf(":"))),
      ["version", "argument-hint", "hooks"],
    );
    assertStringIncludes(extra.warnings[0]!, "unknown field");
    assertEquals(byName.get("My_Skill")!.warnings, [
      'name: must be lowercase, got "My_Skill"',
      'name: may contain only letters, digits and "-", got "My_Skill"',
    ]);
    assertEquals(byName.get("long")!.warnings, [
      "description: must be at most 1024 characters, got 1342",
    ]);
  });
});

Deno.test("loadSkills() skips unreadable YAML, a missing name or description, and keeps the others", async () => {
  await withTempDir(async (root) => {
    await writeSkill(root, "good", simple("good"));
    await writeSkill(
      root,
      "bad-yaml",
      "---\nname: [bad\ndescription: d\n---\n",
    );
    await writeSkill(
      root,
      "no-description",
      "---\nname: no-description\n---\n",
    );
    await writeSkill(
      root,
      "blank-name",
      "---\nname: ''\ndescription: d\n---\n",
    );
    await writeSkill(root, "no-front-matter", "# Title only\n");
    const { skills, warnings } = await loadSkills(root);
    assertEquals(skills.map((s) => s.name), ["good"]);
    assertEquals(warnings, [
      `Skipped "${root}/bad-yaml/SKILL.md": the front matter is not valid YAML: ${
        warnings[0]!.split("not valid YAML: ")[1]
      }`,
      `Skipped "${root}/blank-name/SKILL.md": no usable "name" (got "")`,
      `Skipped "${root}/no-description/SKILL.md": no usable "description" (missing)`,
      `Skipped "${root}/no-front-matter/SKILL.md": it has no "---" front matter`,
    ]);
  });
});

Deno.test("loadSkills() finds nested skills up to maxDepth and skips heavy folders", async () => {
  await withTempDir(async (root) => {
    await writeSkill(root, "top", simple("top"));
    await writeSkill(root, "group/sub", simple("sub"));
    await writeSkill(root, "a/b/c/d/deep5", simple("deep5"));
    await writeSkill(root, "a/b/c/d/e/deep6", simple("deep6"));
    await writeSkill(root, "node_modules/pkg", simple("pkg"));
    await writeSkill(root, ".git/hooks", simple("hooks"));
    await writeSkill(root, "x/.venv/lib", simple("lib"));
    // A skill inside a skill folder is not another skill.
    await writeSkill(root, "top/inner", simple("inner"));
    const { skills, warnings } = await loadSkills(root);
    assertEquals(warnings, []);
    assertEquals(skills.map((s) => s.name), ["deep5", "sub", "top"]);
    const shallow = await loadSkills(root, { maxDepth: 1 });
    assertEquals(shallow.skills.map((s) => s.name), ["top"]);
    const noIgnore = await loadSkills(root, { ignore: [] });
    assertEquals(noIgnore.skills.map((s) => s.name), [
      "deep5",
      "hooks",
      "lib",
      "pkg",
      "sub",
      "top",
    ]);
  });
});

Deno.test("loadSkills() follows a symlinked skill folder once, by its real path", async () => {
  await withTempDir(async (root) => {
    const real = await writeSkill(root, "store/linked", simple("linked"));
    await Deno.mkdir(hostPath.join(root, "skills"));
    await Deno.symlink(real, hostPath.join(root, "skills", "linked"));
    const viaLink = await loadSkills(hostPath.join(root, "skills"));
    assertEquals(viaLink.warnings, []);
    assertEquals(viaLink.skills.map((s) => [s.name, s.basePath]), [
      ["linked", real],
    ]);
    // Both the folder and the link under one root: loaded once, the link noted.
    const both = await loadSkills(root);
    assertEquals(both.skills.map((s) => s.basePath), [real]);
    assertEquals(both.warnings, [
      `Skipped symlink "${root}/skills/linked": it leads to "${real}", a folder already searched`,
    ]);
  });
});

Deno.test("loadSkills() never loops on a symlink loop and reports dangling links", async () => {
  await withTempDir(async (root) => {
    await writeSkill(root, "a/ok", simple("ok"));
    await Deno.symlink(root, hostPath.join(root, "a", "back-to-root"));
    await Deno.symlink(
      hostPath.join(root, "a", "self"),
      hostPath.join(root, "a", "self"),
    );
    await Deno.symlink(
      hostPath.join(root, "missing"),
      hostPath.join(root, "a", "dangling"),
    );
    const { skills, warnings } = await loadSkills(root, { maxDepth: 50 });
    assertEquals(skills.map((s) => s.name), ["ok"]);
    assertEquals(warnings.length, 3);
    assertStringIncludes(
      warnings.join("\n"),
      `Skipped symlink "${root}/a/back-to-root": it leads to "${root}", a folder already searched`,
    );
    assertStringIncludes(
      warnings.join("\n"),
      `Skipped symlink "${root}/a/dangling": its target does not exist`,
    );
    assertStringIncludes(warnings.join("\n"), `"${root}/a/self"`);
  });
});

Deno.test("loadSkills() accepts Unicode lowercase names and compares with the folder after NFKC", async () => {
  await withTempDir(async (root) => {
    await writeSkill(root, "技能", simple("技能"));
    await writeSkill(root, "мой-навык", simple("мой-навык"));
    // Folder name composed (U+00E9), front matter decomposed (e + U+0301).
    await writeSkill(root, "caf\u00e9", simple("cafe\u0301"));
    const { skills, warnings } = await loadSkills(root);
    assertEquals(warnings, []);
    assertEquals(
      skills.map((s) => s.name).sort(),
      [
        "caf\u00e9",
        "мой-навык",
        "技能",
      ].sort(),
    );
    for (const skill of skills) assertEquals(skill.warnings, [], skill.name);
  });
});

Deno.test("loadSkills() keeps the first of duplicate names, by root order, with a warning", async () => {
  await withTempDir(async (root) => {
    const first = await writeSkill(root, "one/dup", simple("dup", "first"));
    const second = await writeSkill(root, "two/dup", simple("dup", "second"));
    const { skills, warnings } = await loadSkills([
      hostPath.join(root, "two"),
      hostPath.join(root, "one"),
    ]);
    assertEquals(skills.map((s) => s.description), ["second"]);
    assertEquals(warnings, [
      `Skipped "${first}/SKILL.md": the skill name "dup" is already used by "${second}/SKILL.md"`,
    ]);
  });
});

Deno.test("loadSkills() returns skills sorted by name and frozen", async () => {
  await withTempDir(async (root) => {
    await writeSkill(root, "z-folder", simple("alpha"));
    await writeSkill(root, "a-folder", simple("beta"));
    await writeSkill(root, "m-folder", simple("Gamma"));
    const { skills } = await loadSkills(root);
    assertEquals(skills.map((s) => s.name), ["Gamma", "alpha", "beta"]);
    assert(Object.isFrozen(skills) && Object.isFrozen(skills[0]));
    assert(Object.isFrozen(skills[0]!.frontMatter));
    assertThrows(() => {
      (skills[0] as { name: string }).name = "changed";
    }, TypeError);
  });
});

Deno.test("loadSkills() stops at maxFolders with a warning", async () => {
  await withTempDir(async (root) => {
    for (const name of ["a", "b", "c", "d"]) {
      await writeSkill(root, name, simple(name));
    }
    const { skills, warnings } = await loadSkills(root, { maxFolders: 3 });
    assertEquals(skills.map((s) => s.name), ["a", "b"]);
    assertEquals(warnings, [
      `Stopped searching at "${root}/c": the limit of 3 folders scanned was reached`,
    ]);
  });
});

Deno.test("loadSkills() rejects a missing root, a plain file and bad options", async () => {
  await withTempDir(async (root) => {
    await assertRejects(
      () => loadSkills(hostPath.join(root, "nope")),
      Deno.errors.NotFound,
      `Cannot load skills from "${root}/nope": no such file or folder`,
    );
    await Deno.writeTextFile(hostPath.join(root, "notes.txt"), "x");
    await assertRejects(
      () => loadSkills(hostPath.join(root, "notes.txt")),
      TypeError,
      "it is a file, not a folder or a SKILL.md",
    );
    await assertRejects(
      () => loadSkills(root, { maxDepth: -1 }),
      RangeError,
      'maxDepth "-1": it must be a non-negative integer',
    );
    await assertRejects(
      () => loadSkills(root, { maxFolders: 0 }),
      RangeError,
      'maxFolders "0": it must be a positive integer',
    );
    await assertRejects(() => loadSkills(""), TypeError);
  });
});

Deno.test("loadSkills() rejects with the reason when its signal is aborted", async () => {
  const controller = new AbortController();
  controller.abort(new Error("stop"));
  await assertRejects(
    () => loadSkills(CORPUS, { signal: controller.signal }),
    Error,
    "stop",
  );
});

Deno.test("findSkillFolders() finds broken skills too", async () => {
  await withTempDir(async (root) => {
    await writeSkill(root, "good", simple("good"));
    await writeSkill(root, "broken", "no front matter");
    const { folders, warnings } = await findSkillFolders(root);
    assertEquals(warnings, []);
    assertEquals(folders, [`${root}/broken`, `${root}/good`]);
  });
});

function fakeSkill(name: string): Skill {
  return {
    name,
    description: `${name} skill`,
    basePath: `/skills/${name}`,
    location: `/skills/${name}/SKILL.md`,
    instructions: "",
    frontMatter: { name, description: `${name} skill` },
    warnings: [],
  };
}

const SKILLS = [fakeSkill("pdf"), fakeSkill("csv-report"), fakeSkill("Docx")];

Deno.test("selectSkills() trims names and keeps the order asked for", () => {
  const picked = selectSkills(SKILLS, ["  pdf", "csv-report\n"]);
  assertEquals(picked.map((s) => s.name), ["pdf", "csv-report"]);
  assertEquals(selectSkills(SKILLS, []), []);
});

Deno.test("selectSkills() is case-sensitive and names the unknown skill and the available ones", () => {
  assertThrows(
    () => selectSkills(SKILLS, ["PDF"]),
    RangeError,
    'Cannot select skill "PDF": no such skill (available: "Docx", "csv-report", "pdf")',
  );
  assertThrows(
    () => selectSkills(SKILLS, ["docx"]),
    RangeError,
    'Cannot select skill "docx"',
  );
  assertThrows(
    () => selectSkills([], ["pdf"]),
    RangeError,
    "(available: none)",
  );
});

Deno.test("selectSkills() refuses a name given twice (after trimming) or blank", () => {
  assertThrows(
    () => selectSkills(SKILLS, ["pdf", " pdf "]),
    TypeError,
    'Cannot select skill "pdf": it is selected more than once',
  );
  assertThrows(
    () => selectSkills(SKILLS, ["  "]),
    TypeError,
    "the name is blank",
  );
});

Deno.test("loadSkills() without read permission on the folder is a RuntimePermissionError naming the flag", async () => {
  const temp = await Deno.realPath(await Deno.makeTempDir());
  try {
    await Deno.mkdir(`${temp}/skills/probe`, { recursive: true });
    await Deno.writeTextFile(
      `${temp}/skills/probe/SKILL.md`,
      "---\nname: probe\ndescription: d\n---\n",
    );
    const load = new URL("./load.ts", import.meta.url).href;
    await Deno.writeTextFile(
      `${temp}/probe.ts`,
      `import { loadSkills } from ${JSON.stringify(load)};\n` +
        "try { await loadSkills(Deno.args[0]!); console.log('loaded'); }\n" +
        "catch (e) { console.log(e.name); console.log(e.permission); console.log(e.message); }\n",
    );
    const output = await new Deno.Command(Deno.execPath(), {
      // Reading this clone only: not the skills folder.
      args: [
        "run",
        "--quiet",
        "--no-lock",
        "--config",
        hostPath.fromFileUrl(new URL("../deno.json", import.meta.url)),
        `--allow-read=${hostPath.fromFileUrl(new URL("../", import.meta.url))}`,
        `${temp}/probe.ts`,
        `${temp}/skills`,
      ],
      stdin: "null",
    }).output();
    const [name, permission, message] = new TextDecoder().decode(
      output.stdout,
    ).split("\n");
    assertEquals(
      [name, permission],
      ["RuntimePermissionError", "read"],
      new TextDecoder().decode(output.stderr),
    );
    assertEquals(
      message,
      `Cannot load skills from "${temp}/skills": Deno denies read access; run with --allow-read=${temp}/skills (or a parent)`,
    );
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
});
