import {
  assert,
  assertEquals,
  assertStringIncludes,
  assertThrows,
} from "../tests/helpers/assert.ts";
import { parseSkillMd } from "./parse.ts";

Deno.test("parseSkillMd() strips a UTF-8 BOM", () => {
  const doc = parseSkillMd("\uFEFF---\nname: bom\ndescription: d\n---\nbody\n");
  assertEquals(doc.name, "bom");
  assertEquals(doc.body, "body\n");
});

Deno.test("parseSkillMd() accepts CRLF line endings and returns the body with LF", () => {
  const doc = parseSkillMd(
    "---\r\nname: crlf\r\ndescription: |\r\n  two\r\n  lines\r\n---\r\n# Title\r\n\r\ntext\r\n",
  );
  assertEquals(doc.name, "crlf");
  assertEquals(doc.description, "two\nlines");
  assertEquals(doc.body, "# Title\n\ntext\n");
});

Deno.test("parseSkillMd() quotes an unquoted value containing ': ' when the YAML fails", () => {
  const doc = parseSkillMd(
    "---\nname: colon\ndescription: Use when: the user asks: anything\nlicense: MIT\n---\n",
  );
  assertEquals(doc.description, "Use when: the user asks: anything");
  assertEquals(doc.license, "MIT");
  assertEquals(doc.warnings, [
    'description: the unquoted value containing ": " was read as a quoted string',
  ]);
});

Deno.test("parseSkillMd() leaves block scalars alone when retrying", () => {
  const doc = parseSkillMd(
    "---\nname: a\ndescription: bad: one\nnotes: |\n  keep: this\n  as: is\n---\n",
  );
  assertEquals(doc.description, "bad: one");
  assertEquals(doc.frontMatter["notes"], "keep: this\nas: is\n");
});

Deno.test("parseSkillMd() without the retry throws on an unquoted ': '", () => {
  const error = assertThrows(
    () =>
      parseSkillMd("---\nname: a\ndescription: x: y\n---\n", {
        retryUnquotedColons: false,
      }),
    SyntaxError,
  );
  assertStringIncludes(error.message, "the front matter is not valid YAML");
});

Deno.test("parseSkillMd() throws a SyntaxError for YAML unreadable even after the retry", () => {
  assertThrows(
    () => parseSkillMd("---\nname: [unclosed\ndescription: d\n---\n"),
    SyntaxError,
    "Cannot parse SKILL.md: the front matter is not valid YAML",
  );
});

Deno.test("parseSkillMd() throws without front matter, unclosed, empty or not a map", () => {
  assertThrows(
    () => parseSkillMd("# Just Markdown\n"),
    SyntaxError,
    'it has no "---" front matter',
  );
  assertThrows(
    () => parseSkillMd("---\nname: a\n"),
    SyntaxError,
    'no closing "---" line',
  );
  assertThrows(
    () => parseSkillMd("---\n---\nbody"),
    SyntaxError,
    "the front matter is empty",
  );
  assertThrows(
    () => parseSkillMd("---\n- a\n- b\n---\n"),
    SyntaxError,
    "the front matter must be a map, got a list",
  );
});

Deno.test("parseSkillMd() splits allowed-tools given as a string", () => {
  const doc = parseSkillMd(
    "---\nname: a\ndescription: d\nallowed-tools: Read Grep, Bash(git add:*)  Write\n---\n",
  );
  assertEquals(doc.allowedTools, ["Read", "Grep", "Bash(git add:*)", "Write"]);
});

Deno.test("parseSkillMd() accepts allowed-tools given as a YAML list", () => {
  const doc = parseSkillMd(
    "---\nname: a\ndescription: d\nallowed-tools:\n  - Read\n  - Bash(ls *)\n---\n",
  );
  assertEquals(doc.allowedTools, ["Read", "Bash(ls *)"]);
});

Deno.test('parseSkillMd() keeps metadata version 1.0 as the string "1.0"', () => {
  const doc = parseSkillMd(
    "---\nname: a\ndescription: d\nmetadata:\n  version: 1.0\n  count: 007\n  flag: true\n  empty:\n---\n",
  );
  assertEquals(doc.metadata, {
    version: "1.0",
    count: "007",
    flag: "true",
    empty: "",
  });
  assertEquals(doc.warnings, []);
});

Deno.test("parseSkillMd() turns nested metadata values into JSON strings with a warning", () => {
  const doc = parseSkillMd(
    "---\nname: a\ndescription: d\nmetadata:\n  tags: [x, y]\n---\n",
  );
  assertEquals(doc.metadata, { tags: '["x","y"]' });
  assertEquals(doc.warnings, [
    "metadata.tags: a list was turned into a JSON string",
  ]);
});

Deno.test("parseSkillMd() NFKC-normalises and trims the name", () => {
  const decomposed = parseSkillMd(
    "---\nname: ' cafe\u0301 '\ndescription: d\n---\n",
  );
  assertEquals(decomposed.name, "caf\u00e9");
  const fullWidth = parseSkillMd(
    "---\nname: \uff50\uff44\uff46\ndescription: d\n---\n",
  );
  assertEquals(fullWidth.name, "pdf");
});

Deno.test("parseSkillMd() keeps the raw front matter with every scalar a string", () => {
  const doc = parseSkillMd(
    "---\nname: a\ndescription: d\nversion: 2.10\nhooks:\n  pre: run\n---\n",
  );
  assertEquals(doc.frontMatter, {
    name: "a",
    description: "d",
    version: "2.10",
    hooks: { pre: "run" },
  });
});

Deno.test("parseSkillMd() warns about fields of the wrong type", () => {
  const doc = parseSkillMd(
    "---\nname: a\ndescription: d\nlicense: [MIT]\nmetadata: text\nallowed-tools: {a: b}\n---\n",
  );
  assertEquals(doc.license, undefined);
  assertEquals(doc.metadata, undefined);
  assertEquals(doc.allowedTools, undefined);
  assertEquals(doc.warnings, [
    "license: ignored a list",
    'metadata: ignored "text"',
    "allowed-tools: ignored a map",
  ]);
});

Deno.test("parseSkillMd() YAML errors end on the reason, never on a dangling colon", () => {
  for (
    const front of ["description: [a", 'description: "a', "a: b\n c: d"]
  ) {
    const error = assertThrows(
      () => parseSkillMd(`---\nname: x\n${front}\n---\n`),
      SyntaxError,
    );
    assertStringIncludes(error.message, "not valid YAML: ");
    assert(!/[:\s]$/.test(error.message), JSON.stringify(error.message));
  }
});
