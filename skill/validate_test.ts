import {
  assertEquals,
  assertMatch,
  assertRejects,
} from "../tests/helpers/assert.ts";
import { hostPath } from "../_internal/std.ts";
import { validateSkill } from "./validate.ts";
import { loadSkills } from "./load.ts";
import {
  anthropicsCollection,
  sharedTest,
} from "../tests/helpers/shared_data.ts";

const CORPUS_DATA = anthropicsCollection();
const CORPUS = CORPUS_DATA.path;

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Validates a skill in folder `folder` whose front matter is `yaml`. */
async function problemsOf(
  yaml: string,
  folder = "my-skill",
): Promise<string[]> {
  let messages: string[] = [];
  await withTempDir(async (root) => {
    const dir = hostPath.join(root, folder);
    await Deno.mkdir(dir);
    await Deno.writeTextFile(
      hostPath.join(dir, "SKILL.md"),
      `---\n${yaml}\n---\nBody\n`,
    );
    const problems = await validateSkill(dir);
    for (const p of problems) {
      assertEquals(
        p.message.startsWith(`${p.field}: `),
        true,
        `message names its field: ${p.message}`,
      );
    }
    messages = problems.map((p) => p.message);
  });
  return messages;
}

const OK = "name: my-skill\ndescription: Does things.";

Deno.test("validateSkill() accepts a skill that follows every rule", async () => {
  assertEquals(
    await problemsOf(
      `${OK}\nlicense: MIT\ncompatibility: Needs bash and deno\nmetadata:\n  version: 1.0\n  author: me\nallowed-tools: Bash Read`,
    ),
    [],
  );
  assertEquals(
    await problemsOf(`${OK}\nallowed-tools:\n  - Bash\n  - Read`),
    [],
  );
});

Deno.test("validateSkill() requires a name", async () => {
  assertEquals(await problemsOf("description: d"), ["name: is required"]);
  assertEquals(await problemsOf("name: ''\ndescription: d"), [
    "name: must be 1-64 characters and not blank",
  ]);
  assertEquals(await problemsOf("name: [a]\ndescription: d"), [
    "name: must be a string, got a list",
  ]);
});

Deno.test("validateSkill() limits the name to 64 characters", async () => {
  const long = "a".repeat(65);
  assertEquals(await problemsOf(`name: ${long}\ndescription: d`, long), [
    "name: must be at most 64 characters, got 65",
  ]);
  const max = "a".repeat(64);
  assertEquals(await problemsOf(`name: ${max}\ndescription: d`, max), []);
});

Deno.test("validateSkill() requires a lowercase name", async () => {
  assertEquals(await problemsOf("name: My-Skill\ndescription: d", "My-Skill"), [
    'name: must be lowercase, got "My-Skill"',
  ]);
});

Deno.test("validateSkill() allows only letters, digits and '-' in the name", async () => {
  assertEquals(await problemsOf("name: my_skill\ndescription: d", "my_skill"), [
    'name: may contain only letters, digits and "-", got "my_skill"',
  ]);
  assertEquals(await problemsOf("name: my skill\ndescription: d", "my skill"), [
    'name: may contain only letters, digits and "-", got "my skill"',
  ]);
});

Deno.test("validateSkill() refuses a name starting or ending with '-'", async () => {
  assertEquals(await problemsOf("name: -skill\ndescription: d", "-skill"), [
    'name: must not start or end with "-", got "-skill"',
  ]);
  assertEquals(await problemsOf("name: skill-\ndescription: d", "skill-"), [
    'name: must not start or end with "-", got "skill-"',
  ]);
});

Deno.test("validateSkill() refuses '--' in the name", async () => {
  assertEquals(
    await problemsOf("name: my--skill\ndescription: d", "my--skill"),
    [
      'name: must not contain "--", got "my--skill"',
    ],
  );
});

Deno.test("validateSkill() requires the name to equal the folder name", async () => {
  assertEquals(await problemsOf("name: other\ndescription: d", "my-skill"), [
    'name: must equal the folder name "my-skill", got "other"',
  ]);
});

Deno.test("validateSkill() accepts Unicode lowercase names and compares them after NFKC", async () => {
  assertEquals(await problemsOf("name: 技能\ndescription: d", "技能"), []);
  assertEquals(
    await problemsOf("name: мой-навык\ndescription: d", "мой-навык"),
    [],
  );
  // Decomposed in the front matter, composed on disk.
  assertEquals(
    await problemsOf("name: cafe\u0301\ndescription: d", "caf\u00e9"),
    [],
  );
  assertEquals(await problemsOf("name: Навык\ndescription: d", "Навык"), [
    'name: must be lowercase, got "Навык"',
  ]);
});

Deno.test("validateSkill() requires a description of 1-1024 characters, not blank", async () => {
  assertEquals(await problemsOf("name: my-skill"), [
    "description: is required",
  ]);
  assertEquals(await problemsOf("name: my-skill\ndescription: '   '"), [
    "description: must not be blank",
  ]);
  assertEquals(
    await problemsOf(`name: my-skill\ndescription: ${"é".repeat(1342)}`),
    [
      "description: must be at most 1024 characters, got 1342",
    ],
  );
  assertEquals(
    await problemsOf(`name: my-skill\ndescription: ${"x".repeat(1024)}`),
    [],
  );
});

Deno.test("validateSkill() limits compatibility to 1-500 characters", async () => {
  assertEquals(await problemsOf(`${OK}\ncompatibility: ${"x".repeat(501)}`), [
    "compatibility: must be at most 500 characters, got 501",
  ]);
  assertEquals(await problemsOf(`${OK}\ncompatibility: ''`), [
    "compatibility: must be 1-500 characters and not blank",
  ]);
  assertEquals(await problemsOf(`${OK}\ncompatibility: [a]`), [
    "compatibility: must be a string of 1-500 characters, got a list",
  ]);
});

Deno.test("validateSkill() requires license to be a string", async () => {
  assertEquals(await problemsOf(`${OK}\nlicense:\n  type: MIT`), [
    "license: must be a string, got a map",
  ]);
});

Deno.test("validateSkill() requires metadata to map strings to strings", async () => {
  assertEquals(await problemsOf(`${OK}\nmetadata: [a, b]`), [
    "metadata: must be a map of strings to strings, got a list",
  ]);
  assertEquals(await problemsOf(`${OK}\nmetadata:\n  tags: [a]\n  v: 1.0`), [
    "metadata.tags: must be a string, got a list",
  ]);
});

Deno.test("validateSkill() requires allowed-tools to be a string or a list of strings", async () => {
  assertEquals(await problemsOf(`${OK}\nallowed-tools:\n  bash: yes`), [
    "allowed-tools: must be a space-separated string or a list of strings, got a map",
  ]);
});

Deno.test("validateSkill() accepts disable-model-invocation as a boolean, refuses other values", async () => {
  assertEquals(await problemsOf(`${OK}\ndisable-model-invocation: true`), []);
  assertEquals(await problemsOf(`${OK}\ndisable-model-invocation: false`), []);
  assertEquals(await problemsOf(`${OK}\ndisable-model-invocation: [a]`), [
    "disable-model-invocation: must be true or false, got a list",
  ]);
});

Deno.test("validateSkill() reports unknown top-level fields", async () => {
  const problems = await problemsOf(`${OK}\nversion: 1.0\nargument-hint: x`);
  assertEquals(problems, [
    "version: unknown field: the specification allows only name, description, license, compatibility, metadata, allowed-tools, disable-model-invocation",
    "argument-hint: unknown field: the specification allows only name, description, license, compatibility, metadata, allowed-tools, disable-model-invocation",
  ]);
});

Deno.test("validateSkill() reports unreadable YAML and an unquoted ': '", async () => {
  const problems = await problemsOf(
    "name: my-skill\ndescription: Use when: needed",
  );
  assertEquals(problems.length, 2);
  assertMatch(
    problems[0]!,
    /^front matter: the front matter is not valid YAML/,
  );
  assertEquals(
    problems[1],
    'description: a value containing ": " must be quoted',
  );
  const broken = await problemsOf("name: [my-skill\ndescription: d");
  assertEquals(broken.length, 1);
  assertMatch(broken[0]!, /^front matter: /);
});

Deno.test("validateSkill() reports a missing SKILL.md and rejects a missing path", async () => {
  await withTempDir(async (root) => {
    assertEquals(await validateSkill(root), [{
      field: "SKILL.md",
      message: `SKILL.md: no such file in "${root}"`,
    }]);
    await Deno.writeTextFile(hostPath.join(root, "skill.md"), "x");
    assertEquals(
      (await validateSkill(root))[0]!.message,
      'SKILL.md: the file must be named "SKILL.md", got "skill.md"',
    );
    await assertRejects(
      () => validateSkill(hostPath.join(root, "missing")),
      Deno.errors.NotFound,
      `Cannot validate "${root}/missing": no such file or folder`,
    );
  });
});

Deno.test("validateSkill() reports a SKILL.md that is a folder or not UTF-8 text", async () => {
  await withTempDir(async (root) => {
    await Deno.mkdir(hostPath.join(root, "folder", "SKILL.md"), {
      recursive: true,
    });
    assertEquals(await validateSkill(hostPath.join(root, "folder")), [{
      field: "SKILL.md",
      message: "SKILL.md: must be a file, got a folder",
    }]);
    await Deno.mkdir(hostPath.join(root, "latin1"));
    await Deno.writeFile(
      hostPath.join(root, "latin1", "SKILL.md"),
      new Uint8Array([0x2d, 0x2d, 0x2d, 0x0a, 0xe9, 0xff, 0x0a]),
    );
    assertEquals(await validateSkill(hostPath.join(root, "latin1")), [{
      field: "SKILL.md",
      message: "SKILL.md: must be UTF-8 text",
    }]);
  });
});

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "validateSkill() accepts a SKILL.md path and a loaded skill",
  ),
  async fn() {
    const template = hostPath.join(CORPUS, "template");
    const expected = [{
      field: "name",
      message:
        'name: must equal the folder name "template", got "template-skill"',
    }];
    assertEquals(
      await validateSkill(hostPath.join(template, "SKILL.md")),
      expected,
    );
    const { skills } = await loadSkills(template);
    assertEquals(await validateSkill(skills[0]!), expected);
  },
});

Deno.test("validateSkill() of a loaded skill reports a value that had to be quoted", async () => {
  await withTempDir(async (root) => {
    const dir = hostPath.join(root, "colon");
    await Deno.mkdir(dir);
    await Deno.writeTextFile(
      hostPath.join(dir, "SKILL.md"),
      "---\nname: colon\ndescription: Use when: needed\n---\n",
    );
    const { skills } = await loadSkills(dir);
    assertEquals(await validateSkill(skills[0]!), [{
      field: "description",
      message: 'description: a value containing ": " must be quoted',
    }]);
  });
});

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "validateSkill() fails the corpus template and claude-api, passes the others",
  ),
  async fn() {
    const { skills } = await loadSkills(CORPUS);
    for (const skill of skills) {
      const problems = await validateSkill(skill.basePath);
      const messages = problems.map((p) => p.message);
      if (skill.name === "template-skill") {
        assertEquals(messages, [
          'name: must equal the folder name "template", got "template-skill"',
        ]);
      } else if (skill.name === "claude-api") {
        assertEquals(messages.length, 1);
        assertMatch(
          messages[0]!,
          /^description: must be at most 1024 characters, got \d{4}$/,
        );
      } else {
        assertEquals(messages, [], skill.name);
      }
    }
  },
});

Deno.test("validateSkill() refuses something that is neither a path nor a skill", async () => {
  await assertRejects(
    () => validateSkill(42 as unknown as string),
    TypeError,
    "expected a path or a loaded skill",
  );
});
