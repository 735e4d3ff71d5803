import { assertEquals } from "../tests/helpers/assert.ts";
import { hostPath, parseYaml } from "../_internal/std.ts";
import { parseSimpleYaml } from "./_simple_yaml.ts";
import {
  anthropicsCollection,
  sharedTest,
} from "../tests/helpers/shared_data.ts";

const CORPUS_DATA = anthropicsCollection();
const CORPUS = CORPUS_DATA.path;

function full(text: string): unknown {
  try {
    return parseYaml(text, { schema: "failsafe" });
  } catch {
    return "ERROR";
  }
}

const SIMPLE = [
  "name: a\ndescription: b",
  'name: a\ndescription: Use it, or not [maybe] {x} C# 100% <file> "quoted" words\nlicense: MIT\n',
  "name: a\nmetadata:\n  version: 1.0\n  author: me\nlicense: x",
  "name: a\nmetadata:\n    v: 1\n\n    w: 2\n",
  "# comment\nname: a\nempty:\nnull-word: null\ntilde: ~\nyes: true\nnum: 007",
  "name: a   \ndescription: b:c a:b",
  "allowed-tools: Bash(git add:*) Read",
];

const NOT_SIMPLE = [
  "",
  "description: |\n  block\n",
  "description: >-\n  folded\n",
  "description: one\n  continued",
  "description: 'single'",
  'description: "double"',
  "description: Use when: x",
  "description: text # comment",
  "tools:\n  - a\n  - b",
  "tools: [a, b]",
  "a: 1\na: 2",
  "metadata:\n  a: 1\n   b: 2",
  "metadata:\n  nested:\n    deep: x",
  "key\twith: tab",
  "name: a\n  # indented comment",
  "? complex\n: key",
  "__proto__: x",
  "anchor: &a x",
  "- list",
];

Deno.test({
  ...sharedTest(
    CORPUS_DATA,
    "parseSimpleYaml() gives what the failsafe YAML parser gives for simple front matter",
  ),
  async fn() {
    const samples = [...SIMPLE];
    for (const dir of ["skills", "template"]) {
      for await (const entry of Deno.readDir(hostPath.join(CORPUS, dir))) {
        const file = dir === "template"
          ? hostPath.join(CORPUS, dir, entry.name)
          : hostPath.join(CORPUS, dir, entry.name, "SKILL.md");
        if (!file.endsWith("SKILL.md")) continue;
        samples.push(
          (await Deno.readTextFile(file)).split("\n---\n")[0]!.slice(4),
        );
      }
    }
    let simple = 0;
    for (const sample of samples) {
      const fast = parseSimpleYaml(sample);
      if (fast === undefined) continue;
      simple++;
      assertEquals(fast, full(sample), sample);
    }
    assertEquals(
      simple >= SIMPLE.length + 10,
      true,
      `${simple} simple samples`,
    );
    for (const sample of SIMPLE) {
      assertEquals(parseSimpleYaml(sample) !== undefined, true, sample);
    }
  },
});

Deno.test("parseSimpleYaml() leaves everything else to the full parser", () => {
  for (const sample of NOT_SIMPLE) {
    assertEquals(parseSimpleYaml(sample), undefined, sample);
  }
});
